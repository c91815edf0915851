"""A JSON array: one object per finding, then one per failure (a path that does not exist, a
file that could not be analysed). Positions are 1-based ``line`` / ``column`` everywhere: on the
object itself and in each fix edit's ``location`` / ``end_location``.

A failure has the same keys as a finding, with ``"code": null`` and ``"name": "error"`` (as
ruff reports a file it cannot read inside its array), at its position when the message has one,
else line 1, column 1."""

from __future__ import annotations

import json
from typing import IO

from . import Report, split_error


def _edit(e: dict) -> dict:
    """A fix edit with ``line``/``column`` positions (the engine keeps ruff's ``row``)."""
    def pos(p: dict) -> dict:
        return {"line": p.get("line", p.get("row")), "column": p.get("column")}

    return {"content": e.get("content"), "location": pos(e.get("location", {})),
            "end_location": pos(e.get("end_location", {}))}


def as_dict(d) -> dict:
    fix = None
    if d.fix is not None:
        fix = {"applicability": d.fix.get("applicability"), "message": d.fix.get("message", ""),
               "edits": [_edit(e) for e in d.fix.get("edits", [])]}
    return {
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "path": d.path,
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "fix": fix,
    }


def failure_dict(text: str) -> dict:
    path, line, column, message = split_error(text)
    return {"code": None, "name": "error", "message": message, "path": path, "line": line, "column": column,
            "end_line": line, "end_column": column, "fix": None}


def render(report: Report, out: IO[str]) -> None:
    items = [as_dict(d) for d in report.diagnostics] + [failure_dict(e) for e in report.failures()]
    json.dump(items, out, indent=2)
    out.write("\n")
