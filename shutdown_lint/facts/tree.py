"""Tree shape: parents, enclosing function/class/statement/try, cleanup blocks, identifiers."""

from __future__ import annotations

from typing import Iterator, Optional

from ..lazy_libcst import libcst as cst, on_first_read

from .model import ClassInfo, FunctionInfo, Scope

# ``type(node) is cst.X`` / ``type(node) in {...}`` below, not ``isinstance``: libcst's node
# classes are ABCs, so an ``isinstance`` that fails goes through ``ABCMeta.__instancecheck__``
# (a Python call); these queries walk up ~400,000 ancestors on a large corpus. The same
# answers: none of these classes has a subclass or a registered virtual one
# (tests/perf/test_walk_replay.py).
# The sets are ``TreeShape``'s class attributes, made on first read (``on_first_read``: importing
# this module does not import libcst).


def chain_from_top(module: cst.Module, parent_of, node: cst.CSTNode) -> Optional[list[cst.CSTNode]]:
    """``node``'s ancestors from the top-level statement of ``module`` down, ``node`` last
    (``parent_of``: the facts' parent map); None when ``node`` is not under one."""
    chain = [node]
    parent = parent_of(node)
    while parent is not None and parent is not module:
        chain.append(parent)
        parent = parent_of(parent)
    if parent is not module:
        return None
    chain.reverse()
    return chain


class TreeShape:
    """Mixin of ``ModuleFacts``: questions about where a node sits in the tree.

    The node classes the walks up the tree stop at are class attributes, so that ``AstFacts``
    (``ast_engine.facts``) asks the same questions of ``ast``'s classes with this code."""

    _DEF_TYPES: frozenset = on_first_read(lambda: frozenset({cst.FunctionDef}))
    _CLASS_TYPE: type = on_first_read(lambda: cst.ClassDef)
    _LAMBDA_TYPE: type = on_first_read(lambda: cst.Lambda)
    _FUNCTION_OR_LAMBDA_TYPES: frozenset = on_first_read(lambda: frozenset({cst.FunctionDef, cst.Lambda}))
    _CALL_TYPE: type = on_first_read(lambda: cst.Call)
    # libcst's only: ``AstFacts`` has its own ``enclosing_trys`` and ``in_cleanup_block``
    _SCOPE_LIKE_TYPES: frozenset = on_first_read(lambda: frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef}))
    _TRY_TYPES: frozenset = on_first_read(lambda: frozenset({cst.Try, cst.TryStar}))
    _HANDLER_TYPES: frozenset = on_first_read(lambda: frozenset({cst.ExceptHandler, cst.ExceptStarHandler}))

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        cur = self._parents.get(node)
        while cur is not None:
            yield cur
            cur = self._parents.get(cur)

    def is_ancestor(self, ancestor: cst.CSTNode, node: cst.CSTNode) -> bool:
        parents = self._parents
        cur = parents.get(node)
        while cur is not None:
            if cur is ancestor:
                return True
            cur = parents.get(cur)
        return False

    def _within(self, region: cst.CSTNode, node: cst.CSTNode) -> bool:
        return region is self.module or node is region or self.is_ancestor(region, node)

    def name_nodes(self, region: cst.CSTNode, value: str) -> list[cst.Name]:
        """The ``Name`` nodes spelled ``value`` in ``region``, in source order, leaving out the
        attribute part of ``x.value`` (not a use of a variable)."""
        out = []
        for n in self._names_by_value.get(value, ()):
            parent = self._parents.get(n)
            if type(parent) is cst.Attribute and parent.attr is n:
                continue
            if self._within(region, n):
                out.append(n)
        return out

    def attribute_nodes(self, region: cst.CSTNode, attr: str) -> list[cst.Attribute]:
        """The ``Attribute`` nodes ``<anything>.attr`` in ``region``, in source order."""
        return [n for n in self._attributes_by_name.get(attr, ()) if self._within(region, n)]

    def enclosing_function(self, node: cst.CSTNode) -> Optional[FunctionInfo]:
        """The innermost ``def``/``async def`` whose body contains ``node`` (a lambda does
        not count; use ``in_lambda``). A function's own node maps to its parent scope."""
        parents, defs = self._parents, self._DEF_TYPES
        anc = parents.get(node)
        while anc is not None:
            if type(anc) in defs:
                return self._function_of.get(anc)
            anc = parents.get(anc)
        return None

    def enclosing_class(self, node: cst.CSTNode) -> Optional[ClassInfo]:
        parents, kind = self._parents, self._CLASS_TYPE
        anc = parents.get(node)
        while anc is not None:
            if type(anc) is kind:
                return self._class_of.get(anc)
            anc = parents.get(anc)
        return None

    def in_lambda(self, node: cst.CSTNode) -> bool:
        parents, kinds = self._parents, self._FUNCTION_OR_LAMBDA_TYPES
        anc = parents.get(node)
        while anc is not None:
            if type(anc) in kinds:
                return type(anc) is self._LAMBDA_TYPE
            anc = parents.get(anc)
        return False

    def enclosing_statement(self, node: cst.CSTNode) -> Optional[cst.BaseStatement]:
        """The statement (simple line or compound) that contains ``node``."""
        cur: Optional[cst.CSTNode] = node
        while cur is not None and not isinstance(cur, cst.BaseStatement):
            cur = self._parents.get(cur)
        return cur  # type: ignore[return-value]

    def enclosing_trys(self, node: cst.CSTNode) -> Iterator[cst.Try | cst.TryStar]:
        """``try`` statements whose *body* contains ``node``, innermost first, within the
        enclosing function."""
        child = node
        scope_like, trys = self._SCOPE_LIKE_TYPES, self._TRY_TYPES
        for anc in self.ancestors(node):
            if type(anc) in scope_like:
                return
            if type(anc) in trys and child is anc.body:
                yield anc
            child = anc

    def in_cleanup_block(self, node: cst.CSTNode) -> bool:
        """``node`` sits in a ``finally:`` block or an ``except`` handler's body of its own
        function (code that runs when the normal path fails or is interrupted)."""
        parents = self._parents
        function_or_lambda, finally_type, handlers = self._FUNCTION_OR_LAMBDA_TYPES, cst.Finally, self._HANDLER_TYPES
        child, anc = node, parents.get(node)
        while anc is not None:
            t = type(anc)
            if t in function_or_lambda:
                return False
            if t is finally_type:
                return True
            if t in handlers and child is anc.body:
                return True
            child, anc = anc, parents.get(anc)
        return False

    def in_main_guard(self, node: cst.CSTNode) -> bool:
        return any(g is a for a in self.ancestors(node) for g in self.main_guards)

    def function_of(self, node: cst.FunctionDef) -> Optional[FunctionInfo]:
        return self._function_of.get(node)

    def class_of(self, node: cst.ClassDef) -> Optional[ClassInfo]:
        return self._class_of.get(node)

    def scope_of(self, node: cst.CSTNode) -> Scope:
        if type(node) is self._CALL_TYPE:
            scope = self._call_scope.get(node, _NOT_RECORDED)
            if scope is not _NOT_RECORDED:
                return scope
        return self.enclosing_function(node)

    def is_awaited(self, call: cst.Call) -> bool:
        return call in self._awaited


_NOT_RECORDED = object()


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier (``Name``) used anywhere under ``node``."""
    from ..traversal import walk

    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

    walk(node, _Names())
    return found

