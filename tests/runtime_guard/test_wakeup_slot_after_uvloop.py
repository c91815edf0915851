"""The wakeup slot given up around our wrapper comes back to ``on_delivery``.

uvloop binds ``signal.set_wakeup_fd`` at its import, sets its self-pipe at the start of every loop
run in the main thread and, when the run ends, sets back the fd it found, around our wrapper.
``on_delivery`` called inside the running loop (``install_distributed_teardown`` or a
``LoopThread`` started from ``async def main``) finds the slot uvloop's and leaves it; when the
loop ended, the slot was -1 and nobody's: a SIGTERM taken by a thread with no Python state while
the main thread was then blocked in C went unheard (faulthandler writes nothing for such a thread).
Now the wakeup reader sees uvloop's self-pipe closed and the main thread takes the slot again (only
where it is -1) at its next bytecode. Measured: at 0795681 the slot was still -1 5 s after the loop
and the SIGTERM below went unheard until the main thread's sleep returned; now the slot is ours
1.0 s after the loop and the SIGTERM is heard.

Real processes, a real uvloop loop, a real SIGTERM sent to a raw pthread.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rg_testutil import REPO, child_env

pytestmark = pytest.mark.timeout(120)

CHILD = """
import _signal, ctypes, os, signal, sys, threading, time
import uvloop
from runtime_guard import signals

heard = sys.argv[1]
signal.signal(signal.SIGTERM, lambda signum, frame: print("python handler ran", flush=True))


def woke():
    open(heard, "w").close()
    os._exit(0)


def slot():  # the wakeup fd as it is (the raw C function: no wrapper), set back at once
    old = _signal.set_wakeup_fd(-1)
    if old != -1:
        _signal.set_wakeup_fd(old, warn_on_full_buffer=False)
    return old


async def main():
    assert signals.on_delivery(signal.SIGTERM, woke)  # inside the running loop: the slot is uvloop's
    assert slot() != signals._wake[1]

uvloop.run(main())
# the rest of the program runs Python for a while (liveness bound only), then blocks in C
end = time.monotonic() + 15
while time.monotonic() < end and slot() != signals._wake[1]:
    time.sleep(0.05)
print("slot ours:", slot() == signals._wake[1], flush=True)
libc = ctypes.CDLL(None, use_errno=True)
raw = ctypes.c_ulong()
assert libc.pthread_create(ctypes.byref(raw), None, ctypes.cast(libc.pause, ctypes.c_void_p), None) == 0


def send():
    time.sleep(0.5)  # the main thread is in sleep() by then
    print("sending", flush=True)
    signal.pthread_kill(raw.value, signal.SIGTERM)


threading.Thread(target=send, daemon=True).start()
print("blocking", flush=True)
libc.sleep(15)
print("main thread returned", flush=True)
"""


def test_sigterm_after_a_uvloop_loop_that_held_the_slot_is_heard(tmp_path: Path) -> None:
    pytest.importorskip("uvloop")
    heard = tmp_path / "heard"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(heard)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=child_env(), cwd=str(REPO))
    try:
        out = proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = "TIMEOUT: " + proc.communicate()[0]
    assert proc.returncode == 0 and heard.exists(), out
    assert "slot ours: True" in out and "main thread returned" not in out, out
