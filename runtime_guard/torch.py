"""PyTorch distributed teardown on SIGTERM (k8s eviction: SIGTERM, ~25 s grace, then SIGKILL).

Needs the ``torch`` extra: ``pip install "shutdown-lint-runtime[torch]"``.
"""
from __future__ import annotations

import atexit
import logging
import os
import signal
import threading
import time
import warnings
from typing import Any, Callable, List, Optional

try:
    import torch as _torch
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "runtime_guard.torch needs PyTorch: pip install 'shutdown-lint-runtime[torch]'  (or pip install torch)"
    ) from exc

from .exit import hard_exit
from .signals import NestedRun, in_main_thread, install_owned, on_delivery
from ._threads import QuietTimer, daemon_thread

__all__ = ["install_distributed_teardown", "teardown"]

log = logging.getLogger("runtime_guard.torch")
_state = {"running": False, "done": False, "deadline": False}
#: The SIGTERM handler's run that is going on (no bound: the deadline timer ends the process).
_entered = NestedRun()
_lock = threading.Lock()
#: What install_distributed_teardown put in place in this process: the handler it installed and the
#: one it replaced, so a forked child can be given back the handler it would have had.
_installed: dict = {}


def _forget_in_child() -> None:
    """After fork: the child is not the rank. Without this it inherits the SIGTERM handler (it would
    run destroy_process_group on the parent's group, which aborts) and faulthandler's C hook, which
    writes into the pipe the PARENT's helper thread reads: SIGTERM to a DataLoader or multiprocessing
    child tore down and ended the parent rank (measured: parent exit 143, child -6). The hook and the
    pipe are dropped by runtime_guard.signals' own fork hook (``forget_delivery``, which runs first);
    here the child gets the SIGTERM disposition it had before the install."""
    if not _installed:
        return
    try:
        current = signal.getsignal(signal.SIGTERM)
        if current is _installed.get("handler"):
            previous = _installed.get("previous")
            # None: the previous handler was not installed from Python and cannot be put back.
            current = previous if previous is not None else signal.SIG_DFL
        if current is not None:
            signal.signal(signal.SIGTERM, current)
    except (OSError, RuntimeError, ValueError, TypeError):
        pass
    _installed.clear()
    _state.update(running=False, done=False, deadline=False)
    _entered.reset()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _run_bounded(name: str, fn: Callable[[], Any], budget: float) -> bool:
    """Run one teardown step in a helper thread so a wedged step (NCCL) cannot block the next one."""
    result: List[Optional[BaseException]] = []

    def target() -> None:
        try:
            fn()
            result.append(None)
        except BaseException as exc:  # keep going: tear down the healthy half
            result.append(exc)

    t0 = time.monotonic()
    th = daemon_thread(target, f"runtime_guard-{name}")
    th.start()
    th.join(max(budget, 0.0))
    took = time.monotonic() - t0
    if th.is_alive():
        log.error("runtime_guard: %s did not finish within %.1fs; skipping", name, budget)
        return False
    if result and result[0] is not None:
        log.warning("runtime_guard: %s failed after %.2fs: %r", name, took, result[0])
        return False
    log.info("runtime_guard: %s done in %.2fs", name, took)
    return True


def _cuda_sync() -> None:
    # Only when this process already initialised CUDA: synchronize() would otherwise create a context.
    if _torch.cuda.is_available() and _torch.cuda.is_initialized():
        _torch.cuda.synchronize()


def _destroy_pg() -> None:
    dist = _torch.distributed
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def teardown(budget: float = 20.0) -> None:
    """Drain CUDA and destroy the default process group, each step guarded and time-bounded.

    Runs at most once per process; safe to call from any thread.
    """
    with _lock:
        if _state["running"] or _state["done"]:
            return
        _state["running"] = True
    try:
        deadline = time.monotonic() + budget
        _run_bounded("torch.cuda.synchronize", _cuda_sync, budget / 2)
        _run_bounded("destroy_process_group", _destroy_pg, deadline - time.monotonic())
    finally:
        _state["done"] = True


def _arm_deadline(grace: float, exit_code: int) -> None:
    """Start, once, the timer that hard-exits at ``0.9 * grace`` whatever the teardown is doing."""
    with _lock:
        if _state["deadline"]:
            return
        _state["deadline"] = True
    QuietTimer(grace * 0.9, lambda: hard_exit(exit_code, atexit_timeout=0), "runtime_guard-teardown-deadline").start()


