"""Suite-wide test configuration.

The suite runs on pytest-xdist workers (pyproject.toml's addopts: ``-n 3 --dist loadgroup``): most
of its time is waiting on subprocesses, Ray clusters and signals, which overlaps well even on two
cores. ``-n 0`` (or ``-p no:xdist``) runs it in one process.

A module whose tests share a module-scoped fixture (a Ray cluster, a built wheel, a private
multi-node cluster) is kept on one worker (an ``xdist_group`` named after the module), so the
fixture is set up once, not once per worker that happens to run one of its tests. The CUDA
tests (tests/gpu) share one GPU: they are one group, run one after the other.

Order: xdist hands out work units (a group, or one test) in the order collected
(``--no-loadscope-reorder`` in pyproject.toml; xdist's own order puts every group, long or short,
before every single test). A long test handed out last leaves the other workers idle while it
runs, so the end-to-end tests (``slow``: Ray clusters, torch.distributed, long subprocesses) and
the tests that ask for a longer timeout than the default (the fuzzing) are collected first, then
the other groups, then the single tests that set a timeout of their own (they wait on processes
and signals), then the many short tests that fill the workers up at the end. Only the order
changes.
"""
from __future__ import annotations

from pathlib import Path

import pytest

GPU_TESTS = Path(__file__).resolve().parent / "gpu"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if item.get_closest_marker("xdist_group") is not None:
            continue
        if GPU_TESTS in item.path.resolve().parents:
            item.add_marker(pytest.mark.xdist_group("gpu"))
            continue
        if info is None:
            continue
        for name in info.names_closure:
            defs = info.name2fixturedefs.get(name) or ()
            if defs and defs[-1].scope in ("module", "package"):
                item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module else item.nodeid))
                break
    # a stable sort: the slow tests first (with the rest of their group, which runs on the same
    # worker anyway), then the other groups (each a block of work for one worker), then the
    # rest, each part in its collected order
    def group(item: pytest.Item) -> object:
        mark = item.get_closest_marker("xdist_group")
        return (mark.args[0] if mark.args else mark.kwargs.get("name")) if mark is not None else item

    def long(item: pytest.Item) -> bool:  # marked slow, or asks for more time than the default
        timeout = item.get_closest_marker("timeout")
        given = timeout.args[0] if timeout is not None and timeout.args else timeout.kwargs.get("timeout") if timeout else None
        return item.get_closest_marker("slow") is not None or (given or 0) > float(config.getini("timeout") or 0)

    slow = {group(item) for item in items if long(item)}
    grouped = {group(item) for item in items if item.get_closest_marker("xdist_group") is not None}
    # among the single tests, those that set a timeout of their own (subprocesses, signals, waits:
    # tests/runtime_guard, robustness...) before the rest (parses and lints of a few lines): in
    # collected order tests/runtime_guard came after the ~2,900 tests of tests/rules, and the last
    # test of a CI run was one of its tens-of-seconds waits while the other workers had nothing left
    items.sort(key=lambda item: 0 if group(item) in slow else 1 if group(item) in grouped
               else 2 if item.get_closest_marker("timeout") is not None else 3)
