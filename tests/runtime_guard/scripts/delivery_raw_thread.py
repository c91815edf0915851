"""SIGTERM taken by a thread with no Python state while the main thread is blocked in C.

argv: HEARD_FILE. A Python SIGTERM handler is in place and ``signals.on_delivery`` hears SIGTERM;
a raw pthread (ctypes ``pthread_create`` with libc's ``pause`` as its start routine: no Python
thread state) is sent SIGTERM with ``pthread_kill`` while the main thread sleeps in libc's
``sleep`` (a C call that releases the GIL and is not interrupted: the signal is not its thread's).
Heard: the on_delivery callback creates HEARD_FILE and ends the process with status 0. Unheard:
nothing happens until the main thread's sleep returns (60 s).
"""
import ctypes
import os
import signal
import sys
import threading
import time

from runtime_guard import signals

heard = sys.argv[1]
signal.signal(signal.SIGTERM, lambda signum, frame: print("python handler ran", flush=True))


def woke() -> None:
    open(heard, "w").close()
    os._exit(0)


assert signals.on_delivery(signal.SIGTERM, woke)
libc = ctypes.CDLL(None, use_errno=True)
raw = ctypes.c_ulong()
rc = libc.pthread_create(ctypes.byref(raw), None, ctypes.cast(libc.pause, ctypes.c_void_p), None)
assert rc == 0, rc


def send() -> None:
    time.sleep(0.5)  # the main thread is in sleep() by then
    print("sending", flush=True)
    signal.pthread_kill(raw.value, signal.SIGTERM)


threading.Thread(target=send, daemon=True).start()
print("blocking", flush=True)
libc.sleep(60)
print("main thread returned", flush=True)
