"""SHD102 tier-2 near misses for issue 30's fifth session (a table of ``NearMisses``,
tests/perf/test_candidates.py). Each ruled-out case has a kept neighbour that an unsound variant
of the condition would rule out too (and so lose its finding)."""

from __future__ import annotations

import functools

from tests.perf.test_candidates import NearMisses

CASES = NearMisses()
case = functools.partial(CASES.case, "SHD102")


# ``self.<m>.create_task(...)`` in a method of a class that defines ``m``: the callee's qualified
# name is the method's, so it is no spawn (the loop-like name does not count then)
_ROUTER = """
import asyncio

class Router:
    {prop}
    def _event_loop(self):
        return asyncio.get_event_loop()

    async def probe(self):
        raise RuntimeError("x")

    def kick(self):
        {receiver}.create_task(self.probe())
"""


def router(prop: str = "@property", receiver: str = "self._event_loop") -> str:
    return _ROUTER.format(prop=prop, receiver=receiver)


case(False, 0, router())
case(False, 0, router(prop=""))
case(True, 1, router().replace("def _event_loop(self)", "def event_loop_(self)"))  # no such method
case(True, 1, router(receiver="self.loop").replace("def _event_loop(self)", "def loop_(self)"))
case(True, 1, router().replace("    def kick(self):", "class Other:\n    def kick(self):"))  # another class


# a task kept in a name, then in a ``self`` attribute that is handed over elsewhere
_HANDLER = """
import asyncio

class Proto:
    async def start(self):
        raise RuntimeError("x")

    def made(self, loop):
        task = loop.create_task(self.start())
        {store}

    async def shutdown(self):
        {use}
"""


def handler(store: str = "self._task_handler = task",
            use: str = "await asyncio.shield(self._task_handler)") -> str:
    return _HANDLER.format(store=store, use=use)


case(False, 0, handler())
case(True, 1, handler(use="self._task_handler.cancel()"))  # a neutral method: not observed
case(True, 1, handler(use="print(self._task_handler)"))  # a neutral function
case(True, 1, handler(use="await asyncio.gather(self._task_handler, return_exceptions=True)"))
case(False, 0, handler(store="other.handler = task", use="pass"))  # someone else's attribute
case(True, 1, handler(store="x = task", use="pass"))  # a name: not followed here


# a task kept in a collection (``self.<x>[k] = task``, ``<holder>.append(task)``) whose holder
# is handed over (itself, or a view of it)
_TABLE = """
import asyncio

class Pusher:
    def __init__(self):
        self._tasks = {{}}

    async def push(self, name):
        raise RuntimeError(name)

    def start(self, name):
        self._tasks[name] = asyncio.create_task(self.push(name))

    async def stop(self):
        {use}
"""


def table(use: str) -> str:
    return _TABLE.format(use=use)


# (a builtin copy of the tasks is the same tasks: waited on and the done set discarded, lost)
case(True, 1, table("await asyncio.wait(list(self._tasks.values()))"))
case(False, 0, table("await asyncio.gather(*self._tasks.values())"))
# (asyncio.wait observes only through its done set: discarded, the failure is lost; asked, it is not)
case(True, 1, table("await asyncio.wait(self._tasks)"))
case(True, 0, table("done, _ = await asyncio.wait(self._tasks)\n        for t in done:\n            t.result()"))
case(False, 0, table("await asyncio.wait(self._tasks, return_when=asyncio.FIRST_COMPLETED)"))
# (kept, and reported: the holder in ``self._tasks[name] = ...`` only puts an entry, and these
# uses do not look at the tasks)
case(True, 1, table("await asyncio.gather(*self._tasks.values(), return_exceptions=True)"))
case(True, 1, table("print(len(self._tasks.values()))"))
case(True, 1, table("for t in self._tasks.values():\n            t.cancel()"))

_LIST = """
import asyncio

async def fetch(i):
    raise RuntimeError(i)

async def main(n):
    tasks = []
    for i in range(n):
        tasks.append(asyncio.create_task(fetch(i)))
    {use}
"""


def listed(use: str) -> str:
    return _LIST.format(use=use)


case(False, 0, listed("await asyncio.gather(*tasks)"))
case(False, 0, listed("return tasks"))
case(True, 1, listed("await asyncio.gather(*tasks, return_exceptions=True)"))
case(True, 1, listed("print(len(tasks))"))
case(True, 1, listed("tasks.clear()"))
case(True, 1, listed("keep(tasks.clear())"))  # a mutator's result handed over: not the tasks'
case(False, 0, listed("keep(tasks.copy())"))
case(True, 1, listed("others = []\n    others.extend(tasks)"))  # kept elsewhere: followed by the rule only
case(False, 0, listed("await asyncio.gather(*tasks)").replace("tasks.append(", "tasks.add("))
case(True, 1, listed("await asyncio.gather(*tasks)").replace("tasks.append(", "tasks.discard("))


test_tier2_near_miss = CASES.test()
