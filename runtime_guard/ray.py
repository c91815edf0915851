"""Ray helpers: interruptible ``ray.get`` and ``ray.wait``, cancel-and-wait, and worker SIGTERM handling.

One helper per calling context: the sync helpers (:func:`interruptible_get`,
:func:`interruptible_wait`) always return the value, whoever calls them (with an event loop running
in the calling thread they block it exactly as ``ray.get``/``ray.wait`` would); the ``*_async``
helpers always return a coroutine, for ``await`` in ``async def``.

Cancellation is idempotent across the helpers: a ref that one of them cancelled cooperatively
(``ray.cancel(force=False)``) is never cooperatively cancelled again by another (a second cancel
raises a second ``KeyboardInterrupt`` in the task and cuts its cleanup short); they only wait for
it. A ``ray.cancel`` the program makes itself is not seen.

None of the helpers starts threads or processes except :func:`setup_worker` (see there).

Needs the ``ray`` extra: ``pip install "shutdown-lint-runtime[ray]"``.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from collections import OrderedDict
from typing import Any, Callable, List, Optional, Sequence, Union

try:
    import ray as _ray
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "runtime_guard.ray needs Ray: pip install 'shutdown-lint-runtime[ray]'  (or pip install ray)"
    ) from exc

from . import watchdog as _watchdog
from ._cancel import cancel_tree
from .exit import hard_exit
from .signals import in_main_thread
from ._threads import QuietTimer

__all__ = ["interruptible_get", "interruptible_get_async", "interruptible_wait", "interruptible_wait_async",
           "cancel_and_wait", "wait_for_cleanup", "setup_worker", "cancel_loop_tasks"]

log = logging.getLogger("runtime_guard.ray")

DEFAULT_POLL = 0.1
DEFAULT_CLEANUP_TIMEOUT = 30.0
Refs = Union["_ray.ObjectRef", Sequence["_ray.ObjectRef"]]


def _as_list(refs: Any) -> "tuple[List[Any], bool]":
    if isinstance(refs, _ray.ObjectRef):
        return [refs], True
    return list(refs), False


def _unique(refs: List[Any]) -> List[Any]:
    return list(dict.fromkeys(refs))  # ray.wait rejects duplicates


def _not_ready(unique: List[Any]) -> List[Any]:
    _, not_ready = _ray.wait(unique, num_returns=len(unique), timeout=0, fetch_local=False)
    return not_ready


def _collect_ready(unique: List[Any], values: "dict[Any, Any]") -> bool:
    """Fetch the refs that became ready into ``values``; True once every ref has a value.

    Like ``ray.get``, a failed ref raises its error as soon as it is ready, without waiting for the
    others: a task lost with its node must not leave the caller waiting on work that never ends.
    ``fetch_local=True``: "ready" means the value is on this node, so the get below never blocks.
    """
    pending = [r for r in unique if r not in values]
    if not pending:
        return True
    ready, _ = _ray.wait(pending, num_returns=len(pending), timeout=0, fetch_local=True)
    if ready:
        values.update(zip(ready, _ray.get(ready)))
    return len(ready) == len(pending)


#: Ids of the refs runtime_guard cancelled cooperatively (bytes, so no ref is kept alive), oldest
#: first; bounded so a long-lived driver does not grow it without end.
_cancelled: "OrderedDict[bytes, None]" = OrderedDict()
_cancelled_lock = threading.Lock()
_CANCELLED_MAX = 100_000


def _ref_key(ref: Any) -> Optional[bytes]:
    try:
        return ref.binary()
    except Exception:
        return None


def _cancel(refs: List[Any], force: bool) -> None:
    """``ray.cancel`` each ref. Cooperative cancels (``force=False``) are idempotent: a ref that
    runtime_guard already cancelled cooperatively is skipped (its task is already cleaning up, and
    a second cancel would interrupt that cleanup). ``force=True`` always goes through."""
    for ref in refs:
        if not force:
            key = _ref_key(ref)
            if key is not None:
                with _cancelled_lock:
                    if key in _cancelled:
                        continue
                    _cancelled[key] = None
                    if len(_cancelled) > _CANCELLED_MAX:
                        _cancelled.popitem(last=False)
        try:
            _ray.cancel(ref, force=force)
        except Exception as exc:  # finished refs, actor tasks with force=True...
            log.debug("ray.cancel(%s, force=%s) failed: %s", ref, force, exc)


def already_cancelled(ref: Any) -> bool:
    """Whether runtime_guard has cooperatively cancelled ``ref`` (so its helpers will not again).
    Touches no signal handler, starts no thread or process."""
    key = _ref_key(ref)
    with _cancelled_lock:
        return key is not None and key in _cancelled


# ---------------------------------------------------------------------------------------------
# cancel_and_wait


def cancel_and_wait(refs: Refs, timeout: float = 30.0) -> List[Any]:
    """``ray.cancel(force=False)`` every ref, then wait up to ``timeout`` s for them to finish.

    Returns the refs that finished (their tasks ran their cleanup and ended, or had already ended).
    Never raises for refs that already finished.

    Refs that a runtime_guard helper already cancelled cooperatively (an interrupted
    :func:`interruptible_get`, for instance) are not cancelled again, only waited for, at most
    ``timeout`` s: so ``interruptible_get`` in a ``try`` whose ``except KeyboardInterrupt`` calls
    ``cancel_and_wait`` on the same refs cancels once. A ``ray.cancel`` the program made itself
    is not known here: after one, use :func:`wait_for_cleanup`.

    Signals: installs no handler and changes none. Threads and processes: starts none; it
    blocks the calling thread (``ray.wait``) for at most ``timeout`` s, also with an event loop
    running in it.
    """
    ref_list, _ = _as_list(refs)
    unique = _unique(ref_list)
    if not unique:
        return []
    _cancel(unique, force=False)
    try:
        ready, _ = _ray.wait(unique, num_returns=len(unique), timeout=timeout, fetch_local=False)
    except Exception:
        log.debug("ray.wait after cancel failed", exc_info=True)
        return []
    return ready


def wait_for_cleanup(refs: Refs, timeout: float = 30.0) -> List[Any]:
    """Wait up to ``timeout`` s for refs that were already cancelled to finish (their tasks run
    their cleanup and end). Does not cancel again: a second ``ray.cancel`` raises a second
    ``KeyboardInterrupt`` in the task and cuts its cleanup short. Returns the finished refs;
    never raises.

    Signals: installs no handler and changes none. Threads and processes: starts none; it
    blocks the calling thread (``ray.wait``) for at most ``timeout`` s."""
    unique = _unique(_as_list(refs)[0])
    if not unique:
        return []
    try:
        ready, _ = _ray.wait(unique, num_returns=len(unique), timeout=timeout, fetch_local=False)
    except Exception:
        log.debug("ray.wait for cleanup failed", exc_info=True)
        return []
    return ready


# ---------------------------------------------------------------------------------------------
# interruptible_get


class _Interrupted(Exception):
    pass


def _loop_running_here() -> bool:
    """An event loop runs in the calling thread (we were called, through sync code, from a coroutine)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _wait_cleanup(unique: List[Any], poll: float, cleanup_timeout: float, own_signals: bool) -> None:
    """First Ctrl+C: cancel cooperatively and wait for cleanup; a second Ctrl+C force-cancels.

    ``own_signals``: the caller's :class:`_PollingSignals` installed handlers (it restores them);
    only then are SIGINT (-> force) and SIGTERM (-> absorbed) handlers installed here. Otherwise
    the handlers stay whatever the program has, and a ``KeyboardInterrupt`` they raise counts as
    the second Ctrl+C."""
    state = {"force": False}
    if own_signals and in_main_thread():
        def on_sigint(signum: int, frame: Any) -> None:
            state["force"] = True

        def on_sigterm(signum: int, frame: Any) -> None:
            # Launchers (torchrun, ray job, k8s) often send SIGTERM right after SIGINT: keep cleaning up.
            log.warning("runtime_guard: SIGTERM absorbed while Ray tasks clean up")

        signal.signal(signal.SIGINT, on_sigint)
        signal.signal(signal.SIGTERM, on_sigterm)
    # Announced once the handlers are in place: a SIGTERM sent on seeing this line is absorbed.
    log.warning("runtime_guard: interrupted; cancelling %d Ray task(s) and waiting up to %.0fs for their "
                "cleanup (Ctrl+C again to force)", len(unique), cleanup_timeout)
    _cancel(unique, force=False)
    deadline = time.monotonic() + cleanup_timeout
    forced = False
    while True:
        try:
            pending = _not_ready(unique)
            if not pending:
                return
            if state["force"] and not forced:
                log.warning("runtime_guard: second interrupt; force-cancelling %d Ray task(s)", len(pending))
                _cancel(pending, force=True)
                forced = True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                log.error("runtime_guard: %d Ray task(s) did not finish cleanup within %.0fs",
                          len(pending), cleanup_timeout)
                return
            time.sleep(min(poll, remaining))
        except KeyboardInterrupt:  # off the main thread, the program's own handler, or a race
            state["force"] = True


