"""Signal helpers: turn SIGTERM into the KeyboardInterrupt path that asyncio.run already handles well."""
from __future__ import annotations

import signal
import threading
import warnings
from types import FrameType
from typing import Any, Callable, Union

__all__ = ["sigterm_as_keyboard_interrupt", "in_main_thread", "Handler"]

Handler = Union[Callable[[int, Union[FrameType, None]], Any], int, signal.Handlers, None]


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    # KeyboardInterrupt (not SystemExit) so `asyncio.run` cancels every task and runs finally blocks,
    # and entrypoints wrapped with `on_interrupt` run their cleanup.
    raise KeyboardInterrupt(f"signal {signum} received")


def sigterm_as_keyboard_interrupt() -> Handler:
    """Make SIGTERM raise KeyboardInterrupt in the main thread; return the previous handler.

    Signals: replaces the process's SIGTERM handler (no chaining: the caller gets the previous
    one back to restore or chain); a child forked afterwards inherits it (``multiprocessing``
    ``fork`` children then exit with status 1 and a traceback on SIGTERM instead of -15);
    ``exec``'d children get the default back. No mask is changed, no thread started.

    Off the main thread (where ``signal.signal`` raises ValueError) this is a no-op: it emits a
    RuntimeWarning and returns None.
    """
    if not in_main_thread():
        warnings.warn(
            "runtime_guard.sigterm_as_keyboard_interrupt() called off the main thread; SIGTERM handler not installed",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
