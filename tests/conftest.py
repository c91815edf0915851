"""Suite-wide test configuration.

The suite runs on pytest-xdist workers (pyproject.toml's addopts: ``-n 3 --dist loadgroup``): most
of its time is waiting on subprocesses, Ray clusters and signals, which overlaps well even on two
cores. ``-n 0`` (or ``-p no:xdist``) runs it in one process.

A module whose tests share a module-scoped fixture (a Ray cluster, a built wheel, a private
multi-node cluster) is kept on one worker (an ``xdist_group`` named after the module), so the
fixture is set up once, not once per worker that happens to run one of its tests. The CUDA
tests (tests/gpu) share one GPU: they are one group, run one after the other.
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
