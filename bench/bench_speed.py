"""Issues 7 and 13: shutdown-lint's speed next to its peers, measured in ONE run.

    python bench/build_corpus.py        # once: the ray/transformers/vllm wheels' .py files
    python bench/bench_speed.py         # the table (about 10 minutes on 2 cores)
    python bench/bench_speed.py --corpus ray-torch --warm-only --repeat 7
    python bench/bench_speed.py --lsp-only --repeat 20   # the editor rows alone

Every row runs a real command in a subprocess (interpreter start, discovery, pool and
output included), timed with a monotonic clock; peak memory is the largest RSS of the
command's process tree (``getrusage(RUSAGE_CHILDREN)`` of a wrapper that runs only that
command). Ratios compare rows of the same run: the machine is noisy.

Rows:
  ruff cold / cached          ruff check --select ASYNC,RUF006 (--no-cache; then a warm cache)
  shutdown-lint cold -j1/-j2  --no-cache over the corpus
  shutdown-lint warm          cache filled, nothing changed
  one file changed            cache filled, one file edited
  pre-commit, 20 files        20 files named on the command line, fresh cache dir
  Fixit, flake8-async         on a fixed subset (every Nth file), extrapolated by lines
  memory                      peak RSS cold -j2 on half the corpus vs the whole corpus
  candidate check             (--check-candidates) findings with both candidate tiers
                              off vs on over the whole corpus: files where they differ;
                              (--check-tree-tier) the same with only tier 2 (ast) off

The cold, cached and warm rows of ruff and shutdown-lint are run --repeat times,
interleaved (ruff, ours -j2, ours -j1, ruff cached, ours warm, then again), and the
ratios use the medians: on a shared machine the load changes during a run.

Corpora (--corpus): ``reference`` (the default: bench/corpus/src, built by build_corpus.py) or
``ray-torch`` (the installed ray and torch packages of this environment, linted in place). Both
are linted through a list file of relative paths; the warm rows (--warm-only) also lint the
corpus's top directories, walked (``--no-respect-gitignore`` for both tools: the corpora lie
under ignored folders).

Editor rows (--lsp, or --lsp-only): ``shutdown-lint server`` through a real LSP client
(``bench/lsp_latency.py``, JSON-RPC over stdio): first diagnostics after ``didOpen`` of a
1,000-line file (a fresh server per round, initialized and idle for 2 s, no cache) and after an
edit (an incremental change in the middle of the buffer), medians of --repeat rounds (20 for
the targets). The project is a copy of the reference corpus's ray package (2,579 files) and
the file ``ray/serve/batching.py`` (1,029 lines, 2 findings), or --lsp-project / --lsp-file.
For scale, ``ruff server`` is run with the same client when it starts here (it does not have
these rules: only its latency is comparable); the targets are 0.3 s (open) and 0.15 s (edit).

Options: --quick (a tenth of the corpus, for trying the script), --skip-peers,
--warm-only (only ruff cached vs ours warm, interleaved, and their ratio),
--check-candidates, --check-tree-tier, --repeat N, --json FILE (write the rows),
--editable, --compare-installs (below).

Which shutdown-lint is measured: by default the one a user gets from ``pip install
shutdown-lint``, its wheel, built from this checkout's working tree (a copy of it, so no stale
``build/`` folder leaks into it) and installed into a venv of its own made with the base
interpreter, byte-compiled as pip does; that venv reaches the other packages (libcst, ray, torch,
ruff's rows are unchanged) through a path line in a ``.pth`` file naming this environment's
site-packages (a path line: that folder's own ``.pth`` files, the editable install's import hooks,
are not run). The bench asserts that nothing the wheel's interpreter imports comes from the
checkout. ``--editable`` measures the development install (``.venv/bin/shutdown-lint``) instead.
Why: setuptools' editable install of this project (the package-dir mapping ``shutdown_lint.rules``
-> ``rules``) puts an import hook in a ``.pth`` file, ``__editable___shutdown_lint_0_1_0_finder``,
that every interpreter start in that venv imports, with pathlib, re, urllib.parse, fnmatch,
enum...: ``site`` took 14.5 ms instead of 1.7 ms (``python -X importtime -c pass``), about 10 ms
of each warm run that a user never pays. ``--compare-installs`` (with --warm-only) runs both
installs in the same interleaved rounds, each with its own cache folder (the cache key differs
between installs: one folder would make them re-lint), and the bare start of each interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import build_corpus  # noqa: E402
from bench_cold import compile_bytecode  # noqa: E402

BIN = Path(sys.executable).parent
#: the shutdown-lint measured (``_install``): the wheel's console script by default
OURS = BIN / "shutdown-lint"
SRC = build_corpus.SRC
TIMEOUT = 1800

# A wrapper that runs one command and reports its wall time and the peak RSS of its
# process tree, so each row's memory is its own.
_WRAP = r"""
import json, resource, subprocess, sys, time
t = time.perf_counter()
p = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], "wb"), stderr=subprocess.PIPE)
wall = time.perf_counter() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"wall": wall, "rc": p.returncode, "rss_kb": ru.ru_maxrss, "cpu": ru.ru_utime + ru.ru_stime,
                  "stderr": p.stderr.decode()[-2000:]}))
