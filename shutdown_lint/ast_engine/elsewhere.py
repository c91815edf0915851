"""``AstFacts.resolve_elsewhere``: ``facts.elsewhere`` on ``ast`` nodes (same questions asked
of the project index, so the file's result has the same dependencies)."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Optional

from .facts import first_argument

if TYPE_CHECKING:
    from ..index.project import ProjectFunction
    from .facts import AstFacts


def resolve_elsewhere(facts: "AstFacts", expr: ast.AST, at: ast.AST,
                      words: tuple[str, ...] = ()) -> Optional["ProjectFunction"]:
    view = facts.project
    if view is None:
        return None
    if isinstance(expr, ast.Call):  # functools.partial(f, ...)
        first = first_argument(expr)
        if first is not None and facts.qualified_name(expr.func, at) == "functools.partial":
            return resolve_elsewhere(facts, first, at, words)
        return None
    name = _qualified(facts, expr, at)
    if name is None:
        return None
    try:
        return view.function(name, words)
    except (RecursionError, OSError):  # a pathological project layout must not end the analysis
        return None


def _qualified(facts: "AstFacts", expr: ast.AST, at: ast.AST) -> Optional[str]:
    chain = _chain(expr)
    if chain and chain[0] in ("self", "cls") and len(chain) > 1:
        scope = facts.scope_of(at)
        cls = facts._method_class(scope) if scope is not None else None
        if cls is not None and cls.scope is None:
            q = facts.qualified_name(expr, at)
            if q is not None and not q.startswith("<module>."):
                return q
            return f"<module>.{cls.qualname}.{'.'.join(chain[1:])}"
        return None
    q = facts.qualified_name(expr, at)
    if q is not None:
        return q
    if chain and len(chain) > 1:
        ann = _parameter_annotation(facts, chain[0], at)
        if ann is not None:
            return f"{ann}.{'.'.join(chain[1:])}"
    return None


def _parameter_annotation(facts: "AstFacts", name: str, at: ast.AST) -> Optional[str]:
    """``env: SandboxEnv`` (or ``"SandboxEnv"``) as a parameter of the enclosing function."""
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
                    return _chain_text(parsed, facts, fn.node)
                return facts.qualified_name(ann, fn.node.body[0])
        fn = fn.scope
    return None


def _chain_text(expr: ast.AST, facts: "AstFacts", at: ast.AST) -> Optional[str]:
    chain = _chain(expr)
    if not chain:
        return None
    b = facts.lookup(chain[0], facts.scope_of(at))
    if b is not None and b.kind == "import" and b.qualified:
        return ".".join([b.qualified, *chain[1:]])
    if b is not None and b.kind == "class":
        return ".".join([f"<module>.{b.target.qualname}", *chain[1:]])  # type: ignore[union-attr]
    return None


def _chain(expr: ast.AST) -> list[str]:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if isinstance(expr, ast.Name):
        parts.append(expr.id)
        return parts[::-1]
    return []
