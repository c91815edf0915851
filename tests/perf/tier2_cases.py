"""Near misses for the candidate tier 2 conditions (``Rule.candidate_tree``): small programs
just on either side of a condition, ``(source, the condition's value)``. ``test_candidates.py``
checks each value and that linting with the tiers on and off finds the same."""

import textwrap

# fmt: off
CASES: dict[str, list[tuple[str, bool]]] = {}

_WORK = "import asyncio\nasync def work():\n    await asyncio.sleep(1)\n    raise RuntimeError('x')\n"
_BEAT = ("import asyncio\nasync def beat(q=None):\n    while True:\n        try:\n            await q.get()\n"
         "            ping()\n        except Exception:\n            pass\n")
_SERVE = "import asyncio\nasync def serve(q):\n    try:\n        await q.get()\n    finally:\n        close()\n"

CASES["SHD501"] = [
    # 0 server coroutine forwarding its own cancellation: not interrupt, not driver, not worker;
    # no report, but a cancel in a handler stays a candidate (``_in_handler``)
    ("""
import asyncio, ray

class Router:
    async def call(self, ref):
        try:
            return await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
""", True),
    # 1 the same method in a Ray async actor: the raise leaves a remote method -> reported
    ("""
import asyncio, ray

@ray.remote
class Router:
    async def call(self, ref):
        try:
            return await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
""", True),
    # 2 the same function reached from main(): driver code -> reported
    ("""
import asyncio, ray

def forward(ref):
    try:
        return ray.get(ref)
    except ValueError:
        ray.cancel(ref)
        raise

def main():
    forward(job.remote())
""", True),
    # 3 the only raise comes before the cancel
    ("""
import ray

def main(ref):
    if ref is None:
        raise ValueError("no ref")
    ray.cancel(ref)
    log("cancelled")
""", False),
    # 4 force given by a variable or a falsy non-False literal counts as forced
    ("""
import ray, sys

def stop(ref, force):
    ray.cancel(ref, force=force)
    ray.cancel(ref, force=0)
    sys.exit(1)
""", False),
    # 5 refs passed as **kw (libcst: keyword None) then exit: reported (the old condition missed it)
    ("""
import ray, sys

def stop(kw):
    ray.cancel(**kw)
    sys.exit(1)
""", True),
    # 6 return from an aliased KeyboardInterrupt handler of a plain method -> reported
    ("""
import ray
Interrupt = KeyboardInterrupt

class Job:
    def run(self):
        try:
            return ray.get(self.ref)
        except Interrupt:
            ray.cancel(self.ref)
            return None
""", True),
    # 7 cancel inside a lambda, exit after: the rule skips lambdas
    ("""
import ray, sys

def stop(refs):
    cb = lambda r: ray.cancel(r)
    cb(refs[0])
    sys.exit(1)
""", False),
    # 8 cancel in a class body then sys.exit (module-level code): kept, reported
    ("""
import ray, sys

class Boot:
    ray.cancel(ref)
    sys.exit(1)
""", True),
    # 9 a function made remote by ray.remote(work): raise after cancel -> reported
    ("""
import ray

def work(refs):
    try:
        ray.get(refs)
    except ValueError:
        for r in refs:
            ray.cancel(r)
        raise

task = ray.remote(work)
""", True),
]

CASES["SHD601"] = [
    # --- tests/perf/test_candidates.py::test_shd601_tier2 (same values)
    ("import subprocess\nsubprocess.run(['pkill', '-f', 'vllm'])\n", True),
    ("import os\nos.system(f'pkill -9 -f {name}')\n", True),
    ("from subprocess import check_output as co\nco('kill $(pgrep -f x)', shell=True)\n", True),
    ("import subprocess\nHELP = 'use pkill to stop it'\nprint(HELP)\n", False),
    ("import subprocess\nsubprocess.run(['ls'])\n# pkill\n", False),
    ("import psutil\nfor p in psutil.process_iter():\n    if 'x' in p.name():\n        p.kill()\n", True),
    ("import psutil, os\nfor p in psutil.process_iter():\n    if 'x' in p.name():\n        os.kill(p.pid, 9)\n", True),
    ("import psutil\nnames = [p.name() for p in psutil.process_iter()]\n", False),
    # --- new near misses
    # the tool named outside the command of a command call
    ("import subprocess\nHELP = 'pkill -f x'\nsubprocess.run(['ls'])\n", False),
    ("import subprocess\nsubprocess.run(['ls'], env={'HINT': 'pkill'})\n", False),
    ("pool.run(['pkill', '-f', 'x'])\n", False),  # not a command call
    ("import subprocess\nsubprocess.run(args=['pkill', '-f', 'x'])\n", True),
        # process_iter loops
    ("import psutil\nprocs = [p for p in psutil.process_iter() if 'x' in p.name()]\nfor p in procs:\n    p.kill()\n",
     False),
    ("import psutil\nfor p in psutil.process_iter():\n    if p.pid in mine:\n        p.kill()\n", False),
    ("import psutil\nfor p in [p for p in psutil.process_iter() if 'x' in p.name()]:\n    p.kill()\n", True),
    ("import psutil\nfor p in psutil.process_iter():\n    if 'x' in p.name():\n        def later():\n"
     "            p.kill()\n        hooks.append(later)\n", False),
    ("import psutil\nfor p in sorted(psutil.process_iter(['cmdline'])):\n    if 'vllm' in ' '.join(p.info['cmd' 'line']):\n"
     "        p.terminate()\n", True),
    ("import psutil\nfor p in psutil.process_iter():\n    print(p.name())\nelse:\n    if p.name() == 'x':\n        p.kill()\n",
     False),  # the for's else is not its body
]

