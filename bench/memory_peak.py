"""Peak memory of each process of a cold run (issue 30): the parent and every pool worker.

    python bench/memory_peak.py                      # ray+torch, -j1 and -j2, one run each
    python bench/memory_peak.py --corpus ref --repeat 3
    python bench/memory_peak.py --jobs 2 --base /tmp/old   # also an older checkout, same rounds

Corpora as ``bench_cold.py`` (``rt``: this environment's ray and torch sources, 4,864 files;
``ref``: ``bench/corpus/src``, 8,670 files). Each run is ``shutdown-lint --no-cache -q
--exit-zero -j N`` from the corpus's root, started by a small bootstrap that reads
``VmHWM`` (the process's peak resident set, Linux ``/proc/self/status``) as each process ends:
the parent at exit, each worker in ``os._exit`` (how ``multiprocessing`` ends a worker).
``tree`` is what ``/usr/bin/time -f %M`` reports: the largest ``ru_maxrss`` of the run's
process tree (``RUSAGE_CHILDREN`` of a process that ran only it).

A forked worker's resident set counts the parent's pages it touches (shared until written);
peaks depend on which worker takes which big file, so a run's largest worker moves between
runs: use ``--repeat``. Linux only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_cold import files_of  # a sibling script

#: runs the CLI with each process's peak RSS appended to $MEMORY_PEAK_OUT as it ends
BOOT = r"""
import atexit, os, sys
OUT = os.environ["MEMORY_PEAK_OUT"]
PARENT = os.getpid()

def record():
    kb = 0
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                kb = int(line.split()[1])
    role = "parent" if os.getpid() == PARENT else "worker"
    with open(OUT, "a") as f:
        f.write(f"{role} {os.getpid()} {kb}\n")

_exit = os._exit
def _recorded_exit(code):
    try:
        record()
    finally:
        _exit(code)
os._exit = _recorded_exit
atexit.register(record)
sys.argv[0] = "shutdown-lint"
from shutdown_lint.cli import main
sys.exit(main(sys.argv[1:]))
"""

#: one run in a process of its own: its children's rusage is the run's
WRAP = ("import resource, subprocess, sys\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")


def run_once(root: Path, rel: list[str], jobs: int, env_extra: dict | None = None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "peaks")
        env = {**os.environ, **(env_extra or {}), "MEMORY_PEAK_OUT": out}
        cmd = [sys.executable, "-c", BOOT, "--no-cache", "-q", "--exit-zero", "-j", str(jobs), *rel]
        done = subprocess.run([sys.executable, "-c", WRAP, *cmd], cwd=root, env=env, capture_output=True,
                              text=True, check=True)
        parent, workers = 0, []
        with open(out) as f:
            for line in f:
                role, _pid, kb = line.split()
                if role == "parent":
                    parent = int(kb)
                else:
                    workers.append(int(kb))
    return {"parent_mb": round(parent / 1024), "workers_mb": sorted((round(w / 1024) for w in workers),
                                                                      reverse=True),
            "tree_mb": round(int(done.stdout.split()[-1]) / 1024)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=("rt", "ref", "both"), default="rt")
    ap.add_argument("--jobs", type=int, nargs="*", default=[1, 2], help="the -j values to run (default: 1 2)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--base", help="an older checkout (git worktree, shutdown_lint/rules linked to its rules/), "
                    "first on PYTHONPATH, run in the same rounds")
    ap.add_argument("--json", action="store_true", help="one JSON line per run as well")
    args = ap.parse_args()
    if not sys.platform.startswith("linux"):
        sys.exit("memory_peak.py reads /proc: Linux only")
    versions = [("this", None)] + ([("base", {"PYTHONPATH": args.base})] if args.base else [])
    for name in (("rt", "ref") if args.corpus == "both" else (args.corpus,)):
        root, rel = files_of(name)
        print(f"{name}: {len(rel):,} files in {root}; load {os.getloadavg()[0]:.1f}", flush=True)
        for k in range(args.repeat):
            for jobs in args.jobs:
                for label, env in versions:
                    r = run_once(root, rel, jobs, env)
                    workers = ", ".join(f"{w}" for w in r["workers_mb"]) or "none (serial)"
                    print(f"  round {k + 1} -j{jobs} {label:>4}: parent {r['parent_mb']} MB; workers {workers} MB; "
                          f"largest process {r['tree_mb']} MB", flush=True)
                    if args.json:
                        print(json.dumps({"corpus": name, "jobs": jobs, "version": label, **r}), flush=True)


if __name__ == "__main__":
    main()
