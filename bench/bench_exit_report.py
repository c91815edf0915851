"""Cost of runtime_guard's exit report when nothing leaks.

    python bench/bench_exit_report.py            # ~3 minutes on 2 cores
    python bench/bench_exit_report.py --quick
    python bench/bench_exit_report.py --startup-only --before /tmp/old   # start-up vs another checkout

Every measurement is interleaved (the order of the arms is shuffled in every round) and has an A/A
control ("off" against "off-again", both without the report) whose difference is the noise floor:
a difference smaller than the floor is noise.

1. Whole process, start to end: ``python -c "import site; site.addsitedir(D)"`` with the autoload
   .pth in D, with and without ``RUNTIME_GUARD_EXIT_REPORT=1`` (importing runtime_guard, the
   install, the patch-on-import finder, and the collection at exit with nothing to report).
2. Per created thing, in one process: batches of thread start+join, task create+run,
   ``subprocess.Popen(["true"]).wait()``, ``multiprocessing.Process`` (fork) start+join and
   ``ThreadPoolExecutor`` create+shutdown, with the report installed and uninstalled in turn
   (``install(sigterm=False, at_exit=False)`` / ``uninstall()``). Reported: the median per item for
   each arm, the difference per item in microseconds and in %, and the floor.
3. ``_site`` (the caller walk) alone, through 0, 5 and 40 standard-library frames.
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, Dict, List

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from runtime_guard import exit_report  # noqa: E402


def _median_diff(a: List[float], b: List[float]) -> float:
    return statistics.median(b) - statistics.median(a)


def _floor(off: List[float], again: List[float]) -> float:
    return abs(_median_diff(off, again)) / statistics.median(off) * 100


# ----------------------------------------------------------------------------- whole process

def bench_process(rounds: int, program: str = "", label: str = "an empty program", before: str = "") -> None:
    """``before``: another checkout's root (e.g. a ``git archive`` of an older commit): its
    runtime_guard is measured in the same interleaved rounds ("report-before", "import-before")."""
    pth = REPO / "runtime_guard" / "data" / "runtime_guard-autoload.pth"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / pth.name).write_text(pth.read_text())
        boot = f"import site; site.addsitedir({d!r})" + (f"; {program}" if program else "")
        base = {k: v for k, v in os.environ.items() if k not in ("RUNTIME_GUARD", "RUNTIME_GUARD_EXIT_REPORT")}
        base["PYTHONPATH"] = str(REPO)
        # as installed: with bytecode (PYTHONDONTWRITEBYTECODE would compile runtime_guard at every start)
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        import compileall

        compileall.compile_dir(str(REPO / "runtime_guard"), quiet=1)
        arms: Dict[str, "tuple[Dict[str, str], str]"] = {
            "off": (base, boot), "off-again": (base, boot),
            "report": ({**base, "RUNTIME_GUARD_EXIT_REPORT": "1"}, boot),
            # the off path of a program that imports the package (helpers) with nothing turned on
            "import": (base, boot + "; import runtime_guard"),
        }
        if before:
            compileall.compile_dir(str(Path(before) / "runtime_guard"), quiet=1)
            old = {**base, "PYTHONPATH": before}
            arms["report-before"] = ({**old, "RUNTIME_GUARD_EXIT_REPORT": "1"}, boot)
            arms["import-before"] = (old, boot + "; import runtime_guard")
        # wall time, and the child's own CPU time (user + system, from wait4): on a loaded machine
        # the wall time mostly measures the other jobs, the CPU time what the process itself did
        times: Dict[str, Dict[str, List[float]]] = {"wall": {k: [] for k in arms}, "cpu": {k: [] for k in arms}}
        for _ in range(rounds):
            order = list(arms)
            random.shuffle(order)
            for arm in order:
                env, code = arms[arm]
                t0 = time.perf_counter()
                p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, cwd=d)  # `-c` puts the cwd first on sys.path
                err = p.stderr.read() if p.stderr else b""
                _, status, usage = os.wait4(p.pid, 0)
                p.returncode = os.waitstatus_to_exitcode(status)
                times["wall"][arm].append(time.perf_counter() - t0)
                times["cpu"][arm].append(usage.ru_utime + usage.ru_stime)
                assert p.returncode == 0 and not err, err
        print(f"whole process (start + exit, nothing leaks), {label}, {rounds} interleaved rounds (medians):")
        for what in ("wall", "cpu"):
            t = times[what]
            off, again = t["off"], t["off-again"]
            line = f"  {what:4}: off {statistics.median(off) * 1e3:.2f} ms (floor {_floor(off, again):.2f}%)"
            for arm in arms:
                if arm in ("off", "off-again"):
                    continue
                d_ms = _median_diff(off, t[arm]) * 1e3
                line += f"; {arm} {d_ms:+.2f} ms"
            print(line)


_INPROC = """
import atexit, os, sys, time
marks = {{}}
atexit.register(lambda: os.write(1, ("%.1f %.1f %.1f" % (marks["pth"], marks["imp"],
                                    (time.thread_time() - marks["exit"]) * 1e6)).encode()))