def install_distributed_teardown(grace: float = 25.0, *, exit_code: int = 143,
                                 chain: bool = True) -> Optional[Any]:
    """Install a SIGTERM handler that tears down CUDA/``torch.distributed`` and exits within ``grace``.

    On SIGTERM: start a watchdog thread that hard-exits with ``exit_code`` at ``0.9 * grace``;
    ``torch.cuda.synchronize()`` (if CUDA is initialised) and ``destroy_process_group()`` (if
    ``is_available() and is_initialized()``), each in try/except with its own time budget
    (``0.8 * grace`` in total); then, if ``chain`` and the previous handler is a Python callable
    (Ray's, torchrun's), call it so its exit semantics apply; else ``hard_exit(exit_code)``
    (128 + 15 = 143 by default). Returns the previous handler.

    The deadline holds even when the main thread is blocked in C when SIGTERM arrives (a collective
    waiting for a peer, ``cuda.synchronize()`` behind a kernel that never ends), where no Python
    handler can run: a helper thread hears the signal through faulthandler or the signal wakeup fd
    (``runtime_guard.signals.on_delivery``, also when a C++ thread takes it), arms the deadline, gives
    the main thread ``min(1, grace / 10)`` s to start the handler itself, and otherwise tears down
    and exits from the helper thread. A later ``signal.signal(SIGTERM, ...)`` by other code removes
    that C-level hook (the Python handler, if chained, still runs).

    What it does to the rest of the program: it replaces the SIGTERM handler (chaining to the
    previous Python one as above), registers faulthandler for SIGTERM, takes the signal wakeup fd
    where no one holds it, and starts two helper threads that only read pipes (signal mask
    untouched); it starts no process. A child
    forked afterwards (DataLoader workers, ``multiprocessing`` with ``fork``) gets the previous
    SIGTERM handler back and no faulthandler hook, so its fate under SIGTERM is what it was
    without this call. Nothing is registered with ``atexit``: a run that gets no SIGTERM ends as it
    did before.

    Off the main thread ``signal.signal`` is impossible: then the teardown is registered with
    ``atexit`` (Ray workers turn SIGTERM into SystemExit in the main thread, which runs it), a
    RuntimeWarning is emitted and None is returned.
    """
    budget = grace * 0.8

    if not in_main_thread():
        warnings.warn("install_distributed_teardown() called off the main thread: SIGTERM handler not "
                      "installed; teardown registered with atexit instead", RuntimeWarning, stacklevel=2)
        atexit.register(teardown, budget)
        return None

    previous = signal.getsignal(signal.SIGTERM)
    handled = threading.Event()  # the Python handler has started (the main thread is free)

    def on_sigterm(signum: int, frame: Any) -> None:
        # A SIGTERM that arrives while this handler runs (torchrun forwards one, the kernel or
        # the scheduler sends another) runs this handler again, nested, in the same thread, at
        # the next bytecode: wherever the first one is, possibly holding a lock (the Event's
        # condition, _lock, a logging handler's lock). The nested run must take none of them:
        # it returns before touching anything (NestedRun: a mark read and stored, no call in between). It
        # used to run the whole path, nested: it waited for the locks the first run held (the
        # process ended only at the deadline, 0.9 * grace) or hard-exited under them (flush and
        # atexit work waited on them: ~5 s). tests/runtime_guard/test_torch_nested_sigterm.py
        if _entered.nested():
            return
        handled.set()
        if _state["running"]:
            return  # the helper thread is already tearing down: keep going
        _arm_deadline(grace, exit_code)
        log.warning("runtime_guard: SIGTERM: tearing down torch.distributed (grace %.0fs)", grace)
        teardown(budget)
        if chain and callable(previous) and previous not in (signal.default_int_handler,):
            previous(signum, frame)  # may raise SystemExit (Ray) - the deadline timer still bounds exit
        hard_exit(exit_code)

    def on_delivery_in_c() -> None:  # helper thread, at delivery time (runtime_guard.signals.on_delivery)
        _arm_deadline(grace, exit_code)
        if handled.wait(min(1.0, grace / 10)):
            return
        log.warning("runtime_guard: SIGTERM while the main thread is blocked in a C call: tearing down "
                    "torch.distributed from a helper thread (grace %.0fs)", grace)
        teardown(budget)
        hard_exit(exit_code)

    install_owned(signal.SIGTERM, on_sigterm)  # a child forked afterwards gets `previous` back, stacked ones too
    _installed.update(handler=on_sigterm, previous=previous)
    on_delivery(signal.SIGTERM, on_delivery_in_c)  # after signal.signal: faulthandler chains to it
    # No atexit teardown here: a program that ends without SIGTERM ends exactly as it did without
    # this call (docs/fix-safety.md); SIGTERM's own path tears down above, before chaining.
    return previous
