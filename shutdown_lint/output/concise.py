"""``path:line:col: CODE [*] message``, one finding a line."""

from __future__ import annotations

from . import Report, text_footer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO


def fix_marker(d, report: Report) -> str:
    if d.fix is None:
        return ""
    if d.fix.get("applicability") == "safe" or report.unsafe_fixes:
        return "[*] "
    return ""


def render(report: Report, out: IO[str]) -> None:
    for d in report.diagnostics:
        out.write(f"{d.path}:{d.line}:{d.column}: {d.code} {fix_marker(d, report)}{d.message}\n")
    if report.show_fixes:
        for path, count in report.fixed_files:
            out.write(f"fixed {count} in {path}\n")
    for line in text_footer(report):
        out.write(line + "\n")
