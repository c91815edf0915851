"""``--statistics``: findings counted by rule, then (text formats) how the files were checked:
how many held nothing any selected rule looks for (decided from their text, or from a quick
parse: not syntax-checked), how many were analysed in full (and how many of those in syntax newer
than the running Python), and how many could not be analysed. The last line is the summary."""

from __future__ import annotations

import json
from collections import Counter
from typing import IO

from . import Report, summary_line


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
    if report.stages:
        out.write(stages_line(report.stages) + "\n")
    if not report.quiet:
        out.write(summary_line(report) + "\n")


def stages_line(stages: dict[str, int]) -> str:
    """``Checked 12 files: 9 hold nothing the selected rules look for, 2 analysed in full, ...``"""
    import sys

    from . import plural

    st = stages.get
    skipped = st("text", 0) + st("tree", 0)
    full = st("libcst", 0) + st("newer-syntax", 0) + st("ast", 0)
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    text = (f"Checked {plural(sum(stages.values()), 'file')}: {skipped} held nothing the selected rules look for "
            f"(not syntax-checked), {full} analysed in full")
    if st("newer-syntax"):
        text += f" ({st('newer-syntax')} of them in syntax newer than Python {here})"
    text += f", {st('error', 0)} could not be analysed"
    if st("unknown"):
        text += f", {st('unknown')} from an older cache that did not record how"
    return text + "."