CASES["SHD204"] = [
    # the normal path, and a deadline after a graceful shutdown: no handler, no finally, no signal
    ("import os\nrc = main()\nos._exit(rc)\n", False),
    ("import os\ndef stop(pending):\n    if pending:\n        os._exit(1)\n", False),
    # except / finally of the same function
    ("import os\ntry:\n    run()\nexcept Exception:\n    os._exit(1)\n", True),
    ("from os import _exit as die\ndef f():\n    try:\n        run()\n    finally:\n        die(0)\n", True),
    # a def or a lambda inside the handler: not on its path
    ("import os\ntry:\n    run()\nexcept Exception:\n    def later():\n        os._exit(1)\n    hooks.append(later)\n", False),
    ("import os, atexit\ntry:\n    run()\nexcept Exception:\n    atexit.register(lambda: os._exit(1))\n", False),
    # not os._exit
    ("import sys\ntry:\n    run()\nexcept Exception:\n    sys.exit(1)\n", False),
    # signal handlers: a lambda, a function, a callee of a handler (any signal)
    ("import os, signal\nsignal.signal(signal.SIGUSR1, lambda *_: os._exit(1))\n", True),
    ("import os, signal\ndef die():\n    os._exit(1)\ndef on_term(s, f):\n    flush()\n    die()\n"
     "signal.signal(signal.SIGTERM, on_term)\n", True),
    ("import os, signal\ndef die():\n    os._exit(1)\ndef on_term(s, f):\n    flush()\n"
     "signal.signal(signal.SIGTERM, on_term)\n", False),  # the exiting helper is never called from the handler
    ("import os, signal\nclass S:\n    def start(self):\n        signal.signal(signal.SIGTERM, self.stop)\n"
     "    def stop(self, s, f):\n        os._exit(143)\n", True),
]

