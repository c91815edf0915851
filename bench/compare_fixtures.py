"""SHD301 + SHD102/SHD106, ruff's ASYNC rules and flake8-async, on the peers' own test fixtures.

    python bench/compare_fixtures.py --flake8-async DIR --ruff DIR [--markdown] [--missed]

DIR is a checkout (or an extracted ``git archive``) of python-trio/flake8-async, resp.
astral-sh/ruff; nothing of theirs is vendored here. Either option may be left out.

- flake8-async: ``tests/eval_files/async{210,211,212,22x,23x,232,240,250,251,300}.py``
  (the blocking-call and task fixtures, trio spelling; the ``*_asyncio`` twins repeat
  them). An expected line is one carrying a ``# ASYNCnnn: ...`` marker.
- ruff: ``crates/ruff_linter/resources/test/fixtures/flake8_async/ASYNC2*.py``; the
  expected lines are those of ruff's own snapshots
  (``crates/ruff_linter/src/rules/flake8_async/snapshots/*ASYNC2*.snap``).

Fixtures are made runnable for a tool that resolves names through imports: each file is
copied to a scratch folder, and ``import M`` is appended at its end for every module the
file uses as ``M.x`` without importing it (appended, so no line moves). The same copies
go to every tool. Printed per check (the ASYNC code the fixture expects) and tool: the
expected lines reported; ``--missed`` lists SHD's misses.

Tools: ``shutdown-lint --isolated --no-cache --select SHD301,SHD102,SHD106``;
``ruff check --isolated --no-cache --preview --select ASYNC``; ``flake8-async
--enable=ASYNC`` (standalone). A tool not installed is shown as such (``pip install -e
.[bench]`` installs both peers).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_blocking import ROOT, _tool  # noqa: E402  (one way to find a peer tool)

F8_FILES = ("async210", "async211", "async212", "async22x", "async23x", "async232", "async240", "async250",
            "async251", "async300")
F8_DIR = Path("tests/eval_files")
RUFF_FIXTURES = Path("crates/ruff_linter/resources/test/fixtures/flake8_async")
RUFF_SNAPSHOTS = Path("crates/ruff_linter/src/rules/flake8_async/snapshots")
F8_MARK = re.compile(r"# (ASYNC\d{3})(?:_\w+)?:")
SNAP_NAME = re.compile(r"__(ASYNC\d{3})_(\S+\.py)\.snap$")
SNAP_LOC = re.compile(r"^\s*(?:-->\s*)?(\S+\.py):(\d+):\d+")
#: modules a fixture may use without importing them
MODULES = ("asyncio", "anyio", "trio", "os", "io", "subprocess", "requests", "httpx", "httpx2", "urllib", "urllib3",
           "time", "pathlib", "typing", "http")
#: names a fixture may use bare without importing them, and the import that binds each
BARE = {"Optional": "from typing import Optional", "urlopen": "from urllib.request import urlopen",
        "request": "from urllib import request"}
SHD = "SHD301,SHD102,SHD106"
#: Expected lines SHD leaves out on purpose (SHD301's page, "Compared with ruff and
#: flake8-async"): (check, regex on the line's code) -> why. Counted apart.
DELIBERATE = {
    ("ASYNC212", r"\bclient\.close\(\)"): "an HTTP client's close() releases its sockets, it waits on no peer",
    ("ASYNC232", r"\bf\.(anything|aoeu\w*)\(\)"): "only a file object's I/O methods block, not any method",
    ("ASYNC240", r"\b(normpath|relpath|abspath|_path_normpath|_joinrealpath)\("): "string functions: no I/O",
    ("ASYNC240", r"^await "): "an awaited call is an asynchronous one",
    ("ASYNC212", r"^glob_client\.send"): "the global is rebound later in the module: the function sees that",
    ("ASYNC300", r"^with asyncio\.create_task|for i in range\(10\) if asyncio\.create_task"):
        "the task is never made (a generator nobody iterates) or the line raises (a Task is no context manager)",
}


def add_imports(text: str) -> str:
    """``text`` with ``import M`` appended for each module of MODULES it uses but never imports."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    imported, used, bare = set(), set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in BARE:
            bare.add(node.id)
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in getattr(node, "targets", [getattr(node, "target", None)]):
                if isinstance(target, ast.Name):
                    imported.add(target.id)
        if isinstance(node, ast.Import):
            imported |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            used.add(node.value.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            imported |= {a.arg for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs)}
    missing = [m for m in MODULES if m in used and m not in imported]
    names = [b for b in BARE if b in bare and b not in imported]
    if not missing and not names:
        return text
    extra = "".join(f"import {m}{'.request' if m == 'urllib' else ''}\n" for m in missing)
    extra += "".join(f"{BARE[b]}\n" for b in names)
    return text.rstrip("\n") + "\n" + extra