#: After an interrupted get/wait has cleaned up, a SIGTERM within this many seconds is taken for
#: the launcher's follow-up to the Ctrl+C and absorbed: it would land in ``ray.shutdown`` while the
#: KeyboardInterrupt unwinds, where Ray's own handler aborts the driver (status -6 / -11) and leaves
#: the local cluster's agent processes running.
FOLLOW_UP_SIGTERM_GRACE = 5.0


def _follow_up_absorber(prev: Any, grace: float) -> Callable[[int, Any], None]:
    """A SIGTERM handler that absorbs signals for ``grace`` s, then behaves as ``prev`` did."""
    until = time.monotonic() + grace

    def on_sigterm(signum: int, frame: Any) -> None:
        if time.monotonic() < until:
            log.warning("runtime_guard: SIGTERM absorbed while the interrupted program exits")
            return
        if callable(prev):
            prev(signum, frame)
        elif prev != signal.SIG_IGN:  # SIG_DFL, or a handler not set from Python
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)

    return on_sigterm


class _PollingSignals:
    """Signal handlers around a sync get/wait on the main thread with no event loop running in it
    (elsewhere it does nothing: ``owns`` is False).

    Inside: SIGINT raises KeyboardInterrupt (undoing a launcher's SIG_IGN or Ray's own handler).
    On the way out the previous SIGINT/SIGTERM handlers come back; after a Ctrl+C cleanup
    (``cleaned_up`` set) the program is on its way out, so SIGTERM keeps being absorbed for
    FOLLOW_UP_SIGTERM_GRACE s first.

    With an event loop running in the thread (sync code called from a coroutine) the handlers
    belong to whoever runs the loop (``asyncio.run`` installs its own SIGINT handler: the first
    Ctrl+C cancels the main task and returns, the second raises KeyboardInterrupt): nothing is
    installed, so Ctrl+C does there what it does to a plain ``ray.get``."""

    def __init__(self) -> None:
        self.cleaned_up = False
        self._prev: Optional["tuple[Any, Any]"] = None

    @property
    def owns(self) -> bool:
        return self._prev is not None

    def __enter__(self) -> "_PollingSignals":
        if in_main_thread() and not _loop_running_here():
            self._prev = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
            signal.signal(signal.SIGINT, signal.default_int_handler)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._prev is None:
            return
        prev_int, prev_term = self._prev
        term = prev_term if prev_term is not None else signal.SIG_DFL
        if self.cleaned_up:
            term = _follow_up_absorber(term, FOLLOW_UP_SIGTERM_GRACE)
        for sig, handler in ((signal.SIGINT, prev_int if prev_int is not None else signal.SIG_DFL),
                             (signal.SIGTERM, term)):
            try:
                signal.signal(sig, handler)
            except Exception:
                pass


