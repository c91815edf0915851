"""``--statistics``: findings counted by rule, then (text formats) where each file's
analysis stopped: ruled out by words, by the ``ast`` tier, linted with libcst (and how
many of those only libcst could parse: syntax newer than the running Python), errors."""

from __future__ import annotations

import json
from collections import Counter
from typing import IO

from . import Report


def counts(report: Report) -> list[dict]:
    by_code = Counter(d.code for d in report.diagnostics)
    fixable = Counter(d.code for d in report.diagnostics if d.fix is not None)
    names = {d.code: d.name for d in report.diagnostics}
    rows = [{"code": c, "name": names[c], "count": n, "fixable": fixable[c]} for c, n in by_code.items()]
    rows.sort(key=lambda r: (-r["count"], r["code"]))
    return rows


def render(report: Report, out: IO[str], fmt: str) -> None:
    rows = counts(report)
    if fmt == "json":
        json.dump(rows, out, indent=2)
        out.write("\n")
        return
    width = max([len(str(r["count"])) for r in rows] or [1])
    for r in rows:
        marker = "[*]" if r["fixable"] == r["count"] else ("[-]" if r["fixable"] else "   ")
        out.write(f"{r['count']:>{width}}  {r['code']}  {marker} {r['name']}\n")
    out.write(f"Found {sum(r['count'] for r in rows)} findings.\n" if rows else "All checks passed!\n")
    if report.stages:
        out.write(stages_line(report.stages) + "\n")


def stages_line(stages: dict[str, int]) -> str:
    """``Files: 12: 9 ruled out by words, 1 by the ast tier (...); 2 linted with libcst, ...``"""
    import sys

    st = stages.get
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    text = (f"Files: {sum(stages.values())}: {st('text', 0)} ruled out by words, {st('tree', 0)} by the ast tier "
            f"(neither parsed nor syntax-checked); {st('libcst', 0) + st('newer-syntax', 0)} linted with libcst, "
            f"{st('newer-syntax', 0)} of them in syntax newer than Python {here} parses; "
            f"{st('error', 0)} could not be analysed")
    if st("unknown"):
        text += f"; {st('unknown')} from a cache written before stages were recorded"
    return text + "."