"""


#: A user's installed tools have their bytecode cached; a machine that sets
#: PYTHONDONTWRITEBYTECODE would make every run of ours recompile its modules (~25 ms, a tenth
#: of a warm run) while ruff, a binary, pays nothing of the kind.
_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def run(cmd: list[str], *, cwd: Path, env: dict | None = None, out: str = os.devnull) -> dict:
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"} if env is not None else _ENV
    proc = subprocess.run([sys.executable, "-c", _WRAP, out, *cmd], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise SystemExit(f"wrapper failed for {cmd}: {proc.stderr[-2000:]}")
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    if res["rc"] not in (0, 1):
        shown = " ".join(cmd[:12]) + (f" ... ({len(cmd) - 12} more)" if len(cmd) > 12 else "")
        raise SystemExit(f"{shown} exited {res['rc']}:\n{res['stderr']}")
    return res


def lines_of(paths: list[Path]) -> int:
    return sum(p.read_bytes().count(b"\n") for p in paths)


def shutdown_lint(*args: str, exe: Path | None = None) -> list[str]:
    """The command line of the shutdown-lint measured (``OURS``), or of ``exe``."""
    return [str(exe or OURS), "--isolated", "--exit-zero", "-q", *args]


def ruff(*args: str) -> list[str]:
    return [str(BIN / "ruff"), "check", "--isolated", "--select", "ASYNC,RUF006", "--exit-zero", "-q", *args]


class Table:
    def __init__(self) -> None:
        self.rows: list[dict] = []

    def add(self, name: str, seconds: float, *, rss_kb: int | None = None, note: str = "",
            cpu: float | None = None) -> None:
        self.rows.append({"name": name, "seconds": seconds, "rss_mb": rss_kb / 1024 if rss_kb else None,
                          "cpu_s": cpu, "note": note})
        rss = f"{rss_kb / 1024:7.0f} MB" if rss_kb else " " * 10
        cpu_s = f"{cpu:8.2f} s" if cpu is not None else " " * 10
        print(f"  {name:<44} {seconds:8.2f} s {cpu_s} {rss}  {note}", flush=True)

    def result(self, name: str, r: dict, note: str = "") -> float:
        self.add(name, r["wall"], rss_kb=r["rss_kb"], cpu=r.get("cpu"), note=note)
        return r["wall"]

    def seconds(self, name: str) -> float:
        return next(r["seconds"] for r in self.rows if r["name"] == name)


def subset(files: list[Path], every: int) -> list[Path]:
    return files[::every]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the corpus")
    ap.add_argument("--skip-peers", action="store_true", help="no Fixit / flake8-async rows")
    ap.add_argument("--check-candidates", action="store_true",
                    help="also lint the corpus with the candidate stage off and compare")
    ap.add_argument("--peer-every", type=int, default=60, help="Fixit/flake8-async subset: every Nth file")
    ap.add_argument("--candidates-only", action="store_true",
                    help="only the candidate check: cold -j2 with the stage on and off, compared")
    ap.add_argument("--check-tree-tier", action="store_true",
                    help="also lint the corpus with candidate tier 2 (ast) off and compare")
    ap.add_argument("--rounds-only", action="store_true",
                    help="only the interleaved ruff / cold -j2 / cold -j1 / cached / warm rounds")
    ap.add_argument("--warm-only", action="store_true",
                    help="only ruff cached vs shutdown-lint warm, interleaved, with their ratio (no cold rows)")
    ap.add_argument("--repeat", type=int, default=3, help="interleaved rounds of the cold/warm rows (medians)")
    ap.add_argument("--corpus", choices=("reference", "ray-torch"), default="reference",
                    help="reference: bench/corpus/src; ray-torch: the installed ray and torch sources")
    ap.add_argument("--lsp", action="store_true", help="also the editor rows (LSP open / edit latency)")
    ap.add_argument("--lsp-only", action="store_true", help="only the editor rows")
    ap.add_argument("--lsp-project", type=Path, help="the editor rows' project (default: the corpus's ray package)")
    ap.add_argument("--lsp-file", type=Path, help="the file opened and edited (default: ray/serve/batching.py)")
    ap.add_argument("--json", help="write the rows here")
    ap.add_argument("--editable", action="store_true",
                    help="measure the development install (.venv/bin/shutdown-lint) instead of the wheel")
    ap.add_argument("--compare-installs", action="store_true",
                    help="with --warm-only: the wheel and the editable install in the same rounds")
    args = ap.parse_args()

    if args.corpus == "reference" and not SRC.is_dir():
        raise SystemExit("no corpus: run `python bench/build_corpus.py` first")
    root, all_files = corpus(args.corpus)
    files = subset(all_files, 10) if args.quick else all_files
    compile_bytecode(HERE.parent)  # as installed: no timed run compiles our modules (bench_cold's docstring)
    work = Path(tempfile.mkdtemp(prefix="shd-bench-"))
    global OURS
    try:
        wheel_bin = None
        if not args.editable or args.compare_installs:
            wheel_bin = install_wheel(work)
        OURS = BIN / "shutdown-lint" if args.editable else wheel_bin / "shutdown-lint"
        what = "the editable install (--editable)" if args.editable else "its wheel, installed in a venv of its own"
        print(f"shutdown-lint measured: {what}, {OURS}"
              + (" (and the other install in the same rounds: --compare-installs)" if args.compare_installs else ""),
              flush=True)
        if args.lsp_only:
            targets = _lsp_rows(Table(), args, work)
            _print_targets(targets)
            return
        # the corpus is linted through a list file of relative paths, so every tool sees the same files
        rel = [str(p.relative_to(root)) for p in files]
        n_lines = lines_of(files)
        print(f"corpus: {len(files):,} files, {n_lines:,} lines ({'quick: every 10th file' if args.quick else 'full'})")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at start "
              "(columns: wall, CPU of the command's processes, peak RSS of its largest process)")
        t = Table()
        targets: list[tuple[str, bool, str]] = []
        if args.candidates_only:
            out_json = work / "shd-cold.json"
            r = run(shutdown_lint("--no-cache", "-j", "2", "--output-format", "json", *rel), cwd=root,
                    out=str(out_json))
            t.result("shutdown-lint cold -j2", r, note=f"{n_lines / r['wall']:,.0f} lines/s")
            _check_candidates(t, targets, out_json, rel, root, work)
            _print_targets(targets)
            return

        # ------------------------------------------------ ruff and shutdown-lint, interleaved rounds
        ruff_cache = work / "ruff-cache"
        cache = work / "shd-cache"
        out_json = work / "shd-cold.json"
        if args.warm_only:
            others = {}
            if args.compare_installs:
                other = BIN / "shutdown-lint" if not args.editable else wheel_bin / "shutdown-lint"
                others = {("editable" if not args.editable else "wheel"): other}
                _starts(args.repeat, {"wheel": wheel_bin / "python", "editable": BIN / "python"}, root)
            name = "editable" if args.editable else "wheel"
            _warm_only(args.repeat, rel, root, ruff_cache, cache, others=others, name=name)
            walked = sorted({r.split(os.sep, 1)[0] for r in rel})
            print(f"the same, the corpus's top directories walked ({' '.join(walked)}):")
            _warm_only(args.repeat, walked, root, work / "ruff-cache-dirs", work / "shd-cache-dirs",
                       ("--no-respect-gitignore",), others=others, name=name)
            if args.lsp:
                _print_targets(_lsp_rows(Table(), args, work))
            return
        run(ruff("--cache-dir", str(ruff_cache), *rel), cwd=root)  # fill ruff's cache
        run(shutdown_lint("--cache-dir", str(cache), "-j", "2", *rel), cwd=root)  # fill ours
        rounds: dict[str, list[dict]] = {k: [] for k in ("ruff", "cold2", "cold1", "ruff_cached", "warm")}
        for k in range(args.repeat):
            rounds["ruff"].append(run(ruff("--no-cache", *rel), cwd=root))
            # same output format as -j1: json renders every fix's edits (seconds per fixable finding)
            rounds["cold2"].append(run(shutdown_lint("--no-cache", "-j", "2", *rel), cwd=root))
            rounds["cold1"].append(run(shutdown_lint("--no-cache", "-j", "1", *rel), cwd=root))
            rounds["ruff_cached"].append(run(ruff("--cache-dir", str(ruff_cache), *rel), cwd=root))
            rounds["warm"].append(run(shutdown_lint("--cache-dir", str(cache), "-j", "2", *rel), cwd=root))
            print(f"  round {k + 1}/{args.repeat}: ruff {rounds['ruff'][-1]['wall']:.2f} s, cold -j2 "
                  f"{rounds['cold2'][-1]['wall']:.2f} s, -j1 {rounds['cold1'][-1]['wall']:.2f} s, ruff cached "
                  f"{rounds['ruff_cached'][-1]['wall']:.2f} s, warm {rounds['warm'][-1]['wall']:.2f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
        med = {k: _median(v) for k, v in rounds.items()}
        if args.rounds_only:
            print(f"medians: ruff {med['ruff']['wall']:.2f} s ({med['ruff']['cpu']:.2f} CPU-s), cold -j2 "
                  f"{med['cold2']['wall']:.2f} s ({med['cold2']['cpu']:.1f} CPU-s), -j1 {med['cold1']['wall']:.2f} s "
                  f"({med['cold1']['cpu']:.1f} CPU-s), ruff cached {med['ruff_cached']['wall']:.2f} s, warm "
                  f"{med['warm']['wall']:.2f} s; cold -j2 / ruff {med['cold2']['wall'] / med['ruff']['wall']:.1f}x wall, "
                  f"{med['cold2']['cpu'] / med['ruff']['cpu']:.1f}x CPU; warm / ruff cached "
                  f"{med['warm']['wall'] / med['ruff_cached']['wall']:.2f}x; -j1 / -j2 "
                  f"{med['cold1']['wall'] / med['cold2']['wall']:.2f}x", flush=True)
            return
        ruff_cold = t.result("ruff cold (--no-cache)", med["ruff"], note=f"median of {args.repeat}")
        ruff_cached = t.result("ruff cached", med["ruff_cached"], note=f"median of {args.repeat}")
        cold2 = t.result("shutdown-lint cold -j2", med["cold2"], note=f"{n_lines / med['cold2']['wall']:,.0f} lines/s")
        cold1 = t.result("shutdown-lint cold -j1", med["cold1"], note=f"{n_lines / med['cold1']['wall']:,.0f} lines/s")
        warm = t.result("shutdown-lint warm (nothing changed)", med["warm"], note=f"median of {args.repeat}")
        # one file changed: an appended comment, restored afterwards
        victim = next(p for p in files if b"ray.get" in p.read_bytes()) if any(
            b"ray.get" in p.read_bytes() for p in files[:200]) else files[0]
        original = victim.read_bytes()
        try:
            victim.write_bytes(original + b"\n# bench: one file changed\n")
            r = run(shutdown_lint("--cache-dir", str(cache), "-j", "2", *rel), cwd=root)
        finally:
            victim.write_bytes(original)
        one = t.result("shutdown-lint one file changed", r, note=str(victim.relative_to(root)))

        # ---------------------------------------------------------------- pre-commit style
        # 20 "changed" files, spread over the corpus, named on the command line, nothing cached
        changed = [rel[i] for i in range(0, len(rel), max(1, len(rel) // 20))][:20]
        pc_cache = work / "pc-cache"
        r = run(shutdown_lint("--cache-dir", str(pc_cache), *changed), cwd=root)
        pre = t.result("pre-commit style, 20 files (incl. start)", r)
        r = run([sys.executable, "-c", "pass"], cwd=root)
        t.result("  (bare interpreter start, for scale)", r)

        # ---------------------------------------------------------------- memory vs corpus size
        half = rel[::2]
        r_half = run(shutdown_lint("--no-cache", "-j", "2", *half), cwd=root)
        t.result("shutdown-lint cold -j2, half the corpus", r_half)
        peak_full = next(x["rss_mb"] for x in t.rows if x["name"] == "shutdown-lint cold -j2")
        peak_half = r_half["rss_kb"] / 1024

        # ---------------------------------------------------------------- peers on a subset
        fixit_rate = flake8_rate = None
        if not args.skip_peers:
            sub = subset(files, args.peer_every)
            sub_rel = [str(p.relative_to(root)) for p in sub]
            sub_lines = lines_of(sub)
            note = f"subset: {len(sub)} files, {sub_lines:,} lines (every {args.peer_every}th)"
            # a copy outside the repository: Fixit skips files that .gitignore covers
            # (bench/corpus/ is ignored) and would report "0 files"
            peer_root = work / "peer"
            for r_path in sub_rel:
                (peer_root / r_path).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / r_path, peer_root / r_path)
            if shutil.which("fixit", path=str(BIN)):
                r = run([str(BIN / "fixit"), "lint", *sub_rel], cwd=peer_root)
                fixit_rate = sub_lines / r["wall"]
                t.result("Fixit lint (subset)", r, note=f"{fixit_rate:,.0f} lines/s; {note}")
                t.add("Fixit, extrapolated to the corpus", n_lines / fixit_rate, note="extrapolated by lines")
            if shutil.which("flake8", path=str(BIN)):
                r = run([str(BIN / "flake8"), "-j", "2", "--isolated", "--select", "ASYNC", *sub_rel], cwd=peer_root)
                flake8_rate = sub_lines / r["wall"]
                t.result("flake8-async (subset, -j2)", r, note=f"{flake8_rate:,.0f} lines/s; {note}")
                t.add("flake8-async, extrapolated to the corpus", n_lines / flake8_rate, note="extrapolated by lines")
            else:
                print("  flake8 not installed: `pip install flake8 flake8-async` for that row")

        # ---------------------------------------------------------------- candidate check
        if args.check_candidates:
            _check_candidates(t, targets, out_json, rel, root, work)
        if args.check_tree_tier:
            _check_candidates(t, targets, out_json, rel, root, work, tree_only=True)

        # ---------------------------------------------------------------- ratios and targets
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
        print("ratios (same run):")
        if fixit_rate:
            ours = n_lines / cold2
            targets.append(("cold throughput >= 10x Fixit (extrapolated)", ours >= 10 * fixit_rate,
                            f"{ours / fixit_rate:.1f}x"))
        if flake8_rate:
            print(f"  cold throughput vs flake8-async: {n_lines / cold2 / flake8_rate:.1f}x")
        cpu2, ruff_cpu = med["cold2"]["cpu"], med["ruff"]["cpu"]
        targets.append(("cold within 10x of ruff --no-cache (wall)", cold2 <= 10 * ruff_cold,
                        f"{cold2 / ruff_cold:.1f}x wall ({cold2:.1f} s / {ruff_cold:.2f} s); "
                        f"{cpu2 / ruff_cpu:.1f}x CPU ({cpu2:.1f} s / {ruff_cpu:.2f} s)"))
        targets.append(("warm within 1.5x of ruff cached", warm <= 1.5 * ruff_cached,
                        f"{warm / ruff_cached:.1f}x ({warm:.2f} s / {ruff_cached:.2f} s)"))
        targets.append(("one file changed < 1 s", one < 1.0, f"{one:.2f} s"))
        targets.append(("-j2 vs -j1 >= 1.7x", cold1 / cold2 >= 1.7, f"{cold1 / cold2:.2f}x"))
        targets.append(("pre-commit 20 files < 1 s", pre < 1.0, f"{pre:.2f} s"))
        targets.append(("peak memory independent of corpus size (full <= 1.25x half)",
                        peak_full <= 1.25 * peak_half, f"{peak_full:.0f} MB full, {peak_half:.0f} MB half"))
        if args.lsp:
            targets.extend(_lsp_rows(t, args, work))
        _print_targets(targets)
        if args.json:
            Path(args.json).write_text(json.dumps({"rows": t.rows, "targets": [
                {"name": n, "ok": ok, "value": v} for n, ok, v in targets]}, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def corpus(name: str) -> tuple[Path, list[Path]]:
    """(root, its .py files, sorted) of the corpus called ``name``."""
    if name == "reference":
        return SRC, build_corpus.files()
    import importlib.util

    found = [importlib.util.find_spec(pkg) for pkg in ("ray", "torch")]
    dirs = [Path(spec.origin).parent for spec in found if spec is not None and spec.origin]
    if len(dirs) != 2 or dirs[0].parent != dirs[1].parent:
        raise SystemExit("--corpus ray-torch needs ray and torch installed (pip install -e '.[test]')")
    root = dirs[0].parent
    return root, sorted(p for d in dirs for p in d.rglob("*.py") if "__pycache__" not in p.parts)


def _warm_only(repeat: int, rel: list[str], root: Path, ruff_cache: Path, cache: Path,
               extra: tuple[str, ...] = (), others: dict[str, Path] | None = None, name: str = "warm") -> None:
    """ruff cached and shutdown-lint warm, alternating; the ratio of the medians (wall and CPU).
    ``others``: name -> another shutdown-lint executable, run in the same rounds after ours, each
    with its own cache folder (``cache`` + its name)."""
    tools = {name: (OURS, cache), **{n: (exe, Path(f"{cache}-{n}")) for n, exe in (others or {}).items()}}
    run(ruff("--cache-dir", str(ruff_cache), *extra, *rel), cwd=root)  # fill ruff's cache
    for exe, folder in tools.values():
        run(shutdown_lint("--cache-dir", str(folder), "-j", "2", *extra, *rel, exe=exe), cwd=root)  # fill ours (cold)
        run(shutdown_lint("--cache-dir", str(folder), "-j", "2", *extra, *rel, exe=exe), cwd=root)  # once warm, untimed
    ruffs: list[dict] = []
    ours: dict[str, list[dict]] = {n: [] for n in tools}
    for k in range(repeat):
        ruffs.append(run(ruff("--cache-dir", str(ruff_cache), *extra, *rel), cwd=root))
        for n, (exe, folder) in tools.items():
            ours[n].append(run(shutdown_lint("--cache-dir", str(folder), "-j", "2", *extra, *rel, exe=exe), cwd=root))
        print(f"  round {k + 1}/{repeat}: ruff cached {ruffs[-1]['wall']:.3f} s, " + ", ".join(
            f"{n} {v[-1]['wall']:.3f} s ({v[-1]['wall'] / ruffs[-1]['wall']:.2f}x)" for n, v in ours.items())
            + f", load {os.getloadavg()[0]:.1f}", flush=True)
    r, rc = statistics.median(x["wall"] for x in ruffs), statistics.median(x["cpu"] for x in ruffs)
    for n, v in ours.items():
        o, oc = statistics.median(x["wall"] for x in v), statistics.median(x["cpu"] for x in v)
        print(f"medians of {repeat}: ruff cached {r:.3f} s ({rc:.3f} CPU-s), shutdown-lint warm, {n} install "
              f"({tools[n][0]}): {o:.3f} s ({oc:.3f} CPU-s); warm / ruff cached {o / r:.2f}x wall, {oc / rc:.2f}x CPU "
              f"(target <= 1.5x: {'PASS' if o <= 1.5 * r else 'MISS'})", flush=True)


def _starts(repeat: int, pythons: dict[str, Path], cwd: Path) -> None:
    """The bare start (``-c pass``) of each interpreter, interleaved: what an install's ``site``
    costs every run (the editable install's import hook)."""
    got: dict[str, list[dict]] = {n: [] for n in pythons}
    for _ in range(max(repeat, 5)):
        for n, exe in pythons.items():
            got[n].append(run([str(exe), "-c", "pass"], cwd=cwd))
    print("interpreter start (-c pass), medians: " + ", ".join(
        f"{n} {statistics.median(x['wall'] for x in v) * 1000:.1f} ms "
        f"({statistics.median(x['cpu'] for x in v) * 1000:.1f} CPU-ms)" for n, v in got.items()), flush=True)


def install_wheel(work: Path) -> Path:
    """shutdown-lint as ``pip install`` gives it: this working tree's wheel (built from a copy of it,
    so that no stale ``build/`` folder of the checkout goes into it) installed into a venv of the
    base interpreter, byte-compiled; its dependencies come from this environment's site-packages
    through a path line in a ``.pth`` file (that folder's own ``.pth`` files, the editable
    install's import hooks, are not run). Returns the venv's bin folder. Asserts that the wheel's
    interpreter imports nothing from the checkout."""
    import sysconfig

    checkout = HERE.parent
    src = work / "wheel-src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copyfile(checkout / name, src / name)
    skip = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("shutdown_lint", "rules"):
        shutil.copytree(checkout / name, src / name, ignore=skip)
    dist = work / "wheel-dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
                            str(dist), str(src)], cwd=work, capture_output=True, text=True)  # quiet: setuptools' warnings
    if built.returncode != 0:
        raise SystemExit(f"pip wheel failed:\n{built.stdout[-2000:]}{built.stderr[-2000:]}")
    wheel = next(dist.glob("shutdown_lint-*.whl"))
    venv = work / "wheel-venv"
    base = getattr(sys, "_base_executable", None) or sys.executable
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True, cwd=work)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True, cwd=work).stdout.strip())
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
                    str(wheel)], check=True, cwd=work, stdout=subprocess.DEVNULL)
    subprocess.run([str(python), "-m", "compileall", "-q", str(site / "shutdown_lint")], check=True, cwd=work,
                   stdout=subprocess.DEVNULL, env=_ENV)
    # what a warm run imports (the cli, every rule, the cache and the index): all from the venv
    probe = ("import sys\nfrom shutdown_lint import cli, registry, cache\nfrom shutdown_lint.index import store\n"
             "registry.all_rules()\n"
             "print('\\n'.join(getattr(m, '__file__', None) or '' for m in list(sys.modules.values())))")
    files = subprocess.run([str(python), "-c", probe], check=True, capture_output=True, text=True, cwd=work,
                           env=_ENV).stdout.split()
    from_checkout = [f for f in files if Path(f).resolve().is_relative_to(checkout.resolve())]
    ours = [f for f in files if "shutdown_lint" in Path(f).parts]
    if from_checkout or not ours or not all(Path(f).resolve().is_relative_to(site.resolve()) for f in ours):
        raise SystemExit(f"the wheel's venv imports from the checkout: {(from_checkout or ours)[:5]}")
    return venv / "bin"