def interruptible_get(refs: Refs, *, timeout: Optional[float] = None, poll: float = DEFAULT_POLL,
                      cleanup_timeout: float = DEFAULT_CLEANUP_TIMEOUT) -> Any:
    """``ray.get`` that reacts to Ctrl+C by cancelling the work and waiting for its cleanup.

    Always returns what ``ray.get`` returns (a single ref or a list, same shape), whoever calls
    it: called from sync code that a coroutine runs, it blocks that thread's event loop exactly
    as ``ray.get`` would. In ``async def`` use ``await`` :func:`interruptible_get_async` instead.
    ``timeout`` behaves as in ``ray.get`` (``GetTimeoutError``), and so do failures: the first
    failed ref raises its error as soon as it is ready, without waiting for the others (which
    keep running: ``cancel_and_wait`` them if the program gives up on them).

    It polls ``ray.wait(timeout=0)`` with an interruptible sleep. When a ``KeyboardInterrupt``
    reaches it, it ``ray.cancel(force=False)``\\ s the refs (once: see :func:`cancel_and_wait`) and
    waits for them up to ``cleanup_timeout`` s; a second Ctrl+C force-cancels. Then the
    KeyboardInterrupt is re-raised.

    Signals, on the main thread with no event loop running in it: for the duration, SIGINT gets
    Python's default handler (KeyboardInterrupt; undoes a launcher's ``SIG_IGN`` or Ray's own
    handler); during the cleanup wait SIGINT force-cancels and SIGTERM is absorbed (launchers
    send it right after SIGINT); on the way out both previous handlers are restored, except that
    after a Ctrl+C cleanup a SIGTERM in the next ``FOLLOW_UP_SIGTERM_GRACE`` s is still absorbed
    (then the previous SIGTERM handler applies). Off the main thread, or with an event loop
    running in the thread (``asyncio.run`` owns SIGINT there: its first Ctrl+C cancels the main
    task and the get goes on, its second raises KeyboardInterrupt, as with ``ray.get``), no
    handler is touched. Threads and processes: starts none.
    """
    ref_list, single = _as_list(refs)
    unique = _unique(ref_list)
    deadline = None if timeout is None else time.monotonic() + timeout
    values: "dict[Any, Any]" = {}
    with _PollingSignals() as handlers:
        try:
            while not _collect_ready(unique, values):
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise _ray.exceptions.GetTimeoutError(
                            f"Get timed out: some object(s) not ready after {timeout}s")
                    time.sleep(min(poll, remaining))
                else:
                    time.sleep(poll)
        except KeyboardInterrupt:
            _wait_cleanup(unique, poll, cleanup_timeout, handlers.owns)
            handlers.cleaned_up = True
            raise
        return values[ref_list[0]] if single else [values[r] for r in ref_list]


