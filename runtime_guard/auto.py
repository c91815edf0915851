"""``import runtime_guard.auto``: watch every event loop of this process for stalls.

Settings come from the environment: ``RUNTIME_GUARD_THRESHOLD`` (default 0.1 s),
``RUNTIME_GUARD_REPORT_FILE`` (JSON lines), ``RUNTIME_GUARD_HARD_THRESHOLD`` (0 = no faulthandler).
Signals, threads, children: those of ``runtime_guard.watchdog.install`` (no handler, no mask; one
monitor thread and faulthandler's timer thread; no process).
"""
from __future__ import annotations

try:
    from .watchdog import install as _install

    _install()
except Exception:  # the guard must never break the program that imports it
    pass