def _lsp_rows(t: Table, args, work: Path) -> list[tuple[str, bool, str]]:
    """The editor rows: open / edit latency of ``shutdown-lint server`` through a real LSP
    client (``lsp_latency.measure``), and of ``ruff server`` with the same client, for scale."""
    import lsp_latency

    rounds = max(args.repeat, 1)
    if args.lsp_project is not None:
        project, file = args.lsp_project.resolve(), (args.lsp_file or Path("missing")).resolve()
        if not file.is_file():
            raise SystemExit("--lsp-project needs --lsp-file (a file inside it)")
    else:
        if not SRC.is_dir():
            raise SystemExit("the editor rows' default project is the reference corpus's ray package: "
                             "run `python bench/build_corpus.py` or give --lsp-project and --lsp-file")
        # a copy: bench/corpus/ is excluded by this repository's own configuration
        project = work / "lsp-project"
        shutil.copytree(SRC / "ray", project, ignore=shutil.ignore_patterns("__pycache__"))
        file = project / (args.lsp_file or Path("ray/serve/batching.py"))
    print(f"editor: {file.relative_to(project)} in {project} ({rounds} rounds)", flush=True)
    ours = lsp_latency.measure(project, file, rounds, 2.0, [str(OURS), "server"], at_start=0)
    ms = lambda x: f"{x * 1000:.0f} ms"  # noqa: E731
    note = f"{ours['lines']} lines, {ours['findings']} findings; median of {rounds}"
    t.add("shutdown-lint server: first diagnostics after didOpen", ours["open_median"],
          cpu=ours["open_cpu_median"], note=note)
    t.add("shutdown-lint server: diagnostics after an edit", ours["edit_median"], cpu=ours["edit_cpu_median"],
          note=note)
    ruff_note = ""
    try:
        peer = lsp_latency.measure(project, file, rounds, 2.0, [str(BIN / "ruff"), "server"], at_start=0,
                                   cache_dirs=(".ruff_cache",))
    except (OSError, RuntimeError, TimeoutError) as e:
        print(f"  ruff server: did not run here ({type(e).__name__}: {e}); the targets stand alone")
    else:
        t.add("ruff server (other rules): after didOpen", peer["open_median"], cpu=peer["open_cpu_median"],
              note=f"median of {rounds}")
        t.add("ruff server (other rules): after an edit", peer["edit_median"], cpu=peer["edit_cpu_median"],
              note=f"median of {rounds}")
        ruff_note = f"; ruff server {ms(peer['open_median'])} / {ms(peer['edit_median'])}"
    return [("editor: first diagnostics <= 0.3 s after opening a 1,000-line file", ours["open_median"] <= 0.3,
             f"{ms(ours['open_median'])} (CPU {ms(ours['open_cpu_median'])}){ruff_note}"),
            ("editor: diagnostics <= 0.15 s after an edit", ours["edit_median"] <= 0.15,
             f"{ms(ours['edit_median'])} (CPU {ms(ours['edit_cpu_median'])})")]


