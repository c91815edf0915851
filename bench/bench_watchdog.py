"""Overhead and detection benchmark for runtime_guard's loop-stall watchdog, against its peers.

    python bench/bench_watchdog.py --minutes 24 --debug-every 100000 --trials 50   # docs/measurements.md
    python bench/bench_watchdog.py --quick         # 5 rounds, 20 trials: a smoke run, no conclusions
    python bench/bench_watchdog.py --json out.json # also write every measurement

Overhead: two asyncio workloads (many small tasks; a loopback 127.0.0.1 echo server under a
bounded load) with: no watchdog, runtime_guard (default threshold 0.1 s), and what a user would
pick instead, each set up as its documentation says with a 0.1 s threshold where it has one:
asyncio debug mode, aiodebug.log_slow_callbacks, loopmon, aiocop (audit hooks + slow-task
detection + its CPU sampler) and blockbuster (raises on blocking calls in the loop). A peer that is
not installed is left out and named. Each configuration lives in its own worker process (peers
monkey-patch asyncio globally): set up once on one loop, one warm-up, then one measured run per
request. Every --respawn-every rounds (default 10) all workers are replaced by new processes: one
process can run the same code 1-2% faster than another (memory layout), and with one process per
configuration for the whole run that offset was read as the configuration's cost; the spread of
off-again/off between sets of processes is printed.

Interleaving and the noise floor: each round runs every configuration once per workload, in a new
random order; a configuration's cost is the median over rounds of its rate divided by the "off"
rate of the same round. "off-again" is a
second uninstrumented configuration measured exactly like the others: the median of its paired
ratio should be 1, and the 95% bootstrap interval of that median (resampling rounds) is the noise
floor. A difference smaller than the floor is not resolved. The per-run spread of "off" (IQR over
rounds / median) is printed too: that is what one round alone would resolve. asyncio debug mode
costs ~20x: it runs every --debug-every rounds only (its cost needs no 1% resolution).
Detection: a planted 200 ms block, N trials: reported? right file:line? latency after the block
starts (goal: <= 1.2 x threshold); the final duration the report gives (the block's real length);
plus a no-block run that must produce no report.
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
# "off-again" is a second uninstrumented run: the spread of its paired ratio is the noise floor.
CONFIGS = ["off", "off-again", "runtime_guard", "asyncio-debug", "aiodebug", "loopmon", "aiocop", "blockbuster"]
PEER_MODULES = {"aiodebug": "aiodebug", "loopmon": "loopmon", "aiocop": "aiocop", "blockbuster": "blockbuster"}
SLOW = "asyncio-debug"  # ~20x slower: measured every --debug-every rounds
THRESHOLD = 0.1
WORKLOADS = ("tasks", "echo")


# ----------------------------------------------------------------------------- workloads

async def many_tasks(n: int = 15000) -> "tuple[float, float]":
    async def small(i: int) -> int:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return i

    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(3):
        await asyncio.gather(*(small(i) for i in range(n // 3)))
    return n / (time.perf_counter() - t0), n / (time.process_time() - c0)  # tasks per second (wall, CPU)


async def echo(clients: int = 20, requests: int = 300) -> "tuple[float, float]":
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

    t0, c0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(client() for _ in range(clients)))  # noqa: SHD101 - loopback clients with nothing to clean up; a failure ends the benchmark
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    server.close()
    await server.wait_closed()
    return clients * requests / wall, clients * requests / cpu  # requests per second (wall, CPU)


_reports: list = []  # what the instrumentation reported during the overhead runs (must stay empty)


async def _setup(config: str) -> None:
    """Turn ``config``'s instrumentation on for the running loop, as its documentation says."""
    loop = asyncio.get_running_loop()
    if config == "runtime_guard":
        import runtime_guard

        runtime_guard.watch_loop(threshold=THRESHOLD, on_stall=_reports.append)
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
    elif config == "aiocop":
        import aiocop

        aiocop.patch_audit_functions()
        aiocop.start_blocking_io_detection()
        aiocop.detect_slow_tasks(threshold_ms=int(THRESHOLD * 1000), on_slow_task=lambda event: None)
        aiocop.activate()
    elif config == "blockbuster":
        from blockbuster import BlockBuster

        BlockBuster().activate()
    await asyncio.sleep(0.05)


