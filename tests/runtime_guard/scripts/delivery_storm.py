"""A process with busy Python threads whose SIGTERM is heard at delivery (signals.on_delivery).

argv: READY_FILE STOP_FILE HEARD_FILE. SIGTERM only counts (a Python handler); the parent sends
it in a storm until it creates STOP_FILE. Prints "handled N" and exits 0 when it survives.
"""
import os
import signal
import sys
import threading
import time

from runtime_guard import signals

ready, stop, heard = sys.argv[1:4]
handled = [0]
signal.signal(signal.SIGTERM, lambda signum, frame: handled.__setitem__(0, handled[0] + 1))
signals.on_delivery(signal.SIGTERM, lambda: open(heard, "w").close())


def deep(n: int) -> int:
    # Frames pushed and popped all the time, across the interpreter's frame-stack chunks.
    return 0 if n == 0 else deep(n - 1) + 1


def spin() -> None:
    while True:
        deep(400)


def churn() -> None:
    while True:  # thread states created and freed all the time
        t = threading.Thread(target=deep, args=(5,))
        t.start()
        t.join()


for target in (spin, spin, churn):
    threading.Thread(target=target, daemon=True).start()
open(ready, "w").close()
while not os.path.exists(stop):
    deep(300)  # the main thread runs Python code when the signal lands
time.sleep(0.2)  # the last signals in flight are handled before the handler goes away
print(f"handled {handled[0]}", flush=True)
