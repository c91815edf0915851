"""SHD105 tier-2 near misses for issue 30's fifth session (a table of ``NearMisses``,
tests/perf/test_candidates.py). Each ruled-out case has a kept neighbour that an unsound variant
of the condition would rule out too (and so lose its finding)."""

from __future__ import annotations

import functools
import textwrap

from tests.perf.test_candidates import NearMisses

CASES = NearMisses()
case = functools.partial(CASES.case, "SHD105")


_POOL = """
import asyncio
{before}
class Pool:
    def __init__(self):
        self._task = None

    async def run(self):
        try:
            await asyncio.sleep(10)
        finally:
            print("cleanup")

    async def start(self):
        task = asyncio.create_task(self.run())
        self._task = task
        {last}
{method}
    async def stop(self):
        {first}
        {receiver}.cancel()
        {after}
"""


def pool(last: str = "", after: str = "print('stopped')", before: str = "", method: str = "",
         first: str = "pass", receiver: str = "self._task") -> str:
    return _POOL.format(last=last, after=after, before=before, method=method, first=first, receiver=receiver)


_OTHER = """
class Other:
    def go(self):
        self._task = asyncio.create_task(work())
"""

# ``self.<x>``: no value is a spawn; the class's last value gives the type (``qualified_name``)
case(False, 0, pool(last="self._task = None"))  # last: None, no task's type
case(True, 1, pool())  # last: ``task``, typed through its binding as asyncio.Task
case(False, 0, pool(last="self._task = None", before=_OTHER))  # another class's values do not count
# ``self.<x>`` awaited after its cancel (the awaited code is ``self.<x>``): out
case(False, 0, pool(after="await self._task"))
case(True, 1, pool(after="await (self._task)"))  # code ``(self._task)``: not what is watched
case(True, 1, pool(after="await(self._task)"))
case(True, 1, pool(after="await self._task", receiver="(self._task)"))  # the receiver's code is ``(self._task)``
case(True, 1, pool(after="await self . _task"))
case(True, 1, pool(first="await self._task"))  # awaited before the cancel only
case(False, 0, pool(first="while self._task:\n            await self._task\n            break",
                    after="pass").replace("        self._task.cancel()\n        pass",
                                          "            self._task.cancel()"))  # in a loop around it
case(True, 1, pool(first="while self._task:\n            await self._task\n            break"))
# awaited in another method of the class (``_reaped_elsewhere`` reads the first def of a name)
case(False, 0, pool(method="\n    async def join(self):\n        await self._task\n"))
case(True, 1, pool(method="\n    async def start(self):\n        await self._task\n"))


# a name bound to a call that is no spawn (the facts cannot type its receiver): no task
_NAMED = """
    import asyncio
    {imports}

    async def work():
        try:
            await asyncio.sleep(10)
        finally:
            print("cleanup")

    async def main():
        t = {value}
        await asyncio.sleep(1)
        t.cancel()
    """


def named(value: str, imports: str = "from helpers import get_loop") -> str:
    return _NAMED.format(value=value, imports=imports)


case(False, 0, named("get_loop().create_task(work())"))
case(True, 1, named("asyncio.get_running_loop().create_task(work())"))  # a loop: a spawn
# the class itself: typed asyncio.Task (``keep`` spells create_task for tier 1, which needs the word)
_KEEP = "from helpers import get_loop\n    keep = asyncio.create_task"
case(True, 1, named("asyncio.Task(work())", imports=_KEEP))
case(True, 1, named("Task(work())", imports=_KEEP + "\n    from asyncio import Task"))
case(True, 1, named("get_loop().create_task(work())", imports="from helpers import get_loop\n    loop = get_loop()"
                    ).replace("get_loop().create_task", "loop.create_task"))  # a loop by name


