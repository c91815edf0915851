"""Plain, serialisable results: what output formats, the cache and the baseline see.

Unlike ``rule.Finding`` (which holds libcst nodes), these cross process boundaries.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional


@dataclass
class Diagnostic:
    code: str
    name: str
    message: str
    path: str
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int
    #: None, or {"applicability": "safe"|"unsafe", "message": str, "edits": [...]}
    fix: Optional[dict[str, Any]] = None
    #: the source text of ``line`` (stripped), for output context and baseline matching
    line_text: str = ""

    @property
    def fixable(self) -> bool:
        return self.fix is not None

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Diagnostic":
        return cls(**d)


@dataclass
class FileResult:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: a one-line reason the file could not be analysed (``path:line:col: message``)
    error: Optional[str] = None
    #: non-fatal notes (unknown suppression codes, skipped fixes)
    warnings: list[str] = field(default_factory=list)
    #: number of fixes applied (fix mode)
    fixed: int = 0
    #: unified diff of the fixes (``--diff``)
    diff: Optional[str] = None
    #: True when the content came from the cache
    cached: bool = False
    #: True when the pre-filter let the file through and it was parsed
    parsed: bool = False
    #: True when fix mode wrote the file
    written: bool = False
    #: other modules of the project whose summaries the findings may depend on (project
    #: index): abspath -> [mtime_ns, size, summary digest]; a change to one re-lints the file
    deps: dict = field(default_factory=dict)
    #: where the analysis stopped (``analyzer.STAGE_*``): "text"/"tree" (no rule can fire:
    #: not parsed), "libcst", "newer-syntax" (parsed by libcst only); "" when unknown
    stage: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "FileResult":
        d = dict(d)
        d["diagnostics"] = [Diagnostic.from_dict(x) for x in d.get("diagnostics", [])]
        return cls(**d)
