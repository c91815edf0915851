"""Supervision for fire-and-forget asyncio tasks.

A task whose exception nobody awaits is silently dropped by asyncio; in the 128-GPU incident
(skyrl #1691) that left a training job idle for days. ``supervise`` keeps the task referenced
until it ends and logs its failure with the traceback at once; what happens next is the task's
policy (``on_error``):

* ``"log"``: nothing else. No signal is sent, no handler or hook is installed, no task is
  cancelled, no thread is started, the process does not exit: the program goes on exactly as it
  would have (this is what SHD102's and SHD106's safe fixes pass, explicitly).
* ``"cancel-main"``: the loop's main task is cancelled so ``asyncio.run`` unwinds through its
  ``finally`` blocks (with no main task: SIGINT to the main thread, else exit 1), and a daemon
  timer thread exits the process if the loop still runs after the grace period.
* ``"exit"``: ``hard_exit(1)``.

Neither policy starts, signals or waits for child processes (``hard_exit`` ends only this
process; children outlive it unless they watch it).
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import weakref
from typing import Any, Literal, Optional, TypeVar, cast

from ._cancel import is_cancelling
from .exit import hard_exit
from ._threads import QuietTimer

__all__ = ["supervise", "set_default_policy", "get_default_policy", "Policy", "find_main_task", "cancel_and_wait"]

Policy = Literal["log", "cancel-main", "exit"]
_POLICIES = ("log", "cancel-main", "exit")
ENV_POLICY = "RUNTIME_GUARD_TASK_POLICY"
ENV_GRACE = "RUNTIME_GUARD_EXIT_GRACE"

log = logging.getLogger("runtime_guard.supervise")
T = TypeVar("T", bound="asyncio.Future[Any]")

# Strong references (the event loop only keeps weak references to tasks), each with the policy its
# caller passed (None: the process default, read when the task fails).
_tasks: dict["asyncio.Future[Any]", Optional[str]] = {}
_default_policy: Optional[str] = None
_excepthook_installed = False
#: Loops (with no main task) for whose failure the main thread was already sent SIGINT: one SIGINT
#: and one grace timer per loop, as one cancel of the main task where there is one. Without it,
#: 1000 tasks failing at once sent 983 SIGINTs (the later ones landed in the program's own
#: cleanup after the first KeyboardInterrupt: 5 of 5 runs never finished it) and started 1000
#: timer threads (tests/runtime_guard/test_supervise_many_failures.py).
_interrupted_loops: "weakref.WeakSet[asyncio.AbstractEventLoop]" = weakref.WeakSet()


def _env_policy() -> str:
    value = os.environ.get(ENV_POLICY, "").strip().lower()
    return value if value in _POLICIES else "cancel-main"


def get_default_policy() -> str:
    """The policy of tasks supervised without ``on_error``: ``set_default_policy``'s, else
    ``$RUNTIME_GUARD_TASK_POLICY``'s, else ``"cancel-main"``. An explicit ``on_error`` always wins."""
    return _default_policy if _default_policy is not None else _env_policy()


def set_default_policy(policy: Policy) -> str:
    """Set the process-wide default policy; returns the previous one.

    It applies only to tasks supervised without ``on_error`` (read when such a task fails); a
    task given ``on_error=...`` (as every fix of shutdown-lint does) keeps its own policy.
    """
    global _default_policy
    if policy not in _POLICIES:
        raise ValueError(f"policy must be one of {_POLICIES}, got {policy!r}")
    previous = get_default_policy()
    _default_policy = policy
    return previous


def _grace() -> float:
    try:
        return float(os.environ.get(ENV_GRACE, "30"))
    except ValueError:
        return 30.0


def find_main_task(loop: asyncio.AbstractEventLoop) -> Optional["asyncio.Task[Any]"]:
    """The task ``run_until_complete`` (hence ``asyncio.run``) is waiting for, if any.

    Recognised by the done-callback run_until_complete adds to it (asyncio's
    ``_run_until_complete_cb``, uvloop's ``done_cb``). Only looks: no signal, thread or task change.
    """
    try:
        tasks = asyncio.all_tasks(loop)
    except Exception:
        return None
    for task in tasks:
        for entry in getattr(task, "_callbacks", None) or ():
            cb = entry[0] if isinstance(entry, tuple) else entry
            if getattr(cb, "__name__", "") in ("_run_until_complete_cb", "done_cb"):
                return task
    return None


def _exit_if_loop_still_running(loop: asyncio.AbstractEventLoop, grace: float) -> None:
    """Start a daemon timer thread (SIGINT/SIGTERM blocked in that thread only; it starts no
    process) that calls ``hard_exit(1)``, skipping atexit handlers, if ``loop`` still runs after
    ``grace`` seconds. ``"cancel-main"`` only: a task that swallowed the CancelledError must not
    keep the process alive."""
    def check() -> None:
        try:
            if loop.is_running() and not loop.is_closed():
                log.error("runtime_guard: event loop still running %.1fs after a supervised task failed; exiting", grace)
                hard_exit(1, atexit_timeout=0)  # a deadline: do not wait on atexit work as well
        except Exception:
            pass

    timer = QuietTimer(grace, check, "runtime_guard-exit-grace")
    timer.start()


