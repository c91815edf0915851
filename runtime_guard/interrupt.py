"""``on_interrupt``: bounded cleanup on Ctrl+C for program entrypoints."""
from __future__ import annotations

import functools
import logging
import signal
import sys
from types import TracebackType
from typing import Any, Callable, Optional, Type, TypeVar

from .exit import hard_exit
from .signals import in_main_thread
from ._threads import QuietTimer

__all__ = ["on_interrupt"]

log = logging.getLogger("runtime_guard")
F = TypeVar("F", bound=Callable[..., Any])


class on_interrupt:
    """Context manager / decorator: on KeyboardInterrupt run ``cleanup`` then exit ``exit_code``.

    * ``cleanup`` runs in the current (normally main) thread, bounded by ``timeout`` seconds: a
      daemon timer hard-exits with ``exit_code`` if it overruns.
    * A second Ctrl+C during cleanup exits at once with ``exit_code``.
    * ``hard=True`` (default) exits with :func:`runtime_guard.hard_exit` (flush, atexit handlers
      bounded, ``os._exit``), which skips the thread joins that hang on NCCL/Ray threads
      (flowfactory #149); the deadline and second-interrupt exits skip the atexit handlers;
      ``hard=False`` raises ``SystemExit(exit_code)`` instead.
    Other exceptions pass through untouched.

    Signals: nothing until a KeyboardInterrupt reaches it. Then, from the main thread, SIGINT
    and SIGTERM get a handler that exits at once (``hard_exit(exit_code, atexit_timeout=0)``),
    replacing whatever was there: the process is exiting. No mask is changed. Threads: one daemon
    timer thread during the cleanup (the caller's mask). Children: none started; ``cleanup``'s
    children have the caller's mask and handlers as usual.
    """

    def __init__(self, cleanup: Callable[[], Any], *, exit_code: int = 130, timeout: float = 30.0,
                 hard: bool = True) -> None:
        self.cleanup = cleanup
        self.exit_code = exit_code
        self.timeout = timeout
        self.hard = hard

    def __enter__(self) -> "on_interrupt":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> bool:
        if exc_type is None or not issubclass(exc_type, KeyboardInterrupt):
            return False
        self._run_cleanup()
        return False  # unreachable: _run_cleanup exits

    def _run_cleanup(self) -> None:
        code = self.exit_code
        if in_main_thread():
            def _second(signum: int, frame: Any) -> None:
                log.warning("runtime_guard: second interrupt, exiting now")
                hard_exit(code, atexit_timeout=0)
            try:
                signal.signal(signal.SIGINT, _second)
                signal.signal(signal.SIGTERM, _second)
            except Exception:
                pass
        timer = QuietTimer(self.timeout, self._timed_out, "runtime_guard-cleanup-timeout")
        timer.start()
        log.warning("runtime_guard: interrupted, running cleanup (Ctrl+C again to exit now)")
        try:
            self.cleanup()
        except BaseException:
            log.exception("runtime_guard: cleanup raised")
        finally:
            timer.cancel()
        if self.hard:
            hard_exit(code)
        sys.exit(code)

    def _timed_out(self) -> None:
        log.error("runtime_guard: cleanup did not finish within %.1fs, exiting", self.timeout)
        hard_exit(self.exit_code, atexit_timeout=0)

    def __call__(self, func: F) -> F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
