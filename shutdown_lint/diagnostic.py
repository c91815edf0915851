"""Plain, serialisable results: what output formats, the cache and the baseline see.

Unlike ``rule.Finding`` (which holds libcst nodes), these cross process boundaries.
"""

from __future__ import annotations

from .record import Record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional


class Diagnostic(Record):
    FIELDS = ("code", "name", "message", "path", "line", "column", "end_line", "end_column", "fix", "line_text")

    def __init__(self, code: str, name: str, message: str, path: str, line: int, column: int, end_line: int,
                 end_column: int, fix: Optional[dict[str, Any]] = None, line_text: str = "") -> None:
        self.code = code
        self.name = name
        self.message = message
        self.path = path
        self.line = line  # 1-based
        self.column = column  # 1-based
        self.end_line = end_line
        self.end_column = end_column
        #: None, or {"applicability": "safe"|"unsafe", "message": str, "edits": [...]}
        self.fix = fix
        #: the source text of ``line`` (stripped), for output context and baseline matching
        self.line_text = line_text

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        return self.as_dict()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Diagnostic":
        return cls(**d)


class FileResult(Record):
    FIELDS = ("path", "diagnostics", "error", "warnings", "fixed", "diff", "cached", "parsed", "written", "deps",
              "stage")

    def __init__(self, path: str, diagnostics: Optional[list[Diagnostic]] = None, error: Optional[str] = None,
                 warnings: Optional[list[str]] = None, fixed: int = 0, diff: Optional[str] = None,
                 cached: bool = False, parsed: bool = False, written: bool = False, deps: Optional[dict] = None,
                 stage: str = "") -> None:
        self.path = path
        self.diagnostics: list[Diagnostic] = [] if diagnostics is None else diagnostics
        #: a one-line reason the file could not be analysed (``path:line:col: message``)
        self.error = error
        #: non-fatal notes (unknown suppression codes, skipped fixes)
        self.warnings: list[str] = [] if warnings is None else warnings
        #: number of fixes applied (fix mode)
        self.fixed = fixed
        #: unified diff of the fixes (``--diff``)
        self.diff = diff
        #: True when the content came from the cache
        self.cached = cached
        #: True when the pre-filter let the file through and it was parsed
        self.parsed = parsed
        #: True when fix mode wrote the file
        self.written = written
        #: other modules of the project whose summaries the findings may depend on (project
        #: index): abspath -> [mtime_ns, size, summary digest]; a change to one re-lints the file
        self.deps: dict = {} if deps is None else deps
        #: where the analysis stopped (``analyzer.STAGE_*``): "text"/"tree" (no rule can fire:
        #: not parsed), "libcst", "newer-syntax" (parsed by libcst only); "" when unknown
        self.stage = stage

    def to_dict(self) -> dict[str, Any]:
        return self.as_dict()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FileResult":
        d = dict(d)
        d["diagnostics"] = [Diagnostic.from_dict(x) for x in d.get("diagnostics", [])]
        return cls(**d)