def flake8_async_expected(checkout: Path) -> dict[str, dict[int, str]]:
    out = {}
    for stem in F8_FILES:
        path = checkout / F8_DIR / f"{stem}.py"
        if not path.exists():
            continue
        lines = {}
        for i, line in enumerate(path.read_text().splitlines(), 1):
            m = F8_MARK.search(line)
            if m:
                lines[i] = m.group(1)
        out[path.name] = lines
    return out


def ruff_expected(checkout: Path) -> dict[str, dict[int, str]]:
    out: dict[str, dict[int, str]] = defaultdict(dict)
    for snap in sorted((checkout / RUFF_SNAPSHOTS).glob("*ASYNC2*.snap")):
        m = SNAP_NAME.search(snap.name)
        if not m:
            continue
        code, fixture = m.groups()
        for line in snap.read_text().splitlines():
            loc = SNAP_LOC.match(line)
            if loc and loc.group(1) == fixture:
                out[fixture].setdefault(int(loc.group(2)), code)
    return dict(out)


def _copy(checkout: Path, sub: Path, names, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        src = checkout / sub / name
        if src.exists():
            (dest / name).write_text(add_imports(src.read_text()))


def run_shd(folder: Path, select: str = SHD) -> dict[str, set[int]]:
    """Lines each file of ``folder`` gets a finding on, by the rules in ``select``."""
    done = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", select,
                           "--output-format", "json", "--exit-zero", str(folder)],
                          capture_output=True, text=True, timeout=600, cwd=str(ROOT))
    found: dict[str, set[int]] = defaultdict(set)
    for d in json.loads(done.stdout or "[]"):
        found[Path(d["path"]).name].add(d["line"])
    return found


def run_ruff(folder: Path) -> dict[str, set[int]] | None:
    cmd = _tool("ruff", "ruff")
    if cmd is None:
        return None
    done = subprocess.run([*cmd, "check", "--isolated", "--no-cache", "--preview", "--select", "ASYNC",
                           "--output-format", "json", "--exit-zero", str(folder)],
                          capture_output=True, text=True, timeout=600)
    found: dict[str, set[int]] = defaultdict(set)
    for d in json.loads(done.stdout or "[]"):
        found[Path(d["filename"]).name].add(d["location"]["row"])
    return found


def run_flake8_async(folder: Path) -> dict[str, set[int]] | None:
    exe = shutil.which("flake8-async") or shutil.which("flake8-async", path=str(Path(sys.executable).parent))
    if exe is None:
        return None
    found: dict[str, set[int]] = defaultdict(set)
    for path in sorted(folder.glob("*.py")):
        done = subprocess.run([exe, "--enable=ASYNC", str(path)], capture_output=True, text=True, timeout=600)
        for line in done.stdout.splitlines():
            m = re.match(r"(.+?\.py):(\d+):\d+:? ASYNC", line)
            if m:
                found[Path(m.group(1)).name].add(int(m.group(2)))
    return found


TOOLS = {"SHD": run_shd, "ruff": run_ruff, "flake8-async": run_flake8_async}


def compare(expected: dict[str, dict[int, str]], folder: Path) -> dict:
    """{check: {"lines": n, tool: caught or None}} and the lines SHD missed."""
    results = {name: run(folder) for name, run in TOOLS.items()}
    table: dict[str, dict] = defaultdict(lambda: {"lines": 0, **{t: 0 for t in TOOLS}})
    missed, deliberate = [], []
    for fixture, lines in sorted(expected.items()):
        text = (folder / fixture).read_text().splitlines()
        for line, code in sorted(lines.items()):
            src = text[line - 1].strip()
            why = next((w for (c, rx), w in DELIBERATE.items() if c == code and re.search(rx, src)), None)
            if why is not None:
                deliberate.append((fixture, line, code, why, line in results["SHD"].get(fixture, set())))
            row = table[code]
            row["lines"] += 1
            for tool, found in results.items():
                if found is None:
                    row[tool] = None
                elif line in found.get(fixture, set()) and row[tool] is not None:
                    row[tool] += 1
            if line not in results["SHD"].get(fixture, set()):
                missed.append((fixture, line, code))
    return {"table": dict(sorted(table.items())), "missed": missed, "deliberate": deliberate}