CASES["SHD202"] = [
    # --- tests/perf/test_candidates.py::test_shd202_tier2 (same values except the marked one)
    ("import sys\ntry:\n    work()\nexcept KeyboardInterrupt:\n    sys.exit(0)\n", True),
    ("import sys\ntry:\n    work()\nexcept (ValueError, KeyboardInterrupt):\n    raise SystemExit\n", True),
    ("from os import _exit as bye\ntry:\n    work()\nexcept KeyboardInterrupt:\n    bye(0)\n", True),
    # CHANGED (was False): another module's entrypoint may call main() last (process_tail, the project index)
    ("def main():\n    try:\n        work()\n    except KeyboardInterrupt:\n        cleanup()\n", True),
    ("def main():\n    try:\n        work()\n    except KeyboardInterrupt:\n        cleanup()\n\n"
     "if __name__ == '__main__':\n    main()\n", True),
    ("import sys\ndef main():\n    try:\n        work()\n    except KeyboardInterrupt:\n        cleanup()\n"
     "def other():\n    sys.exit(0)\n", True),  # CHANGED (was False): as above
    ("import signal, sys\ndef on_int(s, f):\n    stop()\n    sys.exit(0)\nsignal.signal(signal.SIGINT, on_int)\n", True),
    ("import signal, sys\nsignal.signal(signal.SIGTERM, lambda s, f: sys.exit(0))\n", False),  # CHANGED (was True): only exits
    ("import signal, sys\ndef on_usr(s, f):\n    sys.exit(0)\nsignal.signal(signal.SIGUSR1, on_usr)\n", False),
    ("import signal\ndef on_int(s, f):\n    stop()\nsignal.signal(signal.SIGINT, on_int)\n", False),
    # --- new near misses
    # exit status: a non-zero literal or a computed status is never status 0
    ("import sys\ntry:\n    work()\nexcept KeyboardInterrupt:\n    sys.exit(1)\n", False),
    ("import sys\ntry:\n    work()\nexcept KeyboardInterrupt:\n    sys.exit(status)\n", False),
    ("import os, sys\ntry:\n    work()\nexcept KeyboardInterrupt:\n    sys.exit(os.EX_OK)\n", True),
    # an exit in a def inside the handler does not run there
    ("import sys\ntry:\n    work()\nexcept KeyboardInterrupt:\n    def later():\n        sys.exit(0)\n    raise\n", False),
    # signal handlers: bare `raise SystemExit` is the unwinding idiom; `raise SystemExit(0)` is not
    ("import signal\ndef on_int(s, f):\n    stop()\n    raise SystemExit\nsignal.signal(signal.SIGINT, on_int)\n", False),
    ("import signal\ndef on_int(s, f):\n    stop()\n    raise SystemExit(0)\nsignal.signal(signal.SIGINT, on_int)\n", True),
    ("import signal, sys\ndef on_int(s, f):\n    sys.exit(0)\nsignal.signal(signal.SIGINT, on_int)\n", False),  # only exits
    ("import signal, sys\ndef on_int(s, f):\n    stop()\n    sys.exit(0)\ndef other():\n    pass\n"
     "signal.signal(signal.SIGINT, other)\n", False),  # the exiting function is not the one installed
    ("import signal, sys\nsignal.signal(signal.SIGINT, lambda s, f, _=sys.exit(0): stop())\n", True),  # a lambda's default
    # entrypoints: the handler's function must be called from __main__ or run by asyncio.run from there
    ("def run_app():\n    try:\n        work()\n    except KeyboardInterrupt:\n        log()\n"
     "def main():\n    run_app()\nif __name__ == '__main__':\n    main()\n", True),  # CHANGED: a chain (process_tail)
    ("import asyncio\nasync def amain():\n    try:\n        await work()\n    except KeyboardInterrupt:\n        return\n"
     "def main():\n    asyncio.run(amain())\nif __name__ == '__main__':\n    main()\n", False),
    ("import asyncio\nasync def amain():\n    try:\n        await work()\n    except (KeyboardInterrupt, asyncio.CancelledError):\n"
     "        return\ndef main():\n    asyncio.run(amain())\nif __name__ == '__main__':\n    main()\n", True),
    # handlers that never leave normally, or a try that raises KeyboardInterrupt itself
    ("def main():\n    while True:\n        try:\n            work()\n        except KeyboardInterrupt:\n            pass\n"
     "if __name__ == '__main__':\n    main()\n", False),
    ("def main():\n    try:\n        work()\n    except KeyboardInterrupt:\n        cleanup()\n        raise\n"
     "if __name__ == '__main__':\n    main()\n", False),
    ("def main():\n    try:\n        if idle():\n            raise KeyboardInterrupt()\n    except KeyboardInterrupt:\n"
     "        stop()\nif __name__ == '__main__':\n    main()\n", False),
    ("from errors import Stop as KeyboardInterrupt\ndef main():\n    try:\n        if idle():\n"
     "            raise KeyboardInterrupt()\n    except KeyboardInterrupt:\n        stop()\n"
     "if __name__ == '__main__':\n    main()\n", True),  # the name is bound: kept
    ("if __name__ == '__main__':\n    try:\n        work()\n    except KeyboardInterrupt:\n        print('bye')\n", True),
]

CASES["SHD104"] = [
    # a raise on one branch of if/else only: the other branch swallows (every path must propagate)
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        if e:\n            log(e)\n        else:\n            raise\n', True),
    # ... a raise on both branches, after a loop of the handler: propagates on every path
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        if e:\n            log(e)\n        raise\n', False),
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        for i in range(3):\n            log(i)\n        raise\n', False),
    # ... but not after an endless loop (no way past it), nor after a break out of it
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        while True:\n            log(e)\n        raise\n', True),
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        while True:\n            break\n        raise\n', True),  # (kept: a `while` in the handler; the facts see the raise)
    # a raise in a nested def does not leave the handler
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        def f():\n            raise\n        f()\n', True),
    # uncancel() bookkeeping: skipped, unless a finally may swallow
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        asyncio.current_task().uncancel()\n', False),
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        asyncio.current_task().uncancel()\n        try:\n            log(e)\n        finally:\n            return\n', True),
    # a broad handler that hands the exception on; a CancelledError handler that uses it is flagged
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except BaseException as e:\n        errors.append(e)\n', False),
    ('import asyncio\n\nasync def work(task):\n    try:\n        await asyncio.sleep(1)\n    except asyncio.CancelledError as e:\n        log(e)\n', True),
    # cancel-then-await: `except CancelledError: pass` is fine, `except BaseException: pass` is not
    ('import asyncio\nasync def stop(self):\n    self.task.cancel()\n    try:\n        await self.task\n    except asyncio.CancelledError:\n        pass\n', False),
    ('import asyncio\nasync def stop(self):\n    self.task.cancel()\n    try:\n        await self.task\n    except BaseException:\n        pass\n', True),
]