def worker(config: str) -> None:
    """One configuration, alive for the whole benchmark: set up once on one loop, then one measured
    run of the workload named on each stdin line (the driver interleaves the workers line by line,
    so measurements that are compared run within about a second of each other)."""
    import logging

    logging.disable(logging.CRITICAL)  # debug mode logs slow callbacks; keep output clean
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(_setup(config))  # noqa: SHD402 - a benchmark worker; nothing to clean up on SIGTERM
        for line in sys.stdin:
            workload = line.strip()
            if not workload:
                break
            wall, cpu = loop.run_until_complete(WORKLOAD_FNS[workload]())
            print(json.dumps({"wall": wall, "cpu": cpu, "reports": len(_reports)}), flush=True)
    finally:
        loop.close()


WORKLOAD_FNS = {"tasks": many_tasks, "echo": echo}


# ----------------------------------------------------------------------------- detection

def detection(trials: int) -> dict:
    import runtime_guard

    reports: list = []
    latencies: list = []
    right = 0
    planted_s = 0.2

    async def trial() -> float:
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        time.sleep(planted_s)  # PLANTED  # noqa: SHD301 - the stall the watchdog must detect
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
    runtime_guard.watchdog.settle()
    lat = sorted(latencies)
    durations = sorted(r.duration for r in reports if not r.ongoing)
    return {
        "trials": trials, "reported": len(latencies), "right_location": right,
        "latency_ms_median": round(1000 * statistics.median(lat), 1) if lat else None,
        "latency_ms_max": round(1000 * lat[-1], 1) if lat else None,
        "within_1.2x": sum(x <= 1.2 * THRESHOLD for x in lat),
        "final_duration_ms_median": round(1000 * statistics.median(durations), 1) if durations else None,
        "final_duration_ms_min_max": [round(1000 * durations[0], 1), round(1000 * durations[-1], 1)]
        if durations else None,
        "false_reports_no_block": quiet[0],
    }


# ----------------------------------------------------------------------------- driver

