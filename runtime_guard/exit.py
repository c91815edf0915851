"""Hard process exit that still gets the last log lines and the ``atexit`` work out.

Signals: no handler installed, no mask changed. Threads: ``hard_exit`` and
``run_atexit_handlers`` run the flushes and the ``atexit`` handlers in short-lived daemon helper
threads (``runtime_guard-flush``, ``runtime_guard-atexit``) with the caller's signal mask, so a
child an ``atexit`` handler starts can be ended by SIGTERM as usual; ``hard_exit`` starts them
from one bare helper thread per process (the exit work, which ends the process). Children: none started; the
process ends with ``os._exit`` (children it started are not waited for or signalled).
"""
from __future__ import annotations

import _thread
import atexit
import logging
import os
import sys
from time import monotonic as _now
from typing import NoReturn

from ._threads import daemon_thread

__all__ = ["hard_exit", "flush_all", "run_atexit_handlers"]

# Bound on flushing: a handler lock held by a wedged thread must not keep us alive.
_FLUSH_TIMEOUT = 2.0
# Default bound on the atexit handlers (experiment trackers sync their last metrics there).
ATEXIT_TIMEOUT = 5.0

# The exit under way (``hard_exit``): None, or [deadline of the first call, the status to exit
# with (the last call's), a later call came]. Claimed and its work started with no call in
# between (CPython runs pending signal handlers at calls).
_run: "list | None" = None
# Never released: ``hard_exit`` waits on it until its deadline (the exit work ends the process
# first). A signal handler run inside the wait that returns leaves the wait going on.
_never = _thread.allocate_lock()
_never.acquire()
# Seconds a caller allows beyond the work's own bounds (helper threads scheduled on a loaded machine).
_SLACK = 0.5


def _renew_lock() -> None:
    """After fork: the parent's exit under way is not the child's (its work thread is not there)."""
    global _run
    _run = None


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


def _bounded(target, name: str, timeout: float, stop: "list | None" = None) -> bool:
    """Run ``target`` in a daemon thread (the caller's signal mask, none added); wait at most ``timeout``
    (``stop``: the exit under way, ``_run``: a later call ends the wait at once). True when it finished in time.
    Errors are swallowed (printed by the callee at most)."""
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
    if stop is None:
        worker.join(timeout)
        return not worker.is_alive()
    end = _now() + timeout
    while worker.is_alive() and not stop[2]:
        left = end - _now()
        if left <= 0:
            break
        worker.join(min(left, 0.01))
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
    return _run_atexit(timeout, None)


def _run_atexit(timeout: float, stop: "list | None") -> bool:
    """``run_atexit_handlers``; ``stop``: the exit under way, whose later call ends the wait."""
    if timeout <= 0 or sys.is_finalizing() or _in_forked_child():
        return False
    return _bounded(atexit._run_exitfuncs, "runtime_guard-atexit", timeout, stop)


def _exit_work(run: list, atexit_timeout: float) -> None:
    """The one exit work of the process (a bare helper thread): flush; the atexit handlers unless
    a later call came; flush again if they finished in time or a later call came (what it logged);
    then end the process with the last call's status. Each step bounded as ``hard_exit`` says; a
    later call ends the wait for the atexit handlers at once."""
    try:
        _bounded(flush_all, "runtime_guard-flush", _FLUSH_TIMEOUT)  # the last log lines first: a handler may hang
        ran = not run[2] and _run_atexit(atexit_timeout, run)
        if ran or run[2]:
            _bounded(flush_all, "runtime_guard-flush", _FLUSH_TIMEOUT)
    except BaseException:
        pass
    os._exit(run[1])


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
    ``finally`` blocks of other threads and tasks do not run.

    One exit per process. The first call starts the work (flush, atexit handlers, flush, then
    ``os._exit``) in one helper thread and waits. A later call while it is under way (another
    thread, a deadline timer, an atexit handler, the program's signal handler calling
    ``hard_exit`` on every signal of a storm) starts nothing: it cuts the wait for the atexit
    handlers short, as a second call always did, and the process exits with the later call's
    status after the flush in progress and one more (what the later caller logged). Every call
    also keeps its own deadline and exits there if the work has not: the first call its bounds
    plus 0.5 s, a later call 2.5 s after it was made and never after the first call's deadline.
    A call that a signal handler makes inside the wait returns to nobody: it waits too (a
    storm nests one handler frame per signal handled during the wait, and no thread). Measured
    (``tests/runtime_guard/test_hard_exit_storm.py``, SIGTERM sent back to back, the handler
    calls ``hard_exit``): before, every nested call flushed in a thread of its own (up to 102
    flushes in one process, exits up to 4.2 s into the storm); now a storm flushes as one call
    does. An exception raised while it runs (a ``KeyboardInterrupt`` from a signal arriving
    meanwhile) does not stop the exit.

    Signals: none installed or blocked; the helper threads have the caller's mask. Children:
    none started, none waited for.
    """
    global _run
    # The status first, with no call (a call is where CPython runs pending signal handlers), then
    # everything else under ``except BaseException`` before ``os._exit``: an error raised here (a
    # KeyboardInterrupt from a SIGINT storm while SIGINT has the default handler) ends the process.
    status = code & 0xFF if code.__class__ is int else 0 if code is None else 1
    run = None
    try:
        if status == 1 and code.__class__ is not int:
            if isinstance(code, int) and not isinstance(code, bool):  # an int subclass (IntEnum)
                status = code & 0xFF
            else:
                try:
                    print(code, file=sys.stderr)
                except Exception:
                    pass
        now = _now()
        budget = 2 * _FLUSH_TIMEOUT + (atexit_timeout if atexit_timeout > 0 else 0) + _SLACK
        # From the test to the thread's start, no call: a handler run at a later call finds the
        # work under way, with a thread behind it that ends the process.
        run = _run
        if run is None:
            _run = run = [now + budget, status, False]
            until = run[0]
            try:
                _thread.start_new_thread(_exit_work, (run, atexit_timeout))
            except RuntimeError:  # no thread to be had (thread limit, interpreter shutting down): here
                _bounded(flush_all, "runtime_guard-flush", _FLUSH_TIMEOUT)
                if run_atexit_handlers(atexit_timeout):
                    _bounded(flush_all, "runtime_guard-flush", _FLUSH_TIMEOUT)
                until = 0.0  # done: exit now
        else:
            run[1] = status  # the last call's status is the one the process exits with
            run[2] = True  # the work: stop waiting for the atexit handlers, flush once more
            until = now + _FLUSH_TIMEOUT + _SLACK
            if run[0] < until:
                until = run[0]  # the first call's deadline bounds the exit
        while True:
            try:
                left = until - _now()
                if left <= 0:
                    break
                _never.acquire(True, left if left < 60.0 else 60.0)  # inf: acquire would raise, and spin
            except BaseException:  # what a handler raised meanwhile: the exit goes on
                pass
    except BaseException:  # the process is ending: nothing is left to hand it to
        pass
    os._exit(run[1] if run is not None else status)
