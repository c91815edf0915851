"""Tier-2 near misses for the conditions tightened in issue 30's fourth session (rules SHD602, ...):
each case states whether the rule's ``candidate_tree`` keeps the file and how many findings the
rule reports with the tiers off; with the tiers on linting must find the same (a case ruled out
reports nothing). Each ruled-out case has a kept neighbour that an unsound variant of the
condition would rule out too (and so lose its finding)."""

from __future__ import annotations

from tests.perf.test_candidates import NearMisses

CASES = NearMisses()
case = CASES.case


# ---------------------------------------------------------------- SHD602
# a local child handed on after its start (``with p``, ``return p``, a container, a call that is
# no observer and names no stop, a nested def, ``atexit.register(p.kill)``): ruled out
case("SHD602", False, 0, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        with p:
            work(p.stdout)
    """)
case("SHD602", False, 0, """
    import subprocess
    def start(cmds, workers):
        for cmd in cmds:
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            ready = read(p.stdout)
            if not ready:
                p.kill()
                continue
            workers.append(p)
    """)
case("SHD602", False, 0, """
    import subprocess
    def start(cmd, table):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        table["x"] = {"proc": p, "name": cmd}
    """)
case("SHD602", False, 0, """
    import atexit, subprocess
    def start(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        work()
        atexit.register(p.kill)
    """)
case("SHD602", False, 0, """
    import subprocess, threading
    def start(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        def pump():
            for line in p.stdout:
                print(line)
        threading.Thread(target=pump).start()
    """)
# the same name handed on before the start, or after the name is bound to another child: kept
case("SHD602", True, 1, """
    import subprocess
    def run(cmd, p):
        with p:
            pass
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        work()
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(a, b):
        p = subprocess.Popen(a, stdout=subprocess.PIPE)
        work()
        p = subprocess.Popen(b)
        return p
    """)
# an observer's argument is a look, a callee with a stop word stops it (on the normal path
# here), ``self.proc = p`` keeps it on the object: kept and reported
case("SHD602", True, 1, """
    import logging, subprocess
    log = logging.getLogger()
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        log.info(p)
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        work()
        terminate_later(p)
    """)
case("SHD602", True, 1, """
    import subprocess
    class Server:
        def start(self, cmd):
            p = subprocess.Popen(cmd)
            self.proc = p
    """)
# a stop in an ``except`` handler or a ``finally``: ruled out, unless the child has its own
# session (reported for Ctrl+C) or the stop is in the ``try`` body (the normal path)
case("SHD602", False, 0, """
    import subprocess
    def run(cmd, timeout):
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            raise
        return out
    """)
case("SHD602", False, 0, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        try:
            work()
        finally:
            p.terminate()
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, start_new_session=True)
        try:
            work()
        except Exception:
            p.kill()
            raise
        p.wait()
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        try:
            work()
            p.terminate()
        except ValueError:
            pass
    """)
# only harmless code (reading the pipes, logging, collecting) before the first, untimed stop:
# ruled out; real work, a raise, or a timed first stop: kept and reported
case("SHD602", False, 0, """
    import logging, subprocess
    log = logging.getLogger()
    def stream(cmd):
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        lines = []
        with child.stdout:
            for line in iter(child.stdout.readline, ""):
                if child.poll() is not None:
                    break
                lines.append(line.strip())
                log.info(line.strip())
        code = child.wait()
        return code, lines
    """)
case("SHD602", True, 1, """
    import subprocess
    def stream(cmd):
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        for line in child.stdout:
            handle(line)
        return child.wait()
    """)
case("SHD602", True, 1, """
    import subprocess
    def stream(cmd, bad):
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        if bad:
            raise bad
        return child.wait()
    """)
case("SHD602", True, 1, """
    import subprocess
    def stream(cmd):
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        lines = list(child.stdout)
        child.wait(5)
        return lines
    """)
# a child kept on ``self``, released in the class by a callee with a stop word, a hand-on or a
# return: ruled out; only printed, or released in a class nested in a method: kept and reported
case("SHD602", False, 0, """
    import subprocess
    class Server:
        def start(self, cmd):
            self._proc = subprocess.Popen(cmd)
        def stop(self):
            stop_server(self._proc, self.dir)
    """)
case("SHD602", False, 0, """
    import subprocess
    class Wrapper:
        def __init__(self, cmd):
            self.__sub = subprocess.Popen(cmd)
        def __getattr__(self, name):
            return object.__getattribute__(self.__sub, name)
    """)
case("SHD602", False, 0, """
    import subprocess
    class Server:
        def start(self, cmd):
            self._proc = subprocess.Popen(cmd)
        def get(self):
            return self._proc
    """)
case("SHD602", True, 1, """
    import subprocess
    class Server:
        def start(self, cmd):
            self._proc = subprocess.Popen(cmd)
        def show(self):
            print(self._proc)
    """)
case("SHD602", True, 1, """
    import subprocess
    class Server:
        def start(self, cmd):
            self._proc = subprocess.Popen(cmd)
        def helper(self):
            class Other:
                def stop(self):
                    stop_server(self._proc)
            return Other
    """)


# ---------------------------------------------------------------- SHD105
_WORK = """
import asyncio
async def work():
    try:
        await asyncio.sleep(10)
    finally:
        await asyncio.sleep(0)
async def quiet():
    await asyncio.sleep(10)
"""
# awaited after the cancel (by name): ruled out; awaited only before it, or the receiver in
# parentheses (its code is no name the await mentions): kept and reported
case("SHD105", False, 0, _WORK + """
async def main():
    t = asyncio.create_task(work())
    t.cancel()
    await asyncio.gather(t, return_exceptions=True)
""")
case("SHD105", True, 1, _WORK + """
async def main():
    t = asyncio.create_task(work())
    await asyncio.wait([t], timeout=1)
    t.cancel()
""")
case("SHD105", True, 1, _WORK + """
async def main():
    t = asyncio.create_task(work())
    (t).cancel()
    await asyncio.gather(t, return_exceptions=True)
""")
# inside a loop around the cancel an earlier await counts too: ruled out
case("SHD105", False, 0, _WORK + """
async def main():
    while True:
        t = asyncio.create_task(work())
        await asyncio.wait([t], timeout=1)
        t.cancel()
""")
# ``for t in tasks: t.cancel()`` then the holder gathered: ruled out; the iterable in
# parentheses (its code is not the name): kept and reported
case("SHD105", False, 0, _WORK + """
async def main(n):
    tasks = [asyncio.create_task(work()) for _ in range(n)]
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
""")
case("SHD105", True, 1, _WORK + """
async def main(n):
    tasks = [asyncio.create_task(work()) for _ in range(n)]
    for t in (tasks):
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
""")
# the loop over the tasks is not one around the cancel: a hand-over before the cancel in it is
# not counted: kept and reported
case("SHD105", True, 1, _WORK + """
async def main(n):
    tasks = [asyncio.create_task(work()) for _ in range(n)]
    for t in tasks:
        note(t)
        t.cancel()
""")
# a loop over a holder that is given no spawn: ruled out; one given a spawn: kept and reported
case("SHD105", False, 0, _WORK + """
async def main(items):
    pending = set()
    for item in items:
        pending.add(item.start())
    for t in pending:
        t.cancel()
""")
case("SHD105", True, 1, _WORK + """
async def main(items):
    pending = set()
    for item in items:
        pending.add(asyncio.create_task(work()))
    for t in pending:
        t.cancel()
""")
# bound to ``None`` and to a spawn of a coroutine with no cleanup: ruled out; bound last to a
# name typed as a task: kept and reported
case("SHD105", False, 0, _WORK + """
class Pump:
    async def quiet(self):
        await asyncio.sleep(10)
    async def main(self):
        t = None
        t = asyncio.create_task(self.quiet())
        t.cancel()
""")
case("SHD105", True, 1, _WORK + """
other = asyncio.create_task(work())
class Pump:
    async def quiet(self):
        await asyncio.sleep(10)
    async def main(self):
        t = None
        t = asyncio.create_task(self.quiet())
        t = other
        t.cancel()
""")

# ---------------------------------------------------------------- SHD404
# an actor with no async method of its own whose bases are classes of this module with no
# async method that may own a resource: ruled out; a base whose async method
# holds a ``finally``, a base name bound twice, a base of a base imported: kept
case("SHD404", False, 0, """
import ray
class Base:
    def size(self):
        return 1
class Middle(Base):
    async def ping(self):
        return 1
@ray.remote
class Actor(Middle):
    def __init__(self):
        self.n = 0
""")
case("SHD404", True, 1, """
import ray
class Base(object):
    def size(self):
        return 1
class Middle(Base):
    async def serve(self):
        try:
            await self.loop()
        finally:
            await self.close()
@ray.remote
class Actor(Middle):
    def __init__(self):
        self.n = 0
""")
case("SHD404", True, 0, """
import ray
class Middle:
    async def ping(self):
        return 1
for Middle in [Middle]:
    pass
@ray.remote
class Actor(Middle):
    def __init__(self):
        self.n = 0
""")
case("SHD404", True, 0, """
import ray, lib
class Middle(lib.Base):
    def size(self):
        return 1
@ray.remote
class Actor(Middle):
    def __init__(self):
        self.n = 0
""")
case("SHD404", True, 0, """
import ray
from lib import Base
class Middle(Base):
    def size(self):
        return 1
@ray.remote
class Actor(Middle):
    def __init__(self):
        self.n = 0
""")

# ---------------------------------------------------------------- SHD501
# ``_after`` stops only at simple statements that follow the cancel's statement (or a statement
# around it) in their block: a ``raise`` or exit in another branch, or nested in a later ``if``,
# is never met: ruled out; the same statement right after the cancel (or after the ``if`` that
# holds it): kept and reported
case("SHD501", False, 0, """
import ray
def main(ref, ok):
    if ok:
        ray.cancel(ref)
    else:
        raise RuntimeError("no")
""")
case("SHD501", True, 1, """
import ray
def main(ref, ok):
    if ok:
        ray.cancel(ref)
    raise RuntimeError("no")
""")
case("SHD501", False, 0, """
import ray, sys
def main(ref, bad):
    ray.cancel(ref)
    if bad:
        sys.exit(1)
""")
case("SHD501", True, 1, """
import ray, sys
def run(ref, bad):
    try:
        ray.get(ref)
    except ValueError:
        ray.cancel(ref)
    sys.exit(1)
""")

# ---------------------------------------------------------------- SHD503
# an executor in a class body is a class attribute (not stored here): ruled out; the same
# assignment at module level: kept and reported
case("SHD503", False, 0, """
from concurrent.futures import ThreadPoolExecutor
class Config:
    pool: ThreadPoolExecutor = ThreadPoolExecutor(4)
""")
case("SHD503", True, 1, """
from concurrent.futures import ThreadPoolExecutor
pool: ThreadPoolExecutor = ThreadPoolExecutor(4)
""")
# a module-level executor registered for shutdown at module level: ruled out; the registration
# written with parentheses around its argument (not the executor's code), or inside a def: kept
case("SHD503", False, 0, """
import atexit
from concurrent.futures import ThreadPoolExecutor
pool = ThreadPoolExecutor(4)
atexit.register(pool.shutdown)
""")
case("SHD503", True, 1, """
import atexit
from concurrent.futures import ThreadPoolExecutor
pool = ThreadPoolExecutor(4)
atexit.register((pool.shutdown))
""")
case("SHD503", True, 1, """
import atexit
from concurrent.futures import ThreadPoolExecutor
pool = ThreadPoolExecutor(4)
def later():
    return pool.submit(print)
""")

# ---------------------------------------------------------------- SHD102
# a dropped task of a method that swallows every Exception (``handles_own_errors``): ruled out;
# the handler's type in parentheses (its code is not ``Exception``), a handler that re-raises, a
# second def of the method: kept
_POLLER = """
import asyncio
class Poller:
    async def _poll(self):
        "One poll."
        try:
            await self.fetch()
        except HANDLER:
            BODY
    def start(self):
        asyncio.get_running_loop().create_task(self._poll())
"""
case("SHD102", False, 0, _POLLER.replace("HANDLER", "Exception").replace("BODY", "self.failures += 1"))
case("SHD102", True, 1, _POLLER.replace("HANDLER", "(Exception)").replace("BODY", "self.failures += 1"))
case("SHD102", True, 1, _POLLER.replace("HANDLER", "Exception").replace("BODY", "raise"))
case("SHD102", True, 0, _POLLER.replace("HANDLER", "Exception").replace("BODY", "self.failures += 1").replace(
    "    def start(self):", "    async def _poll(self):\n        await self.fetch()\n    def start(self):"))

# ---------------------------------------------------------------- SHD402
# the coroutine run at the entrypoint is a module-level def that names SIGTERM (``_sigterm_handled``
# puts it on the path): ruled out; the name bound twice, or SIGTERM only in a string: kept
case("SHD402", False, 0, """
import asyncio, signal
async def serve():
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
    await handle_requests()
def main():
    asyncio.run(serve())
if __name__ == "__main__":
    main()
""")
case("SHD402", True, 1, """
import asyncio, signal
async def serve():
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
    await handle_requests()
async def serve():
    await handle_requests()
def main():
    asyncio.run(serve())
if __name__ == "__main__":
    main()
""")
case("SHD402", True, 1, """
import asyncio
async def serve():
    print("stop with SIGTERM")
    await handle_requests()
def main():
    asyncio.run(serve())
if __name__ == "__main__":
    main()
""")
# SIGTERM named in module-level code: ruled out; only in a class body: kept
case("SHD402", False, 0, """
import asyncio, signal
signal.signal(signal.SIGTERM, signal.default_int_handler)
if __name__ == "__main__":
    asyncio.run(work())
""")
case("SHD402", True, 1, """
import asyncio, signal
class Config:
    stop = signal.SIGTERM
if __name__ == "__main__":
    asyncio.run(work())
""")

test_tier2_near_miss = CASES.test()
