"""Non-blocking shutdown for thread pools, process pools and multiprocessing pools."""
from __future__ import annotations

import logging
import multiprocessing.pool
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any

__all__ = ["shutdown_executor"]

log = logging.getLogger("runtime_guard")


def _terminate_processes(procs: list[Any], timeout: float) -> None:
    for p in procs:
        try:
            if p.is_alive():
                p.terminate()
        except Exception:
            pass
    for p in procs:
        try:
            p.join(timeout)
            if p.is_alive():
                p.kill()  # SIGTERM ignored or stuck in C code: make sure it does not linger
                p.join(timeout)
        except Exception:
            pass


def shutdown_executor(executor: Any, *, timeout: float = 5.0) -> None:
    """Stop ``executor`` now, without waiting for running work and without leaving workers behind.

    * ``concurrent.futures`` executors: ``shutdown(wait=False, cancel_futures=True)``; for a
      ``ProcessPoolExecutor`` the worker processes are then terminated (SIGTERM, then SIGKILL after
      ``timeout``), which also lets its manager thread exit so interpreter exit does not hang.
      Threads of a ``ThreadPoolExecutor`` cannot be killed: a running call finishes in the background.
    * ``multiprocessing.Pool``: ``terminate()``.
    * anything else with ``shutdown()``: ``shutdown(wait=False, cancel_futures=True)`` if accepted.

    Never raises: errors are logged (this runs on cleanup paths).

    Signals: sends SIGTERM then SIGKILL to a ``ProcessPoolExecutor``'s workers (and
    ``Pool.terminate`` does its own); installs no handler, changes no mask, starts no thread
    (a ``multiprocessing.Pool``'s ``terminate`` uses the pool's own threads).
    """
    try:
        if isinstance(executor, multiprocessing.pool.Pool):
            executor.terminate()
            return
        procs: list[Any] = []
        if isinstance(executor, ProcessPoolExecutor):
            # Snapshot before shutdown: shutdown() may drop the reference to the dict.
            procs = list((getattr(executor, "_processes", None) or {}).values())
        if isinstance(executor, Executor):
            executor.shutdown(wait=False, cancel_futures=True)
        elif hasattr(executor, "shutdown"):
            try:
                executor.shutdown(wait=False, cancel_futures=True)
            except TypeError:
                executor.shutdown(wait=False)
        elif hasattr(executor, "terminate"):
            executor.terminate()
        else:
            raise TypeError(f"don't know how to shut down {type(executor).__name__}")
        if procs:
            _terminate_processes(procs, timeout)
    except Exception:
        log.warning("runtime_guard.shutdown_executor(%r) failed", executor, exc_info=True)
