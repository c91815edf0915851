"""From a libcst expression in this module to a function in another module of the project.

``ModuleFacts.resolve_elsewhere(expr, at)`` names what the rules ask when the callee is not
in this file: ``env.rollout`` (``env = SandboxEnv(...)`` or ``env: SandboxEnv``),
``self.run_agent`` (a method inherited from a base class in another module),
``self.env.step`` (``self.env = SandboxEnv(...)``), ``run_agent`` (imported).

``Elsewhere`` asks the questions; its reads of the tree (a call's callee and first argument,
an attribute chain, a parameter's annotation) are libcst's, and ``ast_engine.elsewhere``
overrides them for ``ast``: the same questions of the project index, so the file's result has
the same dependencies on either tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from ..lazy_libcst import libcst as cst

if TYPE_CHECKING:
    from .module import ModuleFacts
    from ..index.project import ProjectFunction


class Elsewhere:
    """``resolve_elsewhere`` over libcst's reads (the methods below ``# the tree's reads``)."""

    def resolve(self, facts: Any, expr: Any, at: Any, words: tuple[str, ...] = ()) -> Optional["ProjectFunction"]:
        view = facts.project
        if view is None:
            return None
        call = self.call_parts(expr)
        if call is not None:  # functools.partial(f, ...)
            func, first = call
            if first is not None and facts.qualified_name(func, at) == "functools.partial":
                return self.resolve(facts, first, at, words)
            return None
        name = self.qualified(facts, expr, at)
        if name is None:
            return None
        try:
            return view.function(name, words)
        except (RecursionError, OSError):  # a pathological project layout must not end the analysis
            return None

    def qualified(self, facts: Any, expr: Any, at: Any) -> Optional[str]:
        chain = self.chain(expr)
        if chain and chain[0] in ("self", "cls") and len(chain) > 1:
            scope = facts.scope_of(at)
            cls = facts._method_class(scope) if scope is not None else None
            if cls is not None and cls.scope is None:
                # let the facts type a `self.x = Cls(...)` assigned in this class first
                q = facts.qualified_name(expr, at)
                if q is not None and not q.startswith("<module>."):
                    return q
                return f"<module>.{cls.qualname}.{'.'.join(chain[1:])}"
            return None
        q = facts.qualified_name(expr, at)
        if q is not None:
            return q
        if chain and len(chain) > 1:
            ann = self.parameter_annotation(facts, chain[0], at)
            if ann is not None:
                return f"{ann}.{'.'.join(chain[1:])}"
        return None

    def chain_text(self, expr: Any, facts: Any, at: Any) -> Optional[str]:
        """A string annotation's chain (``"env.SandboxEnv"``) as a qualified name."""
        chain = self.chain(expr)
        if not chain:
            return None
        b = facts.lookup(chain[0], facts.scope_of(at))
        if b is not None and b.kind == "import" and b.qualified:
            return ".".join([b.qualified, *chain[1:]])
        if b is not None and b.kind == "class":
            return ".".join([f"<module>.{b.target.qualname}", *chain[1:]])  # type: ignore[union-attr]
        return None

    # ------------------------------------------------------------------ the tree's reads
    def call_parts(self, expr: cst.BaseExpression) -> Optional[tuple[cst.BaseExpression, Optional[cst.BaseExpression]]]:
        """For a call: (its callee, the value of its first argument or None); else None."""
        if isinstance(expr, cst.Call):
            return expr.func, (expr.args[0].value if expr.args else None)
        return None

    def chain(self, expr: cst.BaseExpression) -> list[str]:
        """``a.b.c`` as ``["a", "b", "c"]``; [] for anything else."""
        parts: list[str] = []
        while isinstance(expr, cst.Attribute):
            parts.append(expr.attr.value)
            expr = expr.value
        if isinstance(expr, cst.Name):
            parts.append(expr.value)
            return parts[::-1]
        return []

    def parameter_annotation(self, facts: "ModuleFacts", name: str, at: cst.CSTNode) -> Optional[str]:
        """``env: SandboxEnv`` (or ``"SandboxEnv"``) as a parameter of the enclosing function."""
        fn = facts.enclosing_function(at)
        while fn is not None:
            params = fn.node.params
            for p in [*params.posonly_params, *params.params, *params.kwonly_params]:
                if p.name.value == name:
                    if p.annotation is None:
                        return None
                    ann = p.annotation.annotation
                    if isinstance(ann, cst.SimpleString):
                        try:
                            ann = cst.parse_expression(ann.evaluated_value)  # type: ignore[arg-type]
                        except Exception:
                            return None
                        return self.chain_text(ann, facts, fn.node)
                    return facts.qualified_name(ann, fn.node.body)
            fn = fn.scope
        return None


_LIBCST = Elsewhere()


def resolve_elsewhere(facts: "ModuleFacts", expr: cst.BaseExpression, at: cst.CSTNode,
                      words: tuple[str, ...] = ()) -> Optional["ProjectFunction"]:
    """``words``: the caller only wants a function whose calls spell one of them (a teardown
    search); None, too, where the index can tell from a module's text that it is not one
    (``ProjectIndex.resolve``)."""
    return _LIBCST.resolve(facts, expr, at, words)
