"""Helper threads that never take the program's Ctrl+C.

Linux delivers a process-directed signal (Ctrl+C, SIGTERM) to any thread that does not block
it. CPython runs Python handlers in the main thread only, and a main thread sleeping in a C call
is woken only if the signal lands on it: when it lands on one of our threads instead, the main
thread notices Ctrl+C only after its sleep ends. So every thread runtime_guard starts blocks
SIGINT and SIGTERM first, leaving them to the main thread.
"""
from __future__ import annotations

import signal
import threading
from typing import Any, Callable

__all__ = ["quiet_signals", "daemon_thread", "QuietTimer"]

_BLOCKED = {signal.SIGINT, signal.SIGTERM}


def quiet_signals() -> None:
    """Block SIGINT and SIGTERM in the calling thread (a no-op where unsupported)."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
    except (AttributeError, OSError, ValueError):
        pass


def daemon_thread(target: Callable[..., Any], name: str, *args: Any) -> threading.Thread:
    def run() -> None:
        quiet_signals()
        target(*args)

    return threading.Thread(target=run, name=name, daemon=True)


class QuietTimer(threading.Timer):
    """A daemon ``threading.Timer`` whose thread blocks SIGINT and SIGTERM."""

    def __init__(self, interval: float, function: Callable[..., Any], name: str = "runtime_guard-timer") -> None:
        super().__init__(interval, function)
        self.daemon = True
        self.name = name

    def run(self) -> None:
        quiet_signals()
        super().run()
