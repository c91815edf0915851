"""What ruff's and flake8-async's ASYNC rules and SHD301 catch, per family of blocking call.

    python bench/compare_blocking.py [--markdown]

Runs the three tools over this repository's own fixtures, one file per family
(tests/data/blocking_families/*.py; nothing is vendored from the peers). In a fixture a
line ending in ``# blocking`` is a blocking call in a coroutine (``# blocking (callee)``:
the blocking call is in a same-module sync function the coroutine calls), a line ending
in ``# ok`` is a near miss that must not be flagged (async clients, thread runners,
``anyio.Path``, polls). Prints per family and tool: blocking lines caught (of which
through a callee) and near-miss lines flagged. A tool that is not installed is skipped.

ruff: ``ruff check --isolated --select ASYNC``; flake8-async: ``flake8 --isolated
--select ASYNC``; SHD301: ``shutdown-lint --isolated --select SHD301``.

The same three tools on the peers' own fixtures (from their checkouts): ``bench/compare_fixtures.py``,
which finds the tools with ``_tool`` below.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "blocking_families"
MARK = re.compile(r"# (blocking|ok)( \(callee\))?$")


def marks(path: Path) -> dict[int, tuple[str, bool]]:
    """line -> (``blocking``/``ok``, through a callee)."""
    out = {}
    for i, line in enumerate(path.read_text().splitlines(), 1):
        m = MARK.search(line.rstrip())
        if m:
            out[i] = (m.group(1), bool(m.group(2)))
    return out


def _tool(module: str, exe: str) -> list[str] | None:
    found = shutil.which(exe) or shutil.which(exe, path=str(Path(sys.executable).parent))
    if found:
        return [found]
    try:
        __import__(module)
    except ImportError:
        return None
    return [sys.executable, "-m", module]


def run_ruff(path: Path) -> set[int] | None:
    cmd = _tool("ruff", "ruff")
    if cmd is None:
        return None
    done = subprocess.run([*cmd, "check", "--isolated", "--no-cache", "--select", "ASYNC", "--output-format",
                           "json", "--exit-zero", str(path)], capture_output=True, text=True, timeout=120)
    return {d["location"]["row"] for d in json.loads(done.stdout or "[]")}


def run_flake8_async(path: Path) -> set[int] | None:
    cmd = _tool("flake8", "flake8")
    if cmd is None:
        return None
    done = subprocess.run([*cmd, "--isolated", "--select", "ASYNC", "--format", "%(row)d:%(code)s", str(path)],
                          capture_output=True, text=True, timeout=120)
    return {int(line.split(":")[0]) for line in done.stdout.splitlines() if line[:1].isdigit()}


def run_shd301(path: Path) -> set[int]:
    done = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD301",
                           "--output-format", "json", "--exit-zero", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    return {d["line"] for d in json.loads(done.stdout or "[]")}


TOOLS = {"ruff ASYNC": run_ruff, "flake8-async": run_flake8_async, "SHD301": run_shd301}


def compare() -> list[dict]:
    rows = []
    for path in sorted(DATA.glob("*.py")):
        m = marks(path)
        blocking = {line for line, (kind, _) in m.items() if kind == "blocking"}
        via_callee = {line for line, (kind, callee) in m.items() if kind == "blocking" and callee}
        ok = {line for line, (kind, _) in m.items() if kind == "ok"}
        row = {"family": path.stem, "blocking": len(blocking), "callee": len(via_callee), "near_misses": len(ok)}
        for name, run in TOOLS.items():
            found = run(path)
            row[name] = None if found is None else {
                "caught": len(found & blocking), "callee": len(found & via_callee), "false": len(found & ok)}
        rows.append(row)
    return rows


def _cell(r) -> str:
    if r is None:
        return "not installed"
    return f"{r['caught']} ({r['callee']} via callee), {r['false']} near misses flagged"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)
    rows = compare()
    if args.markdown:
        print("| family | blocking lines (via callee) | near misses | " + " | ".join(TOOLS) + " |")
        print("| --- | --- | --- | " + " | ".join("---" for _ in TOOLS) + " |")
        for row in rows:
            cells = [f"{row[t]['caught']}/{row['blocking']}, {row[t]['false']} false" if row[t] else "–"
                     for t in TOOLS]
            print(f"| `{row['family']}` | {row['blocking']} ({row['callee']}) | {row['near_misses']} | "
                  + " | ".join(cells) + " |")
        total = {t: sum(r[t]["caught"] for r in rows if r[t]) for t in TOOLS}
        false = {t: sum(r[t]["false"] for r in rows if r[t]) for t in TOOLS}
        nb = sum(r["blocking"] for r in rows)
        print(f"| all | {nb} ({sum(r['callee'] for r in rows)}) | {sum(r['near_misses'] for r in rows)} | "
              + " | ".join(f"{total[t]}/{nb}, {false[t]} false" for t in TOOLS) + " |")
        return 0
    for row in rows:
        print(f"{row['family']}: {row['blocking']} blocking lines ({row['callee']} via a callee), "
              f"{row['near_misses']} near misses")
        for t in TOOLS:
            print(f"  {t:13} {_cell(row[t])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
