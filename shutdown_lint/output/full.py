"""The default terminal format (ruff-like): location, message, the source line with a
caret under the span, the fix hint, and a summary."""

from __future__ import annotations

from typing import IO

from . import Report, text_footer
from .concise import fix_marker


def _console(out: IO[str]):
    from rich.console import Console

    return Console(file=out, highlight=False, soft_wrap=True, emoji=False)


def render(report: Report, out: IO[str]) -> None:
    from rich.markup import escape

    console = _console(out)
    for d in report.diagnostics:
        console.print(f"[bold]{escape(d.path)}[/]:{d.line}:{d.column}: [bold red]{d.code}[/] "
                      f"{escape(fix_marker(d, report))}[bold]{escape(d.message)}[/]")
        lines = report.source_lines(d.path)
        text = lines[d.line - 1] if lines and 0 < d.line <= len(lines) else d.line_text
        text = text.rstrip("\r\n").expandtabs(1)  # one column per tab keeps the caret aligned
        gutter = " " * len(str(d.line))
        start = d.column - 1 if lines else 0
        end = d.end_column - 1 if d.end_line == d.line else len(text)
        width = max(1, end - start)
        console.print(f"[blue]{gutter} |[/]")
        console.print(f"[blue]{d.line} |[/] {escape(text)}")
        console.print(f"[blue]{gutter} |[/] {' ' * start}[bold red]{'^' * width} {d.code}[/]")
        if d.fix is not None:
            kind = "safe fix" if d.fix.get("applicability") == "safe" else "unsafe fix"
            message = d.fix.get("message") or "a fix is available"
            console.print(f"[blue]{gutter} =[/] [cyan]help[/]: {escape(message)} ({kind})")
        console.print()
    if report.show_fixes and report.fixed_files:
        console.print("[bold]Fixed:[/]")
        for path, count in report.fixed_files:
            console.print(f"  {escape(path)}: {count}")
    for line in text_footer(report):
        console.print(escape(line))
