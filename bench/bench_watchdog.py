"""Overhead and detection benchmark for runtime_guard's loop-stall watchdog.

    python bench/bench_watchdog.py            # ~4 minutes on 2 cores
    python bench/bench_watchdog.py --quick    # fewer rounds / trials

Overhead: two asyncio workloads (many small tasks; a loopback 127.0.0.1 echo server under a
bounded load) with: no watchdog, runtime_guard (default threshold 0.1 s), asyncio debug mode,
aiodebug.log_slow_callbacks (0.1 s) and loopmon (interval 0.1 s). Each configuration runs in its own
subprocess (peers monkey-patch asyncio globally) that reports the median of REPEAT runs; rounds are
interleaved in random order and the median over rounds is kept. "off-again" (uninstrumented again)
shows the noise floor: differences smaller than its "loss" are noise.
Detection: a planted 200 ms block, N trials: reported? right file:line? latency after the block
starts (goal: <= 1.2 x threshold); plus a no-block run that must produce no report.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# "off-again" is a second uninstrumented run: its "loss" is the noise floor of the measurement.
CONFIGS = ["off", "off-again", "runtime_guard", "asyncio-debug", "aiodebug", "loopmon"]
REPEAT = 5  # measured runs per worker process (after one warm-up); the worker reports their median
THRESHOLD = 0.1


# ----------------------------------------------------------------------------- workloads

async def many_tasks(n: int = 15000) -> float:
    async def small(i: int) -> int:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return i

    t0 = time.perf_counter()
    for _ in range(3):
        await asyncio.gather(*(small(i) for i in range(n // 3)))
    return n / (time.perf_counter() - t0)  # tasks per second


async def echo(clients: int = 20, requests: int = 300) -> float:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(256):
                writer.write(data)
                await writer.drain()
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]

    async def client() -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        payload = b"x" * 64
        for _ in range(requests):
            writer.write(payload)
            await writer.drain()
            await reader.readexactly(len(payload))
        writer.close()
        await writer.wait_closed()

    t0 = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))  # noqa: SHD101 - loopback clients with nothing to clean up; a failure ends the benchmark
    rate = clients * requests / (time.perf_counter() - t0)
    server.close()
    await server.wait_closed()
    return rate  # requests per second


async def _with_config(config: str, workload: str) -> float:
    loop = asyncio.get_running_loop()
    if config == "runtime_guard":
        import runtime_guard

        runtime_guard.watch_loop(threshold=THRESHOLD, on_stall=lambda r: None)
    elif config == "asyncio-debug":
        loop.set_debug(True)
        loop.slow_callback_duration = THRESHOLD
    elif config == "aiodebug":
        import aiodebug.log_slow_callbacks

        aiodebug.log_slow_callbacks.enable(THRESHOLD, on_slow_callback=lambda name, dt: None)
    elif config == "loopmon":
        import loopmon

        async def cb(lag: float, tasks: int, data_at: object) -> None:
            pass

        loopmon.create(loop, interval=THRESHOLD, callbacks=[cb])
    await asyncio.sleep(0.05)
    fn = many_tasks if workload == "tasks" else echo
    await fn()  # warm-up
    return statistics.median([await fn() for _ in range(REPEAT)])


def worker(config: str, workload: str) -> None:
    import logging

    logging.disable(logging.CRITICAL)  # debug mode logs slow callbacks; keep output clean
    print(json.dumps({"rate": asyncio.run(_with_config(config, workload))}))  # noqa: SHD402 - a benchmark worker; nothing to clean up on SIGTERM


# ----------------------------------------------------------------------------- detection

def detection(trials: int) -> dict:
    import runtime_guard

    reports: list = []
    latencies: list = []
    right = 0

    async def trial() -> float:
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        time.sleep(0.2)  # PLANTED  # noqa: SHD301 - the stall the watchdog must detect
        await asyncio.sleep(0.05)
        return t0

    planted_line = next(i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1)
                        if "# PLANTED" in line and "next(" not in line)

    async def main() -> None:
        nonlocal right
        seen_at: list = []

        def on_stall(r: object) -> None:
            seen_at.append(time.monotonic())
            reports.append(r)

        runtime_guard.watch_loop(threshold=THRESHOLD, on_stall=on_stall)
        for _ in range(trials):
            n = len(reports)
            t0 = await trial()
            if len(reports) == n + 1:
                latencies.append(seen_at[-1] - t0)
                r = reports[-1]
                if r.filename == __file__ and r.lineno == planted_line:  # type: ignore[attr-defined]
                    right += 1
        n = len(reports)
        for _ in range(200):  # ~2 s with no blocking: must stay silent
            await asyncio.sleep(0.01)
        quiet.append(len(reports) - n)

    quiet: list = []
    asyncio.run(main())  # noqa: SHD402 - a benchmark run; nothing to clean up on SIGTERM
    lat = sorted(latencies)
    return {
        "trials": trials, "reported": len(latencies), "right_location": right,
        "latency_ms_median": round(1000 * statistics.median(lat), 1) if lat else None,
        "latency_ms_max": round(1000 * lat[-1], 1) if lat else None,
        "within_1.2x": sum(x <= 1.2 * THRESHOLD for x in lat),
        "false_reports_no_block": quiet[0],
    }


# ----------------------------------------------------------------------------- driver

def run_worker(config: str, workload: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("RUNTIME_GUARD", None)
    out = subprocess.run([sys.executable, __file__, "--worker", config, workload], capture_output=True, text=True,
                         timeout=300, env=env, check=True).stdout
    return float(json.loads(out.strip().splitlines()[-1])["rate"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=2)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--trials", type=int, default=None)
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    rounds = args.rounds or (2 if args.quick else 8)
    trials = args.trials or (20 if args.quick else 100)
    results: dict = {(c, w): [] for c in CONFIGS for w in ("tasks", "echo")}
    t_start = time.time()
    for _ in range(rounds):  # interleaved so machine noise hits every configuration alike
        for w in ("tasks", "echo"):
            for c in random.sample(CONFIGS, len(CONFIGS)):  # no configuration always runs first
                results[(c, w)].append(run_worker(c, w))
    print(f"Overhead (median of {rounds} rounds; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print(f"{'config':<16}{'tasks/s':>12}{'vs off':>9}{'loss':>8}{'echo req/s':>13}{'vs off':>9}{'loss':>8}")
    base = {w: statistics.median(results[('off', w)]) for w in ("tasks", "echo")}
    for c in CONFIGS:
        cells = []
        for w in ("tasks", "echo"):
            med = statistics.median(results[(c, w)])
            ratio = med / base[w]
            cells.append(f"{med:>12.0f}{ratio:>9.3f}{100 * (1 - ratio):>7.1f}%")
        print(f"{c:<16}" + "".join(cells))
    det = detection(trials)
    print(f"\nDetection (threshold {THRESHOLD}s, planted 200 ms time.sleep, {det['trials']} trials)")
    for k, v in det.items():
        print(f"  {k:<24}{v}")
    print(f"\ntotal bench time {time.time() - t_start:.0f}s")


if __name__ == "__main__":
    main()
