"""SkyRL-style end-to-end scenario: sandbox leaks before and after `shutdown-lint --fix`.

A driver starts an async Ray actor that runs N trajectories with `asyncio.gather`; each
trajectory leases a "sandbox" (a file) and deletes it in its `finally` (with an await, like
a sandbox API call). The run is interrupted three ways:

  ctrl-c     SIGINT to the driver while it waits in `ray.get`
  exception  one trajectory raises (unhandled) after a few steps
  sigterm    SIGTERM to the actor's worker process, then SIGKILL after a grace period
             (GRACE s, as Kubernetes or a node drain does) if it is still alive

Each case runs twice on a real local Ray cluster: with the hazardous project in
tests/e2e/skyrl_project/ as written, and with the copy that
`shutdown-lint --fix --unsafe-fixes --target-version py311` produced (plus runtime_guard).
Every run is one driver process with its own `ray.init` (~10 s).

    python bench/skyrl_scenario.py [--n 20] [--cases ctrl-c,exception,sigterm]

prints the before/after table (leaked sandboxes, how the driver ended, seconds from the
interruption to the driver's exit). The e2e test (tests/e2e/test_skyrl_scenario.py)
imports this module and asserts on the same results.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PROJECT = REPO / "tests" / "e2e" / "skyrl_project"
CASES = ("ctrl-c", "exception", "sigterm")
FAIL_AT = 3  # the trajectory that raises in the "exception" case
START_DEADLINE = 90.0  # ray.init + actor start + N leases
EXIT_DEADLINE = 60.0  # the driver must exit by itself within this after the interruption
SETTLE = 2.0  # after the driver exits, let Ray tear the worker down before counting
GRACE = 10.0  # SIGTERM -> SIGKILL grace period for the worker (Kubernetes uses 30 s)


@dataclass
class RunResult:
    case: str
    variant: str  # "before" / "after"
    n: int
    leaked: int
    exited: bool  # the driver exited by itself (False: hung and was killed)
    returncode: int | None
    seconds_to_exit: float | None
    log: str
    worker_killed: bool = False  # the worker ignored SIGTERM for GRACE s and was SIGKILLed

    def outcome(self) -> str:
        if not self.exited:
            return f"hung > {EXIT_DEADLINE:.0f}s, killed"
        text = f"exit {self.returncode} after {self.seconds_to_exit:.1f}s"
        if self.worker_killed:
            text += f" (worker ignored SIGTERM, SIGKILL after {GRACE:.0f}s)"
        return text


def fixed_copy(dest: Path) -> Path:
    """Copy the hazardous project to ``dest`` and fix it with the command line."""
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(PROJECT, dest, ignore=shutil.ignore_patterns("__pycache__", ".shutdown_lint_cache"))
    cmd = [sys.executable, "-m", "shutdown_lint", "--fix", "--unsafe-fixes", "--target-version", "py311",
           "--no-cache", "--exit-zero", str(dest)]
    proc = subprocess.run(cmd, cwd=str(REPO), capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"shutdown-lint --fix failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return dest


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is dead for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _wait_for(predicate, deadline: float, step: float = 0.1) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def run_case(project: Path, case: str, n: int, workdir: Path, variant: str) -> RunResult:
    """Run the driver of ``project`` once, interrupt it as ``case`` says, count leaks."""
    run_dir = workdir / f"{variant}-{case}"
    leases = run_dir / "leases"
    leases.mkdir(parents=True)
    pid_file = run_dir / "worker.pid"
    log_path = run_dir / "driver.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    env.setdefault("RAY_AUTH_MODE", "disabled")
    fail_at = FAIL_AT if case == "exception" else -1
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "driver.py", str(leases), str(n), str(fail_at), str(pid_file)],
            cwd=str(project), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )
    worker_pid = None
    worker_killed = False  # the worker outlived the SIGTERM grace period
    try:
        started = _wait_for(lambda: len(os.listdir(leases)) >= n and pid_file.exists()
                            and pid_file.read_text().strip() != "", START_DEADLINE, 0.2)
        if not started:
            raise RuntimeError(f"{variant}/{case}: the scenario did not start:\n{log_path.read_text()}")
        worker_pid = int(pid_file.read_text())
        time.sleep(0.5)  # a few agent steps
        t0 = time.monotonic()
        if case == "ctrl-c":
            os.kill(proc.pid, signal.SIGINT)
        elif case == "sigterm":
            os.kill(worker_pid, signal.SIGTERM)
            if not _wait_for(lambda: not _alive(worker_pid), GRACE):
                worker_killed = True
                os.kill(worker_pid, signal.SIGKILL)
        try:
            proc.wait(timeout=EXIT_DEADLINE)
            exited, seconds = True, time.monotonic() - t0
        except subprocess.TimeoutExpired:
            exited, seconds = False, None
        # count what is left once the worker is gone for good
        _wait_for(lambda: not _alive(worker_pid), SETTLE + 10.0)
        time.sleep(SETTLE)
        leaked = len(os.listdir(leases))
    finally:
        for pid in (proc.pid,):
            try:
                os.killpg(pid, signal.SIGKILL)  # the driver's session: its raylet, GCS and workers
            except (ProcessLookupError, PermissionError):
                pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if worker_pid is not None and _alive(worker_pid):
            try:
                os.kill(worker_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return RunResult(case, variant, n, leaked, exited, proc.returncode if exited else None, seconds,
                     log_path.read_text(errors="replace"), worker_killed)


def run_all(n: int = 20, cases=CASES, workdir: Path | None = None) -> list[tuple[RunResult, RunResult]]:
    workdir = Path(workdir or tempfile.mkdtemp(prefix="skyrl-scenario-"))
    fixed = fixed_copy(workdir / "fixed_project")
    rows = []
    for case in cases:
        before = run_case(PROJECT, case, n, workdir, "before")
        after = run_case(fixed, case, n, workdir, "after")
        rows.append((before, after))
    return rows


def table(rows) -> str:
    head = ("| interruption | leaked before | leaked after | driver before | driver after |\n"
            "| --- | --- | --- | --- | --- |")
    lines = [head]
    labels = {"ctrl-c": "Ctrl+C (SIGINT) to the driver", "exception": "unhandled exception in 1 trajectory",
              "sigterm": "SIGTERM to the worker (actor)"}
    for before, after in rows:
        lines.append(f"| {labels[before.case]} | {before.leaked}/{before.n} | {after.leaked}/{after.n} | "
                     f"{before.outcome()} | {after.outcome()} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=20, help="concurrent trajectories (sandboxes)")
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--show-logs", action="store_true")
    ap.add_argument("--workdir", default=None, help="keep the runs' files here")
    args = ap.parse_args(argv)
    rows = run_all(args.n, [c for c in args.cases.split(",") if c], args.workdir)
    print(table(rows), flush=True)
    if args.show_logs:
        for pair in rows:
            for r in pair:
                print(f"\n--- {r.variant} {r.case} ---\n{r.log[-3000:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
