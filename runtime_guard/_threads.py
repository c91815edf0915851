"""runtime_guard's helper threads: plain daemon threads that leave the signal mask alone.

Signals: none of these touches a signal mask or installs a handler. A thread starts with the
mask of the thread that starts it, exactly as a ``threading.Thread`` would, and so does every
thread and child process (``subprocess``, ``multiprocessing`` with ``fork`` or ``spawn``) started
from code it runs.

Why no mask. These threads used to block SIGINT and SIGTERM, on the belief that a
process-directed signal could land on a helper thread and leave the main thread asleep. Linux
does not do that: ``complete_signal()`` gives a process-directed signal to the thread-group
leader (the main thread) whenever it does not block the signal and has none pending, and only
otherwise to another thread. Measured with ``bench/signal_delivery.py`` (2 cores, CPython 3.11,
Linux): a main thread in ``time.sleep(60)``, ``Event.wait``, ``Thread.join``, ``asyncio.run`` or
a loop of 1 s lock waits ran its Python handler 0.1 ms (median) after ``os.kill``/``os.killpg``
with 4 helper threads sleeping, waiting in epoll or select, or hashing in C without the GIL, none
of them masked; with Python-spinning helpers it waited for the GIL (medians 3-54 ms, at most
293 ms unmasked and 102 ms with the old mask: the GIL hand-off on 2 cores, not the delivery).
The control (the main thread itself blocking the signals during a 3 s sleep) ran it 2.7 s late.
The one late case seen since (2026-11-26, Linux 6.18, ftrace ``signal_deliver``): a signal sent
just before the main thread entered ``clock_nanosleep`` (still dropping the GIL in ``time.sleep``)
was still delivered to the main thread, whose C handler set CPython's flag; the sleep then ran its
full length, since nothing interrupts a syscall begun after the signal (2 of 24 such signals with
``LoopThread`` helpers, 5 of 28 with plain ``threading.Thread`` ones; 0 of 28 sent once it slept). No mask on
other threads changes that window. The mask
bought nothing, and because a thread's mask is inherited by the threads it starts and survives
``fork`` and ``execve``, it made every child started from code on these threads (a
``LoopThread``'s loop, an ``atexit`` handler run by ``hard_exit``, a watchdog ``on_stall``
callback) immune to SIGTERM and Ctrl+C.

``quiet_signals``, ``daemon_thread`` and ``QuietTimer`` keep their names for the modules that
import them; ``quiet_signals`` no longer does anything.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

__all__ = ["quiet_signals", "daemon_thread", "QuietTimer"]


def quiet_signals() -> None:
    """Does nothing (kept for importers). It used to block SIGINT and SIGTERM in the calling
    thread; that mask was inherited by every thread and process started from there (see the
    module docstring for the measurement that showed it was never needed)."""


def daemon_thread(target: Callable[..., Any], name: str, *args: Any) -> threading.Thread:
    """A daemon ``threading.Thread`` named ``name`` running ``target(*args)``, not started.

    Signals: no handler, no mask change (the thread has the starting thread's mask). Children:
    none of its own; whatever ``target`` starts inherits the starting thread's mask."""
    return threading.Thread(target=target, args=args, name=name, daemon=True)


class QuietTimer(threading.Timer):
    """A daemon ``threading.Timer`` with a name (one daemon thread, started by ``start()``).

    Signals: no handler, no mask change (the name is historical: it used to block SIGINT and
    SIGTERM). Children: none of its own; what ``function`` starts inherits the starting
    thread's mask."""

    def __init__(self, interval: float, function: Callable[..., Any], name: str = "runtime_guard-timer") -> None:
        super().__init__(interval, function)
        self.daemon = True
        self.name = name
