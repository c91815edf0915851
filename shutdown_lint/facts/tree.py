"""Tree shape: parents, enclosing function/class/statement/try, cleanup blocks, identifiers."""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from .model import ClassInfo, FunctionInfo, Scope


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
    """Mixin of ``ModuleFacts``: questions about where a node sits in the tree."""

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        cur = self._parents.get(node)
        while cur is not None:
            yield cur
            cur = self._parents.get(cur)

    def is_ancestor(self, ancestor: cst.CSTNode, node: cst.CSTNode) -> bool:
        return any(a is ancestor for a in self.ancestors(node))

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
        for anc in self.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                return self._function_of.get(anc)
        return None

    def enclosing_class(self, node: cst.CSTNode) -> Optional[ClassInfo]:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.ClassDef):
                return self._class_of.get(anc)
        return None

    def in_lambda(self, node: cst.CSTNode) -> bool:
        for anc in self.ancestors(node):
            if isinstance(anc, cst.Lambda):
                return True
            if isinstance(anc, cst.FunctionDef):
                return False
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
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
                return
            if isinstance(anc, (cst.Try, cst.TryStar)) and child is anc.body:
                yield anc
            child = anc

    def in_cleanup_block(self, node: cst.CSTNode) -> bool:
        """``node`` sits in a ``finally:`` block or an ``except`` handler's body of its own
        function (code that runs when the normal path fails or is interrupted)."""
        child = node
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                return False
            if isinstance(anc, cst.Finally):
                return True
            if isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)) and child is anc.body:
                return True
            child = anc
        return False

    def in_main_guard(self, node: cst.CSTNode) -> bool:
        return any(g is a for a in self.ancestors(node) for g in self.main_guards)

    def function_of(self, node: cst.FunctionDef) -> Optional[FunctionInfo]:
        return self._function_of.get(node)

    def class_of(self, node: cst.ClassDef) -> Optional[ClassInfo]:
        return self._class_of.get(node)

    def scope_of(self, node: cst.CSTNode) -> Scope:
        if isinstance(node, cst.Call) and node in self._call_scope:
            return self._call_scope[node]
        return self.enclosing_function(node)

    def is_awaited(self, call: cst.Call) -> bool:
        return call in self._awaited


def names_in(node: cst.CSTNode) -> set[str]:
    """Every identifier (``Name``) used anywhere under ``node``."""
    from ..traversal import walk

    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

    walk(node, _Names())
    return found

