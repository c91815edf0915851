"""The one walk over a libcst tree: parents, scopes, bindings, functions, classes, calls.

``_Collector`` is ``_Scopes`` (``collector.py``, shared with the ast engine's collector) on libcst's
nodes; ``ModuleFacts.build`` imports this module on first use, so that importing the facts does
not import libcst (``lazy_libcst``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from .collector import _Scopes
from .model import ClassInfo, FunctionInfo, _Binding

if TYPE_CHECKING:
    from .module import ModuleFacts


_UNSET = object()


class _Collector(_Scopes, cst.CSTVisitor):
    """The one walk: parents, scopes, bindings, functions, classes, calls (``_Scopes``)."""

    def __init__(self, facts: "ModuleFacts") -> None:
        self.f = facts
        self.stack: list[cst.CSTNode] = []
        self.scopes: list[FunctionInfo] = []
        self.classes: list[ClassInfo] = []
        # classes and functions interleave: remember which one is innermost
        self.kinds: list[str] = []
        self._visit_hooks: dict[type, object] = {}
        self._in_comp_for = False
        self._leave_hooks: dict[type, object] = {}

    # -- generic: libcst's on_visit/on_leave, with the hook looked up once per node class
    # (libcst formats the method name and calls getattr for every node: ~1 M nodes a corpus)
    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.f._parents[node] = self.stack[-1]
        self.stack.append(node)
        hooks = self._visit_hooks
        hook = hooks.get(type(node), _UNSET)
        if hook is _UNSET:
            hook = hooks[type(node)] = getattr(self, f"visit_{type(node).__name__}", None)
        return hook is None or hook(node) is not False

    def on_leave(self, original_node: cst.CSTNode) -> None:
        hooks = self._leave_hooks
        hook = hooks.get(type(original_node), _UNSET)
        if hook is _UNSET:
            hook = hooks[type(original_node)] = getattr(self, f"leave_{type(original_node).__name__}", None)
        if hook is not None:
            hook(original_node)
        self.stack.pop()

    def release(self) -> None:
        # the hook tables hold bound methods of this collector (a cycle through the facts)
        self._visit_hooks.clear()
        self._leave_hooks.clear()

    def _own_hook(self, name: str):
        """The collector's hook ``name``, or None for libcst's empty default (``mark_no_op``)."""
        fn = getattr(type(self), name, None)
        if fn is None or getattr(fn, "__module__", "").startswith("libcst"):
            return None
        return getattr(self, name)

    def run(self, root: cst.CSTNode, skip: frozenset, visits: frozenset, leaves: frozenset) -> Optional[list]:
        """``traversal.walk(root, self, skip)``, written out for the collector: the parents are
        read off the walk's own stack and the hooks looked up once per node class, instead of
        two method calls per node (~0.5 M nodes on a large corpus). Also returns the walk's
        events for the node types in ``visits`` (a node: its visit) and ``leaves`` (a 1-tuple:
        its leave), in walking order: the rules' traversal replays them instead of walking the
        tree again (``MultiRuleVisitor.replay``); None when a hook of the collector pruned the
        walk (no hook does: the rules' walk would not have been pruned there)."""
        from ..traversal import LEAVES, TRIVIA, _table  # local: traversal imports rule, which names facts

        table = _table(skip)
        parents = self.f._parents
        infos: dict[type, tuple] = {}
        events: list = []
        # names and literals (``LEAVES``, ~40% of the nodes walked) have nothing under them but the
        # layout skipped here: they are visited and left in place, not pushed on the stack
        bare = LEAVES if skip >= TRIVIA else frozenset()

        def info_of(t: type) -> tuple:
            info = infos[t] = (self._own_hook(f"visit_{t.__name__}"), self._own_hook(f"leave_{t.__name__}"),
                               t in visits, t in leaves, t in bare)
            return info

        hook, leave, seen, left, _ = info_of(type(root))
        if seen:
            events.append(root)
        pruned = False
        if hook is not None and hook(root) is False:
            if leave is not None:
                leave(root)
            return None
        stack = [(root, iter(table.of(type(root))(root)), leave, left)]
        while stack:
            top = stack[-1]
            node = top[0]
            for child in top[1]:
                parents[child] = node
                t = type(child)
                hook, leave, seen, left, leaf = infos.get(t) or info_of(t)
                if seen:
                    events.append(child)
                if leaf:  # what pushing it would do: its visit, no children, its leave
                    if hook is not None and hook(child) is False:
                        pruned = True
                    if leave is not None:
                        leave(child)
                    if left:
                        events.append((child,))
                    continue
                if hook is None or hook(child) is not False:
                    stack.append((child, iter((table.get(t) or table.of(t))(child)), leave, left))
                    break
                pruned = True
                if leave is not None:
                    leave(child)
            else:
                stack.pop()
                if top[2] is not None:
                    top[2](node)
                if top[3]:
                    events.append((node,))
        infos.clear()  # bound methods of this collector
        return None if pruned else events

    # -- definitions
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        p = node.params
        params = [(param.name.value, param.annotation.annotation if param.annotation is not None else None)
                  for param in (*p.posonly_params, *p.params, *p.kwonly_params)]
        # ``*args: T`` is a tuple of T, ``**kw: T`` a dict
        params += [(star.name.value, None) for star in (p.star_arg, p.star_kwarg) if isinstance(star, cst.Param)]
        self._enter_function(node, node.name.value, node.asynchronous is not None, params,
                             [dec.decorator for dec in node.decorators])

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._enter_class(node, node.name.value, [dec.decorator for dec in node.decorators])

    # -- imports
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            dotted = _dotted(alias.name)
            if dotted is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.bind(alias.asname.name.value, _Binding("import", qualified=dotted))
            else:
                top = dotted.split(".")[0]
                self.bind(top, _Binding("import", qualified=top))
        self.f.has_imports = True

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = _dotted(node.module) if node.module is not None else ""
        dots = "." * len(node.relative)
        base = f"{dots}{module or ''}"
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = _dotted(alias.name)
            if name is None:
                continue
            local = alias.asname.name.value if alias.asname and isinstance(alias.asname.name, cst.Name) else name
            qualified = f"{base}.{name}" if base and not base.endswith(".") else f"{base}{name}"
            self.bind(local, _Binding("import", qualified=qualified))

    # -- bindings we can type
    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        ann = node.annotation.annotation
        target = node.target
        cls = self._in_class_body()
        if cls is not None and isinstance(target, cst.Name):
            cls.attr_annotations.setdefault(target.value, []).append((ann, None))
        elif (isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self"
              and self.scope is not None and self.scope.cls is not None):
            self.scope.cls.attr_annotations.setdefault(target.attr.value, []).append((ann, self.scope))
        self._bind_target(target, node.value, ann)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, None)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        # comprehension variables live in their own scope; binding them as "other"
        # only matters for shadowing builtins, which is what we want
        self._in_comp_for = True
        try:
            self._bind_target(node.target, None)
        finally:
            self._in_comp_for = False

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, node.item)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self.bind(node.name.name.value, _Binding("other"))

    def visit_Global(self, node: cst.Global) -> None:
        return None

    def _bind_target(self, target: cst.BaseExpression, value: cst.BaseExpression | None,
                     annotation: cst.BaseExpression | None = None, unpacked: cst.BaseExpression | None = None) -> None:
        # ``type(...) is``, not ``isinstance``: a failed ``isinstance`` against libcst's ABCs is a
        # Python call; these classes have no subclasses (tests/perf/test_walk_replay.py)
        if type(target) is cst.Name:
            if value is not None:
                self.bind(target.value, _Binding("value", target=value, annotation=annotation))
            else:
                self.bind(target.value, _Binding("other", annotation=annotation, unpacked=unpacked))
        elif type(target) is cst.Tuple or type(target) is cst.List:
            # ``a, b = f(), g()``: each name is paired with its element (for the types)
            pairs = _elements(value) if value is not None else None
            if pairs is not None and (len(pairs) != len(target.elements) or any(
                    isinstance(el, cst.StarredElement) or isinstance(el.value, cst.StarredElement)
                    for el in target.elements)):
                pairs = None
            for i, el in enumerate(target.elements):
                inner = el.value
                if isinstance(inner, cst.StarredElement):
                    inner = inner.value
                self._bind_target(inner, None, unpacked=pairs[i] if pairs is not None else None)
        elif type(target) is cst.StarredElement:
            self._bind_target(target.value, None)
        elif (
            type(target) is cst.Attribute
            and type(target.value) is cst.Name
            and target.value.value == "self"
            and self.scope is not None
            and self.scope.cls is not None
            and value is not None
        ):
            self.scope.cls.attr_values.setdefault(target.attr.value, []).append((value, self.scope))

    # -- calls, awaits, main guard
    def visit_Name(self, node: cst.Name) -> None:
        table = self.f._names_by_value
        found = table.get(node.value)
        if found is None:
            table[node.value] = [node]
        else:
            found.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        table = self.f._attributes_by_name
        found = table.get(node.attr.value)
        if found is None:
            table[node.attr.value] = [node]
        else:
            found.append(node)

    def visit_Await(self, node: cst.Await) -> None:
        if isinstance(node.expression, cst.Call):
            self.f._awaited.add(node.expression)

    def visit_If(self, node: cst.If) -> None:
        if self.scope is None and not self.classes and _is_main_guard(node.test):
            self.f.main_guards.append(node)


def _elements(value: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    """The elements of a tuple or list display with no starred element, else None."""
    if not isinstance(value, (cst.Tuple, cst.List)):
        return None
    if any(isinstance(el, cst.StarredElement) for el in value.elements):
        return None
    return [el.value for el in value.elements]


def _is_main_guard(test: cst.BaseExpression) -> bool:
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    left, comp = test.left, test.comparisons[0]
    if not isinstance(comp.operator, cst.Equal):
        return False
    sides = [left, comp.comparator]
    has_name = any(isinstance(s, cst.Name) and s.value == "__name__" for s in sides)
    has_main = any(isinstance(s, cst.SimpleString) and s.evaluated_value == "__main__" for s in sides)
    return has_name and has_main


def _dotted(node: cst.BaseExpression | None) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr.value}" if base else None
    return None
