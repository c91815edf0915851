"""End-to-end SkyRL-style scenario (issue 4, "Done when"), on a real local Ray cluster.

The hazardous project in ``skyrl_project/`` (driver.py + worker.py) is linted, fixed with
``shutdown-lint --fix --unsafe-fixes`` into a copy, and both versions are interrupted three
ways by ``bench/skyrl_scenario.py`` (which prints the same table for the README):
Ctrl+C to the driver, an unhandled exception in one trajectory, SIGTERM to the worker.
"""
from __future__ import annotations

import importlib.util
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings

pytestmark = [pytest.mark.ray, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PROJECT = Path(__file__).resolve().parent / "skyrl_project"
N = 20


def _scenario():
    spec = importlib.util.spec_from_file_location("skyrl_scenario", REPO / "bench" / "skyrl_scenario.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("skyrl_scenario", module)  # dataclasses look the module up
    spec.loader.exec_module(module)
    return module


def _codes(path: Path) -> set[str]:
    settings = Settings(selected=tuple(r.code for r in registry.all_rules()), target_version="py311")
    result = lint_source(path.read_bytes(), str(path), settings)
    assert result.error is None, result.error
    return {d.code for d in result.diagnostics}


def test_the_hazardous_project_is_flagged_and_the_fixed_copy_is_clean(tmp_path):
    assert {"SHD403"} <= _codes(PROJECT / "driver.py")
    assert {"SHD101", "SHD404"} <= _codes(PROJECT / "worker.py")
    fixed = _scenario().fixed_copy(tmp_path / "fixed")
    driver, worker = (fixed / "driver.py").read_text(), (fixed / "worker.py").read_text()
    assert "runtime_guard.ray.interruptible_get(ref)" in driver
    assert "runtime_guard.ray.setup_worker()" in worker
    assert "asyncio.TaskGroup()" in worker
    assert not {"SHD101", "SHD403", "SHD404"} & (_codes(fixed / "driver.py") | _codes(fixed / "worker.py"))


def _before_and_after(scenario, case: str, fixed: Path, workdir: Path) -> tuple:
    """``bench/skyrl_scenario.py``'s two runs of ``case`` (the project as written, the fixed copy)
    at the same time: two drivers, each with its own local cluster in its own session, so the
    ~10 s of each cluster's start overlap (run_all runs the six one after the other). A run whose
    driver did not get its work going (``run_case``'s RuntimeError, raised before any
    interruption, nothing asserted yet) is run again."""
    runs = ((PROJECT, "before"), (fixed, "after"))
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(scenario.run_case, project, case, N, workdir, variant) for project, variant in runs]
        results = []
        for future, (project, variant) in zip(futures, runs):
            try:
                results.append(future.result())
            except RuntimeError as e:
                if "did not start" not in str(e):
                    raise
                results.append(scenario.run_case(project, case, N, workdir / "again", variant))
    return tuple(results)


@pytest.mark.timeout(420)
def test_skyrl_scenario_leaks_before_and_not_after(tmp_path):
    scenario = _scenario()
    scenario.GRACE = 6.0
    fixed = scenario.fixed_copy(tmp_path / "fixed_project")
    rows = [_before_and_after(scenario, case, fixed, tmp_path) for case in scenario.CASES]
    print("\n" + scenario.table(rows))
    for before, after in rows:
        # before the fixes: every interruption leaks sandboxes (or hangs)
        assert before.leaked > 0 or not before.exited, (before.case, before.log[-3000:])
        # after: the driver exits by itself, and surfaces the failure
        assert after.exited, (after.case, after.log[-3000:])
        assert after.returncode != 0
        if after.case == "sigterm":
            assert not after.worker_killed, "the fixed worker ignored SIGTERM until SIGKILL"
        assert after.leaked == 0, (after.case, after.log[-3000:])
    by_case = {b.case: b for b, _ in rows}
    assert by_case["ctrl-c"].leaked == N
    assert by_case["exception"].leaked == N - 1  # the failing trajectory cleans itself up
    assert by_case["sigterm"].worker_killed and by_case["sigterm"].leaked == N