# ``for t in <holder>: t.cancel()``: the loop variable named elsewhere in the module, a holder
# that is a ``self`` attribute given no spawn
_LOOP = """
    import asyncio

    async def job():
        try:
            await asyncio.sleep(10)
        finally:
            print("cleanup")

    class Host:
        def __init__(self):
            self._tasks = {{}}

        async def submit(self, k):
            task = asyncio.create_task(job())
            self._tasks[k] = {stored}

        async def shutdown(self):
            for task in self._tasks.values():
                task.cancel()
            {more}
    """


def loop(stored: str = "task", more: str = "self._tasks.clear()") -> str:
    return _LOOP.format(stored=stored, more=more)


case(False, 0, loop())
case(True, 1, loop(stored="asyncio.create_task(job())"))  # a spawn assigned to ``self._tasks[k]``
case(True, 1, loop(more="task = asyncio.create_task(job())\n        await asyncio.sleep(1)\n"
                        "        task.cancel()"))  # the cancelling function binds ``task`` itself
case(True, 0, loop(more="task = None"))  # a value binding in the function: kept (the facts decide)
case(True, 1, loop().replace("self._tasks = {}", "self._tasks = [asyncio.create_task(job())]"))


# receivers that are no name nor ``self.<x>``: only a call, or an attribute ending in
# ``Task``/``Future``, can be typed a task (the facts' name of ``<e>.<x>`` ends in ``.<x>``)
_OTHER_RECEIVER = """
import asyncio

async def job():
    try:
        await asyncio.sleep(10)
    finally:
        print("cleanup")

async def main(app, tasks):
    app.poller = asyncio.create_task(job())
    tasks[0] = asyncio.create_task(job())
    await asyncio.sleep(1)
    {cancel}.cancel()
"""
case(False, 0, _OTHER_RECEIVER.format(cancel="app.poller"))
case(False, 0, _OTHER_RECEIVER.format(cancel="tasks[0]"))
case(False, 0, _OTHER_RECEIVER.format(cancel="(await app.get())"))
case(True, 1, _OTHER_RECEIVER.format(cancel="asyncio.create_task(job())"))
case(True, 1, _OTHER_RECEIVER.format(cancel="asyncio.Task(job())"))
case(True, 1, _OTHER_RECEIVER.format(cancel="asyncio.Task"))

# a task made from a local ``async def`` with no cleanup (``coroutine_target`` finds the def)
_LOCAL = """
import asyncio
{top}
async def main(queue):
    {inner}
    t = asyncio.create_task(feed())
    await asyncio.sleep(1)
    t.cancel()
"""
_FEED = """async def feed():
        while True:
            await queue.put(1)
"""
_FEED_CLEAN = """async def feed():
        try:
            await queue.put(1)
        finally:
            print("cleanup")
"""
case(False, 0, _LOCAL.format(top="", inner=_FEED))
case(True, 1, _LOCAL.format(top="", inner=_FEED_CLEAN))
case(False, 0, _LOCAL.format(inner="pass", top="\n" + textwrap.dedent("    " + _FEED).replace("queue", "q")))
case(True, 1, _LOCAL.format(inner=_FEED + "    feed = None\n", top=""))  # bound to something else after it
case(True, 1, _LOCAL.format(inner=_FEED + "    from helpers import feed\n", top=""))
case(True, 0, _LOCAL.format(inner=_FEED, top="\nfeed = None\n"))  # (the inner def hides it: kept all the same)
case(True, 1, _LOCAL.format(inner="pass", top="\n" + textwrap.dedent("    " + _FEED_CLEAN).replace("queue", "q")))
case(True, 1, _LOCAL.format(top="", inner="def other():\n        " + _FEED.replace("\n    ", "\n        ")))  # not seen
case(True, 1, _LOCAL.format(top="", inner="class K:\n        " + _FEED.replace("\n    ", "\n        ")))  # a method
case(True, 1, _LOCAL.format(top="", inner=_FEED.replace("async def", "def")))  # not a coroutine function


test_tier2_near_miss = CASES.test()