def interruptible_wait(refs: Sequence[Any], *, num_returns: int = 1, timeout: Optional[float] = None,
                       fetch_local: bool = True, poll: float = DEFAULT_POLL,
                       cleanup_timeout: float = DEFAULT_CLEANUP_TIMEOUT) -> "tuple[List[Any], List[Any]]":
    """``ray.wait`` that reacts to Ctrl+C the way :func:`interruptible_get` does.

    Same arguments and result as ``ray.wait``: ``(ready, not_ready)`` once ``num_returns`` refs are
    ready or ``timeout`` seconds passed (``None``: no bound), always (called from sync code that a
    coroutine runs, it blocks the loop as ``ray.wait`` would; in ``async def`` use ``await``
    :func:`interruptible_wait_async`). Meanwhile it polls ``ray.wait(timeout=0)`` with an
    interruptible sleep. On the first Ctrl+C the refs not yet ready are cancelled
    (``ray.cancel(force=False)``, once) and their cleanup is awaited up to ``cleanup_timeout`` s;
    a second Ctrl+C force-cancels; then ``KeyboardInterrupt`` is re-raised. Refs already ready
    are left alone.

    Signals and threads: exactly as :func:`interruptible_get` (handlers installed and restored
    only on the main thread with no event loop running in it; the follow-up SIGTERM absorber
    after a Ctrl+C cleanup). Starts no thread or process.
    """
    ref_list = list(refs)
    if not ref_list:
        return [], []
    _ray.wait(ref_list, num_returns=num_returns, timeout=0, fetch_local=False)  # ray.wait's own argument errors
    deadline = None if timeout is None else time.monotonic() + timeout
    with _PollingSignals() as handlers:
        expired = False
        try:
            while True:
                ready, _ = _ray.wait(ref_list, num_returns=num_returns, timeout=0, fetch_local=False)
                if len(ready) >= num_returns:
                    break
                if deadline is not None:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        expired = True
                        break
                    time.sleep(min(poll, remaining))
                else:
                    time.sleep(poll)
        except KeyboardInterrupt:
            try:
                _, pending = _ray.wait(ref_list, num_returns=len(ref_list), timeout=0, fetch_local=False)
            except Exception:
                pending = ref_list
            if pending:
                _wait_cleanup(pending, poll, cleanup_timeout, handlers.owns)
            handlers.cleaned_up = True
            raise
        # the answer in ray.wait's own order and with its fetch_local behaviour (the refs are ready:
        # without a timeout this returns once they are fetched)
        return _ray.wait(ref_list, num_returns=num_returns, timeout=0 if expired else None,
                         fetch_local=fetch_local)


