"""``--statistics``: findings counted by rule."""

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