def _print(title: str, result: dict, markdown: bool, folder: Path, show_missed: bool) -> None:
    table = result["table"]
    total = {"lines": sum(r["lines"] for r in table.values())}
    for t in TOOLS:
        total[t] = None if any(r[t] is None for r in table.values()) else sum(r[t] for r in table.values())

    def cell(n, of):
        return "not installed" if n is None else f"{n}/{of} ({100 * n / of:.0f}%)" if of else "0/0"

    print(f"\n{title}")
    if markdown:
        print("| check | lines | " + " | ".join(TOOLS) + " |")
        print("| --- | --- | " + " | ".join("---" for _ in TOOLS) + " |")
        for code, r in [*table.items(), ("all", total)]:
            print(f"| {code} | {r['lines']} | " + " | ".join(cell(r[t], r["lines"]) for t in TOOLS) + " |")
    else:
        for code, r in [*table.items(), ("all", total)]:
            print(f"  {code:9} {r['lines']:4} lines   " + "   ".join(f"{t} {cell(r[t], r['lines'])}" for t in TOOLS))
    deliberate = result["deliberate"]
    left_out = {(f, line) for f, line, _, _, caught in deliberate if not caught}
    outside = total["lines"] - len(left_out)
    caught = total["SHD"] - sum(1 for f, line, _, _, c in deliberate if c and (f, line) in left_out)
    print(f"  SHD outside the {len(left_out)} deliberate differences: {caught}/{outside} "
          f"({100 * caught / outside if outside else 0:.1f}%)")
    if show_missed and deliberate:
        print(f"  deliberate ({len(left_out)} not reported):")
        for fixture, line, code, why, got in deliberate:
            print(f"    {fixture}:{line} [{code}] {'reported anyway' if got else why}")
    missed = [m for m in result["missed"] if (m[0], m[1]) not in left_out]
    if show_missed and missed:
        print(f"  SHD misses outside them ({len(missed)}):")
        for fixture, line, code in missed:
            text = (folder / fixture).read_text().splitlines()[line - 1].strip()
            print(f"    {fixture}:{line} [{code}] {text[:110]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--flake8-async", type=Path, metavar="DIR", help="checkout of python-trio/flake8-async")
    ap.add_argument("--ruff", type=Path, metavar="DIR", help="checkout of astral-sh/ruff")
    ap.add_argument("--markdown", action="store_true", help="print markdown tables")
    ap.add_argument("--missed", action="store_true", help="list the expected lines SHD does not report")
    args = ap.parse_args(argv)
    if args.flake8_async is None and args.ruff is None:
        ap.error("give --flake8-async DIR and/or --ruff DIR")
    with tempfile.TemporaryDirectory(prefix="shd-fixtures-") as tmp:
        if args.flake8_async is not None:
            expected = flake8_async_expected(args.flake8_async)
            if not expected:
                print(f"no fixtures under {args.flake8_async / F8_DIR}", file=sys.stderr)
                return 2
            folder = Path(tmp) / "flake8_async"
            _copy(args.flake8_async, F8_DIR, expected, folder)
            _print("flake8-async's fixtures (blocking calls, tasks)", compare(expected, folder), args.markdown,
                   folder, args.missed)
        if args.ruff is not None:
            expected = ruff_expected(args.ruff)
            if not expected:
                print(f"no snapshots under {args.ruff / RUFF_SNAPSHOTS}", file=sys.stderr)
                return 2
            folder = Path(tmp) / "ruff"
            _copy(args.ruff, RUFF_FIXTURES, expected, folder)
            _print("ruff's fixtures (ASYNC2xx, lines of ruff's snapshots)", compare(expected, folder), args.markdown,
                   folder, args.missed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
