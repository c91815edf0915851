"""SHD105's tier-1 words admit every task the rule reports, not only create_task/ensure_future.

The rule types ``asyncio.Task(coro)`` and ``asyncio.Future()`` as tasks too; with tier 1 asking
for ``create_task``/``ensure_future`` only, those findings were lost with the tiers on."""
from __future__ import annotations

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.prefilter import select
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD105",))


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
    with select.disabled():
        without_tiers = [(d.code, d.line) for d in lint_source(source, "t.py", SETTINGS).diagnostics]
    assert without_tiers == [("SHD105", 12)]
    assert [(d.code, d.line) for d in lint_source(source, "t.py", SETTINGS).diagnostics] == without_tiers