def _print_targets(targets: list[tuple[str, bool, str]]) -> None:
    width = max(len(n) for n, _, _ in targets)
    for name, ok, value in targets:
        print(f"  {'PASS' if ok else 'MISS'}  {name:<{width}}  {value}")


def _median(results: list[dict]) -> dict:
    """The round whose wall time is the median (its CPU and memory come with it)."""
    ordered = sorted(results, key=lambda r: r["wall"])
    mid = ordered[len(ordered) // 2]
    return dict(mid, wall=statistics.median(r["wall"] for r in results),
                cpu=statistics.median(r["cpu"] for r in results))


def _check_candidates(t: Table, targets: list, out_json: Path, rel: list[str], root: Path, work: Path,
                      tree_only: bool = False) -> None:
    """Lint the corpus again with the candidate tiers off (only tier 2 with ``tree_only``);
    every finding must match."""
    if not out_json.exists():  # the tiers-on reference, json like the run without them
        run(shutdown_lint("--no-cache", "-j", "2", "--output-format", "json", *rel), cwd=root, out=str(out_json))
    off_json = work / ("shd-notree.json" if tree_only else "shd-nocand.json")
    env = dict(os.environ, **({"SHUTDOWN_LINT_TREE_TIER": "0"} if tree_only else {"SHUTDOWN_LINT_CANDIDATES": "0"}))
    r = run(shutdown_lint("--no-cache", "-j", "2", "--output-format", "json", *rel), cwd=root, env=env,
            out=str(off_json))
    what = "tier 2 (ast)" if tree_only else "both candidate tiers"
    t.result(f"shutdown-lint cold -j2, {what} OFF", r)
    on, off = _findings(out_json), _findings(off_json)
    lost = sorted(set(off) - set(on))
    extra = sorted(set(on) - set(off))
    files_lost = sorted({k[0] for k in lost})
    print(f"  candidate check ({what} off): {len(off)} findings without, {len(on)} with; "
          f"files where the tiers drop a finding: {len(files_lost)}")
    for f in files_lost[:20]:
        print(f"    LOST in {f}: {[k for k in lost if k[0] == f][:3]}")
    if extra:
        print(f"    (findings only with the stage: {len(extra)}; should be 0)")
    targets.append((f"candidate tiers drop no finding on the corpus ({what} off vs on)", not lost and not extra,
                    f"{len(files_lost)} files differ; {len(on)} / {len(off)} findings"))


def _findings(path: Path) -> list[tuple]:
    data = json.loads(path.read_text() or "[]")
    items = data if isinstance(data, list) else data.get("diagnostics", data.get("results", []))
    out = []
    for d in items:
        out.append((d.get("path") or d.get("filename"), d.get("line") or d.get("location", {}).get("row"),
                    d.get("column") or d.get("location", {}).get("column"), d.get("code")))
    return out


if __name__ == "__main__":
    main()
