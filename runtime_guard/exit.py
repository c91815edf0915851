"""Hard process exit that still gets the last log lines and the ``atexit`` work out.

Signals: no handler installed, no mask changed. Threads: ``hard_exit`` and
``run_atexit_handlers`` run the flushes and the ``atexit`` handlers in short-lived daemon helper
threads (``runtime_guard-flush``, ``runtime_guard-atexit``) with the caller's signal mask, so a
child an ``atexit`` handler starts can be ended by SIGTERM as usual. Children: none started; the
process ends with ``os._exit`` (children it started are not waited for or signalled).
"""
from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from typing import NoReturn

from ._threads import daemon_thread

__all__ = ["hard_exit", "flush_all", "run_atexit_handlers"]

# Bound on flushing: a handler lock held by a wedged thread must not keep us alive.
_FLUSH_TIMEOUT = 2.0
# Default bound on the atexit handlers (experiment trackers sync their last metrics there).
ATEXIT_TIMEOUT = 5.0

_exit_lock = threading.Lock()


def _renew_lock() -> None:
    global _exit_lock
    _exit_lock = threading.Lock()  # a lock held by another thread at fork time stays held forever


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_lock)


def _in_forked_child() -> bool:
    """A forked child inherits the parent's atexit handlers; running them there would flush the
    parent's files and trackers a second time (that is why forked children use ``os._exit``).

    Known (1) for any ``fork`` made after ``runtime_guard`` was imported (``os.register_at_fork``
    in ``runtime_guard/__init__.py``), and (2) whatever the import order, in a ``multiprocessing``
    child started with ``fork`` or ``forkserver`` (DataLoader workers, ``Pool`` workers): their
    handlers are the parent's or the fork server's, and ``multiprocessing`` itself ends those
    children with ``os._exit``. Not known: a bare ``os.fork()`` child of a process that had not
    imported ``runtime_guard`` before the fork (nothing in the process records that fork); there
    ``hard_exit`` runs the inherited handlers, as ``sys.exit`` would."""
    import runtime_guard

    return bool(getattr(runtime_guard, "_forked_child", False)) or _multiprocessing_forked_child()


def _multiprocessing_forked_child() -> bool:
    process = sys.modules.get("multiprocessing.process")
    if process is None:  # never imported: not a multiprocessing child
        return False
    try:
        if process.parent_process() is None:
            return False
        method = getattr(type(process.current_process()), "_start_method", None)
        if method is None:  # multiprocessing.Process: the default context's method, set in the child too
            method = sys.modules["multiprocessing"].get_start_method(allow_none=True)
    except Exception:
        return False
    return method in ("fork", "forkserver")


def flush_all() -> None:
    """Flush stdio and every logging handler, swallowing every error."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    try:
        loggers = [logging.getLogger()]
        loggers += [lg for lg in list(logging.Logger.manager.loggerDict.values()) if isinstance(lg, logging.Logger)]
    except Exception:
        loggers = []
    seen: set[int] = set()
    for lg in loggers:
        for handler in list(getattr(lg, "handlers", ())):
            if id(handler) in seen:
                continue
            seen.add(id(handler))
            try:
                handler.flush()
            except Exception:
                pass


def _bounded(target, name: str, timeout: float) -> bool:
    """Run ``target`` in a daemon thread (the caller's signal mask, none added); wait at most ``timeout``.
    True when it finished in time. Errors are swallowed (printed by the callee at most)."""
    def guarded() -> None:
        try:
            target()
        except BaseException:  # SystemExit from an atexit handler must not end the helper early
            pass

    try:
        worker = daemon_thread(guarded, name)
        worker.start()
    except Exception:
        # No threads available (interpreter shutting down, thread limit): run inline, unbounded.
        guarded()
        return True
    worker.join(timeout)
    return not worker.is_alive()


def run_atexit_handlers(timeout: float = ATEXIT_TIMEOUT) -> bool:
    """Run the registered ``atexit`` handlers (last registered first, as at a normal exit),
    in a helper thread, waiting at most ``timeout`` seconds. A handler that raises is reported
    on stderr by CPython and the next one runs; a handler that hangs is abandoned when the
    time is up (the handlers after it do not run). Returns True when all finished in time.

    Skipped (returns False) in a forked child, whose handlers belong to the parent (all of
    them, also any the child registered after the fork; see ``_in_forked_child`` for which
    forks are known), and while the interpreter is already
    finalizing (it runs them itself)."""
    if timeout <= 0 or sys.is_finalizing() or _in_forked_child():
        return False
    return _bounded(atexit._run_exitfuncs, "runtime_guard-atexit", timeout)


def hard_exit(code: "int | str | None" = 1, *, atexit_timeout: float = ATEXIT_TIMEOUT) -> NoReturn:
    """Flush stdio and logging, run the ``atexit`` handlers, flush again, then ``os._exit(code)``.

    ``code`` means what it means to ``sys.exit``: ``None`` is status 0, an integer is the
    status, anything else is printed to stderr and gives status 1 (so ``sys.exit(x)`` can be
    replaced by ``hard_exit(x)`` without changing what the caller of the process sees).

    Unlike ``os._exit`` it keeps what a normal exit would have saved: buffered stdio, logging
    handlers, and what ``atexit`` handlers write (experiment trackers such as wandb, swanlab or
    a tensorboard ``SummaryWriter`` sync there). Unlike ``sys.exit`` it ends the process from
    any thread, task, signal handler or done-callback, never joins other threads, and is
    bounded: each flush waits at most ~2 s, the atexit handlers together at most
    ``atexit_timeout`` s (0 skips them); a hung handler is abandoned and the process exits.
    ``finally`` blocks of other threads and tasks do not run. A second call while one is under
    way (from an atexit handler, another thread) exits at once with its own status. An
    exception raised while it runs (a KeyboardInterrupt from a signal arriving meanwhile, a
    RecursionError from signal handlers run inside one another) does not stop the exit.

    Signals: none installed or blocked; the helper threads have the caller's mask. Children:
    none started, none waited for.
    """
    # The status first, with no call (a call is where CPython runs pending signal handlers), then
    # everything else under ``except BaseException`` before ``os._exit``: a KeyboardInterrupt from a signal handler (a
    # SIGINT storm while SIGINT has the default handler), a RecursionError from nested handler
    # runs or any other error raised here still ends the process, with ``status``.
    status = code & 0xFF if code.__class__ is int else 0 if code is None else 1
    try:
        if status == 1 and code.__class__ is not int:
            if isinstance(code, int) and not isinstance(code, bool):  # an int subclass (IntEnum)
                status = code & 0xFF
            else:
                try:
                    print(code, file=sys.stderr)
                except Exception:
                    pass
        first = _exit_lock.acquire(blocking=False)
        _bounded(flush_all, "runtime_guard-flush", _FLUSH_TIMEOUT)  # the last log lines first: a handler may hang
        if first and run_atexit_handlers(atexit_timeout):
            _bounded(flush_all, "runtime_guard-flush", _FLUSH_TIMEOUT)  # what the handlers printed or logged
    except BaseException:  # the process is ending: nothing is left to hand it to
        pass
    os._exit(status)
