"""Signal helpers: turn SIGTERM into the KeyboardInterrupt path that asyncio.run already handles well.

Also the one mechanism runtime_guard uses to own a signal handler without changing what it does
not own (``install_owned``, ``die_of``):

* install only where the caller allows it (``sigterm_as_keyboard_interrupt`` only over the
  default action; ``LoopThread`` over the default or a Python handler it chains to);
* every handler installed through ``install_owned`` is recorded with the one it replaced, and
  after ``fork`` the child gets the previous one back, newest first, for as long as ours is still
  the one in place (a handler other code installed over ours is never touched);
* a handler that stands in for the default action and decides not to act ends the process with
  ``die_of``: the default action again, and the same signal, so the status is still ``-signum``.
"""
from __future__ import annotations

import os
import sys

import _signal  # the C module: no enum classes built at import (``signal`` costs ~1 ms to import)
import _thread

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing, logging, threading, warnings: imported where used (start-up cost)
    import signal
    from types import FrameType
    from typing import Any, Callable, Dict, List, Tuple, Union

    Handler = Union[Callable[[int, Union[FrameType, None]], Any], int, signal.Handlers, None]

__all__ = ["sigterm_as_keyboard_interrupt", "in_main_thread", "Handler", "install_owned", "die_of",
           "uninstall_owned", "on_delivery", "forget_delivery", "HandlerOrHelper", "NestedRun"]

#: (signal, our handler, the handler it replaced), oldest first. Per process: cleared after fork.
_owned: List[Tuple[int, Any, Any]] = []
#: signal -> our handler that stands in for the default action: ``signal.getsignal`` answers
#: ``SIG_DFL`` while it is the one in place, and ``signal.signal`` returns ``SIG_DFL`` for it.
_hidden: Dict[int, Any] = {}
_lock = _thread.allocate_lock()
#: signal -> [read fd, write fd, callback, the handler in place]: see ``on_delivery``. Per process: forgotten after fork.
_delivery: Dict[int, List[Any]] = {}


def __getattr__(name: str) -> Any:
    if name == "Handler":  # the type alias, for annotations elsewhere: built on first use
        import signal
        from types import FrameType
        from typing import Any as _Any, Callable, Union

        value = Union[Callable[[int, Union[FrameType, None]], _Any], int, signal.Handlers, None]
        globals()[name] = value
        return value
    if name == "log":
        import logging

        value = logging.getLogger("runtime_guard.signals")
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def in_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _raw_set(signum: int, handler: Any) -> Any:
    """``signal.signal`` without our hiding wrapper (``_signal``: SIG_DFL/SIG_IGN come back as ints)."""
    if isinstance(handler, int):  # signal.Handlers.SIG_DFL / SIG_IGN: _signal wants the plain int
        handler = int(handler)
    return _signal.signal(int(signum), handler)


#: The forking thread's signal mask while ``os.fork`` runs (``_hold_for_fork``), else empty.
_mask_before_fork: List[Any] = []


def _hold_for_fork() -> None:
    """Before ``fork``: block, in the forking thread only, the signals whose handler in place is
    ours, until ``_release_after_fork`` (in the parent, right after the fork; in the child, once
    ``_give_back_in_child`` has put the replaced handlers back). The child starts with our handler;
    CPython clears the flags of signals caught before its own at-fork work, so a SIGTERM that
    reached the child in that window was lost and the child lived on (measured: 35 of 40
    ``multiprocessing`` fork children survived ``terminate()`` right after ``start()`` with
    ``sigterm_as_keyboard_interrupt`` in the parent; 0 of 40 without it). Held back, the signal
    acts after the hooks, as the handler the child gets back decides (the default: it dies of it).
    The mask is the caller's again before ``fork`` returns, in both processes."""
    if not _owned or not hasattr(_signal, "pthread_sigmask"):
        return
    ours = set()
    for signum, handler, _previous in _owned:
        try:
            if _signal.getsignal(signum) is handler:
                ours.add(signum)
        except (ValueError, TypeError):
            pass
    if ours:
        try:
            _mask_before_fork[:] = [_signal.pthread_sigmask(_signal.SIG_BLOCK, ours)]
        except (OSError, ValueError):
            pass


def _release_after_fork() -> None:
    if _mask_before_fork:
        mask = _mask_before_fork.pop()
        try:
            _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)  # a held-back signal acts now
        except (OSError, ValueError):
            pass


