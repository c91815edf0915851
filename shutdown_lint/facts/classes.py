"""Class hierarchies, this module's and the project's: a method's overrides, and whether a
method is abstract or a stub (what a call to it runs is then one of its overrides).

Same module: subclasses that name the class among their bases (directly or through another
class of the module). Other modules: ``index/classes.py`` (subclasses in this module's
importers, through the project index). Not to be confused with ``shutdown_lint/hierarchy.py``
(hierarchical configuration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from ..lazy_libcst import libcst as cst

from .execution import _same_module_bases
from .model import ClassInfo, FunctionInfo

if TYPE_CHECKING:
    from ..index.project import ProjectFunction
    from .module import ModuleFacts

_ABSTRACT = ("abstractmethod", "abstractproperty")


def is_stub(facts: "ModuleFacts", fn: FunctionInfo) -> bool:
    """``@abstractmethod``, or a body of only a docstring, ``pass``, ``...`` and ``raise
    NotImplementedError`` (``index/summary.py``'s ``stub``, on libcst)."""
    if any(d.rsplit(".", 1)[-1] in _ABSTRACT for d in fn.decorators):
        return True
    body = fn.node.body
    if not isinstance(body, cst.IndentedBlock):
        stmts = [body]
    else:
        stmts = list(body.body)
    for st in stmts:
        smalls = st.body if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)) else None
        if smalls is None:
            return False
        for small in smalls:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString,
                                                                         cst.Ellipsis)):
                continue
            if isinstance(small, cst.Raise) and small.exc is not None:
                exc = small.exc.func if isinstance(small.exc, cst.Call) else small.exc
                if isinstance(exc, cst.Name) and exc.value == "NotImplementedError":
                    continue
            return False
    return True


def subclasses(facts: "ModuleFacts", cls: ClassInfo) -> list[ClassInfo]:
    """Classes of this module with ``cls`` among their bases, at any depth."""
    out = []
    for c in facts.classes:
        if c is cls:
            continue
        seen: list[ClassInfo] = []
        todo = [c]
        while todo:
            cur = todo.pop()
            for b in _same_module_bases(facts, cur):
                if b not in seen:
                    seen.append(b)
                    todo.append(b)
        if cls in seen:
            out.append(c)
    return out


def overrides(facts: "ModuleFacts", fn: FunctionInfo) -> list[Union[FunctionInfo, "ProjectFunction"]]:
    """The methods that override method ``fn`` in subclasses of its class: this module's
    (``FunctionInfo``) and, through the project index, other modules' (``ProjectFunction``;
    their summaries become dependencies of this file's result). Stubs are left out."""
    cls = fn.cls
    if cls is None:
        return []
    out: list = []
    for c in subclasses(facts, cls):
        m = c.methods.get(fn.name)
        if m is not None and not is_stub(facts, m):
            out.append(m)
    view = getattr(facts, "project", None)
    if view is not None and cls.scope is None and cls.outer_class is None:
        from ..index.classes import overrides as elsewhere

        out += [o for o in elsewhere(view, facts.path, cls.name, fn.name) if o.path != view.path]
    return out