async def interruptible_get_async(refs: Refs, *, timeout: Optional[float] = None, poll: float = DEFAULT_POLL,
                                  cleanup_timeout: float = DEFAULT_CLEANUP_TIMEOUT) -> Any:
    """Coroutine form of :func:`interruptible_get` for ``async def`` code: ``await`` it.

    Awaits (never blocks the loop). When the awaiting task is cancelled (``asyncio.run`` turns the
    first Ctrl+C into cancelling the main task) it cancels the refs (once: see
    :func:`cancel_and_wait`) and awaits their cleanup up to ``cleanup_timeout``; being cancelled
    again (second Ctrl+C) force-cancels. Then re-raises.

    Signals: installs no handler and changes none (the loop's owner keeps SIGINT). Threads and
    processes: starts none.
    """
    ref_list, single = _as_list(refs)
    unique = _unique(ref_list)
    deadline = None if timeout is None else time.monotonic() + timeout
    values: "dict[Any, Any]" = {}
    try:
        while not _collect_ready(unique, values):
            if deadline is not None and time.monotonic() >= deadline:
                raise _ray.exceptions.GetTimeoutError(f"Get timed out: some object(s) not ready after {timeout}s")
            await asyncio.sleep(poll)
    except (asyncio.CancelledError, KeyboardInterrupt):
        log.warning("runtime_guard: cancelled; cancelling %d Ray task(s), waiting up to %.0fs for cleanup",
                    len(unique), cleanup_timeout)
        _cancel(unique, force=False)
        end = time.monotonic() + cleanup_timeout
        try:
            while _not_ready(unique) and time.monotonic() < end:
                await asyncio.sleep(poll)
        except (asyncio.CancelledError, KeyboardInterrupt):
            _cancel(_not_ready(unique), force=True)
        raise
    return values[ref_list[0]] if single else [values[r] for r in ref_list]


async def interruptible_wait_async(refs: Sequence[Any], *, num_returns: int = 1, timeout: Optional[float] = None,
                                   fetch_local: bool = True, poll: float = DEFAULT_POLL,
                                   cleanup_timeout: float = DEFAULT_CLEANUP_TIMEOUT
                                   ) -> "tuple[List[Any], List[Any]]":
    """Coroutine form of :func:`interruptible_wait` for ``async def`` code: ``await`` it.

    Same arguments and result as ``ray.wait``; awaits between polls (never blocks the loop). When
    the awaiting task is cancelled it cancels the refs not yet ready (once) and awaits their
    cleanup up to ``cleanup_timeout``; being cancelled again force-cancels. Then re-raises.

    Signals: installs no handler and changes none. Threads and processes: starts none.
    """
    ref_list = list(refs)
    if not ref_list:
        return [], []
    _ray.wait(ref_list, num_returns=num_returns, timeout=0, fetch_local=False)  # ray.wait's own argument errors
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while True:
            ready, rest = _ray.wait(ref_list, num_returns=num_returns, timeout=0, fetch_local=fetch_local)
            if len(ready) >= num_returns or (deadline is not None and time.monotonic() >= deadline):
                return ready, rest
            await asyncio.sleep(poll)
    except (asyncio.CancelledError, KeyboardInterrupt):
        pending = _not_ready(_unique(ref_list))
        log.warning("runtime_guard: cancelled; cancelling %d Ray task(s), waiting up to %.0fs for cleanup",
                    len(pending), cleanup_timeout)
        _cancel(pending, force=False)
        end = time.monotonic() + cleanup_timeout
        try:
            while pending and _not_ready(pending) and time.monotonic() < end:
                await asyncio.sleep(poll)
        except (asyncio.CancelledError, KeyboardInterrupt):
            if pending:
                _cancel(_not_ready(pending), force=True)
        raise


