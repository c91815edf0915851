"""SHD102 (unobserved-task-exception) and SHD106 (task-not-retained) never report the same call:
the split is whether the spawned coroutine handles its own exceptions."""
from __future__ import annotations

import pytest

from shutdown_lint import registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD102", "SHD106"), target_version="py312")
RULES = registry.rules_by_code()


def _sources():
    for code in ("SHD102", "SHD106"):
        valid, invalid = RULES[code].examples()
        for i, ex in enumerate([*valid, *invalid]):
            yield pytest.param(ex.code, id=f"{code}-{i}")


@pytest.mark.parametrize("source", list(_sources()))
def test_at_most_one_of_shd102_and_shd106_per_call(source):
    found = lint_source(source.encode(), "example.py", SETTINGS).diagnostics
    places = [(d.line, d.column) for d in found]
    assert len(places) == len(set(places)), [(d.code, d.line, d.column) for d in found]


def test_the_split_follows_the_coroutine():
    src = '''
import asyncio

async def quiet():
    try:
        await asyncio.get_running_loop().create_future()
    except Exception:
        pass

async def loud():
    await asyncio.get_running_loop().create_future()

async def main():
    asyncio.create_task(quiet())
    asyncio.create_task(loud())
'''
    found = lint_source(src.encode(), "example.py", SETTINGS).diagnostics
    assert sorted((d.line, d.code) for d in found) == [(14, "SHD106"), (15, "SHD102")]
