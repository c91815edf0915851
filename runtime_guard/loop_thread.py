"""An event loop in a helper thread that is shut down properly (SHD407's fix).

A loop run in a ``daemon=True`` thread is frozen mid-step at interpreter exit: its tasks are
never cancelled and no ``finally`` runs; SIGTERM kills the process before any Python code
runs. ``LoopThread`` is a drop-in ``threading.Thread`` (same constructor) whose loops -- the
ones its target runs with ``asyncio.run``, ``run_until_complete`` or ``run_forever`` -- are
stopped cleanly at interpreter exit and on SIGTERM: their tasks are cancelled once each, roots
first (``runtime_guard._cancel``), their cleanup gets up to ``cleanup_timeout`` seconds, then the
loop is stopped, the thread joined (bounded) and the loop closed.

When, at interpreter exit (CPython's order: ``threading``'s exit hooks, then the join of the
non-daemon threads, then the ``atexit`` handlers last-registered first, then finalization, where
daemon threads are frozen):

* ``daemon=True``: after every ``atexit`` handler, registered before or after the thread started
  -- the moment the ``atexit`` registry is emptied, still before finalization -- so the
  program's own exit code (an ``atexit`` handler that closes a client living on the loop with
  ``run_coroutine_threadsafe(...).result()``) still finds the loop running, as it did with a
  plain daemon thread. ``concurrent.futures`` has shut its executors down by then: task cleanup
  that needs ``run_in_executor``/``to_thread`` gets ``RuntimeError``.
* ``daemon=False``: from ``threading``'s exit hook, before the interpreter joins the thread (it
  would otherwise wait forever for a ``run_forever`` that nobody stops); ``atexit`` handlers run
  after that and find the loop closed (with a plain non-daemon thread they never ran: the join
  hung).
* A loop that ``LoopThread`` stopped is closed once its thread has ended, so code that submits
  to it later fails at once (``RuntimeError: Event loop is closed``) instead of waiting forever
  on a loop that will never run again. ``stop()`` called by the program does not close.

What it does to signals, threads and children:

* Signal mask: none. The thread runs the target with the mask of the thread that started it,
  as ``threading.Thread`` does, so threads and processes started from the loop (``subprocess``,
  ``multiprocessing`` ``fork``/``spawn``, executors) can be ended by SIGTERM and Ctrl+C as before.
* SIGTERM handler: the first ``start()`` called from the main thread installs one, process-wide,
  unless SIGTERM is ignored (``SIG_IGN``) or its handler was installed outside Python
  (``signal.getsignal`` returns None): those are never replaced. It chains: it stops the loop
  threads (bounded by their ``cleanup_timeout``), then calls the Python handler that was there
  before; where that was the default action it restores ``SIG_DFL`` and sends SIGTERM to the
  process again, so the process still dies of SIGTERM (status -15, no ``finally`` of the main
  thread, as before). A handler installed later by other code replaces it (then SIGTERM no
  longer stops the loops). A Python handler runs only when the main thread next runs Python
  code: a main thread blocked in a C call (a ``torch.distributed`` rendezvous or collective
  waiting for a peer) never gets there, and the process outlived SIGTERM until the call
  returned, where with the default action it died at once. So where the default action was
  there before us, SIGTERM is also heard at delivery (``runtime_guard.signals.on_delivery``:
  faulthandler's C hook and the signal wakeup fd, read by bare helper threads): if the handler has not
  started 1 s later, the helper thread stops the loop threads and the process dies of SIGTERM. Only a C call that holds the GIL still delays the end until it returns.
* Forked children: a process forked while the handler is installed gets the previous handler
  back (``os.register_at_fork``), so a ``multiprocessing`` child dies of SIGTERM as before.
* Threads: besides the ``LoopThread`` itself, only the bare helper threads above (where SIGTERM's
  default action was replaced); the exit hook and ``stop()`` run in the calling thread.
  Process-wide patches: ``BaseEventLoop.run_forever`` (and uvloop's, if
  imported) and the default policy's ``set_event_loop`` record which loops a ``LoopThread`` runs.
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import signal
import sys
import threading
import time
import weakref
from typing import Any, Callable, List, Optional

from ._cancel import cancel_tree
from .signals import HandlerOrHelper, NestedRun, die_of, in_main_thread, install_owned

__all__ = ["LoopThread", "stop_loop_threads", "DEFAULT_CLEANUP_TIMEOUT"]

log = logging.getLogger("runtime_guard.loop_thread")

DEFAULT_CLEANUP_TIMEOUT = 10.0
_threads: "weakref.WeakSet[LoopThread]" = weakref.WeakSet()
_lock = threading.RLock()  # re-entrant: the SIGTERM handler may run while start() holds it
_installed = False
_stopping = False
_sigterm: Optional[Callable[[int, Any], Any]] = None  # our SIGTERM handler, once installed
_sigterm_previous: Any = None  # what it replaced (and chains to)
#: Who stops the loops on SIGTERM where the default action was there before us: the handler, or
#: the helper thread that heard it at delivery when the main thread is blocked in C.
_race: Optional[HandlerOrHelper] = None


class LoopThread(threading.Thread):
    """``threading.Thread`` for a target that runs an event loop; stopped cleanly at exit.

    Same arguments as ``threading.Thread`` plus ``cleanup_timeout`` (seconds the loop's tasks get
    for their ``except CancelledError`` / ``finally`` code at exit or on SIGTERM, default 10).
    ``daemon`` keeps its meaning; with ``daemon=False`` the loop is still stopped at exit, so the
    interpreter does not wait forever for a ``run_forever`` that nobody stops.

    The thread's signal mask is left alone (inherited from the starting thread, as for any
    ``threading.Thread``). The first ``start()`` from the main thread installs a chaining SIGTERM
    handler; see the module docstring for exactly what it does.
    """

    def __init__(self, *args: Any, cleanup_timeout: float = DEFAULT_CLEANUP_TIMEOUT, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cleanup_timeout = cleanup_timeout
        self._rg_loops: List[asyncio.AbstractEventLoop] = []
        self._rg_stop_requested = False

    def start(self) -> None:
        _install()
        with _lock:
            _threads.add(self)
        super().start()

    def run(self) -> None:
        # No signal mask here: it would be inherited by every thread and process the target starts.
        target = getattr(self, "_target", None)
        owner = getattr(target, "__self__", None)
        if isinstance(owner, asyncio.AbstractEventLoop):  # target=loop.run_forever
            self._rg_loops.append(owner)
        try:
            super().run()
        except (asyncio.CancelledError, RuntimeError) as exc:
            # asyncio.run's main task cancelled by our shutdown, or a loop we stopped mid-run_until_complete
            if not self._rg_stop_requested:
                raise
            log.debug("runtime_guard: loop thread %s ended by shutdown: %r", self.name, exc)

    def loops(self) -> List[asyncio.AbstractEventLoop]:
        return [lp for lp in self._rg_loops if not lp.is_closed()]

    def stop(self, timeout: Optional[float] = None) -> bool:
        """Cancel this thread's loops' tasks, wait (bounded) for their cleanup, stop the loops and
        join the thread. Returns True when the thread ended. Safe to call from any other thread."""
        return self._rg_stop(timeout, close=False)

    def _rg_stop(self, timeout: Optional[float], close: bool) -> bool:
        # close: close the loops stopped here once the thread has ended, so that a later
        # run_coroutine_threadsafe/call_soon_threadsafe raises instead of waiting forever.
        if timeout is None:
            timeout = self.cleanup_timeout
        if self is threading.current_thread():
            return False
        self._rg_stop_requested = True
        deadline = time.monotonic() + timeout
        events = []
        stopped = [loop for loop in self.loops() if loop.is_running()]
        for loop in stopped:
            done = threading.Event()
            try:
                loop.call_soon_threadsafe(_start_cancel, loop, done)
                events.append((loop, done))
            except RuntimeError:  # closed meanwhile
                pass
        for loop, done in events:
            # done: every task ended; or the loop stopped by itself (asyncio.run returned)
            while not done.is_set() and loop.is_running() and time.monotonic() < deadline:
                done.wait(min(0.02, max(0.0, deadline - time.monotonic())))
            if not done.is_set() and loop.is_running():
                log.warning("runtime_guard: tasks on loop thread %s still running after %.1fs; stopping the loop",
                            self.name, timeout)
        for loop in self.loops():
            try:
                if loop.is_running():
                    loop.call_soon_threadsafe(loop.stop)
            except RuntimeError:
                pass
        if self.is_alive():
            self.join(max(0.1, deadline - time.monotonic()))
        if self.is_alive():
            return False
        if close:
            for loop in stopped:
                try:
                    if not loop.is_running() and not loop.is_closed():
                        loop.close()
                except Exception:
                    log.debug("runtime_guard: closing the loop of %s failed", self.name, exc_info=True)
        return True


def _start_cancel(loop: asyncio.AbstractEventLoop, done: threading.Event) -> None:
    try:
        cancel_tree(loop, "runtime_guard: loop thread shutting down", done.set)
    except Exception:
        done.set()


def stop_loop_threads(timeout: Optional[float] = None) -> int:
    """Stop every running ``LoopThread`` (see ``LoopThread.stop``); returns how many were stopped."""
    return _stop_threads(timeout, close=False)


def _stop_threads(timeout: Optional[float], close: bool, daemon: Optional[bool] = None) -> int:
    with _lock:
        threads = [t for t in list(_threads) if t.is_alive() and t is not threading.current_thread()
                   and (daemon is None or t.daemon == daemon)]
    for t in threads:
        try:
            t._rg_stop(timeout, close)
        except Exception:
            log.debug("runtime_guard: stopping %s failed", t.name, exc_info=True)
    return len(threads)


# ---------------------------------------------------------------------------------------------
# Hooks: which loops a LoopThread runs, interpreter exit, SIGTERM


def _patch_run_forever(cls: Any) -> None:
    orig = cls.__dict__.get("run_forever")
    if orig is None or getattr(orig, "_rg_loop_thread", False):
        return

    def run_forever(self: Any, *args: Any, **kwargs: Any) -> Any:
        thread = threading.current_thread()
        if isinstance(thread, LoopThread) and self not in thread._rg_loops:
            thread._rg_loops.append(self)
        return orig(self, *args, **kwargs)

    run_forever._rg_loop_thread = True  # type: ignore[attr-defined]
    run_forever.__doc__ = orig.__doc__
    cls.run_forever = run_forever


def _patch_set_event_loop() -> None:
    # uvloop's run_forever cannot be wrapped (an extension type): a thread that makes its loop the
    # thread's current loop (``asyncio.set_event_loop(loop)``, the usual first line) is seen here.
    cls = asyncio.events.BaseDefaultEventLoopPolicy
    orig = cls.__dict__.get("set_event_loop")
    if orig is None or getattr(orig, "_rg_loop_thread", False):
        return

    def set_event_loop(self: Any, loop: Any) -> Any:
        thread = threading.current_thread()
        if isinstance(thread, LoopThread) and loop is not None and loop not in thread._rg_loops:
            thread._rg_loops.append(loop)
        return orig(self, loop)

    set_event_loop._rg_loop_thread = True  # type: ignore[attr-defined]
    cls.set_event_loop = set_event_loop


def _before_join() -> None:
    """``threading``'s exit hook (the interpreter is exiting; no ``atexit`` handler has run yet):
    stop the non-daemon loop threads, which the interpreter joins next, and arrange for the
    daemon ones to be stopped after the last ``atexit`` handler."""
    if not _stopping:
        _stop_threads(None, close=True, daemon=False)
    try:
        atexit.register(_atexit_entry, _AfterAtexit())
    except Exception:
        pass


class _AfterAtexit:
    """Held only by the ``atexit`` registry (the argument of ``_atexit_entry``), registered by
    ``_before_join`` at exit. CPython empties the registry after running every handler and before
    it starts finalizing (``_PyAtExit_Call``), so ``__del__`` runs after the program's own
    ``atexit`` handlers -- those registered before and after it -- while daemon threads still run.
    Registered only once the interpreter exits, so ``atexit._clear()`` or ``hard_exit``
    (``atexit._run_exitfuncs`` then ``os._exit``) during the run never stop the loops."""

    def __del__(self) -> None:
        global _stopping
        try:
            if _stopping or sys.is_finalizing():  # too late: daemon threads no longer run
                return
            _stopping = True
            _stop_threads(None, close=True)
        except Exception:
            pass


def _atexit_entry(_holder: _AfterAtexit) -> None:
    """Does nothing: ``_holder`` is dropped after the last ``atexit`` handler; its ``__del__`` works."""


def _sigterm_handler(previous: Any) -> Callable[[int, Any], Any]:
    #: A SIGTERM that arrives while this handler stops the loops is left to it, until the bound.
    busy = NestedRun(again=False)

    def on_sigterm(signum: int, frame: Any) -> Any:
        # A SIGTERM that arrives while the loops are being stopped runs this handler again,
        # nested, at the next bytecode. Where the default action was there before us, that run
        # died of SIGTERM at once and cut the tasks' cleanup short (measured: two SIGTERMs 1 ms
        # apart, 9 of 10 processes never ran their task's finally; 0 of 10 with this). It returns
        # now, for as long as the first run may take (the cleanup bound plus 5 s); the first run
        # dies of SIGTERM when the loops are stopped. A program's own handler we chain to still
        # gets every SIGTERM (tests/runtime_guard/test_loop_thread_nested_sigterm.py).
        if busy.nested() and not callable(previous):  # marked first: nested until the bound is set
            return None
        bound = max((t.cleanup_timeout for t in list(_threads)), default=0.0) + 5.0
        busy.hold(bound)  # a first run's bound; after it, every SIGTERM acts
        if _race is not None:  # returns unless the helper thread stops the loops and ends us
            _race.handler_acts(bound=bound)
        _stop_for_sigterm("")
        if callable(previous):
            return previous(signum, frame)
        # The default action was there before us: die of the signal as the program did without us.
        die_of(signum)
        raise SystemExit(128 + signum)  # only reached where the signal is blocked in this thread

    on_sigterm._runtime_guard = True  # type: ignore[attr-defined]
    return on_sigterm


def _sigterm_in_c() -> None:
    """Helper thread (``signals.HandlerOrHelper``), installed only where the default action was
    there before us: the main thread is blocked in a C call and has not started the handler. Do
    what it does: stop the loop threads, then die of SIGTERM, as the default action would have
    ended the process at once."""
    try:
        _stop_for_sigterm(" while the main thread is blocked in a C call")
    finally:
        die_of(signal.SIGTERM)


def _stop_for_sigterm(where: str) -> None:
    global _stopping
    if not _stopping:
        _stopping = True
        n = _stop_threads(None, close=True)
        if n:  # nothing to say (no new output) where no loop thread was running
            log.warning("runtime_guard: SIGTERM%s: stopped %d loop thread(s)", where, n)


def _install_sigterm() -> None:
    """Install the chaining SIGTERM handler (main thread only, once). Never replaces ``SIG_IGN``
    or a handler installed outside Python (``getsignal`` returns None: it cannot be chained)."""
    global _sigterm, _sigterm_previous, _race
    if _sigterm is not None or not in_main_thread():
        return
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current is None or current is signal.SIG_IGN or getattr(current, "_runtime_guard", False):
            return
        handler = _sigterm_handler(current)
        install_owned(signal.SIGTERM, handler)  # a child forked afterwards gets `current` back
    except (ValueError, OSError):
        return
    _sigterm, _sigterm_previous = handler, current
    if current is signal.SIG_DFL:  # the default ended a process blocked in C at once: so must we
        _race = HandlerOrHelper(signal.SIGTERM)
        _race.hear(handler, _sigterm_in_c)  # after install_owned: faulthandler chains to it


def _install() -> None:
    global _installed
    _install_sigterm()
    if _installed:
        return
    _installed = True
    _patch_run_forever(asyncio.BaseEventLoop)
    try:
        _patch_set_event_loop()
    except Exception:
        pass
    try:
        import sys

        uvloop = sys.modules.get("uvloop")
        if uvloop is not None:
            _patch_run_forever(uvloop.Loop)
    except Exception:
        pass
    # threading's exit hooks run before the interpreter joins non-daemon threads and before any
    # atexit handler (fall back to atexit where that private hook is missing); the daemon loops
    # are stopped after every atexit handler (see _AfterAtexit).
    register = getattr(threading, "_register_atexit", None)
    try:
        if register is None:
            raise AttributeError
        register(_before_join)
    except (AttributeError, RuntimeError):
        atexit.register(_before_join)
