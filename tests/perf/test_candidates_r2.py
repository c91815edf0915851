"""Tier-2 near misses for the conditions tightened in issue 30 (SHD602, SHD106, SHD105, SHD102,
SHD104): each case states whether the rule's ``candidate_tree`` keeps the file and what the rule
reports with the tiers off; the tiers on must report the same (a case ruled out reports nothing)."""

from __future__ import annotations

from tests.perf.test_candidates import NearMisses

CASES = NearMisses()
case = CASES.case


# ---------------------------------------------------------------- SHD602
# waited for in the statement right after the start: ruled out; work in between, a timed wait,
# a second statement on the wait's line, a use in a handler before the ``else``: kept
case("SHD602", False, 0, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        out, err = p.communicate()
        work(out)
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        work()
        out, err = p.communicate()
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        out, err = p.communicate(timeout=5)
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        out, err = p.communicate(); work()
    """)
case("SHD602", False, 0, """
    import subprocess
    def run(cmd):
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        except OSError:
            return None
        else:
            out, _ = p.communicate()
        return out
    """)
case("SHD602", True, 0, """
    import subprocess
    def run(cmd):
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        except OSError:
            p = None
        else:
            out, _ = p.communicate()
        return out
    """)
# the same in an ``except*`` try: the rule's window goes on after the try, not into its else: kept
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        try:
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        except* OSError:
            return None
        else:
            out, _ = p.communicate()
        return out
    """)