CASES["SHD502"] = [
    # 0 a cleanup-named method destroys the group: every init in a function is covered
    ("""
import torch.distributed as dist

class Worker:
    def setup(self, rank):
        dist.init_process_group("nccl", rank=rank)

    def close(self):
        dist.destroy_process_group()
""", False),
    # 2 an init at module level is not covered by a cleanup-named destroyer
    ("""
import torch.distributed as dist

dist.init_process_group("gloo")

def shutdown(code):
    dist.destroy_process_group()
""", True),
    # 3 the fix's output: the guard installed right after the init
    ("""
import torch.distributed as dist
import runtime_guard

def init(rank):
    dist.init_process_group("nccl", rank=rank)
    runtime_guard.torch.install_distributed_teardown()
""", False),
    # 4 the guard installed by another method of the same class
    ("""
import torch.distributed as dist
from runtime_guard.torch import install_distributed_teardown

class Trainer:
    def __init__(self, cfg):
        dist.init_process_group(cfg.backend)
        self.arm()

    def arm(self):
        install_distributed_teardown()
""", False),
    # 5 the guard only in the second def of `arm`: the facts know the first -> reported
    ("""
import torch.distributed as dist
import runtime_guard

class Trainer:
    def __init__(self, cfg):
        dist.init_process_group(cfg.backend)

    def arm(self):
        pass

    def arm(self):
        runtime_guard.torch.install_distributed_teardown()
""", True),
    # 6 `torch` is only ever bound by tuple unpacking: the facts cannot name the call
    ("""
from ray.rllib.utils.framework import try_import_torch

torch, _ = try_import_torch()

def join(url, rank, world):
    torch.distributed.init_process_group(backend="gloo", init_method=url, rank=rank, world_size=world)
""", False),
    # 7 the same with an `import torch` in the init function itself -> reported
    ("""
from ray.rllib.utils.framework import try_import_torch

torch, _ = try_import_torch()

def join(url, rank, world):
    import torch
    torch.distributed.init_process_group(backend="gloo", init_method=url, rank=rank, world_size=world)
""", True),
    # 8 destroy in the init function's finally, but inside a lambda: not a teardown site
    ("""
import torch.distributed as dist

def run(rank):
    dist.init_process_group("gloo", rank=rank)
    try:
        train()
    finally:
        later = lambda: dist.destroy_process_group()
""", True),
    # 9 destroy in the init function's except body: covered
    ("""
import torch.distributed as dist

def run(rank):
    dist.init_process_group("gloo", rank=rank)
    try:
        train()
    except BaseException:
        dist.destroy_process_group()
        raise
""", False),
]

CASES["SHD102"] = [
    # kept on self and awaited in another method (any attribute of that name in the module counts)
    (_WORK + "class S:\n    def start(self):\n        self._task = asyncio.create_task(work())\n"
     "    async def stop(self):\n        self._task.cancel()\n        await self._task\n", False),
    # kept on self, only cancelled: never looked at
    (_WORK + "class S:\n    def start(self):\n        self._task = asyncio.create_task(work())\n"
     "    def stop(self):\n        self._task.cancel()\n", True),
    # its result asked for; a done callback that does more than forget it
    (_WORK + "class S:\n    def start(self):\n        self._task = asyncio.create_task(work())\n"
     "    def check(self):\n        return self._task.result()\n", False),
    (_WORK + "class S:\n    def start(self):\n        self._task = asyncio.create_task(work())\n"
     "        self._task.add_done_callback(self._on_done)\n", False),
    # a done callback that only forgets it
    (_WORK + "T = set()\nasync def main():\n    t = asyncio.create_task(work())\n    T.add(t)\n"
     "    t.add_done_callback(T.discard)\n", True),
    # a local name awaited later, or handed to wait_for
    (_WORK + "async def main():\n    t = asyncio.create_task(work())\n    await asyncio.sleep(1)\n    await t\n", False),
    (_WORK + "async def main():\n    t: asyncio.Task = asyncio.ensure_future(work())\n"
     "    await asyncio.wait_for(t, 5)\n", False),
    # a local name only tested
    (_WORK + "async def main():\n    t = asyncio.create_task(work())\n    if t.done():\n        print('done')\n", True),
    # another object's attribute: the rule cannot see its users and assumes they look
    (_WORK + "async def main(holder):\n    holder.task = asyncio.create_task(work())\n", False),
]

