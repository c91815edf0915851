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
              "rules", "source_lines", "baselined", "quiet", "stages", "path_errors")

    def __init__(self, diagnostics: list[Diagnostic], errors: Optional[list[str]] = None, files: int = 0,
                 fixed: int = 0, fixed_files: Optional[list[tuple[str, int]]] = None, unsafe_fixes: bool = False,
                 fix_mode: bool = False, show_fixes: bool = False, rules: Optional[list[RuleInfo]] = None,
                 source_lines: Callable[[str], Optional[list[str]]] = lambda _p: None, baselined: int = 0,
                 quiet: bool = False, stages: Optional[dict[str, int]] = None,
                 path_errors: Optional[list[str]] = None) -> None:
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
        #: ``path: no such file or directory`` for paths given to lint that do not exist
        self.path_errors: list[str] = [] if path_errors is None else path_errors

    def failures(self) -> list[str]:
        """Everything that makes the run fail besides findings, as one-line texts: the paths
        that do not exist, then the files that could not be analysed. Every format shows them."""
        return [*self.path_errors, *self.errors]

    def fixable(self) -> int:
        return sum(1 for d in self.diagnostics if d.fix is not None)

    def applicable(self, unsafe: bool) -> int:
        return sum(1 for d in self.diagnostics if d.fix is not None
                   and (unsafe or d.fix.get("applicability") == "safe"))


def render(fmt: str, report: Report, out: IO[str]) -> None:
    module = importlib.import_module(f"{__name__}.{_MODULES[fmt]}")
    module.render(report, out)


#: the level of a finding in every format that has levels (SARIF, GitHub annotations) and in the
#: editor (the language server): a finding is a warning about code that may be right; a file that
#: could not be analysed, or a path that does not exist, is an error
FINDING_LEVEL = "warning"
ERROR_LEVEL = "error"


def plural(n: int, word: str, words: Optional[str] = None) -> str:
    """``1 finding``, ``2 findings``; ``words`` when the plural is not ``word + "s"``."""
    return f"{n} {word}" if n == 1 else f"{n} {words or word + 's'}"


def split_error(text: str) -> tuple[str, int, int, str]:
    """``path:line:col: message`` (or ``path: message``) -> (path, line, column, message); a
    position that is not there is 1, 1 (the start of the file)."""
    import re

    m = re.match(r"^(.*?):(\d+):(\d+): (.*)$", text, re.S) or re.match(r"^(.*?):(\d+): (.*)$", text, re.S)
    if m and len(m.groups()) == 4:
        return m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
    if m:
        return m.group(1), int(m.group(2)), 1, m.group(3)
    path, _, message = text.partition(": ")
    return path, 1, 1, message or text


def _failure_clauses(report: Report) -> list[str]:
    clauses = []
    if report.path_errors:
        n = len(report.path_errors)
        clauses.append(f"{plural(n, 'path')} {'does' if n == 1 else 'do'} not exist")
    if report.errors:
        clauses.append(f"{plural(len(report.errors), 'file')} could not be analysed")
    return clauses


def _hidden(report: Report) -> int:
    """Findings whose only fix is unsafe, when unsafe fixes are off."""
    return 0 if report.unsafe_fixes else report.fixable() - report.applicable(False)


def summary_line(report: Report) -> str:
    """The last line of a text report: what happened. ``All checks passed!`` only when nothing
    was found, nothing failed and nothing was fixed."""
    n = len(report.diagnostics)
    failures = _failure_clauses(report)
    if report.fixed:
        text = f"Found {plural(report.fixed + n, 'finding')} ({report.fixed} fixed, {n} remaining)"
    elif n:
        details = []
        fixable = report.applicable(report.unsafe_fixes)
        if fixable:
            details.append(f"{fixable} fixable")
        hidden = _hidden(report)
        if hidden:
            details.append(plural(hidden, "hidden unsafe fix", "hidden unsafe fixes"))
        text = f"Found {plural(n, 'finding')}" + (f" ({', '.join(details)})" if details else "")
    elif failures:
        text = "No findings"
    else:
        text = "All checks passed!"
    if failures:
        text += "; " + "; ".join(failures)
    text = text if text.endswith("!") else text + "."
    if report.baselined:
        text += f" {report.baselined} known in the baseline."
    return text


def fix_hint(report: Report) -> Optional[str]:
    """How to fix what remains, in ruff's words, or None: ``[*] N fixable with the `--fix`
    option`` and the hidden unsafe fixes; after ``--fix``, also what no fix covers."""
    if not report.diagnostics:
        return None
    safe = report.applicable(False)
    hidden = _hidden(report)
    offered = report.fixable() if report.unsafe_fixes else safe
    hidden_text = f"{plural(hidden, 'hidden fix', 'hidden fixes')} can be enabled with the `--unsafe-fixes` option"
    manual = len(report.diagnostics) - report.fixable()
    parts = []
    if offered:
        option = "`--fix --unsafe-fixes`" if report.unsafe_fixes and offered > safe else "`--fix`"
        parts.append(f"[*] {offered} fixable with the {option} option" + (f" ({hidden_text})." if hidden else "."))
    elif hidden:
        parts.append(f"No fixes available ({hidden_text}).")
    if report.fix_mode and manual:
        parts.append(f"{plural(manual, 'finding')} {'has' if manual == 1 else 'have'} no automatic fix: "
                     "`shutdown-lint rule CODE` says what to change.")
    return " ".join(parts) or None


def text_footer(report: Report) -> list[str]:
    """The lines a text format ends with: the fix hint, then the summary (the last line)."""
    if report.quiet:
        return []
    hint = fix_hint(report)
    return [hint, summary_line(report)] if hint else [summary_line(report)]