def _interrupt_main_thread() -> bool:
    """Send SIGINT to the main thread (``pthread_kill``) if Python handles SIGINT there, so the
    program's own SIGINT handler runs as on Ctrl+C (the default one raises KeyboardInterrupt).
    Installs nothing and changes no handler; False when SIGINT is ignored or left to the OS.
    ``"cancel-main"`` with no main task only."""
    handler = signal.getsignal(signal.SIGINT)
    if not callable(handler):
        return False
    try:
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
        return True
    except Exception:
        return False


def _apply_policy(task: "asyncio.Future[Any]", policy: str) -> None:
    """What ``"cancel-main"`` and ``"exit"`` do after the failure was logged (``"log"``: nothing)."""
    if policy == "log":
        return
    if policy == "exit":
        hard_exit(1)
    loop = task.get_loop()
    main = find_main_task(loop)
    if main is not None and main is not task and not main.done():
        if is_cancelling(main):
            # Already unwinding (an earlier failure, Ctrl+C): a second CancelledError would land
            # in its finally blocks and abort their cleanup. The first failure armed the grace timer.
            log.error("runtime_guard: the main task %r is already being cancelled", main.get_name())
            return
        log.error("runtime_guard: cancelling the main task %r so the program unwinds", main.get_name())
        main.cancel(msg="runtime_guard: a supervised task failed")
        _exit_if_loop_still_running(loop, _grace())
        return
    # No main task: the loop is driven by run_forever (often in a helper thread). Interrupt the
    # main thread like Ctrl+C would; if Python does not handle SIGINT there, exit now.
    if threading.current_thread() is not threading.main_thread():
        if loop in _interrupted_loops:
            # Already interrupted for this loop (an earlier failure): a second SIGINT would land in
            # the cleanup the first one started. The first failure armed the grace timer.
            log.error("runtime_guard: no main task on this loop; the main thread was already interrupted")
            return
        if _interrupt_main_thread():
            try:
                _interrupted_loops.add(loop)
            except TypeError:  # a loop class without weak references: not remembered
                pass
            log.error("runtime_guard: no main task on this loop; sent SIGINT to the main thread")
            _exit_if_loop_still_running(loop, _grace())
            return
    log.error("runtime_guard: no main task to cancel; exiting with status 1")
    hard_exit(1)


def _policy_of(task: "asyncio.Future[Any]", explicit: Optional[str]) -> str:
    return explicit if explicit is not None else get_default_policy()


def _done(task: "asyncio.Future[Any]", explicit: Optional[str]) -> None:
    _tasks.pop(task, None)
    try:
        if task.cancelled():
            return
        exc = task.exception()  # retrieved: asyncio will not report it a second time when collected
        if exc is None:
            return
        name = task.get_name() if isinstance(task, asyncio.Task) else repr(task)
        log.error("runtime_guard: supervised task %s failed", name, exc_info=(type(exc), exc, exc.__traceback__))
        _apply_policy(task, _policy_of(task, explicit))
    except Exception:
        log.exception("runtime_guard: error while handling a supervised task's failure")


def _thread_excepthook_factory(previous: Any) -> Any:
    """A ``threading.excepthook`` that acts only on the SystemExit/KeyboardInterrupt of a task
    supervised with a policy other than ``"log"`` and hands every other exception to ``previous``
    (the hook that was installed before: chained, not replaced)."""
    def hook(args: Any) -> None:
        exc = args.exc_value
        if isinstance(exc, (SystemExit, KeyboardInterrupt)):
            # asyncio re-raises SystemExit/KeyboardInterrupt out of run_forever: in a helper thread that
            # only ends the thread. Honour them process-wide when a supervised task raised them.
            owner = next((t for t, p in list(_tasks.items())
                          if t.done() and not t.cancelled() and t.exception() is exc
                          and _policy_of(t, p) != "log"), None)
            if owner is not None:
                _tasks.pop(owner, None)
                if isinstance(exc, KeyboardInterrupt) and _interrupt_main_thread():
                    return
                code = exc.code if isinstance(exc, SystemExit) else 130
                if code is None:
                    code = 0
                elif not isinstance(code, int):
                    log.error("%s", code)
                    code = 1
                log.error("runtime_guard: supervised task raised %s in thread %s; exiting with status %s",
                          type(exc).__name__, getattr(args.thread, "name", "?"), code)
                hard_exit(code)
        previous(args)

    hook._runtime_guard = True  # type: ignore[attr-defined]
    return hook


