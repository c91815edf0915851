"""pytest plugin: ``pytest --loop-stall-threshold=0.1`` fails async tests whose event loop stalls.

Registered through the ``pytest11`` entry point; inert unless the option or the
``loop_stall_threshold`` ini value is set. Works with pytest-asyncio and anyio (any loop the test
runs is hooked through ``runtime_guard.watchdog.install``).

``pytest --exit-report [--exit-report-json FILE]`` installs ``runtime_guard.exit_report`` at start:
when the pytest process ends, it prints (to stderr) what the session left running (pending tasks,
threads, child processes, executors, process groups), each with the line in a test or in the code
under test that started it; nothing when nothing is left. It changes no test's outcome.
"""
from __future__ import annotations

import threading
from typing import Any, Generator, List, Optional

import pytest

_reports: List[Any] = []
_lock = threading.Lock()
_active = False


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("runtime_guard")
    group.addoption("--loop-stall-threshold", type=float, default=None, metavar="SECONDS",
                    help="fail tests whose asyncio event loop is blocked longer than SECONDS (runtime_guard)")
    parser.addini("loop_stall_threshold", "fail tests whose event loop stalls longer than this (seconds)",
                  default="")
    group.addoption("--exit-report", action="store_true", default=False,
                    help="at exit, print what the session left running (tasks, threads, child processes, "
                         "executors, process groups) with the lines that started them (runtime_guard)")
    group.addoption("--exit-report-json", default=None, metavar="FILE",
                    help="with --exit-report: also write the report to FILE as JSON")


def _threshold(config: pytest.Config) -> Optional[float]:
    value = config.getoption("--loop-stall-threshold", default=None)
    if value is None:
        raw = str(config.getini("loop_stall_threshold") or "").strip()
        value = float(raw) if raw else None
    return value if value and value > 0 else None


def _collect(report: Any) -> None:
    with _lock:
        _reports.append(report)


def pytest_configure(config: pytest.Config) -> None:
    global _active
    if config.getoption("--exit-report", default=False) and not _exit_report_is_for_a_pytester_run():
        from . import exit_report

        exit_report.install(config.getoption("--exit-report-json", default=None))
    threshold = _threshold(config)
    if threshold is None:
        return
    from . import watchdog

    # No faulthandler layer here: it would clobber pytest's own faulthandler_timeout.
    watchdog.install(threshold, on_stall=_collect, hard_threshold=None)
    _active = True


def pytest_unconfigure(config: pytest.Config) -> None:
    global _active
    if _active:
        from . import watchdog

        watchdog.uninstall()
        _active = False


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, None]:
    if _active:
        with _lock:
            _reports.clear()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, Any, None]:
    outcome = yield
    if not _active or call.when != "call":
        return
    from . import watchdog

    watchdog.check_now()  # pick up a stall that ended just before the test returned
    with _lock:
        found = list(_reports)
        _reports.clear()
    if not found:
        return
    report = outcome.get_result()
    text = "\n\n".join(r.format() for r in found)
    if report.passed:
        report.outcome = "failed"
        report.longrepr = f"event loop stalled during the test (runtime_guard --loop-stall-threshold):\n{text}"
    else:
        report.sections.append(("runtime_guard loop stalls", text))


def _exit_report_is_for_a_pytester_run() -> bool:
    """An in-process pytester run inside a session that already reports: the outer one does."""
    from . import exit_report

    return exit_report.is_installed()


def pytest_sessionfinish(session: pytest.Session, exitstatus: Any) -> None:
    if session.config.getoption("--exit-report", default=False):
        from . import exit_report

        if exit_report.is_installed():
            exit_report.note_ending(None, f"pytest session ended with status {int(exitstatus)}")
