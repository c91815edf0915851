"""Stopping on Ctrl+C and SIGTERM: at once, and never in the middle of writing a file.

The command line (and a watch loop, the language server) installs the handlers with
``handling()``: SIGINT and SIGTERM then raise ``Interrupted`` (a ``KeyboardInterrupt``) in the
main thread, or call the ``act`` given instead (the language server exits). A second signal
while the first is being handled is ignored, so the clean-up that follows cannot itself be cut.

Writes go in ``deferred()`` blocks: a signal that arrives inside one takes effect when the
outermost block ends, so a file is either untouched or fully written, and ``written()`` counts
exactly the files written before the stop.

Pool workers (``runner``) do not run Python handlers: ``worker_signals()`` ignores SIGINT (a
Ctrl+C reaches the whole process group; the parent decides) and keeps SIGTERM's default action,
which ends a worker even inside native code (libcst's parser). There ``deferred()`` blocks
SIGTERM at the kernel for the duration of the write instead.

This module imports nothing heavy: the command line installs it on every run, warm runs included.
"""

from __future__ import annotations

import os
import sys

# the C module under ``signal``: the same calls with plain ints, without building signal's enums
# at import (~1.3% of a warm run); ``signal_name`` imports ``signal`` for a signal's name
import _signal as signal
from _thread import RLock

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Callable, Optional

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread by SIGINT or SIGTERM while ``handling()`` is active."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum


def exit_status(exc: BaseException) -> int:
    """130 for Ctrl+C (a plain ``KeyboardInterrupt`` too), 143 for SIGTERM: 128 + the signal."""
    return 128 + getattr(exc, "signum", signal.SIGINT)


def signal_name(exc: BaseException) -> str:
    import signal as enums

    return enums.Signals(getattr(exc, "signum", signal.SIGINT)).name


# ------------------------------------------------------------------ state

_lock = RLock()  # threading.RLock's own (not importing threading: ~2% of a warm run); reentrant: the handler runs in the main thread, which may hold it
_depth = 0  # open deferred() blocks (any thread)
_pending: Optional[int] = None  # a signal that arrived inside a deferred() block
_stopping = False  # a stop is under way: later signals are ignored
_act: Optional[Callable[[int], None]] = None  # what a signal does; None: raise Interrupted
_mask_mode = False  # a pool worker: deferred() blocks SIGTERM at the kernel
_written = 0
_writes = False  # this run writes files (``--fix``): the stop line says how many


def expect_writes() -> None:
    global _writes
    _writes = True


def writes_files() -> bool:
    return _writes


def written() -> int:
    """Files written (by this process and, once their pool has ended, its workers) since ``handling()``."""
    return _written


def count_written(n: int = 1) -> None:
    global _written
    with _lock:
        _written += n


def _fire(signum: int) -> None:
    global _stopping
    _stopping = True
    if _act is not None:
        _act(signum)
    else:
        raise Interrupted(signum)


def _handler(signum: int, _frame) -> None:  # type: ignore[no-untyped-def]
    global _pending
    with _lock:
        if _stopping:
            return
        if _depth:
            if _pending is None:
                _pending = signum
            return
    _fire(signum)


def _main_thread() -> bool:
    """Is this the main thread? Asked of ``threading`` when something imported it; else no thread
    was started through it (a warm run imports no ``threading``: ~2% of its time), and a thread
    started with ``_thread`` alone is told by ``signal.signal``'s refusal (``handling``)."""
    threading = sys.modules.get("threading")
    return threading is None or threading.current_thread() is threading.main_thread()


class handling:
    """Install the stop handlers for SIGINT and SIGTERM (main thread only; elsewhere, or where a
    signal was set to be ignored by whoever started us, nothing changes); restore them on exit.

    ``act(signum)`` replaces raising ``Interrupted`` in the main thread: it may run in the thread
    that ends a ``deferred()`` block."""

    def __init__(self, act: Optional[Callable[[int], None]] = None) -> None:
        self.act = act
        self.saved: dict[int, object] = {}
        self.state: Optional[tuple] = None

    def __enter__(self) -> "handling":
        global _act, _stopping, _pending, _written, _writes
        if not _main_thread():
            return self
        self.state = (_act, _stopping, _pending)  # an enclosing handling() gets them back (not the count)
        counts = (_written, _writes)
        _act, _stopping, _pending, _written, _writes = self.act, False, None, 0, False
        for signum in STOP_SIGNALS:
            old = signal.getsignal(signum)
            if type(old) is int and old == signal.SIG_IGN:  # nohup, a shell's background job: the caller wants it ignored
                continue
            try:
                signal.signal(signum, _handler)
            except ValueError:  # not the main thread (see ``_main_thread``): nothing was set
                (_act, _stopping, _pending), (_written, _writes) = self.state, counts
                self.state = None
                return self
            self.saved[signum] = old
        return self

    def __exit__(self, *exc: object) -> None:
        global _act, _stopping, _pending
        for signum, old in self.saved.items():
            signal.signal(signum, old)  # type: ignore[arg-type]
        self.saved.clear()
        if self.state is not None:
            _act, _stopping, _pending = self.state
            self.state = None


class deferred:
    """A block a stop signal does not cut: the signal takes effect when the outermost block ends."""

    __slots__ = ("mask",)

    def __enter__(self) -> "deferred":
        global _depth
        if _mask_mode:
            self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
            return self
        with _lock:
            _depth += 1
        return self

    def __exit__(self, *exc: object) -> None:
        global _depth, _pending
        if _mask_mode:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)  # a pending SIGTERM ends us here
            return
        with _lock:
            _depth -= 1
            signum = _pending if not _depth else None
            if signum is not None:
                _pending = None
        if signum is not None and not _stopping:
            _fire(signum)


# ------------------------------------------------------------------ pool workers


#: signal masks exist (POSIX); elsewhere ``blocked`` and the workers' write sections do nothing
_MASKS = hasattr(signal, "pthread_sigmask")


class blocked:
    """SIGINT and SIGTERM blocked in this thread (and inherited by threads and processes it
    starts): the parent holds them while its pool forks, so that no worker sees a signal before
    ``worker_signals`` has set what it does."""

    def __enter__(self) -> "blocked":
        self.mask = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS) if _MASKS else None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, self.mask)


def worker_signals(start_threads: Optional[Callable[[], None]] = None) -> None:
    """In a freshly forked pool worker (started inside ``blocked()``): ignore SIGINT, let SIGTERM
    end the process (the parent stops its workers with it), start ``start_threads`` while both are
    still blocked (a helper thread must never take a SIGTERM meant to wait for a write), then
    unblock: a signal that came meanwhile acts now."""
    global _mask_mode, _act, _depth, _pending, _stopping
    _mask_mode, _act, _depth, _pending, _stopping = _MASKS, None, 0, None, False
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if start_threads is not None:
        start_threads()
    if _MASKS:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)


# ------------------------------------------------------------------ the one line


def exit_now(signum: int, line: str) -> None:
    """For an ``act``: print ``line`` on stderr and end the process with 128 + ``signum`` at once
    (threads blocked on a pipe, an executor's atexit join, would otherwise hold the exit)."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(128 + signum)