def _install_thread_excepthook() -> None:
    """Wrap the current ``threading.excepthook`` once per process (see the factory). A hook set
    later by other code replaces ours, and is not fought: we never reinstall."""
    global _excepthook_installed
    if _excepthook_installed or getattr(threading.excepthook, "_runtime_guard", False):
        _excepthook_installed = True
        return
    threading.excepthook = _thread_excepthook_factory(threading.excepthook)
    _excepthook_installed = True


def supervise(task: T, *, on_error: Optional[Policy] = None) -> T:
    """Keep ``task`` referenced until it ends and log its failure; returns ``task`` (a drop-in expression).

    Always: a strong reference (dropped when the task ends) and a done callback that, if the task
    raised, logs ``runtime_guard: supervised task <name> failed`` with the traceback on the
    ``runtime_guard.supervise`` logger (at once, where asyncio would report it only when the task
    is garbage-collected, if ever) and marks the exception retrieved. A cancelled or successful
    task is left alone. Then ``on_error``:

    * ``"log"``: nothing more. No signal is sent and no signal handler, ``threading.excepthook``
      or other hook is installed, no task is cancelled, no thread or process is started, the
      process does not exit: every other behaviour of the program is unchanged.
    * ``"cancel-main"``: cancel the loop's main task (the one ``asyncio.run`` or
      ``run_until_complete`` waits for) so the program unwinds through its ``finally`` blocks,
      then a daemon timer thread calls ``hard_exit(1)`` if the loop still runs
      ``$RUNTIME_GUARD_EXIT_GRACE`` (30) s later. With no main task: from a non-main thread,
      SIGINT to the main thread (``pthread_kill``; the program's own SIGINT handler runs) if
      Python handles SIGINT, else ``hard_exit(1)``.
    * ``"exit"``: ``hard_exit(1)`` (flush, bounded atexit handlers, ``os._exit``).
    * ``None``: the process default (``set_default_policy``, else ``$RUNTIME_GUARD_TASK_POLICY``,
      else ``"cancel-main"``), read when the task fails. Pass the policy explicitly when the
      behaviour must not depend on the environment.

    For every policy but ``"log"`` the first call wraps ``threading.excepthook`` once per process
    (chained: any other exception, thread or task goes to the hook that was there): a SystemExit or
    KeyboardInterrupt raised by such a supervised task, which asyncio re-raises out of a loop
    running in a helper thread and which would end only that thread, ends the process with the
    exit status (KeyboardInterrupt: SIGINT to the main thread). No policy starts, signals or
    waits for child processes.
    """
    if on_error is not None and on_error not in _POLICIES:
        raise ValueError(f"on_error must be one of {_POLICIES}, got {on_error!r}")
    _tasks[task] = on_error
    task.add_done_callback(lambda t: _done(t, on_error))
    if on_error != "log":
        try:
            _install_thread_excepthook()
        except Exception:
            pass
    return cast(T, task)


# ---------------------------------------------------------------------------------------------
# cancel_and_wait: the reaping idiom in one line (SHD105's fix)

log_cancel = logging.getLogger("runtime_guard.cancel")


async def cancel_and_wait(tasks: Any, *, timeout: Optional[float] = 30.0, msg: Any = None) -> bool:
    """Cancel ``tasks`` (one task/future or an iterable of them) and wait, bounded, until they end.

    ``await runtime_guard.cancel_and_wait(task, timeout=30)`` replaces a bare ``task.cancel()``:
    the caller goes on only after the task's ``except CancelledError`` / ``finally`` code ran (or
    ``timeout`` seconds passed; ``None`` waits without bound). Only the tasks' own
    ``CancelledError`` is absorbed: if the *calling* task is cancelled while it waits, that
    ``CancelledError`` propagates as usual (the tasks keep cleaning up). A task already being
    cancelled is not cancelled a second time (that would abort its cleanup), the current task is
    never waited for, and an exception a task raised during its cleanup is logged, not raised.
    Returns True when every task ended within the timeout. It only cancels and waits for the
    tasks given: no signal, handler, hook, thread or process is touched or started.
    """
    if isinstance(tasks, asyncio.Future):
        items = [tasks]
    elif tasks is None:
        items = []
    else:
        items = [t for t in tasks if t is not None]
    me = asyncio.current_task()
    pending = [t for t in dict.fromkeys(items) if t is not me and not t.done()]
    for t in pending:
        if not (isinstance(t, asyncio.Task) and is_cancelling(t)):
            t.cancel() if msg is None else t.cancel(msg)
    if pending:
        _, still = await asyncio.wait(pending, timeout=timeout)
    else:
        still = set()
    for t in items:
        if t is me or not t.done() or t.cancelled():
            continue
        exc = t.exception()  # retrieved, so asyncio does not log "never retrieved" later
        if exc is not None:
            log_cancel.warning("runtime_guard: a cancelled task ended with %s during its cleanup",
                               type(exc).__name__, exc_info=(type(exc), exc, exc.__traceback__))
    if still:
        log_cancel.warning("runtime_guard: %d cancelled task(s) still running after %ss", len(still), timeout)
    return not still
