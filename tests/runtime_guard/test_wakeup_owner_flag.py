"""An owner of the signal wakeup fd keeps its ``warn_on_full_buffer`` through our probe.

``on_delivery`` finds out whether the wakeup slot is unowned by setting a probe pipe for an instant
and setting the owner's fd back (``signals._exchange``). CPython 3.11 keeps the owner's
``warn_on_full_buffer`` in C with no way to read it (``set_wakeup_fd`` returns the fd alone), and
the probe used to set it back as True unless the owner had set it through our wrapper. uvloop sets
its self-pipe with False at every run of a loop in the main thread, through the ``set_wakeup_fd``
it bound at its own import (our wrapper never sees it). So ``on_delivery`` called inside a running
uvloop loop (``install_distributed_teardown`` or a ``LoopThread`` started from ``async def main``)
turned uvloop's flag on: once its socket was full (the loop busy, signals arriving), CPython printed
"Exception ignored when trying to write to the signal wakeup fd" on stderr for every signal.
The asyncio control: its loop sets the flag True (the default), and keeps it.

How the child fills the loop's self-pipe: it raises SIGUSR1 in its own main thread
(``signal.raise_signal``: a real signal, delivered before the call returns) until the socket is
full (the bytes it holds, SIOCOUTQ, reach its SO_SNDBUF: 278 signals here), then raises
``EXTRA`` more: each is one warning where the flag is True, none where it is False.
The parent used to fill it with a storm of ``os.kill`` for a fixed time, which failed twice under
CI's load: the window was too short to fill the socket (session 9), then (session 10) the asyncio
child hung, a CPython 3.11 deadlock, not ours: with the flag True and the socket full, the C handler
queues the warning with ``_PyEval_AddPendingCall``, which takes the pending-calls lock; a signal
that lands while the main thread holds that lock (``_pop_pending_call`` in ``make_pending_calls``)
waits for it forever (gdb: ``sem_wait`` <- ``_PyEval_AddPendingCall`` <- ``trip_signal`` <-
signal handler <- ``_pop_pending_call``; 2 of 20 storms hung with a busy child). Raised by the main
thread itself, a signal never lands inside ``make_pending_calls``, and the count needs no clock.
Measured with this child: asyncio 3 lines without and with the probe, uvloop 0 and 0 now and
``EXTRA`` (3) with the probe at 0795681.

Real processes, real signals, a real uvloop and asyncio loop.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from rg_testutil import REPO, child_env

pytestmark = pytest.mark.timeout(120)

WARNING = "Exception ignored when trying to write to the signal wakeup fd"
EXTRA = 3  # signals raised once the self-pipe is full

CHILD = """
import asyncio, fcntl, os, signal, socket, stat, struct, sys, termios
import runtime_guard.signals as rs

def sockets():
    fds = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISSOCK(os.fstat(int(name)).st_mode):
                fds.append(int(name))
        except OSError:
            pass
    return fds

def full(fd):  # a send fails (EAGAIN) once the bytes it holds reach its send buffer
    queued = struct.unpack("i", fcntl.ioctl(fd, termios.TIOCOUTQ, bytes(4)))[0]
    with socket.socket(fileno=os.dup(fd)) as s:
        return queued >= s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)

async def main():
    if sys.argv[2] == "asyncio":  # asyncio's loop owns the slot only with a signal handler of its own
        asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, lambda: None)
    else:
        signal.signal(signal.SIGUSR1, lambda s, f: None)  # a Python handler: a byte per delivery
    if sys.argv[1] == "probe":
        rs.on_delivery(signal.SIGTERM, lambda: None)  # inside the running loop: the slot is the loop's
    fds = sockets()  # the loop's self-pipe among them; the loop reads nothing until main returns
    assert not any(full(fd) for fd in fds)
    n = 0
    while not any(full(fd) for fd in fds):
        signal.raise_signal(signal.SIGUSR1)
        n += 1
        assert n < 100000, "the self-pipe never filled"
    for _ in range(int(sys.argv[3])):
        signal.raise_signal(signal.SIGUSR1)
    print("full after", n, flush=True)

if sys.argv[2] == "uvloop":
    import uvloop
    uvloop.run(main())
else:
    asyncio.run(main())
"""


def _warnings(mode: str, loop: str) -> int:
    p = subprocess.run([sys.executable, "-c", CHILD, mode, loop, str(EXTRA)], capture_output=True,
                       text=True, env=child_env(), cwd=str(REPO), timeout=60)
    assert p.returncode == 0 and "full after" in p.stdout, (p.returncode, p.stdout, p.stderr[-2000:])
    return p.stderr.count(WARNING)


def test_a_probe_inside_a_running_uvloop_loop_keeps_its_flag_off() -> None:
    pytest.importorskip("uvloop")
    assert _warnings("none", "uvloop") == 0  # uvloop's own setting: no warning when full
    assert _warnings("probe", "uvloop") == 0  # 0795681: one line per signal once full (EXTRA)


def test_a_probe_inside_a_running_asyncio_loop_keeps_its_flag_on() -> None:
    # asyncio sets the default (True): its full-buffer warnings are its own, before and after a probe.
    assert _warnings("none", "asyncio") == EXTRA
    assert _warnings("probe", "asyncio") == EXTRA
