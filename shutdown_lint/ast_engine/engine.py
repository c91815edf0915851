"""Run the ported rules' checks on a file's ``ast`` and make its diagnostics (no edits).

``analyzer.analyze`` takes this path when every candidate rule has an ``ast_check``, the
candidate tier's tree exists with exact names, and no edits are wanted; the result must equal
the libcst path's field by field (``tests/engine/test_ast_engine.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Sequence

from .. import registry, suppression
from ..diagnostic import Diagnostic
from .check import AstFinding
from .facts import AstFacts, decode
from .walk import Hooks, run

if TYPE_CHECKING:
    from ..prefilter.ast_tree import Tree
    from ..rule import Rule
    from ..settings import Settings


def ported(rules: Sequence["type[Rule]"]) -> bool:
    """Every rule of ``rules`` detects on ``ast``."""
    return all(getattr(r, "ast_check", None) is not None for r in rules)


@dataclass
class AstAnalysis:
    path: str
    facts: AstFacts
    findings: list[AstFinding]
    settings: "Settings"
    text: str
    checks: list = field(default_factory=list)

    def release(self) -> None:
        for check in self.checks:
            check.__dict__.clear()
        self.findings.clear()
        self.facts.release()
        self.__dict__.clear()

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()  # as ``Analysis.lines`` (line_text)

    @cached_property
    def suppressions(self) -> suppression.Suppressions:
        return suppression.parse(self.text, set(registry.rules_by_code()), registry.names_to_codes(),
                                 self.facts.module)

    def span(self, finding: AstFinding) -> tuple[int, int, int, int]:
        return finding.span if finding.span is not None else self.facts.span(finding.node)  # type: ignore[arg-type]

    def active_findings(self) -> list[AstFinding]:
        """Findings not suppressed in-line, in source order (as ``Analysis.active_findings``)."""
        if not self.findings:
            return []
        live = [f for f in self.findings if not self.suppressions.suppresses(self.span(f)[0], f.code)]
        live.sort(key=lambda f: (*self.span(f)[:2], f.code))
        return live

    def diagnostic(self, finding: AstFinding) -> Diagnostic:
        line, col, end_line, end_col = self.span(finding)
        fix = None
        if finding.fix is not None:
            fix = {"applicability": finding.fix.applicability.value, "message": finding.fix.message, "edits": []}
        line_text = self.lines[line - 1].strip() if 0 < line <= len(self.lines) else ""
        rule = finding.check.rule
        return Diagnostic(code=rule.code, name=rule.name, message=finding.message, path=self.path, line=line,
                          column=col + 1, end_line=end_line, end_column=end_col + 1, fix=fix, line_text=line_text)


def analyze(source: bytes, path: str, settings: "Settings", rules: Sequence["type[Rule]"], tree: "Tree",
            project) -> AstAnalysis:
    """The ported ``rules``' findings in ``source`` (``tree``: the candidate tier's ``Tree`` of it;
    ``project``: the index view the libcst path would hand its facts). Raises ``RecursionError``
    where a query recurses too deep (the caller takes the libcst path then)."""
    text = decode(source)
    findings: list[AstFinding] = []
    classes = [r.ast_check for r in rules]
    hooks = Hooks.of_classes(classes)
    facts = AstFacts.build(tree.module, text, path, hooks.visits, hooks.leaves)
    facts.project = project
    checks = [cls(rule, facts, settings, findings) for cls, rule in zip(classes, rules)]
    run(hooks.bind(checks), facts._events)
    facts._events = []
    return AstAnalysis(path, facts, findings, settings, text, checks)
