"""What a rule's detection on Python's ``ast`` declares and reports (session 9, issue 30).

A ported rule keeps its libcst code (which builds the fix edits) and adds a check on the
``ast`` tree the candidate tier already parsed::

    class _Ast(AstCheck):
        def visit_Call(self, node: ast.Call) -> None:
            if self.facts.call_name(node) == "sys.exit":
                self.report(node, "message", fix=FixPlan(Applicability.SAFE, "use hard_exit"))

    class SysExitInTask(Rule):
        ...
        ast_check = _Ast

The engine (``ast_engine.engine``) builds one ``AstFacts`` per file and walks the module
once for all the file's checks (``walk.py``). A finding says whether there is a fix, its
applicability and its message (``FixPlan``), never its edits: a run that wants edits
(json, sarif, ``--fix``, ``--diff``, the language server's code actions) takes the libcst path.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

from ..rule import Applicability

if TYPE_CHECKING:
    from ..rule import Rule
    from ..settings import Settings
    from .facts import AstFacts


@dataclass(frozen=True)
class FixPlan:
    """What ``--fix`` would do, without the edits: the output of a run without edits needs
    only whether there is a fix, its applicability and its message."""

    applicability: Applicability
    message: str = ""

    @classmethod
    def safe(cls, message: str = "") -> "FixPlan":
        return cls(Applicability.SAFE, message)

    @classmethod
    def unsafe(cls, message: str = "") -> "FixPlan":
        return cls(Applicability.UNSAFE, message)


@dataclass
class AstFinding:
    """A check's report while the file's ``ast`` is alive. ``span``: (line, column, end line,
    end column) in libcst's convention (1-based lines, 0-based *character* columns) for an
    anchor with no node of its own; else the node's own span (``ast``'s byte columns, converted
    when the diagnostic is made)."""

    check: "AstCheck"
    node: Optional[ast.AST]
    message: str
    fix: Optional[FixPlan] = None
    span: Optional[tuple[int, int, int, int]] = None

    @property
    def code(self) -> str:
        return self.check.rule.code


class AstCheck:
    """Base class of a rule's detection on ``ast``: one instance per file per rule."""

    def __init__(self, rule: "type[Rule]", facts: "AstFacts", settings: "Settings", findings: list) -> None:
        self.rule = rule
        self.facts = facts
        self.settings = settings
        self._findings = findings
        self.config: dict[str, Any] = {key: settings.rule_option(rule, key) for key in rule.options}

    def report(self, node: Optional[ast.AST], message: str, *, fix: Optional[FixPlan] = None,
               span: Optional[tuple[int, int, int, int]] = None) -> None:
        """As ``Rule.report``: a fix the target version cannot take (``fix_min_target``) is dropped."""
        if fix is not None and self.rule.fix_min_target and not self.settings.target_at_least(self.rule.fix_min_target):
            fix = None
        if node is None and span is None:
            raise ValueError("report needs a node or a span")
        self._findings.append(AstFinding(self, node, message, fix, span))

    @classmethod
    def hooks(cls) -> dict[str, str]:
        """``visit_<AstClass>``/``leave_<AstClass>`` methods the check defines (name -> name)."""
        return {attr: attr for attr in dir(cls)
                if (attr.startswith("visit_") or attr.startswith("leave_")) and callable(getattr(cls, attr))}
