"""Output formats. Each module has ``render(report, out)``; they are imported lazily so
that a run printing concise or JSON output never imports rich."""

from __future__ import annotations

import importlib

from ..record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO, Callable, Optional

    from ..config import RuleInfo
    from ..diagnostic import Diagnostic

FORMATS = ("full", "concise", "json", "sarif", "github", "junit")
_MODULES = {"full": "full", "concise": "concise", "json": "json_", "sarif": "sarif", "github": "github",
            "junit": "junit"}


class Report(Record):
    FIELDS = ("diagnostics", "errors", "files", "fixed", "fixed_files", "unsafe_fixes", "fix_mode", "show_fixes",
              "rules", "source_lines", "baselined", "quiet", "stages")

    def __init__(self, diagnostics: list[Diagnostic], errors: Optional[list[str]] = None, files: int = 0,
                 fixed: int = 0, fixed_files: Optional[list[tuple[str, int]]] = None, unsafe_fixes: bool = False,
                 fix_mode: bool = False, show_fixes: bool = False, rules: Optional[list[RuleInfo]] = None,
                 source_lines: Callable[[str], Optional[list[str]]] = lambda _p: None, baselined: int = 0,
                 quiet: bool = False, stages: Optional[dict[str, int]] = None) -> None:
        #: sorted by path, line, column
        self.diagnostics = diagnostics
        #: ``path:line:col: message`` for files that could not be analysed
        self.errors: list[str] = [] if errors is None else errors
        self.files = files
        #: fixes applied in this run
        self.fixed = fixed
        #: (path, count) of files fixed, for --show-fixes
        self.fixed_files: list[tuple[str, int]] = [] if fixed_files is None else fixed_files
        self.unsafe_fixes = unsafe_fixes
        self.fix_mode = fix_mode
        self.show_fixes = show_fixes
        self.rules: list[RuleInfo] = [] if rules is None else rules
        #: path -> the file's lines (for source context); None when unavailable
        self.source_lines = source_lines
        self.baselined = baselined
        #: findings only: no summary, no hints
        self.quiet = quiet
        #: files per analysis stage ("text", "tree", "libcst", "newer-syntax", "error"), for --statistics
        self.stages: dict[str, int] = {} if stages is None else stages

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