def _give_back_in_child() -> None:
    """After ``fork``: the child runs none of the code our handlers serve. For each handler we
    installed, newest first, put back what it replaced where ours is still the one in place; then
    let in the signals held back while forking (``_hold_for_fork``)."""
    try:
        _give_back_handlers_in_child()
    finally:
        _release_after_fork()


def _give_back_handlers_in_child() -> None:
    global _lock
    _lock = _thread.allocate_lock()  # a lock held by another thread at fork time stays held forever
    for signum, handler, previous in reversed(_owned):
        try:
            if _signal.getsignal(signum) is handler:
                # None: installed outside Python, cannot be put back (installers here never replace one).
                _raw_set(signum, previous if previous is not None else _signal.SIG_DFL)
        except (ValueError, OSError, RuntimeError, TypeError):
            pass
    _owned.clear()
    _hidden.clear()
    for signum in list(_delivery):
        forget_delivery(signum, in_child=True)
    _give_back_slot(in_child=True)  # also where it was kept after a give-back off the main thread


if hasattr(os, "register_at_fork"):
    # before: run last of the before-hooks, right before the fork; after: first in each process
    os.register_at_fork(before=_hold_for_fork, after_in_parent=_release_after_fork,
                        after_in_child=_give_back_in_child)


def hide(signal_module: Any) -> None:
    """Wrap ``signal.getsignal`` / ``signal.signal`` (once) so that a handler installed with
    ``stands_for_default=True`` reads as ``SIG_DFL`` while it is the one in place: code that
    installs its own handler only over the default still does, and a handler it installs over
    ours replaces ours as it would have replaced the default. Called at install when ``signal``
    is loaded, else when it is imported (``runtime_guard.exit_report``'s import hook)."""
    sig = signal_module
    if getattr(sig.getsignal, "_runtime_guard_hides", False):
        return
    getsignal, set_signal = sig.getsignal, sig.signal

    def getsignal_hiding(signalnum: Any) -> Any:
        handler = getsignal(signalnum)
        if handler is not None and _hidden.get(signalnum) is handler:
            return sig.SIG_DFL
        return handler

    def signal_hiding(signalnum: Any, handler: Any) -> Any:
        previous = set_signal(signalnum, handler)
        if previous is not None and _hidden.get(signalnum) is previous:
            if handler is not previous:
                _hidden.pop(signalnum, None)
            return sig.SIG_DFL
        return previous

    for wrapper, original in ((getsignal_hiding, getsignal), (signal_hiding, set_signal)):
        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        wrapper.__name__ = original.__name__
        wrapper.__qualname__ = original.__qualname__
        wrapper.__doc__ = original.__doc__
        wrapper._runtime_guard_hides = True  # type: ignore[attr-defined]
    sig.getsignal, sig.signal = getsignal_hiding, signal_hiding


def _unhide(sig: Any) -> None:
    getsignal, set_signal = sig.getsignal, sig.signal
    if getattr(getsignal, "_runtime_guard_hides", False) and getattr(set_signal, "_runtime_guard_hides", False):
        sig.getsignal, sig.signal = getsignal.__wrapped__, set_signal.__wrapped__


def install_owned(signum: int, handler: Callable[[int, Any], Any], *, stands_for_default: bool = False) -> Handler:
    """``signal.signal(signum, handler)`` (main thread only: ValueError elsewhere), recorded so
    that a child forked afterwards gets the replaced handler back. Returns the replaced handler.
    The caller decides beforehand whether it may replace what is there.

    ``stands_for_default``: ``handler`` replaces ``SIG_DFL`` and acts as it does in the end
    (``die_of``); ``signal.getsignal``/``signal.signal`` answer ``SIG_DFL`` for it (see ``hide``)."""
    with _lock:
        sig = sys.modules.get("signal")
        previous = (sig.signal if sig is not None else _raw_set)(signum, handler)
        _owned.append((signum, handler, previous))
        if stands_for_default:
            _hidden[signum] = handler
            if sig is not None:
                hide(sig)
    return previous


def uninstall_owned(signum: int, handler: Any) -> None:
    """Put back what ``handler`` replaced, where ``handler`` is still the one in place (a handler
    other code installed over it is left alone); forget it either way."""
    with _lock:
        for i in range(len(_owned) - 1, -1, -1):
            s, h, previous = _owned[i]
            if s == signum and h is handler:
                del _owned[i]
                try:
                    if _signal.getsignal(signum) is handler:
                        _raw_set(signum, previous if previous is not None else _signal.SIG_DFL)
                except (ValueError, OSError, TypeError):
                    pass
                break
        if _hidden.get(signum) is handler:
            del _hidden[signum]
        sig = sys.modules.get("signal")
        if not _hidden and sig is not None:
            _unhide(sig)


