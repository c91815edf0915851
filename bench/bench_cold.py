"""Cold run against ruff on one or both corpora, interleaved rounds (issue 30).

    python bench/bench_cold.py                     # both corpora, 3 rounds each
    python bench/bench_cold.py --corpus rt --repeat 5
    python bench/bench_cold.py --jobs 1            # shutdown-lint -j1 (profiling comparisons)
    python bench/bench_cold.py --base /tmp/old     # also an older checkout (git worktree), same rounds

Corpora: ``rt`` is the installed ray and torch sources (``site-packages/{ray,torch}`` of this
virtual environment, 4,864 files), ``ref`` the reference corpus of ``bench/build_corpus.py``
(``bench/corpus/src``, 8,670 files). Each tool gets the same list of relative file paths, run
from the corpus's root (site-packages and the corpus are excluded or git-ignored as folders).

Each round runs ``ruff check --select ASYNC,RUF006 --no-cache`` then ``shutdown-lint --no-cache``
(default jobs unless ``--jobs``), in a new random order per round; reported: the median wall
and CPU seconds (user + system of the command and its children), the largest process's peak
RSS, and the ratio of the medians. The machine is shared: compare ratios, not seconds.

Before the rounds, each timed checkout's modules are byte-compiled (``compile_bytecode``), as
``pip install`` does: with ``PYTHONDONTWRITEBYTECODE`` set (it is on these machines) a module
edited since its ``.pyc`` was written is compiled again from source in every timed run (measured:
~0.15 of the ~0.49 CPU-s a one-file run took), a cost no installed copy pays.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
SITE = Path(next(p for p in sys.path if p.endswith("site-packages")))
CORPORA = {"rt": (SITE, ("ray", "torch")), "ref": (HERE / "corpus" / "src", None)}


def files_of(name: str) -> tuple[Path, list[str]]:
    root, tops = CORPORA[name]
    found = []
    for top in (tops or sorted(os.listdir(root))):
        for p in (root / top).rglob("*.py"):
            if p.is_file():
                found.append(str(p.relative_to(root)))
    return root, sorted(found)


def compile_bytecode(*checkouts: Path) -> None:
    """Write the ``.pyc`` of each checkout's ``shutdown_lint`` and ``rules`` (what an installed
    wheel has), so no timed run compiles a module it imports (see the module's docstring)."""
    for top in checkouts:
        for sub in ("shutdown_lint", "rules"):
            if (top / sub).is_dir():
                subprocess.run([sys.executable, "-m", "compileall", "-q", str(top / sub)], check=True,
                               stdout=subprocess.DEVNULL)


def run(cmd: list[str], cwd: Path, env: dict | None = None) -> dict:
    """One command in a process of its own (so that its children's rusage is its own)."""
    code = ("import resource, subprocess, sys, time\n"
            "t = time.perf_counter()\n"
            "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            "w = time.perf_counter() - t\n"
            "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
            "print(w, r.ru_utime + r.ru_stime, r.ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", code, *cmd], cwd=cwd, capture_output=True, text=True, check=True,
                         env=env)
    wall, cpu, rss = out.stdout.split()
    return {"wall": float(wall), "cpu": float(cpu), "rss_mb": int(rss) / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", choices=("rt", "ref", "both"), default="both")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, help="shutdown-lint --jobs (default: its own default)")
    ap.add_argument("--base", help="an older checkout (a git worktree) timed in the same rounds: "
                    "python -m shutdown_lint with it first on PYTHONPATH (it needs shutdown_lint/rules "
                    "linked to its rules/)")
    args = ap.parse_args()
    env_jobs = ["-j", str(args.jobs)] if args.jobs else []
    compile_bytecode(HERE.parent, *([Path(args.base)] if args.base else []))
    for name in (("rt", "ref") if args.corpus == "both" else (args.corpus,)):
        root, rel = files_of(name)
        ruff = [str(BIN / "ruff"), "check", "--isolated", "--select", "ASYNC,RUF006", "--exit-zero", "-q",
                "--no-cache", *rel]
        ours = [sys.executable, "-m", "shutdown_lint", "--no-cache", "-q", "--exit-zero", *env_jobs, *rel]
        tools = [("ruff", ruff, None), ("shutdown-lint", ours, None)]
        if args.base:
            tools.append(("base", ours, {**os.environ, "PYTHONPATH": args.base}))
        rows: dict[str, list[dict]] = {label: [] for label, _, _ in tools}
        print(f"{name}: {len(rel):,} files in {root}; load {os.getloadavg()[0]:.1f}", flush=True)
        for k in range(args.repeat):
            order = list(tools)
            random.shuffle(order)
            for label, cmd, env in order:
                rows[label].append(run(cmd, root, env))
            print(f"  round {k + 1}: ruff {rows['ruff'][-1]['wall']:.2f} s ({rows['ruff'][-1]['cpu']:.2f} CPU-s), "
                  f"shutdown-lint {rows['shutdown-lint'][-1]['wall']:.2f} s "
                  f"({rows['shutdown-lint'][-1]['cpu']:.2f} CPU-s, {rows['shutdown-lint'][-1]['rss_mb']:.0f} MB); "
                  f"ratio {rows['shutdown-lint'][-1]['wall'] / rows['ruff'][-1]['wall']:.1f}x"
                  + (f"; base {rows['base'][-1]['wall']:.2f} s ({rows['base'][-1]['cpu']:.2f} CPU-s, "
                     f"{rows['base'][-1]['rss_mb']:.0f} MB)" if args.base else ""), flush=True)
        med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall", "cpu", "rss_mb")} for k, v in rows.items()}
        print(f"{name} medians of {args.repeat}: ruff {med['ruff']['wall']:.2f} s / {med['ruff']['cpu']:.2f} CPU-s; "
              f"shutdown-lint {med['shutdown-lint']['wall']:.2f} s / {med['shutdown-lint']['cpu']:.2f} CPU-s, "
              f"peak RSS {med['shutdown-lint']['rss_mb']:.0f} MB; cold / ruff "
              f"{med['shutdown-lint']['wall'] / med['ruff']['wall']:.1f}x wall, "
              f"{med['shutdown-lint']['cpu'] / med['ruff']['cpu']:.1f}x CPU; load {os.getloadavg()[0]:.1f}", flush=True)
        if args.base:
            b = med["base"]
            print(f"{name} base: {b['wall']:.2f} s / {b['cpu']:.2f} CPU-s, peak RSS {b['rss_mb']:.0f} MB; "
                  f"base / ruff {b['wall'] / med['ruff']['wall']:.1f}x wall, {b['cpu'] / med['ruff']['cpu']:.1f}x CPU",
                  flush=True)


if __name__ == "__main__":
    main()