# ---------------------------------------------------------------------------------------------
# Worker setup: SIGTERM cancels the tasks of event loops running in other threads (async actors)

ENV_CLEANUP = "RUNTIME_GUARD_CLEANUP_TIMEOUT"
_setup_done = False
_terminating = False
_cleanup_timeout = 10.0


def cancel_loop_tasks(timeout: float) -> int:
    """Cancel the tasks of every tracked loop running in another thread; wait up to ``timeout``.

    Only root tasks (those no other task awaits, e.g. the tasks running an actor's method calls)
    are cancelled, each once; the cancellation reaches their children through the program's own
    structure (TaskGroup, gather, ``await``), so no child is cancelled a second time while it
    awaits in its ``finally``. Tasks left running after their awaiters ended are cancelled in
    later rounds (see ``runtime_guard._cancel``). Returns how many tasks the loops had.
    Loops in the calling thread are left alone (there the SystemExit/KeyboardInterrupt from the
    signal handler already unwinds ``asyncio.run``).

    Signals: installs no handler and changes none. Threads and processes: starts none; it
    schedules the cancellation on each loop's own thread and waits for it on the calling one.
    """
    me = threading.get_ident()
    events: List[threading.Event] = []
    counted = [0]
    for loop in _watchdog.tracked_loops():
        if not loop.is_running() or _watchdog.loop_thread_id(loop) == me:
            continue
        done = threading.Event()

        def _start(loop: asyncio.AbstractEventLoop = loop, done: threading.Event = done) -> None:
            try:
                counted[0] += cancel_tree(loop, "runtime_guard: SIGTERM", done.set)
            except Exception:
                done.set()

        try:
            loop.call_soon_threadsafe(_start)
            events.append(done)
        except Exception:
            pass
    deadline = time.monotonic() + timeout
    for ev in events:
        ev.wait(max(0.0, deadline - time.monotonic()))
    return counted[0]


def _on_terminate(reason: str) -> None:
    global _terminating
    if _terminating:
        return
    _terminating = True
    timeout = _cleanup_timeout
    # Whatever Ray's exit path does next (it drains in-flight async tasks without a bound),
    # the process ends within the cleanup budget plus a margin.
    killer = QuietTimer(timeout + 10.0, lambda: hard_exit(1, atexit_timeout=0), "runtime_guard-exit-deadline")
    killer.start()
    try:
        n = cancel_loop_tasks(timeout)
        log.warning("runtime_guard: %s: cancelled %d task(s) on worker event loops", reason, n)
    except Exception:
        log.debug("runtime_guard: cancelling loop tasks failed", exc_info=True)


def _wrap_handler(handler: Any) -> Any:
    if getattr(handler, "_runtime_guard", False):
        return handler

    def on_sigterm(signum: int, frame: Any) -> Any:
        _on_terminate("SIGTERM")
        if callable(handler):
            return handler(signum, frame)
        if handler == signal.SIG_IGN:
            return None
        raise SystemExit(128 + signum)

    on_sigterm._runtime_guard = True  # type: ignore[attr-defined]
    on_sigterm._wrapped = handler  # type: ignore[attr-defined]
    return on_sigterm


def _hook_ray_exit_paths() -> None:
    # Trap 1: Ray's worker main loop installs its own SIGTERM handler *after* the setup hook.
    # (a) wrap whatever handler Ray installs later through ray._private.utils.set_sigterm_handler;
    # (b) wrap the function Ray's handler calls (works even when we are not on the main thread,
    #     e.g. setup_worker() from an async actor's __init__).
    try:
        from ray._private import utils as ray_utils

        orig_set = ray_utils.set_sigterm_handler
        if not getattr(orig_set, "_runtime_guard", False):
            def set_sigterm_handler(handler: Callable[..., Any]) -> None:
                orig_set(_wrap_handler(handler))

            set_sigterm_handler._runtime_guard = True  # type: ignore[attr-defined]
            ray_utils.set_sigterm_handler = set_sigterm_handler
    except Exception:
        log.debug("runtime_guard: could not hook ray set_sigterm_handler", exc_info=True)
    try:
        from ray._private import worker as ray_worker

        orig_raise = getattr(ray_worker, "raise_sys_exit_with_custom_error_message", None)
        if orig_raise is not None and not getattr(orig_raise, "_runtime_guard", False):
            def raise_sys_exit_with_custom_error_message(*args: Any, **kwargs: Any) -> Any:
                _on_terminate("Ray worker exit")
                return orig_raise(*args, **kwargs)

            raise_sys_exit_with_custom_error_message._runtime_guard = True  # type: ignore[attr-defined]
            ray_worker.raise_sys_exit_with_custom_error_message = raise_sys_exit_with_custom_error_message
    except Exception:
        log.debug("runtime_guard: could not hook ray worker exit", exc_info=True)