# no pipe and nothing that stops the child: ruled out; a helper whose name says it reaps: kept
case("SHD602", False, 0, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd)
        work()
    """)
case("SHD602", True, 1, """
    import subprocess
    def run(cmd):
        p = subprocess.Popen(cmd)
        work()
        reap_child(p)
    """)
# kept on self: stopped by the same class (ruled out), by an unrelated one (kept, reported), in its
# own session (ruled out), a session flag that is not a literal (kept), outside a method (ruled out)
case("SHD602", False, 0, """
    import subprocess
    class Server:
        def start(self, cmd):
            self.proc = subprocess.Popen(cmd)
        def close(self):
            self.proc.kill()
    """)
case("SHD602", True, 1, """
    import subprocess
    class Server:
        def start(self, cmd):
            self.proc = subprocess.Popen(cmd)
    class Other:
        def close(self):
            self.proc.kill()
    """)
case("SHD602", False, 0, """
    import subprocess
    class Daemon:
        def start(self, cmd):
            self.proc = subprocess.Popen(cmd, start_new_session=True)
    """)
case("SHD602", True, 0, """
    import subprocess
    class Daemon:
        def start(self, cmd, detach):
            self.proc = subprocess.Popen(cmd, start_new_session=detach)
    """)
case("SHD602", False, 0, """
    import subprocess
    class Server:
        def start(self, cmd):
            def launch():
                self.proc = subprocess.Popen(cmd)
            launch()
    """)
# handed right away to a helper whose name says it waits: ruled out; to an observer: kept
case("SHD602", False, 0, """
    import subprocess
    def shell(command, timeout=None):
        p = subprocess.Popen(command, stdout=subprocess.PIPE)
        return wait_for_process(p, timeout=timeout)
    """)
case("SHD602", True, 1, """
    import subprocess
    def shell(command):
        p = subprocess.Popen(command, stdout=subprocess.PIPE)
        print(p)
        work()
        p.wait()
    """)
# a multiprocessing child never started, or a daemon: ruled out; started, joined after work: kept
case("SHD602", False, 0, """
    import multiprocessing
    def train(cfg):
        loader = multiprocessing.Process(target=produce, args=(cfg,))
        fit(cfg)
        loader.join()
    """)
case("SHD602", False, 0, """
    import multiprocessing
    def train(cfg):
        loader = multiprocessing.Process(target=produce, args=(cfg,), daemon=1)
        loader.start()
        fit(cfg)
        loader.join()
    """)
case("SHD602", True, 1, """
    import multiprocessing
    def train(cfg):
        loader = multiprocessing.Process(target=produce, args=(cfg,), daemon=False)
        loader.start()
        fit(cfg)
        loader.join()
    """)

# ---------------------------------------------------------------- SHD106
case("SHD106", True, 1, """
    import asyncio
    async def beat(conn):
        while True:
            try:
                await conn.ping()
            except Exception:
                pass
    async def start(conn):
        asyncio.create_task(beat(conn))
    """)
# the coroutine catches only some errors: ruled out (SHD102's call)
case("SHD106", False, 0, """
    import asyncio
    async def beat(conn):
        try:
            await conn.ping()
        except ValueError:
            pass
    async def start(conn):
        asyncio.create_task(beat(conn))
    """)
# a bound task that is read: ruled out; read only in a parameter default of a nested def: kept
case("SHD106", False, 0, """
    import asyncio
    async def beat(conn):
        try:
            await conn.ping()
        except Exception:
            pass
    async def start(conn):
        t = asyncio.create_task(beat(conn))
        await t
    """)
case("SHD106", True, 1, """
    import asyncio
    async def beat(conn):
        try:
            await conn.ping()
        except Exception:
            pass
    async def start(conn):
        t = asyncio.create_task(beat(conn))
        def later(task=t):
            return task
    """)

# ---------------------------------------------------------------- SHD105
case("SHD105", True, 1, """
    import asyncio
    async def work():
        try:
            await asyncio.sleep(10)
        finally:
            print("cleanup")
    async def main():
        t = asyncio.create_task(work())
        await asyncio.sleep(1)
        t.cancel()
    """)
# a timer handle (``call_later``) is no task: ruled out
case("SHD105", False, 0, """
    import asyncio
    async def main(loop, cb):
        h = loop.call_later(5, cb)
        await asyncio.sleep(1)
        h.cancel()
    """)
# the same name is a task only in another function: ruled out; in the enclosing one: kept
case("SHD105", False, 0, """
    import asyncio
    async def spawn(w):
        t = asyncio.create_task(w())
        return t
    async def stop(loop, cb):
        t = loop.call_later(5, cb)
        t.cancel()
    """)
case("SHD105", True, 1, """
    import asyncio
    async def work():
        try:
            await asyncio.sleep(10)
        finally:
            print("cleanup")
    async def main():
        t = asyncio.create_task(work())
        async def stop():
            t.cancel()
        await stop()
    """)
# a loop over tasks: kept
case("SHD105", True, 1, """
    import asyncio
    async def work():
        try:
            await asyncio.sleep(10)
        finally:
            print("cleanup")
    async def main():
        tasks = [asyncio.create_task(work()) for _ in range(3)]
        for task in tasks:
            task.cancel()
    """)

# every binding spawns a coroutine with no cleanup (a method of the class, a library wait): ruled
# out; a method with a finally, an unknown coroutine: kept
case("SHD105", False, 0, """
    import asyncio
    class Poller:
        async def _poll(self):
            while True:
                await asyncio.sleep(1)
        async def run(self):
            self._t = asyncio.create_task(self._poll())
            await asyncio.sleep(5)
            self._t.cancel()
    """)
case("SHD105", True, 1, """
    import asyncio
    class Poller:
        async def _poll(self):
            try:
                await asyncio.sleep(1)
            finally:
                print("closed")
        async def run(self):
            self._t = asyncio.create_task(self._poll())
            await asyncio.sleep(5)
            self._t.cancel()
    """)
case("SHD105", False, 0, """
    import asyncio
    async def run(event):
        t = asyncio.create_task(event.wait())
        await asyncio.sleep(5)
        t.cancel()
    """)
case("SHD105", True, 1, """
    import asyncio
    async def run(helper):
        t = asyncio.create_task(helper.serve())
        await asyncio.sleep(5)
        t.cancel()
    """)

# ---------------------------------------------------------------- SHD102
# tasks of a comprehension handed to gather: ruled out; to a gather whose results are dropped: kept
case("SHD102", False, 0, """
    import asyncio
    async def main(xs):
        tasks = [asyncio.create_task(work(x)) for x in xs]
        await asyncio.gather(*tasks)
    """)
case("SHD102", True, 1, """
    import asyncio
    async def main(xs):
        tasks = [asyncio.create_task(work(x)) for x in xs]
        await asyncio.gather(*tasks, return_exceptions=True)
    """)
# asyncio.wait's result discarded: the failures are lost (kept, and reported); its done set asked
# for results, or a FIRST_COMPLETED race: observed
case("SHD102", True, 1, """
    import asyncio
    async def main(xs):
        await asyncio.wait({asyncio.ensure_future(work(x)) for x in xs})
    """)
case("SHD102", True, 0, """
    import asyncio
    async def main(xs):
        done, _ = await asyncio.wait({asyncio.ensure_future(work(x)) for x in xs})
        for t in done:
            t.result()
    """)
# tasks named in a list handed to asyncio.wait: kept (reported when the result is discarded), and
# ruled out in a FIRST_COMPLETED race
case("SHD102", True, 2, """
    import asyncio
    async def main():
        t1 = asyncio.create_task(a())
        t2 = asyncio.create_task(b())
        await asyncio.wait([t1, t2])
    """)
case("SHD102", False, 0, """
    import asyncio
    async def main():
        t1 = asyncio.create_task(a())
        t2 = asyncio.create_task(b())
        await asyncio.wait([t1, t2], return_when=asyncio.FIRST_COMPLETED)
    """)
# a TaskGroup's create_task is no spawn: ruled out; a loop's (by its name) is one: kept
case("SHD102", False, 0, """
    import asyncio
    async def main():
        async with asyncio.TaskGroup() as tg:
            tg.create_task(work())
    """)
case("SHD102", True, 1, """
    def start(self):
        self._loop.create_task(work())
    """)

# ---------------------------------------------------------------- SHD104
# ``raise e from None`` of the caught cancellation re-raises it: ruled out; of another name: kept
case("SHD104", False, 0, """
    import asyncio
    async def work(response):
        try:
            await response.next()
        except asyncio.CancelledError as e:
            if not response.cancelled():
                response.cancel()
            raise e from None
    """)
case("SHD104", True, 1, """
    import asyncio
    async def work(response, other):
        try:
            await response.next()
        except asyncio.CancelledError as e:
            raise other from e
    """)

test_tier2_near_miss = CASES.test()
