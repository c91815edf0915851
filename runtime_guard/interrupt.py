"""``on_interrupt``: bounded cleanup on Ctrl+C for program entrypoints."""
from __future__ import annotations

import _signal  # the C module: signal.signal may be wrapped (signals.hide); a wrapper is a call
import functools
import logging
import os
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

    Repeated signals (a storm, a held key, a supervisor sending SIGINT in a loop). CPython runs
    pending signal handlers at every call and loop jump, and ``signal.signal`` itself runs them
    before it installs. So a Ctrl+C that lands after the first KeyboardInterrupt was raised and
    before our handler is in place raises a second KeyboardInterrupt inside our own code; it counts
    as the second interrupt: the handler is installed first (with no call in between) and the
    process exits at once with ``exit_code``. If yet another lands within that microsecond
    (``signal.signal`` raised twice), the exit is ``os._exit(exit_code)`` without the flush. Once
    the handler is in place, a run of it that starts while one is under way returns at once
    (no log line, no second ``hard_exit``). Measured (``tests/runtime_guard/test_on_interrupt_storm.py``,
    SIGINT sent back to back): before, 4 of 20 processes died of SIGINT (status -2, the
    KeyboardInterrupt or a RecursionError from nested handler runs in CPython's last-resort
    printer) and some took 6-18 s to exit, logging up to 210 "second interrupt" lines.
    The decorator form has no window left. The ``with`` form keeps one: CPython checks for
    signals on entering ``__exit__``, before any of its code runs; a Ctrl+C landing in that
    one check leaves the ``with`` block as a KeyboardInterrupt (measured after the fix, the
    same storm: 1 of 80 ``with``-form processes died of SIGINT, 0 of 40 decorated ones; prefer
    the decorator for entrypoints that may get many signals).
    """

    def __init__(self, cleanup: Callable[[], Any], *, exit_code: int = 130, timeout: float = 30.0,
                 hard: bool = True) -> None:
        self.cleanup = cleanup
        self.exit_code = exit_code
        self.timeout = timeout
        self.hard = hard
        self._exiting = False

    def __enter__(self) -> "on_interrupt":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> bool:
        # No call before the handler is in place when exc_type is KeyboardInterrupt itself: every
        # call is a point where CPython runs pending signal handlers (see the class docstring).
        if exc_type is not KeyboardInterrupt and (
                exc_type is None or not issubclass(exc_type, KeyboardInterrupt)):
            return False
        try:
            second = False
            try:
                _signal.signal(_signal.SIGINT, self._on_signal)
            except KeyboardInterrupt:  # raised by signal.signal's own check: a Ctrl+C was pending
                second = True
                _signal.signal(_signal.SIGINT, self._on_signal)
            except ValueError:  # not the main thread: install nothing
                pass
            self._interrupted(second)
        except KeyboardInterrupt:  # one more landed before the handler was in place
            os._exit(self.exit_code & 0xFF)  # noqa: SHD204  (no handler of ours yet: any call would raise again)
        return False  # unreachable: _interrupted exits

    def _on_signal(self, signum: int, frame: Any) -> None:
        if self._exiting:  # a storm runs this again inside its own run: that one is exiting already
            return
        self._exiting = True
        log.warning("runtime_guard: second interrupt, exiting now")
        hard_exit(self.exit_code, atexit_timeout=0)

    def _interrupted(self, second: bool) -> None:
        """Our SIGINT handler is in place (main thread) or none is ours to install (other threads)."""
        if in_main_thread():
            try:
                _signal.signal(_signal.SIGTERM, self._on_signal)  # runs a pending SIGINT's handler first
            except Exception:
                pass
        if second:
            self._on_signal(_signal.SIGINT, None)
        self._run_cleanup()

    def _run_cleanup(self) -> None:
        code = self.exit_code
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
            # Not ``with self``: a KeyboardInterrupt must meet signal.signal with no call in between.
            try:
                return func(*args, **kwargs)
            except KeyboardInterrupt:
                try:
                    second = False
                    try:
                        _signal.signal(_signal.SIGINT, self._on_signal)
                    except KeyboardInterrupt:
                        second = True
                        _signal.signal(_signal.SIGINT, self._on_signal)
                    except ValueError:
                        pass
                    self._interrupted(second)
                except KeyboardInterrupt:  # one more landed before the handler was in place
                    os._exit(self.exit_code & 0xFF)  # noqa: SHD204  (as in __exit__)
                raise  # unreachable: _interrupted exits
        return wrapper  # type: ignore[return-value]