def setup_worker(*, watchdog: Optional[bool] = None, cleanup_timeout: Optional[float] = None) -> None:
    """Prepare a Ray worker process for clean shutdown. Idempotent, never raises.

    Use as ``runtime_env={"worker_process_setup_hook": "runtime_guard.ray.setup_worker"}`` or call it
    at the top of an actor's ``__init__`` (also off the main thread, as in async actors).

    * SIGTERM cancels every task on event loops running in other threads (an async actor's loop)
      and waits up to ``cleanup_timeout`` s (``$RUNTIME_GUARD_CLEANUP_TIMEOUT``, default 10) for their
      ``finally`` blocks, then lets Ray's own handler exit the process; a timer hard-exits if exit
      then takes more than ``cleanup_timeout + 10`` s.
    * Every event loop of the process keeps ticking (a heartbeat every 0.2 s, or the watchdog's), so
      ``ray.cancel(force=False)`` — delivered with ``_thread.interrupt_main()`` — reaches a task whose
      loop is idle in a long ``asyncio.sleep``.
    * ``watchdog=True`` (or ``RUNTIME_GUARD=1`` in the worker's environment) also reports loop stalls.
    * When the driver runs the exit report (``RUNTIME_GUARD_EXIT_REPORT_WORKERS=1``, which the
      driver's exit report adds to the job's ``env_vars``), the worker records where its tasks,
      threads and children are made and answers the driver's report at the driver's exit (one
      daemon thread waiting in a call on the job's collector actor; see
      ``runtime_guard._ray_exit_report``). Otherwise nothing: one environment lookup.

    Signals: on the main thread, the SIGTERM handler is replaced for good by a wrapper that does
    the above and then calls the previous handler (``SIG_IGN`` stays ignored; ``SIG_DFL`` becomes
    ``SystemExit(143)``); handlers Ray installs later through its own ``set_sigterm_handler`` are
    wrapped the same way, and Ray's worker-exit function is hooked. Nothing is ever restored: the
    worker process is Ray's and lives for this. SIGINT is not touched. Threads: the watchdog's (or
    the heartbeat's) thread, and on SIGTERM a daemon timer thread (``QuietTimer``: the deadline;
    no signal mask change); processes: none started. Tasks: on SIGTERM, only the
    root tasks of loops running in other threads are cancelled, each once.
    """
    global _setup_done, _cleanup_timeout
    try:
        if cleanup_timeout is None:
            cleanup_timeout = _watchdog._env_float(ENV_CLEANUP, None) or 10.0
        _cleanup_timeout = cleanup_timeout
        if watchdog is None:
            watchdog = os.environ.get("RUNTIME_GUARD", "").strip().lower() in ("1", "true", "yes", "on")
        if watchdog:
            _watchdog.install()
        else:
            _watchdog.install(tick_only=True)
        _hook_ray_exit_paths()
        if in_main_thread():
            current = signal.getsignal(signal.SIGTERM)
            signal.signal(signal.SIGTERM, _wrap_handler(current))
        try:
            _watchdog.register_loop(asyncio.get_running_loop())  # called in an async actor's __init__
        except RuntimeError:
            pass
        if os.environ.get("RUNTIME_GUARD_EXIT_REPORT_WORKERS"):  # the driver's exit report asks (else: nothing)
            from . import _ray_exit_report

            _ray_exit_report.start_worker()
        _setup_done = True
    except Exception:
        log.warning("runtime_guard.ray.setup_worker failed", exc_info=True)
