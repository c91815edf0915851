from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(180)

REPO = str(Path(__file__).resolve().parents[2])

# A 0.5 s threshold and 1.5 s blocks: a loaded machine stops a process for 0.1-0.3 s at times, which
# must neither be a stall of test_fine nor keep the monitor from sampling a block (for its file:line).
TEST_FILE = """
import asyncio, time
import pytest

@pytest.mark.asyncio
async def test_blocks():
    await asyncio.sleep(0.01)
    time.sleep(1.5)
    await asyncio.sleep(0.01)

@pytest.mark.asyncio
async def test_fine():
    await asyncio.sleep(0.05)

@pytest.mark.anyio
async def test_anyio_blocks():
    time.sleep(1.5)
    await asyncio.sleep(0.01)

@pytest.fixture
def anyio_backend():
    return "asyncio"
"""


def _plugin_args() -> list:
    eps = importlib.metadata.entry_points(group="pytest11")
    installed = any(ep.name == "runtime_guard" for ep in eps)
    return [] if installed else ["-p", "runtime_guard.pytest_plugin"]


@pytest.fixture
def tester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    pytester.makepyfile(test_stall=TEST_FILE)
    return pytester


def test_plugin_fails_stalling_async_tests(tester: pytest.Pytester) -> None:
    result = tester.runpytest_subprocess(*_plugin_args(), "--loop-stall-threshold=0.5", "-p", "no:cacheprovider",
                                         "-o", "asyncio_mode=strict")
    result.assert_outcomes(passed=1, failed=2)
    out = result.stdout.str()
    assert "event loop stalled during the test" in out
    assert "test_stall.py:7" in out and "test_stall.py:16" in out
    assert "SHD301" in out


def test_plugin_is_off_by_default(tester: pytest.Pytester) -> None:
    result = tester.runpytest_subprocess(*_plugin_args(), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
