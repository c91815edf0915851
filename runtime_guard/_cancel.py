"""Cancel the tasks of a loop once each, from the top of each await tree down.

Cancelling every task of a loop at once breaks structured concurrency: a ``TaskGroup`` whose
parent is cancelled cancels its children a second time, and that second ``CancelledError``
lands while a child awaits inside its ``finally`` (aborting its cleanup). So only *root* tasks
(tasks no other live task awaits) are cancelled; the cancellation then flows down the tree the
way the program's own structure delivers it (TaskGroup, gather, ``await task``), once per task.
Tasks that are still running after their awaiters ended (shielded ones, or awaiters that
swallowed the cancellation) become roots themselves and are cancelled in a later round.

Plain asyncio, no Ray: used by ``runtime_guard.ray.cancel_loop_tasks`` on SIGTERM.

Signals, threads, children: none (no handler, no mask, no thread, no process); the rounds run as
callbacks on the loop itself.
"""
from __future__ import annotations

import asyncio
import threading
import weakref
from typing import Any, Callable, List, Optional, Set

__all__ = ["awaited_tasks", "root_tasks", "cancel_tree", "is_cancelling"]

ROUND_INTERVAL = 0.05  # how often a round looks for new roots (on the loop thread; cheap)


def is_cancelling(task: "asyncio.Task[Any]") -> bool:
    """True if a cancellation was already requested for ``task`` (and not withdrawn)."""
    cancelling = getattr(task, "cancelling", None)  # 3.11+
    if cancelling is not None:
        try:
            return bool(cancelling())
        except Exception:
            return False
    return bool(getattr(task, "_must_cancel", False))  # 3.10: only until the task next runs


def _futures_awaited_via(fut: Any, out: Set[Any], depth: int = 0) -> None:
    """Add the tasks that awaiting ``fut`` waits for: the task itself, or a gather's children."""
    if fut is None or depth > 32:
        return
    if isinstance(fut, asyncio.Task):
        out.add(fut)
        return
    for child in getattr(fut, "_children", None) or ():  # asyncio.gather's _GatheringFuture
        _futures_awaited_via(child, out, depth + 1)


def _task_group_parent(task: "asyncio.Task[Any]") -> Optional["asyncio.Task[Any]"]:
    """The parent task of the TaskGroup that spawned ``task`` (found via the group's done callback)."""
    for entry in getattr(task, "_callbacks", None) or ():
        cb = entry[0] if isinstance(entry, tuple) else entry
        group = getattr(cb, "__self__", None)
        if group is not None and hasattr(group, "_parent_task") and hasattr(group, "_tasks"):
            parent = getattr(group, "_parent_task", None)
            if isinstance(parent, asyncio.Task):
                return parent
    return None


def awaited_tasks(tasks: "Set[asyncio.Task[Any]]") -> "Set[asyncio.Task[Any]]":
    """The tasks among ``tasks`` that another live task awaits (directly, via gather or a TaskGroup)."""
    awaited: Set[Any] = set()
    for t in tasks:
        if t.done():
            continue
        _futures_awaited_via(getattr(t, "_fut_waiter", None), awaited)
        parent = _task_group_parent(t)
        if parent is not None and not parent.done():
            awaited.add(t)
    return {t for t in awaited if t in tasks}


def root_tasks(tasks: "Set[asyncio.Task[Any]]") -> "List[asyncio.Task[Any]]":
    live = {t for t in tasks if not t.done()}
    below = awaited_tasks(live)
    return [t for t in live if t not in below]


def cancel_tree(loop: asyncio.AbstractEventLoop, msg: str, on_done: Callable[[], None]) -> int:
    """Cancel the tasks ``loop`` has now, roots first, each at most once. Call on the loop's thread.

    Returns how many tasks there were. Rounds repeat every ``ROUND_INTERVAL`` s until all those
    tasks are done (then ``on_done()`` is called); tasks created later (e.g. by cleanup code) are
    left alone. A task that is already cancelling is never cancelled again.
    """
    snapshot = weakref.WeakSet(t for t in asyncio.all_tasks(loop) if not t.done())
    count = len(snapshot)
    touched: "weakref.WeakSet[asyncio.Task[Any]]" = weakref.WeakSet()
    finished = threading.Event()

    def one_round() -> None:
        try:
            live = {t for t in snapshot if not t.done()}
            if not live:
                finished.set()
                on_done()
                return
            for t in root_tasks(live):
                if t in touched or is_cancelling(t):
                    continue  # a second CancelledError would abort cleanup in progress
                touched.add(t)
                t.cancel(msg=msg)
            loop.call_later(ROUND_INTERVAL, one_round)
        except Exception:
            finished.set()
            on_done()

    one_round()
    return count
