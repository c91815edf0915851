"""What the project index costs.

    python bench/bench_index.py [--corpus bench/corpus/src] [--repeat 3] [--jobs 2] [--skip-corpus]

1. ``ast`` vs libcst: parsing (and summarising) a sample of the corpus both ways, to show
   why summaries are built with ``ast``.
2. Cold and warm runs of the command line over the reference corpus with the index off
   (``SHUTDOWN_LINT_NO_INDEX=1``) and on, interleaved (off, on, off, on, ...) so that load
   from other processes on the machine hits both alike; medians.
3. A generated 500-module project (a chain of packages whose coroutines gather methods
   defined in other modules): a cold run, then a one-line edit to one module that others
   depend on, and the time of the run that follows (median of ``--repeat`` edits).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cli(args: list[str], index: bool) -> float:
    env = dict(os.environ, PYTHONPATH=REPO)
    if index:
        env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    else:
        env["SHUTDOWN_LINT_NO_INDEX"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--no-respect-gitignore", "-q", "--exit-zero", *args],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return wall


#: CPU seconds (user + system, workers included) of each ``_cli`` call, in order: on a shared
#: machine wall time mostly measures the other processes; CPU time measures ours
CPU: list[float] = []


def parse_costs(corpus: str, limit: int = 400) -> None:
    import ast

    import libcst as cst

    from shutdown_lint.index.summary import summarize

    files = []
    for d, _, fs in os.walk(corpus):
        files += [os.path.join(d, f) for f in sorted(fs) if f.endswith(".py")]
    files = sorted(files)[:: max(1, len(files) // limit)][:limit]
    data = []
    for f in files:
        with open(f, "rb") as fh:
            data.append(fh.read())
    t = time.perf_counter()
    for b in data:
        try:
            ast.parse(b)
        except SyntaxError:
            pass
    t_ast = time.perf_counter() - t
    t = time.perf_counter()
    for b in data:
        summarize(b)
    t_sum = time.perf_counter() - t
    t = time.perf_counter()
    for b in data:
        try:
            cst.parse_module(b)
        except Exception:
            pass
    t_cst = time.perf_counter() - t
    mb = sum(map(len, data)) / 1e6
    print(f"parse {len(data)} files ({mb:.1f} MB): ast.parse {t_ast:.2f} s, ast.parse + summary {t_sum:.2f} s, "
          f"libcst.parse_module {t_cst:.2f} s  (summary = {t_sum / t_cst:.0%} of a libcst parse)")


def corpus_runs(corpus: str, repeat: int, jobs: int) -> None:
    runs: dict[tuple[str, bool, str], list[float]] = {}
    for _ in range(repeat):
        for index in (False, True):
            cache = tempfile.mkdtemp(prefix="shdl-bench-")
            try:
                args = ["--cache-dir", cache, "-j", str(jobs), corpus]
                for name in ("cold", "warm"):
                    runs.setdefault((name, index, "wall"), []).append(_cli(args, index))
                    runs.setdefault((name, index, "cpu"), []).append(CPU[-1])
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    for name in ("cold", "warm"):
        for what in ("cpu", "wall"):
            off, on = runs[(name, False, what)], runs[(name, True, what)]
            m_off, m_on = statistics.median(off), statistics.median(on)
            print(f"{name} run, {what} time, of {corpus} (-j {jobs}, median of {repeat}): index off {m_off:.2f} s, "
                  f"on {m_on:.2f} s ({(m_on - m_off) / m_off:+.1%});  off {[round(x, 2) for x in off]}, "
                  f"on {[round(x, 2) for x in on]}")


def generated_project(root: str, n: int = 500) -> str:
    """``n`` modules in 10 packages; each module's coroutine gathers a method of a class
    defined in the previous module (whose base is in the package's ``base.py``)."""
    src = os.path.join(root, "src", "gen")
    os.makedirs(src)
    open(os.path.join(src, "__init__.py"), "w").close()
    per = n // 10
    for p in range(10):
        pkg = os.path.join(src, f"p{p}")
        os.makedirs(pkg)
        with open(os.path.join(pkg, "__init__.py"), "w") as fh:
            fh.write("from .base import Base\n")
        with open(os.path.join(pkg, "base.py"), "w") as fh:
            fh.write("class Base:\n    async def rollout(self, x):\n        try:\n            return x\n"
                     "        finally:\n            await self.close()\n\n    async def close(self):\n        pass\n")
        for m in range(per - 1):
            prev = f"from .m{m - 1} import Env{m - 1} as Prev\n" if m else "from . import Base as Prev\n"
            with open(os.path.join(pkg, f"m{m}.py"), "w") as fh:
                fh.write(f"import asyncio\n{prev}\n\nclass Env{m}(Prev):\n    pass\n\n\n"
                         f"async def run(xs):\n    env = Env{m}()\n"
                         f"    return await asyncio.gather(*[env.rollout(x) for x in xs])\n")
    return os.path.join(root, "src")


def edit_relint(repeat: int, jobs: int) -> None:
    root = tempfile.mkdtemp(prefix="shdl-gen-")
    try:
        src = generated_project(root)
        cache = os.path.join(root, ".cache")
        args = ["--cache-dir", cache, "-j", str(jobs), src]
        t_cold = _cli(args, True)
        t_warm = _cli(args, True)
        target = os.path.join(src, "gen", "p3", "m10.py")  # a module 38 others of its package reach
        leaf = os.path.join(src, "gen", "p3", "m48.py")  # a module nothing depends on
        kinds = {
            "a comment in a module 38 others depend on (its summary is unchanged)": (target, "\n# edit {i}\n"),
            "a new function in a module nothing depends on": (leaf, "\n\nasync def extra{i}():\n    pass\n"),
            "a new function in a module 38 others depend on (they are re-linted)":
                (target, "\n\nasync def extra{i}():\n    pass\n"),
        }
        print(f"generated 500-module project: cold {t_cold:.2f} s, warm {t_warm:.2f} s (wall; CPU "
              f"{CPU[-2]:.2f} s and {CPU[-1]:.2f} s)")
        for what, (path, text) in kinds.items():
            edits = []
            for i in range(repeat):
                with open(path, "a") as fh:
                    fh.write(text.format(i=i))
                edits.append((_cli(args, True), CPU[-1]))
            wall, cpu = [e[0] for e in edits], [e[1] for e in edits]
            print(f"  re-run after one edit, {what}: median wall {statistics.median(wall):.2f} s "
                  f"{[round(x, 2) for x in wall]}, CPU {statistics.median(cpu):.2f} s {[round(x, 2) for x in cpu]}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", default=os.path.join(REPO, "bench", "corpus", "src"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--skip-corpus", action="store_true")
    args = ap.parse_args()
    if os.path.isdir(args.corpus):
        parse_costs(args.corpus)
        if not args.skip_corpus:
            corpus_runs(args.corpus, args.repeat, args.jobs)
    else:
        print(f"no corpus at {args.corpus} (python bench/build_corpus.py, or --corpus DIR)")
    edit_relint(args.repeat, args.jobs)


if __name__ == "__main__":
    main()
