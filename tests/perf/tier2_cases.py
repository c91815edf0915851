"""Near misses for the candidate tier 2 conditions (``Rule.candidate_tree``): small programs
just on either side of a condition, ``(source, the condition's value)``. ``test_candidates.py``
checks each value and that linting with the tiers on and off finds the same."""

# fmt: off
CASES: dict[str, list[tuple[str, bool]]] = {}

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
    # 10 `force` spelled with a fullwidth letter: ast reads `force=True`, libcst (the rule) does
    # not see a force keyword -> reported, must stay a candidate
    ("""
import ray, sys

def stop(ref):
    ray.cancel(ref, \uff46orce=True)
    sys.exit(1)
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

