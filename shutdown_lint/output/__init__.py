"""Output formats. Each module has ``render(report, out)``; they are imported lazily so
that a run printing concise or JSON output never imports rich."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import IO, Callable, Optional

from ..config import RuleInfo
from ..diagnostic import Diagnostic

FORMATS = ("full", "concise", "json", "sarif", "github", "junit")
_MODULES = {"full": "full", "concise": "concise", "json": "json_", "sarif": "sarif", "github": "github",
            "junit": "junit"}


@dataclass
class Report:
    #: sorted by path, line, column
    diagnostics: list[Diagnostic]
    #: ``path:line:col: message`` for files that could not be analysed
    errors: list[str] = field(default_factory=list)
    files: int = 0
    #: fixes applied in this run
    fixed: int = 0
    #: (path, count) of files fixed, for --show-fixes
    fixed_files: list[tuple[str, int]] = field(default_factory=list)
    unsafe_fixes: bool = False
    fix_mode: bool = False
    show_fixes: bool = False
    rules: list[RuleInfo] = field(default_factory=list)
    #: path -> the file's lines (for source context); None when unavailable
    source_lines: Callable[[str], Optional[list[str]]] = lambda _p: None
    baselined: int = 0
    #: findings only: no summary, no hints
    quiet: bool = False
    #: files per analysis stage ("text", "tree", "libcst", "newer-syntax", "error"), for --statistics
    stages: dict[str, int] = field(default_factory=dict)

    def fixable(self) -> int:
        return sum(1 for d in self.diagnostics if d.fix is not None)

    def applicable(self, unsafe: bool) -> int:
        return sum(1 for d in self.diagnostics if d.fix is not None
                   and (unsafe or d.fix.get("applicability") == "safe"))


def render(fmt: str, report: Report, out: IO[str]) -> None:
    module = importlib.import_module(f"{__name__}.{_MODULES[fmt]}")
    module.render(report, out)


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_line(report: Report) -> str:
    n = len(report.diagnostics)
    if n == 0:
        text = "All checks passed!"
    else:
        text = f"Found {plural(n, 'finding')} ({report.fixable()} fixable)."
    if report.fixed:
        text = f"Fixed {plural(report.fixed, 'finding')}. " + text
    if report.baselined:
        text += f" {report.baselined} known in the baseline."
    return text


def fix_hint(report: Report) -> Optional[str]:
    if report.fix_mode or not report.diagnostics:
        return None
    safe = report.applicable(False)
    hidden = report.fixable() - safe
    parts = []
    if report.unsafe_fixes:
        if report.fixable():
            parts.append(f"[*] {report.fixable()} fixable with the `--fix` option.")
    else:
        if safe:
            parts.append(f"[*] {safe} fixable with the `--fix` option.")
        if hidden:
            parts.append(f"{hidden} hidden fixes can be enabled with the `--unsafe-fixes` option.")
    return " ".join(parts) or None
