"""A JSON array, one object per finding (1-based lines and columns)."""

from __future__ import annotations

import json
from typing import IO

from . import Report


def as_dict(d) -> dict:
    fix = None
    if d.fix is not None:
        fix = {"applicability": d.fix.get("applicability"), "message": d.fix.get("message", ""),
               "edits": d.fix.get("edits", [])}
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


def render(report: Report, out: IO[str]) -> None:
    json.dump([as_dict(d) for d in report.diagnostics], out, indent=2)
    out.write("\n")
