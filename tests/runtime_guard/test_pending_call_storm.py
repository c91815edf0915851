"""The wakeup reader's ``Py_AddPendingCall`` (``signals._retake_in_main``) under a signal storm.

CPython 3.11's C signal handler (``trip_signal``) queues a warning with ``_PyEval_AddPendingCall``,
which takes the pending-calls lock, when writing to the wakeup fd fails: the fd is full and was
set with ``warn_on_full_buffer=True`` (asyncio's default), or it cannot be written at all (a closed
fd). Our wakeup reader thread takes that same lock, for an instant, inside ``Py_AddPendingCall``
when it asks the main thread to take the wakeup slot again (its owner went away around our
wrapper: uvloop). A signal taken by our thread inside that instant waits for the lock our thread
holds, forever, with the GIL held: the whole process hangs (python/cpython#74888). Our thread
now blocks the signals for the call alone.

The child makes that instant reachable in seconds: a full socket set as the wakeup fd with
``warn_on_full_buffer=True``, a Python handler for SIGALRM, a bare reader thread that runs the real
``_retake_in_main`` back to back (the real trigger runs it once per owner that goes away), a main
thread that blocks SIGALRM once the reader has started (so the kernel hands every SIGALRM to the
reader; in a real process the main thread takes most, and another thread takes one when the main
one blocks it or already has one pending), and a kernel interval timer that sends SIGALRM every
0.1 ms: it interrupts the reader at whatever instruction it runs, where a storm of ``os.kill``
from another process reached it only when it was scheduled again (3 hangs in 21 children on
2 busy cores: too rare for a test). The child exits with 7 by itself once the reader has made
CALLS calls; hung, it is killed at LIVENESS_S. The reader's own signal mask (SigBlk) is the
same before its first call and after its last: nothing stays blocked.

Measured (2 cores, load ~19, the commit message has the numbers): without the mask the child hung
in 5 of 6 runs within 50,000 calls, gdb each time: ``sem_wait`` <- ``_PyEval_AddPendingCall`` <-
``trip_signal`` <- signal handler <- our own ``Py_AddPendingCall`` (ffi_call); with it, none.
"""
from __future__ import annotations

import subprocess

from rg_testutil import popen_code

CALLS = 150_000  # calls of the reader under the timer's storm
LIVENESS_S = 90.0  # a hang detector, not a timing: the child that does not hang is out in seconds

CHILD = f"""
    import os, signal, socket, _thread
    from runtime_guard import signals

    r, w = socket.socketpair()
    r.setblocking(False)
    w.setblocking(False)
    try:  # fill it: every byte trip_signal writes fails (EAGAIN), and warns
        while True:
            w.send(b"\\0" * 4096)
    except BlockingIOError:
        pass
    try:
        while True:
            w.send(b"\\0")
    except BlockingIOError:
        pass
    signal.signal(signal.SIGALRM, lambda signum, frame: None)
    signal.set_wakeup_fd(w.fileno(), warn_on_full_buffer=True)

    def sigblk():
        with open("/proc/thread-self/status") as f:
            return next(int(line.split()[1], 16) for line in f if line.startswith("SigBlk:"))

    calls = [0]
    masks = []

    def reader():
        masks.append(sigblk())
        while calls[0] < {CALLS}:
            signals._retake_in_main()
            calls[0] += 1
        masks.append(sigblk())  # the mask is the thread's own again after the calls

    _thread.start_new_thread(reader, ())
    while not masks:
        pass
    signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGALRM}})  # after the start: not inherited
    signal.setitimer(signal.ITIMER_REAL, 0.0001, 0.0001)
    while len(masks) < 2:
        pass
    signal.setitimer(signal.ITIMER_REAL, 0)
    print("alive", calls[0], "reader's mask before and after", masks, flush=True)
    os._exit(7)  # no finalization under the storm
"""


def test_reader_pending_call_survives_a_signal_storm_on_a_full_warning_wakeup_fd() -> None:
    p = popen_code(CHILD)
    try:
        out, _ = p.communicate(timeout=LIVENESS_S)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
        raise AssertionError(f"the child hung (killed after {LIVENESS_S} s); it printed: {out[-500:]!r}")
    assert p.returncode == 7 and "alive" in out, (p.returncode, out[-500:])
    assert "reader's mask before and after [0, 0]" in out, out[-500:]
