"""Does a process-directed SIGINT/SIGTERM reach the main thread promptly when helper threads
do NOT block it?  (The claim that made runtime_guard block SIGINT/SIGTERM in its threads.)

    python bench/signal_delivery.py            # ~5 minutes on 2 busy cores (3 repetitions)
    python bench/signal_delivery.py --ray      # also SIGINT to a driver blocked in ray.get (+ ~30 s)

Each case runs a child process whose main thread waits in one way (time.sleep(60),
Event.wait(60), Thread.join(), asyncio.run(sleep(60)), a loop of 1 s lock waits, ray.get) while
helper threads (4 of each kind) spin in Python, spin in C without the GIL (hashlib), sleep,
wait in epoll (an asyncio loop, as a LoopThread runs it) or in select. The parent sends the
signal with os.kill(pid) or os.killpg(pgid) and reads when the child's Python handler ran
(time.monotonic, one clock for both processes). "mask" rows run the same
helpers with SIGINT/SIGTERM blocked (what runtime_guard did) as the control.

Linux picks the thread for a process-directed signal in complete_signal(): the thread group
leader (the main thread) when it does not block the signal and has none pending, else any
thread that does not block it. So the mask of the other threads should not matter. The
"control" row shows the harness sees the hazard when it does occur: the main thread itself blocks
the signals during a 3 s sleep, a helper takes them, and the handler runs ~3 s late.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

CHILD = r'''
import asyncio, hashlib, json, os, select, signal, sys, threading, time
cfg = json.loads(sys.argv[1])
mask = cfg["mask"]

def block():
    if mask:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})

def busy():
    block()
    x = 0
    while True:
        x += 1

def cbusy():
    block()
    data = b"x" * (1 << 22)
    while True:
        hashlib.sha256(data).digest()   # releases the GIL

def sleeper():
    block()
    while True:
        time.sleep(0.5)

def epoll():
    block()
    asyncio.run(asyncio.sleep(3600))

def selecter():
    block()
    r, w = os.pipe()
    while True:
        select.select([r], [], [], 3600)

kinds = {"busy": busy, "cbusy": cbusy, "sleep": sleeper, "epoll": epoll, "select": selecter}
for kind in cfg["helpers"]:
    for _ in range(4):
        threading.Thread(target=kinds[kind], daemon=True).start()

def handler(signum, frame):
    os.write(1, (json.dumps({"t": time.monotonic()}) + "\n").encode())
    os._exit(0)

signal.signal(signal.SIGINT, handler)
signal.signal(signal.SIGTERM, handler)
wait = cfg["wait"]
if wait == "ray":
    import ray
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    @ray.remote
    def slow():
        time.sleep(3600)
    ref = slow.remote()
time.sleep(0.2)
os.write(1, b"ready\n")
if wait == "sleep":
    time.sleep(60)
elif wait == "control":       # the hazard the mask was for: the main thread blocks the signals, so
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})   # a helper takes them
    time.sleep(3)             # and the main thread runs the handler only when its sleep ends
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
elif wait == "event":
    threading.Event().wait(60)
elif wait == "join":
    t = threading.Thread(target=time.sleep, args=(60,), daemon=True); t.start(); t.join()
elif wait == "asyncio":
    asyncio.run(asyncio.sleep(60))
elif wait == "poll":          # ray-like: short bounded waits in a loop, signals checked between
    lock = threading.Lock(); lock.acquire()
    while True:
        lock.acquire(timeout=1.0)
elif wait == "ray":
    ray.get(ref)
os.write(1, b'{"t": null}\n')
'''


def one(wait: str, helpers: list, mask: bool, sig: int, group: bool, timeout: float = 20.0) -> dict:
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps({"wait": wait, "helpers": helpers, "mask": mask})],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        line = proc.stdout.readline()
        if line.strip() != b"ready":
            return {"error": f"no ready line: {line!r}"}
        # Let the main thread reach its wait's syscall: a signal that lands before it (still in
        # time.sleep's GIL hand-off to Python-spinning helpers) goes to the main thread too, but its
        # C handler only sets CPython's flag and the sleep then runs its full length (measured
        # 2026-11-26, Linux 6.18: 5 of 28 such signals; see tests/runtime_guard/test_signal_mask.py).
        time.sleep(0.3)
        t0 = time.monotonic()
        if group:
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        line = proc.stdout.readline()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        if not line:
            return {"error": f"no handler output, rc={proc.poll()}"}
        out = json.loads(line)
        if out["t"] is None:
            return {"error": "main wait ended before the handler ran"}
        return {"latency_ms": (out["t"] - t0) * 1000}
    finally:
        if proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ray", action="store_true", help="also measure a driver blocked in ray.get")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    helper_sets = [["busy"], ["cbusy"], ["sleep"], ["epoll"], ["select"], ["busy", "cbusy", "sleep", "epoll", "select"]]
    waits = ["sleep", "event", "join", "asyncio", "poll"]
    rows = []
    for wait in waits:
        for helpers in helper_sets:
            for mask in (False, True):
                if mask and helpers != helper_sets[-1]:
                    continue
                for sig, group in ((signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGTERM, True)):
                    rows.append((wait, helpers, mask, sig, group))
    if args.ray:
        for mask in (False,):
            # SIGINT only: ray.init installs its own SIGTERM handling in the driver
            rows.append(("ray", ["sleep"], mask, signal.SIGINT, False))
    rows.append(("control", ["sleep"], False, signal.SIGTERM, False))
    worst = 0.0
    print(f"{'main waits in':10} {'helpers (4 each)':32} {'mask':5} {'signal':18} latency ms (median / max of {args.reps})")
    for wait, helpers, mask, sig, group in rows:
        reps = 1 if wait == "ray" else args.reps
        res = [one(wait, helpers, mask, sig, group) for _ in range(reps)]
        errs = [r["error"] for r in res if "error" in r]
        lat = [r["latency_ms"] for r in res if "latency_ms" in r]
        how = f"{signal.Signals(sig).name} {'killpg' if group else 'kill'}"
        if lat and wait != "control":
            worst = max(worst, max(lat))
        text = f"{statistics.median(lat):8.1f} / {max(lat):8.1f}" if lat else "   -"
        print(f"{wait:10} {'+'.join(helpers):32} {str(mask):5} {how:18} {text}"
              + (f"  ERRORS: {errs}" if errs else ""), flush=True)
    print(f"worst latency (control row excluded) {worst:.1f} ms")


if __name__ == "__main__":
    main()