class Worker:
    """A worker process (see worker()) driven over its stdin/stdout."""

    def __init__(self, config: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        env.pop("RUNTIME_GUARD", None)
        self.config = config
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", config], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        self.reports = 0

    def run(self, workload: str) -> "dict[str, float]":
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(workload + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.config} ended (status {self.proc.wait()})")
        out = json.loads(line)
        self.reports = out["reports"]
        return out

    def close(self) -> None:
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()  # ends its read loop
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
            self.proc.wait()


def _bootstrap_median_ci(xs: list, n: int = 4000, seed: int = 29) -> "tuple[float, float]":
    """95% interval of the median of xs, resampling xs with replacement."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def analyse(results: dict, configs: list) -> dict:
    """Per configuration and workload: the median rate, and the median over its pairs of its rate
    divided by the "off" rate measured next to it, with its 95% bootstrap interval."""
    out: dict = {}
    for w in WORKLOADS:
        off = [o for _, o in results[("off-again", w)]]
        q = statistics.quantiles(off, n=4)
        out[("off", w)] = {"rate": statistics.median(off), "ratio": 1.0, "ci": (1.0, 1.0), "n": len(off),
                           "iqr_rel": (q[2] - q[0]) / statistics.median(off)}
        for c in configs:
            if c == "off":
                continue
            pairs = results[(c, w)]
            ratios = [r / o for r, o in pairs]
            lo, hi = _bootstrap_median_ci(ratios)
            out[(c, w)] = {"rate": statistics.median(r for r, _ in pairs), "ratio": statistics.median(ratios),
                           "ci": (lo, hi), "n": len(ratios)}
        again = out[("off-again", w)]
        # The noise floor: how far a configuration identical to "off" lands from 1 (the larger of the
        # measured gap and the half-width of its 95% interval).
        again["floor"] = max(abs(1 - again["ratio"]), (again["ci"][1] - again["ci"][0]) / 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=None)
    ap.add_argument("--trials", type=int, default=None)
    ap.add_argument("--debug-every", type=int, default=20, help="measure asyncio debug mode every N rounds")
    ap.add_argument("--minutes", type=float, default=None, help="stop starting new rounds after this long")
    ap.add_argument("--metric", choices=("wall", "cpu"), default="wall",
                    help="rate from wall-clock time (default) or from the process's CPU time")
    ap.add_argument("--json", help="write every measurement and the summary to this file")
    ap.add_argument("--respawn-every", type=int, default=10,
                    help="new worker processes every N rounds (0: one process per configuration for the whole run)")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker)
        return
    rounds = args.rounds or (5 if args.quick else 700)
    trials = args.trials or (20 if args.quick else 100)
    import importlib.util

    missing = [c for c, mod in PEER_MODULES.items() if importlib.util.find_spec(mod) is None]
    configs = [c for c in CONFIGS if c not in missing]
    raw: list = []  # per round and workload: {config: [wall rate, CPU rate]}
    results: dict = {(c, w): [] for c in configs for w in WORKLOADS}  # (rate, "off" rate of the same round)
    t_start = time.time()
    load_before = os.getloadavg()
    workers: dict = {}
    reports: dict = {c: 0 for c in configs}

    def spawn() -> None:
        # Every worker is a new process with a new memory layout: a fixed per-process offset (one
        # process lands 1-2% faster than another running the same code) averages out over epochs
        # instead of being read as a configuration's cost.
        for c in configs:
            if c in workers:
                reports[c] += workers[c].reports
                workers[c].close()
            workers[c] = Worker(c)
        for c in random.sample(configs, len(configs)):  # warm-up: imports, first-run allocations; not measured
            for w in WORKLOADS:
                workers[c].run(w)

    try:
        deadline = time.monotonic() + 60 * args.minutes if args.minutes else None
        done = 0
        while done < rounds and (deadline is None or time.monotonic() < deadline):
            if not workers or (args.respawn_every and done % args.respawn_every == 0):
                spawn()
            for w in WORKLOADS:  # one round: every configuration once per workload, in a new random order
                now = [c for c in configs if c != SLOW or done % args.debug_every == 0]
                runs = {c: workers[c].run(w) for c in random.sample(now, len(now))}
                raw.append({"round": done, "workload": w, **{c: [r["wall"], r["cpu"]] for c, r in runs.items()}})
                for c in now:
                    if c != "off":
                        results[(c, w)].append((runs[c][args.metric], runs["off"][args.metric]))
            done += 1
        rounds = done
        for c in configs:
            reports[c] += workers[c].reports
    finally:
        for wk in workers.values():
            wk.close()
    load_after = os.getloadavg()
    stats = analyse(results, configs)
    print(f"Overhead: {rounds} interleaved rounds; in each, every configuration runs each workload once in a "
          f"new random order (new worker processes every {args.respawn_every or 'never'} rounds); rate from {args.metric} time; Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; "
          f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    if missing:
        print(f"not installed, left out: {', '.join(missing)}")
    print(f"{'config':<15}" + "".join(f"{h:>11}{'loss':>8}{'95% interval':>18}" for h in ("tasks/s", "echo req/s")))
    for c in configs:
        cells = []
        for w in WORKLOADS:
            st = stats[(c, w)]
            lo, hi = st["ci"]
            cells.append(f"{st['rate']:>11.0f}{100 * (1 - st['ratio']):>7.1f}%"
                         f"{f'[{100 * (1 - hi):.1f}, {100 * (1 - lo):.1f}]%':>18}")
        print(f"{c:<15}" + "".join(cells) + (f"  (n={stats[(c, WORKLOADS[0])]['n']} pairs)" if c == SLOW else ""))
    if args.respawn_every:
        # between processes: the median off-again/off ratio of each set of processes (epoch)
        for w in WORKLOADS:
            pairs = results[("off-again", w)]
            epochs = [pairs[i:i + args.respawn_every] for i in range(0, len(pairs), args.respawn_every)]
            meds = sorted(statistics.median(r / o for r, o in e) for e in epochs if len(e) >= 3)
            if len(meds) >= 4:
                q = statistics.quantiles(meds, n=4)
                print(f"between processes ({w}): off-again/off per set of processes, {len(meds)} sets: "
                      f"median {100 * (1 - statistics.median(meds)):+.2f}%, IQR {100 * (q[2] - q[0]):.2f}%, "
                      f"range {100 * (1 - meds[-1]):+.2f}% .. {100 * (1 - meds[0]):+.2f}%")
    for w in WORKLOADS:
        print(f"noise floor ({w}): {100 * stats[('off-again', w)]['floor']:.2f}% (median over rounds of off-again/off "
              f"and its 95% interval; a single run: IQR/median of off {100 * stats[('off', w)]['iqr_rel']:.1f}%)")
    print(f"stalls runtime_guard reported during its overhead runs (no block planted; a loop iteration that "
          f"runs or creates 5,000 tasks can pass 0.1 s on a loaded machine): {reports.get('runtime_guard')}")
    det = detection(trials)
    print(f"\nDetection (threshold {THRESHOLD}s, planted 200 ms time.sleep, {det['trials']} trials)")
    for k, v in det.items():
        print(f"  {k:<28}{v}")
    print(f"\ntotal bench time {time.time() - t_start:.0f}s")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "rounds": rounds, "metric": args.metric, "load_before": load_before, "load_after": load_after,
            "missing": missing, "runs": raw,
            "summary": {f"{c}/{w}": v for (c, w), v in stats.items()}, "detection": det,
        }, indent=1))


if __name__ == "__main__":
    main()