# SHD201's tier 2: a coroutine that exits, or a sync function that exits and is handed to a
# ``threading.Thread``/``Timer`` call or an executor submission (the only sync functions the
# facts give the THREAD/EXECUTOR context); findings agree with the tiers on and off.
CASES["SHD201"] = [
    ("import sys, threading\ndef work():\n    sys.exit(1)\nthreading.Thread(target=work).start()\n", True),
    ("from threading import Thread as T\nimport sys\ndef work():\n    sys.exit(1)\nT(target=work).start()\n", True),
    ("import sys, threading, functools\ndef job(x):\n    raise SystemExit(x)\n"
     "threading.Thread(target=functools.partial(job, 1)).start()\n", True),
    ("import sys\nfrom concurrent.futures import ThreadPoolExecutor\ndef job():\n    sys.exit(2)\n"
     "with ThreadPoolExecutor() as ex:\n    ex.submit(job)\n", True),
    ("import asyncio, sys\ndef job():\n    sys.exit(2)\nasync def main():\n"
     "    loop = asyncio.get_running_loop()\n    await loop.run_in_executor(None, job)\n", True),
    ("import sys, threading\nclass W:\n    def start(self):\n        threading.Thread(target=self._run).start()\n"
     "    def _run(self):\n        sys.exit(0)\n", True),
    ("import sys, threading\ndef t():\n    threading.Timer(5, fire).start()\ndef fire():\n    sys.exit(3)\n", True),
    # handed to calls that run it on the calling thread, or at exit: SystemExit does end the process
    ("import sys\ndef work(x):\n    sys.exit(1)\nsorted([], key=work)\n", False),
    ("import atexit, sys\ndef bye():\n    sys.exit(0)\natexit.register(bye)\n", False),
    ("import sys, threading\ndef work():\n    sys.exit(1)\ndef other():\n    pass\n"
     "threading.Thread(target=other).start()\nprint(work)\n", False),
    # a coroutine with an exit stays a candidate as before
    ("import sys\nasync def work():\n    sys.exit(1)\n", True),
]

# SHD301's tier 2: a method called on a literal or a display (``" ".join``) cannot be in
# the vocabulary (only save methods are matched by name alone); findings agree with the
# tiers on and off.
CASES["SHD301"] = [
    # a thread in the module: `.join()` on a name may be Thread.join
    ("import threading\nasync def f():\n    t = threading.Thread(target=print)\n    t.start()\n    t.join()\n",
     True),
    # on a literal it is str.join: the facts type no literal
    ("import threading\nT = threading.Thread(target=print)\nasync def f(cmd):\n    return ' '.join(cmd)\n", False),
    ("import threading\nT = threading.Thread(target=print)\nasync def f(x):\n    return f'{x}'.join(['a'])\n",
     False),
    ("import queue\nQ = queue.Queue()\nasync def f(d):\n    return {'a': 1}.get('a')\n", False),
    ("import queue\nQ = queue.Queue()\nasync def f():\n    return Q.get()\n", True),
]

# SHD102's tier 2: a done callback surely observes only when it is a call (a partial) or names
# no function of this module; a function here may only log the exception (reported) or act
# (os._exit: not reported), a lambda may only log.
_CB = "def on_done(t):\n    log.error('failed: %s', t.exception())\n"
CASES["SHD102"] += [
    (_WORK + _CB + "async def main(q):\n    t = asyncio.create_task(work())\n    t.add_done_callback(on_done)\n"
     "    await q.get()\n", True),
    (_WORK + _CB.replace("    log.error", "    import os\n    os._exit(1)\n    log.error")
     + "async def main(q):\n    t = asyncio.create_task(work())\n    t.add_done_callback(on_done)\n", True),
    (_WORK + "async def main(q):\n    t = asyncio.create_task(work())\n"
     "    t.add_done_callback(lambda x: print(x.exception()))\n", True),
    (_WORK + "from handlers import on_done\nasync def main(q):\n    t = asyncio.create_task(work())\n"
     "    t.add_done_callback(on_done)\n", False),
    (_WORK + _CB + "import functools\nasync def main(q):\n    t = asyncio.create_task(work())\n"
     "    t.add_done_callback(functools.partial(on_done))\n", False),
]

# SHD102's tier 2: a spawn whose task (or a display holding it) is not awaited, returned,
# yielded or passed to a call other than an adder, a neutral builtin or a gather told
# ``return_exceptions``; findings agree with the tiers on and off.
CASES["SHD102"] += [
    (_WORK + "async def main():\n    asyncio.create_task(work())\n", True),
    (_WORK + "async def main():\n    t = asyncio.create_task(work())\n    await asyncio.sleep(2)\n", True),
    (_WORK + "async def main(tasks):\n    tasks.append(asyncio.create_task(work()))\n", True),
    (_WORK + "async def main():\n    print(asyncio.create_task(work()))\n", True),
    (_WORK + "async def main():\n    await asyncio.gather(asyncio.create_task(work()), return_exceptions=True)\n",
     True),
    (_WORK + "from asyncio import ensure_future as spawn\nasync def main():\n    spawn(work())\n", True),
    # the task goes straight to an await or a call that takes it
    (_WORK + "async def main():\n    await asyncio.create_task(work())\n", False),
    (_WORK + "async def main():\n    return asyncio.create_task(work())\n", False),
    (_WORK + "async def main():\n    await asyncio.wait([asyncio.create_task(work()), asyncio.create_task(work())],"
     " return_when=asyncio.FIRST_COMPLETED)\n", False),
    # asyncio.wait's result discarded: kept (the rule follows its done set)
    (_WORK + "async def main():\n    await asyncio.wait([asyncio.create_task(work()), asyncio.create_task(work())])\n",
     True),
    (_WORK + "async def main():\n    await asyncio.shield(asyncio.ensure_future(work()))\n", False),
]

