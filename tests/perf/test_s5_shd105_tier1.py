"""SHD105's tier-1 words admit every task the rule reports, not only create_task/ensure_future.

The rule types ``asyncio.Task(coro)`` and ``asyncio.Future()`` as tasks too; with tier 1 asking
for ``create_task``/``ensure_future`` only, those findings were lost with the tiers on."""
from __future__ import annotations

import pytest

from tests.perf.test_candidates import _tiers_agree


@pytest.mark.parametrize("make", ["asyncio.Task(work())", "asyncio.Future()",
                                  "asyncio.create_task(work())"])
def test_tiers_on_find_what_tiers_off_find(make: str) -> None:
    source = f"""\
import asyncio

async def work():
    try:
        await asyncio.sleep(10)
    finally:
        print("cleanup")

async def main():
    t = {make}
    await asyncio.sleep(0)
    t.cancel()
    return 1
""".encode()
    assert _tiers_agree("SHD105", source, key=lambda d: (d.code, d.line)) == [("SHD105", 12)]
