"""SHD106 tier-2 near misses for issue 30's fifth session (a table of ``NearMisses``,
tests/perf/test_candidates.py). Each ruled-out case has a kept neighbour that an unsound variant
of the condition would rule out too (and so lose its finding)."""

from __future__ import annotations

import functools
import textwrap

from tests.perf.test_candidates import NearMisses

CASES = NearMisses()
case = functools.partial(CASES.case, "SHD106")


# a method spawns ``self.<m>()`` and drops the task; ``m`` handles its own errors. When every
# await in ``m`` is ``asyncio.sleep`` the loop's timer holds the task: not reported
_REPLICA = """
import asyncio
{imports}

class Replica:
    def __init__(self, loop):
        self._loop = loop

    def start(self):
        self._loop.create_task(self.report())

    async def report(self):
        while True:
            try:
                {wait}
                self.push()
            except Exception:
                print("failed")
{more}"""


def replica(wait: str = "await asyncio.sleep(1)", imports: str = "", more: str = "") -> str:
    return _REPLICA.format(wait=wait, imports=imports, more=more)


case(False, 0, replica())
case(True, 1, replica(wait="await self.flush()"))
case(True, 1, replica(wait="print(f'{await self.flush()}')"))  # an await in an f-string
case(True, 1, replica(wait="await asyncio.sleep(1)\n                await self.flush()"))
case(True, 0, replica(wait="await aio.sleep(1)", imports="import asyncio as aio"))  # left to the rule
case(True, 1, replica(imports="asyncio = None"))  # ``asyncio`` bound twice: not the module's sleep
# the facts resolve ``self.report`` to the class's first def of that name
case(False, 0, replica(more="\n    async def report(self):\n        await self.flush()\n"))
case(True, 1, replica(wait="await self.flush()", more="\n    async def report(self):\n"
                                                     "        await asyncio.sleep(1)\n"))


# the spawned coroutine surely does not handle its own errors (``_swallows_errors`` stops at a
# statement it rejects, ``_only_waits`` at one that is no wait): SHD102's, not SHD106's
_DROP = """
import asyncio

async def work(lock, event, log):
    {body}

def kick(lock, event, log):
    asyncio.create_task(work(lock, event, log))
"""


def drop(body: str) -> str:
    return _DROP.format(body=textwrap.indent(textwrap.dedent(body), "    ").lstrip())


_TRY = """
try:
    await step()
except Exception:
    log("failed")
"""
case(False, 0, drop("async with lock:\n    pass\n" + _TRY))
case(True, 1, drop("x = 1\n" + _TRY))  # bookkeeping first: it swallows
case(True, 1, drop("if event:\n    x = 1\n" + _TRY))
case(False, 0, drop("if event:\n    return\n" + _TRY))
case(True, 1, drop("await asyncio.sleep(1)\n" + _TRY))  # an await that may sleep is bookkeeping
case(False, 0, drop("await step()\n" + _TRY))
case(True, 1, _DROP.format(body="if event: x = 1\n    " + _TRY.strip().replace("\n", "\n    ")).replace(
    "if event: x = 1", "if event:\n        x = 1"))
case(False, 0, drop(_TRY + "else:\n    pass\n"))
case(False, 0, drop(_TRY.replace('log("failed")', 'raise')))  # the broad handler re-raises
case(True, 1, drop(_TRY.replace("except Exception:", "except ValueError:\n    raise\nexcept Exception:")))
case(False, 0, drop(_TRY + "finally:\n    raise RuntimeError()\n"))
case(True, 1, drop(_TRY + "finally:\n    def later():\n        raise RuntimeError()\n"))
case(False, 0, drop("while True:\n    await step()\n" + _TRY))
case(True, 1, drop("while True:\n" + textwrap.indent(_TRY, "    ")))
# only waits: sleeps, gathers that return exceptions, ``event.set()``
case(False, 0, drop("await asyncio.gather(step(), return_exceptions=True)\nlog(event)"))
case(True, 1, drop("await asyncio.gather(step(), return_exceptions=True)\nevent.set()"))
case(False, 0, drop("await asyncio.gather(step(), return_exceptions=True)\nevent.set(1)"))
case(False, 0, drop("await step()\nevent.set()"))
case(True, 1, drop("'''doc'''\nawait asyncio.gather(step(), return_exceptions=True)\npass"))


test_tier2_near_miss = CASES.test()