# SHD106's tier 2: a spawn that is a statement of its own (or bound to one name in a
# function) of a same-module coroutine with a ``try`` (or only expression statements);
# findings agree with the tiers on and off.
CASES["SHD106"] = [
    (_BEAT + "async def main():\n    asyncio.create_task(beat())\n", True),
    (_BEAT + "async def main():\n    t = asyncio.create_task(beat())\n", True),
    (_BEAT + "async def main():\n    asyncio.create_task(coro=beat())\n", True),
    # its errors are not handled in the coroutine (SHD102's case), or the task is kept
    (_WORK + "async def main():\n    asyncio.create_task(work())\n", False),
    (_BEAT + "class S:\n    async def start(self):\n        self.t = asyncio.create_task(beat())\n", False),
    (_BEAT + "T = set()\nasync def main():\n    T.add(asyncio.create_task(beat()))\n", False),
]

# SHD105's tier 2: a ``.cancel()`` called directly in an ``async def``; findings agree with
# the tiers on and off.
CASES["SHD105"] = [
    (_SERVE + "class S:\n    async def start(self, q):\n        self.t = asyncio.create_task(serve(q))\n"
     "    async def stop(self):\n        self.t.cancel()\n", True),
    (_SERVE + "class S:\n    async def start(self, q):\n        self.t = asyncio.create_task(serve(q))\n"
     "    def stop(self):\n        self.t.cancel()\n", False),
    (_SERVE + "class S:\n    async def start(self, q):\n        self.t = asyncio.create_task(serve(q))\n"
     "        return lambda: self.t.cancel()\n", False),
]

# SHD405's tier 2: a ``signal.signal`` call with two arguments whose handler (a lambda, or the
# sync functions it reaches by name) may call a loop-touching method, a loop method that is
# not thread-safe, or cancel the tasks of ``all_tasks()``; findings agree with the tiers on
# and off.
CASES["SHD405"] = [
    (textwrap.dedent("""
    import asyncio, signal
    ev = asyncio.Event()
    def _really_stop():
        ev.set()
    def _stop():
        _really_stop()
    def on_term(signum, frame):
        _stop()
    signal.signal(signal.SIGTERM, on_term)
    """), True),
    (textwrap.dedent("""
    import asyncio, signal
    ev = asyncio.Event()
    flags = {"stop": False}
    async def stopper():
        ev.set()
    def on_term(signum, frame):
        flags["stop"] = True
    signal.signal(signal.SIGTERM, on_term)
    """), False),
    (textwrap.dedent("""
    import asyncio, signal
    ev = asyncio.Event()
    async def on_term(signum, frame):
        ev.set()
    signal.signal(signal.SIGTERM, on_term)
    """), False),
    (textwrap.dedent("""
    import asyncio, signal
    loop = asyncio.new_event_loop()
    ev = asyncio.Event()
    signal.signal(signal.SIGTERM, lambda s, f: loop.call_soon(ev.set))
    """), True),
    (textwrap.dedent("""
    import asyncio
    from signal import signal as install, SIGINT
    loop = asyncio.get_event_loop()
    halt = loop.stop
    def on_int(signum, frame):
        halt()
    install(SIGINT, on_int)
    """), True),
    (textwrap.dedent("""
    import asyncio
    from signal import signal as install, SIGINT
    loop = asyncio.get_event_loop()
    check = loop.is_running
    def on_int(signum, frame):
        print(check())
    install(SIGINT, on_int)
    """), False),
    (textwrap.dedent("""
    import asyncio, functools, signal
    class W:
        def __init__(self):
            self.q = asyncio.Queue()
            signal.signal(signal.SIGTERM, functools.partial(self.on_term, 1))
        def on_term(self, n, signum, frame):
            self.q.put_nowait(n)
    """), True),
    (textwrap.dedent("""
    import asyncio, signal
    def on_term(signum, frame):
        for t in asyncio.all_tasks():
            t.cancel()
    signal.signal(signal.SIGTERM, on_term)
    """), True),
    (textwrap.dedent("""
    import asyncio, signal
    TASKS = []
    def on_term(signum, frame):
        for t in TASKS:
            t.cancel()
    signal.signal(signal.SIGTERM, on_term)
    """), False),
    (textwrap.dedent("""
    import asyncio, signal
    async def main():
        ev = asyncio.Event()
        def on_term():
            ev.set()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_term)
    """), False),
]