t0 = time.thread_time()
import site; site.addsitedir({d!r})
t1 = time.thread_time()
import runtime_guard
marks["pth"], marks["imp"] = (t1 - t0) * 1e6, (time.thread_time() - t1) * 1e6
{program}
atexit.register(lambda: marks.__setitem__("exit", time.thread_time()))
"""


def bench_inprocess(rounds: int, program: str = "", label: str = "an empty program", before: str = "") -> None:
    """The main thread's own CPU time (``time.thread_time``, so other jobs on the machine do not
    count) for: the .pth line (with the report: import runtime_guard + exit_report, install), then
    ``import runtime_guard`` (the off path: nothing turned on), and the exit (atexit handlers: the
    report's collection). Arms: off, the report, and ``before``'s runtime_guard with the report."""
    pth = REPO / "runtime_guard" / "data" / "runtime_guard-autoload.pth"
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / pth.name).write_text(pth.read_text())
        code = _INPROC.format(d=d, program=program)
        base = {k: v for k, v in os.environ.items() if k not in ("RUNTIME_GUARD", "RUNTIME_GUARD_EXIT_REPORT")}
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        import compileall

        roots = {"": str(REPO)}
        if before:
            roots["-before"] = before
        arms: Dict[str, Dict[str, str]] = {}
        for suffix, root in roots.items():
            compileall.compile_dir(str(Path(root) / "runtime_guard"), quiet=1)
            arms["off" + suffix] = {**base, "PYTHONPATH": root}
            arms["report" + suffix] = {**base, "PYTHONPATH": root, "RUNTIME_GUARD_EXIT_REPORT": "1"}
        got: Dict[str, List[List[float]]] = {k: [] for k in arms}
        for _ in range(rounds):
            order = list(arms)
            random.shuffle(order)
            for arm in order:
                r = subprocess.run([sys.executable, "-c", code], env=arms[arm], capture_output=True, text=True,
                                   cwd=d)  # not the repository: `-c` puts the cwd first on sys.path
                assert r.returncode == 0 and not r.stderr, r.stderr
                got[arm].append([float(x) for x in r.stdout.split()])
        print(f"in-process CPU time of the main thread (µs, medians of {rounds} interleaved runs), {label}:")
        print(f"  {'arm':14} {'.pth line':>10} {'import runtime_guard':>21} {'exit':>8}")
        for arm, rows in got.items():
            med = [statistics.median(col) for col in zip(*rows)]
            print(f"  {arm:14} {med[0]:10.0f} {med[1]:21.0f} {med[2]:8.0f}")


# ----------------------------------------------------------------------------- per created thing

def _noop() -> None:
    pass


async def _anoop() -> None:
    pass


def thread_batch(n: int) -> None:
    for _ in range(n):
        t = threading.Thread(target=_noop)
        t.start()
        t.join()


def task_batch(n: int) -> None:
    loop = asyncio.new_event_loop()
    try:
        async def all_tasks() -> None:
            tasks = [loop.create_task(_anoop()) for _ in range(n)]
            for t in tasks:
                await t
        loop.run_until_complete(all_tasks())
    finally:
        loop.close()


def popen_batch(n: int) -> None:
    for _ in range(n):
        subprocess.Popen(["true"]).wait()


def process_batch(n: int) -> None:
    ctx = multiprocessing.get_context("fork")
    for _ in range(n):
        p = ctx.Process(target=_noop)
        p.start()
        p.join()


def executor_batch(n: int) -> None:
    for _ in range(n):
        ThreadPoolExecutor(1).shutdown()


def bench_items(rounds: int, quick: bool) -> None:
    scale = 0.25 if quick else 1.0
    cases: List[tuple] = [
        ("thread start+join", thread_batch, int(400 * scale)),
        ("asyncio task create+run", task_batch, int(20000 * scale)),
        ("Popen(['true']).wait()", popen_batch, int(40 * scale)),
        ("multiprocessing fork Process start+join", process_batch, int(20 * scale)),
        ("ThreadPoolExecutor create+shutdown", executor_batch, int(2000 * scale)),
    ]
    print(f"per created thing, {rounds} interleaved rounds (batch size in brackets):")
    for name, fn, n in cases:
        times: Dict[str, List[float]] = {"off": [], "off-again": [], "report": []}
        fn(max(1, n // 10))  # warm-up
        for _ in range(rounds):
            order = list(times)
            random.shuffle(order)
            for arm in order:
                if arm == "report":
                    exit_report.install(sigterm=False, at_exit=False)
                t0 = time.perf_counter()
                fn(n)
                times[arm].append((time.perf_counter() - t0) / n)
                if arm == "report":
                    exit_report.uninstall()
        off, again, rep = times["off"], times["off-again"], times["report"]
        d = _median_diff(off, rep)
        print(f"  {name} [{n}]: off {statistics.median(off) * 1e6:.1f} us, report {statistics.median(rep) * 1e6:.1f} us:"
              f" {d * 1e6:+.2f} us ({d / statistics.median(off) * 100:+.2f}%); noise floor {_floor(off, again):.2f}%")


class _Thread:
    def start(self) -> None:
        pass


class _Popen:
    def __init__(self, args: object) -> None:
        self.pid, self.args = 12345, args


class _Executor:
    def __init__(self) -> None:
        pass

    def shutdown(self) -> None:
        pass


class _Task:
    pass


class _Loop:
    def create_task(self, coro: object) -> _Task:
        return _Task()


def bench_recording(rounds: int) -> None:
    """The added work alone: the real wrappers around stand-ins whose original does nothing, called
    straight from this (user) code, against the originals; min of each round's batches (timeit's way)."""
    from types import SimpleNamespace

    exit_report.install(sigterm=False, at_exit=False)
    exit_report._patch_threading(SimpleNamespace(Thread=_Thread))
    exit_report._patch_subprocess(SimpleNamespace(Popen=_Popen))
    exit_report._patch_executor_class(_Executor)
    exit_report._patch_asyncio(SimpleNamespace(BaseEventLoop=_Loop))
    loop, thread = _Loop(), _Thread()
    cases = {
        "Thread.start": (lambda: _Thread.start(thread), lambda: _Thread.start.__wrapped__(thread)),
        "Popen.__init__": (lambda: _Popen(["true"]), None),
        "executor __init__ + shutdown": (lambda: _Executor().shutdown(), None),
        "loop.create_task": (lambda: _Loop.create_task(loop, None), lambda: _Loop.create_task.__wrapped__(loop, None)),
    }
    n = 20000
    print(f"recording alone (wrapper + caller walk + record, called from user code), {rounds} interleaved rounds:")
    for name, (wrapped, original) in cases.items():
        if original is None:  # a class: call with the original __init__/shutdown put back for the "off" arms
            cls = _Popen if name.startswith("Popen") else _Executor
            patched = {k: cls.__dict__[k] for k in ("__init__", "shutdown") if k in cls.__dict__}

            def run_off(cls: type = cls, patched: Dict[str, object] = patched) -> float:
                for k, v in patched.items():
                    setattr(cls, k, v.__wrapped__)  # type: ignore[attr-defined]
                try:
                    return _batch(wrapped, n)
                finally:
                    for k, v in patched.items():
                        setattr(cls, k, v)
        else:
            def run_off(original: Callable[[], object] = original) -> float:  # type: ignore[misc]
                return _batch(original, n)
        arms: Dict[str, List[float]] = {"off": [], "off-again": [], "report": []}
        for _ in range(rounds):
            order = list(arms)
            random.shuffle(order)
            for arm in order:
                arms[arm].append(_batch(wrapped, n) if arm == "report" else run_off())
        off = min(arms["off"])
        again = min(arms["off-again"])
        rep = min(arms["report"])
        print(f"  {name}: off {off * 1e6:.3f} us, report {rep * 1e6:.3f} us: {(rep - off) * 1e6:+.3f} us per call; "
              f"noise floor (off vs off-again) {abs(again - off) * 1e6:.3f} us")
    exit_report.uninstall()


def _batch(fn: Callable[[], object], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n


def bench_site() -> None:
    # frames "in the standard library" (compiled under its directory's name) that the walk must skip
    ns: Dict[str, object] = {}
    fake = os.path.join(os.path.dirname(os.__file__), "_bench_exit_report_fake.py")
    exec(compile("def at_depth(depth, fn):\n    return at_depth(depth - 1, fn) if depth else fn()\n", fake, "exec"), ns)
    at_depth: Callable[[int, Callable[[], None]], None] = ns["at_depth"]  # type: ignore[assignment]
    n = 20000
    print("the caller walk alone:")
    for depth in (0, 5, 40):
        result: List[float] = []

        def run() -> None:
            t0 = time.perf_counter()
            for _ in range(n):
                exit_report._site(2)
            result.append((time.perf_counter() - t0) / n)

        for _ in range(5):
            at_depth(depth, run)
        print(f"  _site() through {depth} standard-library frames: {statistics.median(result) * 1e6:.2f} us")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--before", default="", help="another checkout whose runtime_guard is measured alongside")
    ap.add_argument("--startup-only", action="store_true", help="only the whole-process rows")
    args = ap.parse_args()
    random.seed(29)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    bench_process(20 if args.quick else 150, before=args.before)
    bench_process(20 if args.quick else 150, "import asyncio, concurrent.futures, subprocess, typing",
                  "a program importing asyncio, concurrent.futures, subprocess, typing", before=args.before)
    bench_inprocess(20 if args.quick else 100, before=args.before)
    bench_inprocess(20 if args.quick else 100, "import asyncio, concurrent.futures, subprocess, typing",
                    "a program importing asyncio, concurrent.futures, subprocess, typing", before=args.before)
    if args.startup_only:
        return
    bench_items(5 if args.quick else 21, args.quick)
    bench_recording(5 if args.quick else 41)
    bench_site()


if __name__ == "__main__":
    main()