def is_default(signum: int) -> bool:
    """SIGTERM's (or ``signum``'s) disposition is the default action, as the process set it
    (our own stand-ins for the default count as the default)."""
    current = _signal.getsignal(signum)
    return current == _signal.SIG_DFL or (current is not None and _hidden.get(signum) is current)


def die_of(signum: int) -> None:
    """End the process as the default action of ``signum`` would: restore ``SIG_DFL`` and send
    the signal to this process again (status ``-signum``, no ``finally``, no ``atexit``, as
    before any handler was installed). Returns only where the signal is blocked in every thread
    (it stays pending and acts when unblocked, as it would have without the handler). From any
    thread: off the main thread, where ``signal.signal`` refuses, the default action is restored
    through the C library."""
    _hidden.pop(signum, None)
    try:
        _raw_set(signum, _signal.SIG_DFL)
    except ValueError:  # not the main thread
        _set_default_in_c(signum)
    except OSError:
        pass
    os.kill(os.getpid(), signum)


def _set_default_in_c(signum: int) -> None:
    """``SIG_DFL`` for ``signum`` at the C level, from any thread (Python's own table is left as
    it is: the caller is about to die of the signal)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.signal.restype = ctypes.c_void_p
        libc.signal.argtypes = (ctypes.c_int, ctypes.c_void_p)
        libc.signal(int(signum), None)  # SIG_DFL is the null handler
    except (ImportError, OSError, AttributeError, TypeError):
        os.kill(os.getpid(), _signal.SIGKILL)  # no C library to ask: end now (status -9, not -signum)


def on_delivery(signum: int, callback: Callable[[], None]) -> bool:
    """Call ``callback`` (once, from a helper thread) as soon as ``signum`` is delivered, also
    while the main thread is blocked in a C call, where no Python handler can run.

    CPython runs a Python signal handler only when the main thread next executes bytecode: a
    rank blocked in a collective, a process waiting in a C++ rendezvous, never gets there
    (measured: a gloo rank in ``all_reduce`` ran its handler only at the process group's
    timeout; with the exit report's stand-in, a process in ``init_process_group`` waiting for a
    peer outlived SIGTERM, where with ``SIG_DFL`` it died in 0.03 s). Two C-level sources wake
    the helper, whichever thread the kernel hands the signal to:

    * faulthandler's handler, C code that runs at delivery: it writes the receiving thread's
      traceback into our pipe, then chains to the handler that was in place when it registered
      (call this after installing the Python handler), so the Python path still runs when it can;
    * the signal wakeup fd (``signal.set_wakeup_fd``), where no one else holds it (``_take_slot``):
      CPython's own C handler writes the signal's number there, walking no frames. faulthandler
      writes nothing where the signal is taken by a thread with no Python state (a C++ thread,
      e.g. gloo's): measured with the main thread blocked in a gloo rendezvous under load, 3 of
      55 SIGTERMs went unheard with faulthandler alone.

    The helper threads (bare ``_thread`` threads: no ``threading`` import, not listed by
    ``threading.enumerate``) read the pipes; they need the GIL, which blocking C calls release.
    A later ``signal.signal(signum, ...)`` by other code removes the C hooks (its handler
    decides). One callback per signal: a later call replaces it. Returns False where
    faulthandler cannot register the signal. The wakeup fd is taken only from the main thread
    (``set_wakeup_fd`` refuses elsewhere): a call from another thread hears through faulthandler
    only, until a later call from the main thread."""
    import faulthandler

    start = False
    with _lock:
        entry = _delivery.get(signum)
        try:
            if entry is None:
                r, w = os.pipe()
                os.set_blocking(w, False)  # a full pipe must never block inside the signal handler
                entry = [r, w, callback, None]
                start = True
            else:
                entry[2] = callback
            # Only the receiving thread's own stack (interrupted, so it holds still). A dump of
            # all threads walks other threads' frames and thread states while they run, from a
            # signal handler: it crashed the process (SIGSEGV) in 19 of 24 runs with busy
            # Python threads, 0 of 24 this way (tests/runtime_guard/test_delivery_dump.py).
            # Where the signal is taken by a thread with no Python state (a C++ one), nothing
            # is written: the wakeup byte (_take_slot) is the source that hears it then.
            faulthandler.register(signum, file=entry[1], all_threads=False, chain=True)
            # the handler faulthandler chains to: while it is still the one in place, the
            # wakeup byte stands for faulthandler's hook (a later signal.signal removes both)
            entry[3] = _signal.getsignal(signum)
        except (AttributeError, OSError, RuntimeError, ValueError):
            if start:
                for fd in entry[:2]:
                    os.close(fd)
            return False
        if start:
            with _wake_lock:
                _delivery[signum] = entry
    if start:
        _thread.start_new_thread(_watch_delivery, (entry,))
    _take_slot()  # main thread only: set_wakeup_fd raises ValueError elsewhere, and nothing changes
    return True


def _watch_delivery(entry: List[Any]) -> None:
    try:
        data = os.read(entry[0], 65536)
    except OSError:
        return
    if data:
        try:
            entry[2]()
        except BaseException:  # a bare thread would print the error; the callback owns its failures
            pass
    else:  # EOF: forget_delivery closed the write end
        try:
            os.close(entry[0])
        except OSError:
            pass


# ---------------------------------------------------------------------------------------------
# The signal wakeup fd: the second wake source of ``on_delivery``.
#
# One slot per process, also used by asyncio (``add_signal_handler`` sets it, and sets -1 when its
# last signal handler is removed or the loop closes) and trio (``trio.run`` sets it and warns
# where the one it replaced was not -1; it puts the old one back when it ends). So:
# * taken only where unowned (-1), from the main thread; an owner found there gets its fd back
#   at once (with its warn flag as far as it can be known: ``_owner_warn``), and a byte that
#   landed in the probe meanwhile is passed on to it (``_exchange``);
# * while ours, ``signal.set_wakeup_fd`` is wrapped (``_hide_slot``, as ``hide`` does for
#   ``SIG_DFL``): a caller that replaces ours is told -1 (trio sees an unowned slot: no warning),
#   and a caller that gives the slot up (-1) while we want it gives it back to us; nobody's fd
#   is ever replaced by ours;
# * an owner found by a probe that set the slot around the wrapper (uvloop binds set_wakeup_fd at
#   its import) is watched by the reader: when its fd is closed or replaced, the main thread takes
#   the slot again where it is -1 (``_watch_owner``, ``_retake_in_main``);
# * given back (-1, only where still ours) when the last ``on_delivery`` is forgotten, and in a
#   forked child (the pipe leads to the parent's reader).

#: [read fd, write fd] of our wakeup pipe while it exists, else empty. Per process.
_wake: List[int] = []
#: Held while the wakeup reader passes a byte on to a delivery pipe, and while forget_delivery
#: closes one (an fd closed and reused meanwhile must not get the byte).
_wake_lock = _thread.RLock()
#: The fd and warn flag last set through the wrapper by someone else (to give back as they set it).
_others: Dict[int, bool] = {}
#: [fd, st_dev, st_ino] of an owner found by a probe that did not set the slot through our wrapper
#: (uvloop, ``_signal``): it may give the slot up around the wrapper. Watched by the wakeup reader.
_foreign: List[int] = []
#: The ctypes callback and ``Py_AddPendingCall`` (kept alive while a call may be pending), and the
#: signals the reader blocks around that call (``_retake_in_main``).
_pending: List[Any] = []


def _exchange(wanted: Callable[[int], int], warn: Callable[[int], bool]) -> int:
    """Set the wakeup fd to ``wanted(old)`` (main thread only), where ``old`` is the one in place.
    ``old`` is read by setting a probe pipe for the instant between the two calls; a byte written
    there meanwhile is passed on to the fd set last (where that is not -1). Returns ``old``."""
    pr, pw = os.pipe()
    try:
        os.set_blocking(pr, False)
        os.set_blocking(pw, False)
        old = _signal.set_wakeup_fd(pw, warn_on_full_buffer=False)
        final = wanted(old)
        try:
            _signal.set_wakeup_fd(final, warn_on_full_buffer=warn(final))
        except (OSError, ValueError):  # the old owner's fd was closed without giving the slot up
            final = -1
            _signal.set_wakeup_fd(-1)
        try:
            data = os.read(pr, 4096)
        except OSError:
            data = b""
        if data and final != -1:
            try:
                os.write(final, data)
            except OSError:
                pass
        return old
    finally:
        os.close(pr)
        os.close(pw)


def _take_slot() -> None:
    """Main thread: make a wakeup pipe of ours, and the wakeup fd where no one holds the slot.
    Where someone does, ours waits (the wrapper gives it to us when they set -1)."""
    if _wake:
        _retake()
        return
    if not _delivery:
        return
    try:
        r, w = os.pipe()
    except OSError:
        return
    try:
        os.set_blocking(w, False)
        if _trio_runs_here():  # trio holds the slot (a probe would reset its warn flag)
            if not in_main_thread():
                raise ValueError("not the main thread")
        else:
            _claim(w)
    except (OSError, ValueError, RuntimeError):  # ValueError: not the main thread
        os.close(r)
        os.close(w)
        return
    _wake[:] = [r, w]
    sig = sys.modules.get("signal")  # not imported here (start-up cost): see exit_report's import hook
    if sig is not None:
        _hide_slot(sig)
    _thread.start_new_thread(_watch_wakeup, (r,))


def _retake() -> None:
    """Our pipe exists: take the slot again only where it is unowned (-1)."""
    try:
        _claim(_wake[1])
    except (OSError, ValueError, RuntimeError):
        pass


def _claim(w: int) -> None:
    """Main thread: the wakeup fd becomes ``w`` where the slot is unowned (-1) or ``w`` already;
    an owner's fd is set back, with its warn flag as far as it can be known (``_owner_warn``)."""
    old = _exchange(lambda old: w if old in (-1, w) else old, lambda fd: fd != w and _owner_warn(fd))
    _watch_owner(-1 if old in (-1, w) or old in _others else old)


def _watch_owner(fd: int) -> None:
    """Record the owner ``fd`` that the wakeup reader watches (-1: none); wake the reader so it
    starts or stops watching."""
    try:
        st = os.fstat(fd) if fd != -1 else None
    except OSError:
        st = None
    _foreign[:] = [fd, st.st_dev, st.st_ino] if st is not None else []
    if _wake:
        try:
            os.write(_wake[1], b"\0")  # no signal has the number 0: the reader passes it on to nobody
        except OSError:
            pass


def _owner_warn(fd: int) -> bool:
    """The ``warn_on_full_buffer`` an owner's fd found by a probe is set back with. CPython 3.11
    keeps the flag in C (``wakeup.warn_on_full_buffer`` in signalmodule.c) with no way to read it:
    ``set_wakeup_fd`` returns the fd alone. So: the flag the owner set through our wrapper; else
    False where a uvloop loop runs in this thread (uvloop sets its self-pipe with False at every
    run, through the ``set_wakeup_fd`` it bound at its own import, which our wrapper never sees;
    set back True, it printed "Exception ignored when trying to write to the signal wakeup fd"
    for every signal once its socket was full); else CPython's default, True (asyncio's)."""
    if fd in _others:
        return _others[fd]
    return not _uvloop_runs_here()


def _uvloop_runs_here() -> bool:
    loop = _running_loop() if "uvloop" in sys.modules else None
    return loop is not None and type(loop).__module__.split(".")[0] == "uvloop"


def _trio_runs_here() -> bool:
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    try:
        trio.lowlevel.current_trio_token()
    except Exception:
        return False
    return True  # trio holds the slot: it need not be probed


def _give_back_slot(in_child: bool = False) -> None:
    """No delivery left (or a forked child): set -1 where the slot is still ours, then close our
    pipe (the reader ends at EOF). Off the main thread the slot cannot be changed: the pipe stays
    (a closed fd left as the wakeup fd would get the bytes of whatever reuses its number)."""
    if not _wake:
        return
    r, w = _wake
    try:
        _exchange(lambda old: -1 if old in (-1, w) else old, _owner_warn)
    except (OSError, ValueError, RuntimeError):
        return
    _wake.clear()
    _others.clear()
    _foreign.clear()
    sig = sys.modules.get("signal")
    if sig is not None:
        _unhide_slot(sig)
    for fd in ((r, w) if in_child else (w,)):
        try:
            os.close(fd)
        except OSError:
            pass


def _watch_wakeup(r: int) -> None:
    """Reads our wakeup pipe: the byte of a signal ``on_delivery`` hears wakes that signal's
    helper (a byte into its pipe) while the handler it was registered over is still in place
    (code that installs another handler later decides, as it does for faulthandler's hook);
    other signals' bytes are dropped. Ends at EOF.

    While an owner found by a probe holds the slot around our wrapper (``_foreign``), it also looks,
    once a second, whether that owner's fd is still the file it was: uvloop, which sets the slot
    back to what it found when a loop run ends, closes its self-pipe right after. Then the slot is
    taken again (only where it is -1) in the main thread, the only thread that may set it, at its
    next bytecode (``Py_AddPendingCall``): where the main thread runs no Python meanwhile, it waits."""
    while True:
        if _foreign:
            if not _readable(r, 1.0):
                if _owner_gone():
                    _foreign.clear()
                    _retake_in_main()
                continue
        try:
            data = os.read(r, 4096)
        except InterruptedError:
            continue
        except OSError:
            return
        if not data:
            try:
                os.close(r)
            except OSError:
                pass
            return
        for signum in set(data):
            with _wake_lock:
                entry = _delivery.get(signum)
                if entry is not None and _signal.getsignal(signum) is entry[3]:
                    try:
                        os.write(entry[1], b"\0")
                    except OSError:
                        pass


def _readable(r: int, timeout: float) -> bool:
    import select

    try:
        return bool(select.select([r], [], [], timeout)[0])
    except (OSError, ValueError):
        return True  # closed: the read says so


def _owner_gone() -> bool:
    owner = list(_foreign)
    if not owner:
        return False
    try:
        st = os.fstat(owner[0])
    except OSError:
        return True
    return (st.st_dev, st.st_ino) != (owner[1], owner[2])


#: Faults the running thread causes itself: never blocked (blocked, the kernel kills the process
#: with no faulthandler dump).
_FAULTS = ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS", "SIGABRT")


def _retake_in_main() -> None:
    """From the reader thread: ``_retake`` in the main thread at its next bytecode.

    ``Py_AddPendingCall`` holds CPython's pending-calls lock for an instant, and CPython 3.11's C
    signal handler takes that lock too (``trip_signal`` queues a warning with
    ``_PyEval_AddPendingCall`` where the wakeup fd is full and set with ``warn_on_full_buffer``
    True, asyncio's default, or where writing to it fails otherwise, e.g. a closed fd): a signal
    taken by this thread inside that instant waits for the lock this thread holds, forever, with
    the GIL held, and the whole process with it (python/cpython#74888). So this thread blocks
    the signals for the call alone (the kernel hands a process-directed one to another thread, or
    holds it until the mask is back, right after); it starts nothing meanwhile, so nothing
    inherits the mask. Measured (tests/runtime_guard/test_pending_call_storm.py): without it the
    reader hung in that frame under a storm of SIGALRM (a 0.1 ms timer) and of SIGUSR1 (os.kill)."""
    try:
        import ctypes

        if not _pending:
            def run(_arg: Any) -> int:
                try:
                    if _wake and _delivery:
                        _retake()
                except BaseException:
                    pass
                return 0

            add = ctypes.pythonapi.Py_AddPendingCall
            add.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
            add.restype = ctypes.c_int
            _pending[:] = [ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(run), add, _blockable()]
        func = ctypes.cast(_pending[0], ctypes.c_void_p)
        mask = _signal.pthread_sigmask(_signal.SIG_BLOCK, _pending[2]) if _pending[2] else None
        try:
            _pending[1](func, None)
        finally:
            if mask is not None:
                _signal.pthread_sigmask(_signal.SIG_SETMASK, mask)
    except (ImportError, AttributeError, OSError, TypeError, ValueError):
        pass


def _blockable() -> Any:
    """Every signal but the faults a thread causes itself (empty where signal masks do not exist)."""
    if not hasattr(_signal, "pthread_sigmask"):
        return set()
    return _signal.valid_signals() - {getattr(_signal, name) for name in _FAULTS if hasattr(_signal, name)}


def _hide_slot(sig: Any) -> None:
    """While the slot is ours, ``signal.set_wakeup_fd`` answers -1 for our fd, and -1 set by a
    caller while we want the slot gives it back to us (see above)."""
    set_wakeup_fd = sig.set_wakeup_fd
    if getattr(set_wakeup_fd, "_runtime_guard_hides", False):
        return

    def set_wakeup_fd_hiding(fd: int, /, *, warn_on_full_buffer: bool = True) -> int:
        _foreign.clear()  # the slot's holder is known from here: it comes through the wrapper
        if _wake and _delivery and fd == -1:
            old = set_wakeup_fd(_wake[1], warn_on_full_buffer=False)
        else:
            old = set_wakeup_fd(fd, warn_on_full_buffer=warn_on_full_buffer)
            if fd != -1:
                _others[int(fd)] = bool(warn_on_full_buffer)
        return -1 if _wake and old == _wake[1] else old

    set_wakeup_fd_hiding.__wrapped__ = set_wakeup_fd  # type: ignore[attr-defined]
    set_wakeup_fd_hiding.__name__ = set_wakeup_fd.__name__
    set_wakeup_fd_hiding.__qualname__ = set_wakeup_fd.__qualname__
    set_wakeup_fd_hiding.__doc__ = set_wakeup_fd.__doc__
    set_wakeup_fd_hiding._runtime_guard_hides = True  # type: ignore[attr-defined]
    sig.set_wakeup_fd = set_wakeup_fd_hiding


def _unhide_slot(sig: Any) -> None:
    set_wakeup_fd = getattr(sig, "set_wakeup_fd", None)
    if getattr(set_wakeup_fd, "_runtime_guard_hides", False):
        sig.set_wakeup_fd = set_wakeup_fd.__wrapped__


class NestedRun:
    """Lets a signal handler's nested run return while its first run is going on: a signal that
    arrives while a Python handler runs runs the handler again, in the same thread, at the next
    bytecode, wherever the first run is (possibly holding a lock, or half way through its work).

    ``nested()``, first in the handler: False for a first run (now marked as going on), True for a
    nested one, which returns at once. The read and the store of the mark have no call between
    them (a nested run cannot start there), and a nested run takes no lock. ``bound``: the seconds
    after the first run started for which a later run counts as nested (None: for good; a first
    run that hangs must not keep the process alive where nothing else ends it). ``hold(bound)``
    instead, right after a first run's ``nested()``, where the bound is known only then: until it
    is, a later run counts as nested. After the bound, ``again``: the next run is a first run
    again (with a new bound); else every later run acts and no bound is set again. ``reset()``:
    after fork (the child's handler has not run)."""

    __slots__ = ("bound", "again", "_until", "_first")

    def __init__(self, bound: Union[float, None] = None, *, again: bool = True) -> None:
        self.bound = bound
        self.again = again
        self._until: Union[float, None] = None  # mark: until when a later run is nested
        self._first = False  # the last nested() was a first run (hold() sets its bound)

    def nested(self) -> bool:
        until = self._until
        if until == _INF:  # a first run is going on and its bound is not set (or there is none)
            return True
        if until is not None:
            if _monotonic() < until:
                return True
            if not self.again:
                self._first = False
                return False
        self._until = _INF  # marked before any call: a run nested from here on returns
        self._first = True
        if self.bound is not None:
            self._until = _monotonic() + self.bound
        return False

    def hold(self, bound: float) -> None:
        if self._first:
            self._first = False
            self._until = _monotonic() + bound

    def reset(self) -> None:
        self._until = None
        self._first = False


_INF = float("inf")


def _monotonic() -> float:
    import time

    return time.monotonic()


class HandlerOrHelper:
    """Who acts on ``signum``, once, for a handler that stands in for the default action: the
    Python handler when the main thread runs it, or, when it has not started ``WAIT`` s after the
    signal was delivered (the main thread is blocked in a C call), a helper thread that heard it
    there (``on_delivery``) and then does ``act`` itself, which must end the process as the
    handler would. Create it, install ``handler``, then ``hear(handler, act)``; the handler calls
    ``handler_acts(bound)`` first."""

    #: seconds the main thread gets to start the handler before the helper thread acts
    WAIT = 1.0

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self._taken = _thread.allocate_lock()
        self._by_helper = False

    def hear(self, handler: Callable[[int, Any], Any], act: Callable[[], None]) -> bool:
        def at_delivery() -> None:
            import time

            time.sleep(self.WAIT)
            if _signal.getsignal(self.signum) is not handler:
                return  # replaced since: the handler in place decides
            if not self._taken.acquire(False):
                return  # the handler started
            self._by_helper = True
            act()

        return on_delivery(self.signum, at_delivery)

    def handler_acts(self, bound: float) -> None:
        """In the handler, first. Returns where the handler acts: the first time, and again for a
        signal that arrives while it does (as before the helper existed). Where the helper thread
        took the signal, waits up to ``bound`` s for it to end the process (it needs the GIL, which
        sleeping releases), then ends it as the default action would."""
        if self._taken.acquire(False) or not self._by_helper:
            return
        import time

        for _ in range(int(bound / 0.05)):
            time.sleep(0.05)
        die_of(self.signum)


def forget_delivery(signum: int, *, in_child: bool = False) -> None:
    """Undo ``on_delivery`` for ``signum``: drop faulthandler's hook and end the helper thread;
    the last one forgotten gives the wakeup fd back (-1, where it is still ours).
    faulthandler's ``unregister`` puts back the C-level action it saw when it registered, which
    may no longer be what Python's table says (measured in a forked child: ``SIG_DFL`` in the
    table, "Signal 15 ignored" at the C level): the table's handler is set again, so the C level
    and Python agree whatever ran before. ``in_child``: after fork (the helper threads are not
    there, and the pipes lead to the parent's)."""
    global _wake_lock
    if in_child:
        _wake_lock = _thread.RLock()  # held by the parent's reader at fork time: held forever here
    with _wake_lock:  # popped: the wakeup reader passes no byte on to its pipe from now on
        entry = _delivery.pop(signum, None)
    if entry is not None:
        try:
            import faulthandler

            faulthandler.unregister(signum)
        except (AttributeError, OSError, RuntimeError, ValueError):
            pass
        try:
            current = _signal.getsignal(signum)
            if current is not None:
                _signal.signal(signum, current)
        except (OSError, RuntimeError, ValueError, TypeError):
            pass
        for fd in (entry[:2] if in_child else entry[1:2]):  # the thread closes the read end at EOF
            try:
                os.close(fd)
            except OSError:
                pass
    if not _delivery:
        _give_back_slot(in_child)


def _loop_running_here() -> bool:
    return _running_loop() is not None


def _running_loop() -> Any:
    """The event loop running in this thread, or None."""
    asyncio = sys.modules.get("asyncio")  # never imported: no loop runs (and importing it here is no use)
    if asyncio is None:
        return None
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _raise_keyboard_interrupt(signum: int, frame: FrameType | None) -> None:
    # Runs in the main thread. KeyboardInterrupt (not SystemExit) so `asyncio.run` cancels every
    # task and runs finally blocks, and entrypoints wrapped with `on_interrupt` run their cleanup.
    raise KeyboardInterrupt(f"signal {signum} received")


def _raise_keyboard_interrupt_in_loop(signum: int, frame: FrameType | None) -> None:
    # Only while an event loop runs in the main thread: anywhere else SIGTERM's default action was
    # there before us, so the process dies of the signal as it did (-15).
    if not _loop_running_here():
        die_of(signum)
        return
    raise KeyboardInterrupt(f"signal {signum} received")


def sigterm_as_keyboard_interrupt(*, anywhere: bool = False) -> Handler:
    """Make SIGTERM raise KeyboardInterrupt in the main thread while an event loop runs there
    (``anywhere=True``: wherever the main thread is, e.g. for ``on_interrupt`` in sync code).

    Returns the SIGTERM handler that was in place when it was called.

    Signals: installs a Python SIGTERM handler only where SIGTERM has its default action
    (``SIG_DFL``). Where SIGTERM is ignored (``SIG_IGN``), has a Python handler (the program's,
    a library's, Ray's, another runtime_guard helper's) or a handler installed outside Python
    (``signal.getsignal`` gives None), it changes nothing and logs one DEBUG record on the
    ``runtime_guard.signals`` logger: that program already decided what SIGTERM does, and
    chaining would replace its decision (a handler that only asks the program to stop
    gracefully would be followed by a KeyboardInterrupt). A handler other code installs later
    replaces ours, as it would have replaced the default. A second call changes nothing.

    The handler raises KeyboardInterrupt only while an event loop runs in the main thread
    (``asyncio.run``, ``run_until_complete``, ``run_forever``, uvloop): the loop's tasks are
    cancelled and their ``finally`` blocks run, as on Ctrl+C. Anywhere else (before the loop
    starts, after it ends) it restores the default action and sends SIGTERM again: the process
    dies of SIGTERM (status -15) as it did. With ``anywhere=True`` it raises KeyboardInterrupt
    wherever the main thread is (an uncaught one ends the process with a traceback and the
    SIGINT status). Being a Python handler, it runs when the main thread
    next runs Python code: a main thread blocked in a C call that does not return on a signal
    delays the process's end until the call returns (with the default action it died at once).

    Children: a child forked afterwards (``multiprocessing`` with ``fork``, DataLoader workers,
    ``os.fork``) gets the default action back, so it dies of SIGTERM (-15) as before; ``exec``'d
    children get the default anyway. No mask is changed, no thread started, no ``atexit``
    action registered.

    Off the main thread (where ``signal.signal`` raises ValueError) this is a no-op: it emits a
    RuntimeWarning and returns None.
    """
    import signal
    import warnings

    if not in_main_thread():
        warnings.warn(
            "runtime_guard.sigterm_as_keyboard_interrupt() called off the main thread; SIGTERM handler not installed",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    current = signal.getsignal(signal.SIGTERM)
    if current in (_raise_keyboard_interrupt, _raise_keyboard_interrupt_in_loop):
        return current
    if current is not signal.SIG_DFL:
        __getattr__("log").debug("runtime_guard: SIGTERM already has a handler (%r); sigterm_as_keyboard_interrupt() "
                  "leaves it in place", current)
        return current
    return install_owned(signal.SIGTERM, _raise_keyboard_interrupt if anywhere else _raise_keyboard_interrupt_in_loop)