# SHD407's tier 2: a ``threading.Thread`` call that may make a daemon (``daemon=True``, or an
# assigned thread in a module that sets ``.daemon = True``/``setDaemon(True)``) with a target
# that may run a loop within three calls; findings agree with the tiers on and off.
CASES["SHD407"] = [
    (textwrap.dedent("""
    import asyncio, threading
    def c():
        asyncio.run(serve())
    def b():
        c()
    def a():
        b()
    def target():
        a()
    threading.Thread(target=target, daemon=True).start()
    """), True),
    (textwrap.dedent("""
    import asyncio, threading
    def d():
        asyncio.run(serve())
    def c():
        d()
    def b():
        c()
    def a():
        b()
    def target():
        a()
    threading.Thread(target=target, daemon=True).start()
    """), False),
    (textwrap.dedent("""
    import asyncio, threading
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=False).start()
    """), False),
    (textwrap.dedent("""
    import asyncio
    from threading import Thread
    def run_loop():
        asyncio.run(serve())
    t = Thread(target=run_loop)
    t.daemon = True
    t.start()
    """), True),
    (textwrap.dedent("""
    import asyncio
    from threading import Thread
    def run_loop():
        asyncio.run(serve())
    t = Thread(target=run_loop)
    t.daemon = False
    t.start()
    """), False),
    (textwrap.dedent("""
    import asyncio, threading, time
    def beat():
        while True:
            time.sleep(1)
    threading.Thread(target=beat, daemon=True).start()
    asyncio.run(main())
    """), False),
    (textwrap.dedent("""
    import asyncio as aio, functools, threading
    loop = aio.new_event_loop()
    threading.Thread(target=functools.partial(loop.run_until_complete, main()), daemon=True).start()
    """), True),
    (textwrap.dedent("""
    import asyncio, threading
    def run_loop():
        asyncio.run(serve())
    threading.Thread(target=lambda: run_loop(), daemon=True).start()
    """), False),
    (textwrap.dedent("""
    import asyncio, threading
    loop = asyncio.new_event_loop()
    opts = {"daemon": True}
    threading.Thread(target=loop.run_forever, **opts).start()
    """), False),
    (textwrap.dedent("""
    import asyncio, runtime_guard
    loop = asyncio.new_event_loop()
    runtime_guard.LoopThread(target=loop.run_forever, daemon=True).start()
    """), False),
]

CASES["SHD602"] = [
    # a factory's result kept in a plain name, or dropped as a statement: a candidate
    ("import subprocess\ndef f(cmd):\n    p = subprocess.Popen(cmd)\n    work()\n    p.wait()\n", True),
    ("from subprocess import Popen as P\ndef f(cmd):\n    p: P = P(cmd)\n    work()\n    p.wait()\n", True),
    ("import subprocess\nsubprocess.Popen(['notify-send', 'done'])\n", False),  # dropped, no pipe: a launch
    ("import subprocess\nsubprocess.Popen(['docker', 'ps'], stdout=subprocess.PIPE)\n", True),
    ("from subprocess import Popen, PIPE\nPopen(['docker', 'ps'], stderr=PIPE)\n", True),
    ("import subprocess\nsubprocess.Popen(['docker', 'ps'], stdout=subprocess.DEVNULL)\n", False),
    ("import asyncio\nasync def f():\n    await asyncio.create_subprocess_exec('ls', stdout=asyncio.subprocess.PIPE)\n",
     True),
    ("import asyncio\nasync def f(cmd):\n    p = await asyncio.create_subprocess_exec(*cmd)\n    await work()\n"
     "    await p.wait()\n", True),
    ("import multiprocessing as mp\ndef f():\n    p = mp.Process(target=g)\n    p.start()\n    work()\n    p.join()\n",
     True),
    ("import subprocess\nspawn = subprocess.Popen\ndef f(cmd):\n    p = spawn(cmd)\n    work()\n    p.wait()\n", True),
    # near misses: the child is never kept in a plain name, or is not a child at all
    ("import subprocess\ndef f(cmd):\n    with subprocess.Popen(cmd) as p:\n        work(p)\n", False),
    ("import subprocess\ndef f(cmd):\n    return subprocess.Popen(cmd)\n", False),
    ("import subprocess\ndef f(procs, cmd):\n    procs.proc = subprocess.Popen(cmd)\n", False),
    ("import subprocess\ndef f(procs, cmd):\n    procs.append(subprocess.Popen(cmd))\n", False),
    ("import subprocess\ndef f(cmd):\n    out = subprocess.Popen(cmd).communicate()\n", False),
    ("import subprocess\ndef f(cmd):\n    p = subprocess.run(cmd)\n    q = subprocess.check_output(cmd)\n", False),
    ("import subprocess\ndef f(cmd):\n    p, q = subprocess.Popen(cmd), subprocess.Popen(cmd)\n", False),
    ("import subprocess\ndef f(cmd):\n    p = q = subprocess.Popen(cmd)\n", False),
    # a coroutine created, not awaited: whoever awaits it gets the child (the rule returns)
    ("import asyncio\nasync def f(cmd):\n    c = asyncio.create_subprocess_exec(*cmd)\n", False),
    ("import threading\ndef f():\n    t = threading.Thread(target=g)\n    t.start()\n    work()\n    t.join()\n", False),
    # issue 28: a child kept on self (followed into the class), a multiprocessing context's Process
    ("import subprocess\nclass S:\n    def f(self, cmd):\n        self.proc = subprocess.Popen(cmd)\n", True),
    ("import multiprocessing as mp\ndef f():\n    ctx = mp.get_context('spawn')\n    p = ctx.Process(target=g)\n"
     "    p.start()\n    work()\n    p.join()\n", True),
    # (joined right after its start: not reported, and ruled out since session 5's _start_statement)
    ("import multiprocessing\ndef f():\n    p = multiprocessing.get_context('fork').Process(target=g)\n    p.start()\n"
     "    p.join()\n", False),
    # a multiprocessing child that nothing joins or stops: never reported (its exit handler joins it)
    ("import multiprocessing\ndef f():\n    p = multiprocessing.get_context('fork').Process(target=g)\n", False),
    # near misses: a Process attribute with no context in the file, a context's Queue
    ("import multiprocessing\ndef f(pool):\n    p = pool.Process(target=g)\n", False),
    ("import multiprocessing as mp\ndef f():\n    ctx = mp.get_context('spawn')\n    q = ctx.Queue()\n", False),
]

