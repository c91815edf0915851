"""``AstFacts.resolve_elsewhere``: ``facts.elsewhere`` on ``ast`` nodes (the same questions asked
of the project index, so the file's result has the same dependencies): ``facts.elsewhere.Elsewhere``
with its reads of the tree written for ``ast``."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from ..facts.elsewhere import Elsewhere
from .facts import first_argument

if TYPE_CHECKING:
    from ..index.project import ProjectFunction
    from .facts import AstFacts


class _AstElsewhere(Elsewhere):
    def call_parts(self, expr: ast.AST) -> Optional[tuple[ast.AST, Optional[ast.AST]]]:  # type: ignore[override]
        if isinstance(expr, ast.Call):
            return expr.func, first_argument(expr)  # libcst's ``args[0].value``
        return None

    def chain(self, expr: ast.AST) -> list[str]:  # type: ignore[override]
        parts: list[str] = []
        while isinstance(expr, ast.Attribute):
            parts.append(expr.attr)
            expr = expr.value
        if isinstance(expr, ast.Name):
            parts.append(expr.id)
            return parts[::-1]
        return []

    def parameter_annotation(self, facts: "AstFacts", name: str, at: ast.AST) -> Optional[str]:  # type: ignore[override]
        fn = facts.enclosing_function(at)
        while fn is not None:
            a = fn.node.args
            for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]:
                if p.arg == name:
                    ann = p.annotation
                    if ann is None:
                        return None
                    if type(ann) is ast.Constant and type(ann.value) is str:
                        try:
                            parsed = ast.parse(ann.value, mode="eval").body
                        except Exception:
                            return None
                        return self.chain_text(parsed, facts, fn.node)
                    return facts.qualified_name(ann, fn.node.body[0])
            fn = fn.scope
        return None


_AST = _AstElsewhere()


def resolve_elsewhere(facts: "AstFacts", expr: ast.AST, at: ast.AST,
                      words: tuple[str, ...] = ()) -> Optional["ProjectFunction"]:
    return _AST.resolve(facts, expr, at, words)
