"""SHD104 on flake8-async's ASYNC103/ASYNC104 fixtures, rewritten as coroutines.

    python bench/compare_cancel_fixtures.py --flake8-async DIR [--missed] [--extra] [--keep DIR]

DIR is a checkout (or an extracted ``git archive``) of python-trio/flake8-async; nothing of
theirs is vendored here. Read: ``tests/eval_files/async103.py`` and ``async104.py``
(``--extra`` adds ``async103_104_py311.py``, the ``except*`` shapes).

flake8-async checks trio/anyio code, where ``Cancelled`` is a ``BaseException``; asyncio's
``CancelledError`` is one too, so ``except BaseException:`` / bare ``except:`` catch it
alike. The fixtures are module-level ``try`` statements with ``...`` bodies; SHD104 looks
only at coroutines whose ``try`` body can be cancelled. The rewrite keeps every line
where it was:

- the last blank or comment line before the first statement (after a docstring) becomes
  ``async def _fixture():  <the comment>`` and every line after it is indented by four spaces, so the module-level code is the body of one coroutine;
- ``def f(`` becomes ``async def f(`` (same line), so the fixture's functions are
  coroutines too (``foo_yield`` becomes an async generator);
- a ``try:`` body whose first line is ``...`` awaits instead (``await asyncio.sleep(0)``);
  ``import asyncio`` is appended at the end.

An expected line is one that flake8-async's own test harness reads as an expected error
for ASYNC103/ASYNC104: a marker ``# ASYNC103...:``, ``# ASYNC104:`` or ``# error:`` (the
file's own code) in a trailing comment. SHD104 reports a line when one of its findings is
on it (the handler's ``except`` line, or the statement that leaves the handler).
Printed: per file and per code the expected lines reported, SHD104's findings on lines
flake8-async does not expect, and with ``--missed`` the lines missed; also the count that
credits an expected line whose innermost handler SHD104 reports (flake8-async reports a
handler with a lone ``return`` twice, ASYNC103 on the ``except`` and ASYNC104 on the
``return``; SHD104 reports the handler once and points at each exit only when the handler
has several ways out).
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from compare_fixtures import run_shd  # noqa: E402  (the one way to collect SHD lines from its JSON)

FILES = ("async103", "async104")
EXTRA = ("async103_104_py311",)
F8_DIR = Path("tests/eval_files")
#: flake8-async's harness: `(error|ASYNC...)(_.*)?:` in a line that is not a comment line
MARK = re.compile(r"(error|ASYNC...)(_.*)?:([^#]*)(?=#|$)")


def expected_lines(text: str, own: str) -> dict[int, str]:
    """Line -> ASYNC code flake8-async's harness expects there."""
    out: dict[int, str] = {}
    for lineno, raw in enumerate(text.split("\n"), start=1):
        line = raw.strip()
        if not line or line[0] == "#" or "#" not in line:
            continue
        for code, _alt, _args in MARK.findall(line):
            code = own if code == "error" else code
            if code in ("ASYNC103", "ASYNC104"):
                out[lineno] = code
    return out


def as_coroutine(text: str) -> str:
    """The fixture as the body of one coroutine, every line kept in place (see above)."""
    lines = text.split("\n")
    tree = ast.parse(text)
    body = tree.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the module docstring stays where it is
    first = body[0].lineno - 1  # 0-based index of the first statement
    # the header takes the last blank or comment line before it
    head = next(i for i in range(first - 1, -1, -1) if not lines[i].strip() or lines[i].lstrip().startswith("#"))
    out = lines[:head] + [f"async def _fixture():  {lines[head].strip()}".rstrip()]
    prev = ""
    for line in lines[head + 1:]:
        new = re.sub(r"^(\s*)def (\w+)\(", r"\1async def \2(", line)
        if new.strip() == "..." and prev.strip() == "try:":
            new = new.replace("...", "await asyncio.sleep(0)")
        out.append(("    " + new) if new.strip() else new)
        prev = line
    return "\n".join(out).rstrip("\n") + "\nimport asyncio\n"


def _handler_spans(text: str) -> list[tuple[int, int]]:
    """(first line, last line) of every ``except`` handler of the rewritten fixture."""
    return [(n.lineno, n.end_lineno) for n in ast.walk(ast.parse(text)) if isinstance(n, ast.ExceptHandler)]


def _innermost(spans: list[tuple[int, int]], line: int) -> int:
    """The first line of the innermost handler holding ``line`` (0: none)."""
    inside = [s for s in spans if s[0] < line <= s[1]]
    return max(inside)[0] if inside else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flake8-async", required=True, type=Path, help="checkout of python-trio/flake8-async")
    ap.add_argument("--missed", action="store_true", help="list the expected lines SHD104 does not report")
    ap.add_argument("--extra", action="store_true", help="also the except* fixture (async103_104_py311.py)")
    ap.add_argument("--keep", type=Path, help="write the rewritten fixtures here (else a temporary folder)")
    args = ap.parse_args(argv)
    names = FILES + (EXTRA if args.extra else ())
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        expected: dict[str, dict[int, str]] = {}
        for name in names:
            src = args.flake8_async / F8_DIR / f"{name}.py"
            if not src.is_file():
                print(f"missing: {src}", file=sys.stderr)
                return 2
            text = src.read_text()
            expected[f"{name}.py"] = expected_lines(text, "ASYNC" + name[5:8])
            (folder / f"{name}.py").write_text(as_coroutine(text))
        found = run_shd(folder, select="SHD104")
        total = hit = covered = 0
        per_code: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for fname, exp in expected.items():
            got = found.get(fname, set())
            ok = sorted(n for n in exp if n in got)
            missed = sorted(n for n in exp if n not in got)
            extra = sorted(n for n in got if n not in exp)
            for n, code in exp.items():
                per_code[code][0] += n in got
                per_code[code][1] += 1
            total += len(exp)
            hit += len(ok)
            spans = _handler_spans((folder / fname).read_text())
            by_handler = [n for n in missed if _innermost(spans, n) in got]
            covered += len(ok) + len(by_handler)
            print(f"{fname}: {len(ok)}/{len(exp)} expected lines reported; other findings: {extra or 'none'}")
            if by_handler:
                print(f"  not on the line but the handler holding it is reported: {by_handler}")
            if args.missed and missed:
                print(f"  missed: {', '.join(f'{n} ({exp[n]})' for n in missed)}")
        for code, (h, n) in sorted(per_code.items()):
            print(f"{code}: {h}/{n}")
        print(f"SHD104 total: {hit}/{total} lines ({100 * hit / max(total, 1):.0f}%); "
              f"{covered}/{total} ({100 * covered / max(total, 1):.0f}%) counting a line whose handler is reported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