# SHD301's tier 2 and the types from declarations (issue 28): a receiver typed only by a
# parameter or variable annotation (a string one too), a closure over such a parameter,
# tuple unpacking, httpx2 and the urllib3 classes stay candidates; an in-memory or
# unannotated receiver does not. Findings agree with the tiers on and off.
CASES["SHD301"] += [
    # issue 28: a receiver bound to a call of an imported function (its return annotation, in
    # another module, may type it) and a method named in the vocabulary; the same call of a name
    # not imported is not a candidate. Known limit: a method only a session type's ``.*`` covers
    # (``c.send``) in a file that spells no word of that type is not (admitting every method
    # there made 718 instead of 309 of the ten code bases' 5,168 files candidates)
    # (with no project index, as here, nothing types them: tests/perf/test_candidates_s4_x301.py
    # lints them in a project, with the index)
    ("from .factories import open_client\nasync def f():\n    c = open_client()\n    return c.get(1)\n", False),
    ("from . import factories\nasync def f():\n    c = await factories.open_client()\n    return c.read()\n",
     False),
    ("async def f():\n    c = open_client()\n    return c.get(1)\n", False),
    ("from .factories import open_client\nasync def f():\n    c = open_client()\n    return c.send(1)\n", False),
    ("import io\nasync def f(fh: io.BufferedReader):\n    return fh.read()\n", True),
    ("import io\nasync def f(fh: io.TextIOWrapper | None = None):\n    return fh.readline()\n", True),
    ("from typing import IO, Optional\nasync def f(*, fh: Optional[IO[str]]):\n    fh.write('x')\n", True),
    # a string annotation naming a module the file does not import types nothing (the facts
    # resolve its names through the imports)
    ("async def f(fh: 'typing.TextIO', /):\n    return fh.read()\n", False),
    ("from typing import Optional\nasync def f(c: Optional['httpx.Client']):\n    return c.send(1)\n", False),
    ("async def f():\n    c: 'httpx2.Client' = make()\n    return c.send(1)\n", False),
    ("import io\nasync def f(fh: 'io.TextIOWrapper', /):\n    return fh.read()\n", True),
    ("import httpx2\nasync def f():\n    c: 'httpx2.Client' = make()\n    return c.send(1)\n", True),
    ("import io\ndef outer(fh: io.TextIOWrapper):\n    async def inner():\n        return fh.readline()\n"
     "    return inner\n", True),
    ("from pathlib import Path\nasync def f(a, b):\n    p1, p2 = Path(a), Path(b)\n    return p1.exists()\n", True),
    ("import urllib3\nasync def f():\n    c: urllib3.request.RequestMethods = make()\n    return c.urlopen('GET', 'u')\n",
     True),
    ("import httpx2\nasync def f():\n    return httpx2.get('u')\n", True),
    # in memory, or not typed: nothing can block
    ("import io\nasync def f(buf: io.StringIO):\n    return buf.read()\n", False),
    ("async def f(fh):\n    return fh.read()\n", False),
    ("async def f(fh: 'StringIO'):\n    return fh.read()\n", False),
]
