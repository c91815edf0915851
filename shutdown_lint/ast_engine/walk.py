"""One walk of an ``ast.Module`` for all the file's checks, in SOURCE order.

``ast``'s own order (``ast.iter_child_nodes``, the order of ``_fields``) is not the source's
in a few node types, and libcst's walk (which the rules were written against) is:

- ``FunctionDef``/``AsyncFunctionDef``: decorators, then (type parameters,) arguments, the
  return annotation and the body (``ast``: body before decorators);
- ``ClassDef``: decorators, (type parameters,) bases and keywords as written, body;
- ``Call``: the callee, then positional and keyword arguments as written (``f(*a, k=1, *b)``);
- ``Dict``: each key before its value (``ast``: all keys, then all values);
- ``arguments``: each parameter, then its default (``ast``: all parameters, then defaults);
- ``IfExp``: ``body if test else orelse`` (``ast``: test first);
- ``MatchMapping``: each key before its pattern.

Markers are not walked (``Load``/``Store``, operators, comparison operators: ``ast`` shares one
instance of each between nodes, so they have no parent). Hooks are found once per check
class (``hooks``); the facts' walk records the nodes the hooks are called on (``events``)
and the checks' walk replays them (``run``), as the libcst engine does
(``MultiRuleVisitor.replay``).

A ``visit_X`` returning False skips the children of that node *for that check only* (its
``leave_X`` is still called); the libcst engine ignores the return values of rules' hooks
(``MultiRuleVisitor.on_visit``), so a port that returns False differs from its libcst self there.
"""

from __future__ import annotations

import ast
from operator import attrgetter
from typing import Callable, Iterable, Iterator, Optional, Sequence

from ..prefilter.ast_tree import _fields as _walked_fields, compiled_reader, no_children as _no_children

_AST = ast.AST
_pos = attrgetter("lineno", "col_offset")


def _generic(fields: tuple[str, ...]) -> Callable[[ast.AST], list]:
    if len(fields) == 1:
        (only,) = fields

        def one(node: ast.AST) -> list:
            value = getattr(node, only, None)
            if type(value) is list:
                return [v for v in value if isinstance(v, _AST)]
            return [value] if isinstance(value, _AST) else []

        return one

    def many(node: ast.AST) -> list:
        out: list = []
        for f in fields:
            value = getattr(node, f, None)
            if type(value) is list:
                out += [v for v in value if isinstance(v, _AST)]
            elif isinstance(value, _AST):
                out.append(value)
        return out

    return many


def _by_position(first: list, second: list) -> list:
    """Two lists of nodes merged in source order (each is in source order already)."""
    if not first:
        return list(second)
    if not second:
        return list(first)
    last, start = first[-1], second[0]
    if (last.end_lineno, last.end_col_offset) <= (start.lineno, start.col_offset):
        return [*first, *second]
    return sorted([*first, *second], key=_pos)


def _function(node) -> list:
    out = list(node.decorator_list)
    out += getattr(node, "type_params", None) or ()
    out.append(node.args)
    if node.returns is not None:
        out.append(node.returns)
    out += node.body
    return out


def _class(node: ast.ClassDef) -> list:
    out = list(node.decorator_list)
    out += getattr(node, "type_params", None) or ()
    out += _by_position(node.bases, node.keywords)
    out += node.body
    return out


def _call(node: ast.Call) -> list:
    args, keywords = node.args, node.keywords
    if not keywords:
        return [node.func, *args]
    if not args:
        return [node.func, *keywords]
    return [node.func, *_by_position(args, keywords)]


def _dict(node: ast.Dict) -> list:
    out: list = []
    for k, v in zip(node.keys, node.values):
        if k is not None:
            out.append(k)
        out.append(v)
    return out


def _arguments(node: ast.arguments) -> list:
    out: list = []
    positional = [*node.posonlyargs, *node.args]
    first_default = len(positional) - len(node.defaults)
    for i, a in enumerate(positional):
        out.append(a)
        if i >= first_default:
            out.append(node.defaults[i - first_default])
    if node.vararg is not None:
        out.append(node.vararg)
    for a, d in zip(node.kwonlyargs, node.kw_defaults):
        out.append(a)
        if d is not None:
            out.append(d)
    if node.kwarg is not None:
        out.append(node.kwarg)
    return out


def _if_exp(node: ast.IfExp) -> list:
    return [node.body, node.test, node.orelse]


def _match_mapping(node) -> list:
    out: list = []
    for k, p in zip(node.keys, node.patterns):
        out += (k, p)
    return out


_SPECIAL: dict[type, Callable[[ast.AST], list]] = {
    ast.FunctionDef: _function, ast.AsyncFunctionDef: _function, ast.ClassDef: _class, ast.Call: _call,
    ast.Dict: _dict, ast.arguments: _arguments, ast.IfExp: _if_exp,
}
if hasattr(ast, "MatchMapping"):
    _SPECIAL[ast.MatchMapping] = _match_mapping

#: node type -> its children in source order
_TABLE: dict[type, Callable[[ast.AST], list]] = {}


def children_of(t: type) -> Callable[[ast.AST], list]:
    fn = _TABLE.get(t)
    if fn is None:
        fn = _TABLE[t] = _SPECIAL.get(t) or _generic(_walked_fields(t))
    return fn


def children(node: ast.AST) -> list:
    """``node``'s child nodes in source order (no markers)."""
    return children_of(type(node))(node)


#: node type -> ``iter_children_of(t)``
_ITER_TABLE: dict[type, Callable[[ast.AST], Sequence]] = {}


def iter_children_of(t: type) -> Callable[[ast.AST], Sequence]:
    """As ``children_of(t)``, for walks that only iterate the result: the same nodes in the same
    order, as a tuple, or the node's own list where one field holds them all (never mutate it).
    Each node type's reader is compiled from its signature: a ``type*`` field (a list: nodes
    only, for the types not in ``_SPECIAL``) is spread, a ``type?`` or plain one is taken when not
    None; a type whose walked fields the signature does not declare keeps ``children_of``'s
    reader. ``tests/engine/test_s11_engine_walk.py`` checks both readers agree on every node."""
    fn = _ITER_TABLE.get(t)
    if fn is None:
        fn = _ITER_TABLE[t] = _SPECIAL.get(t) or compiled_reader(t) or children_of(t)
    return fn


def iter_children(node: ast.AST) -> Sequence:
    """``children(node)`` to iterate only (``iter_children_of``: never mutate it)."""
    return iter_children_of(type(node))(node)


def leaf_type(t: type) -> bool:
    """A node of type ``t`` never has a walked child (``Name``, ``Constant``, ``alias``, ``Pass``...)."""
    return iter_children_of(t) is _no_children


def source_order(nodes: Iterable[ast.AST], skip: tuple = ()) -> Iterator[ast.AST]:
    """``nodes`` and the nodes under them in libcst's walk order (each node before its children,
    children in source order), not entering a node of a ``skip`` type (nor giving it). (R403's,
    from rules/shd403.)"""
    stack = [iter(list(nodes))]
    while stack:
        for node in stack[-1]:
            if skip and isinstance(node, skip):
                continue
            yield node
            stack.append(iter(iter_children(node)))
            break
        else:
            stack.pop()


def record(root: ast.AST, visits: frozenset, leaves: frozenset) -> list:
    """The walk's events for the node types in ``visits`` (a node: its visit) and ``leaves``
    (a 1-tuple: its leave), in source order; the facts' walk records the same (``AstFacts.build``)."""
    events: list = []
    table = _ITER_TABLE
    stack = [(root, iter(iter_children(root)))]
    if type(root) in visits:
        events.append(root)
    while stack:
        node, it = stack[-1]
        for child in it:
            t = type(child)
            if t in visits:
                events.append(child)
            stack.append((child, iter((table.get(t) or iter_children_of(t))(child))))
            break
        else:
            stack.pop()
            if type(node) in leaves:
                events.append((node,))
    return events


def node_type(name: str) -> Optional[type]:
    """The ``ast`` node class a hook's suffix names (``Call`` -> ``ast.Call``), or None."""
    t = getattr(ast, name, None)
    return t if isinstance(t, type) and issubclass(t, ast.AST) else None


class Hooks:
    """The checks' hooks by node type, each check class's looked up once (``of_classes``), then
    bound to one file's check instances (``bind``)."""

    def __init__(self, visit: dict, leave: dict) -> None:
        #: node type -> [(index of the check, hook)]: method names (``of_classes``) or bound methods (``bind``)
        self.visit: dict[type, list[tuple[int, Callable]]] = visit
        self.leave: dict[type, list[tuple[int, Callable]]] = leave
        self.visits = frozenset(visit)
        # a visit that returns False mutes its check until the node is left: every visited type's leave is recorded
        self.leaves = frozenset(leave) | self.visits

    @classmethod
    def of_classes(cls, classes: Sequence[type]) -> "Hooks":
        visit: dict = {}
        leave: dict = {}
        for i, check in enumerate(classes):
            for attr in _hook_names(check):
                kind, _, name = attr.partition("_")
                t = node_type(name)
                if t is None:
                    raise ValueError(f"{check.__qualname__}.{attr}: no ast node class {name!r}")
                (visit if kind == "visit" else leave).setdefault(t, []).append((i, attr))
        return cls(visit, leave)

    def bind(self, checks: Sequence) -> "Hooks":
        """These hooks, of the instances ``checks`` (one per class, in the same order)."""
        def bound(table: dict) -> dict:
            return {t: [(i, getattr(checks[i], attr)) for i, attr in hooks] for t, hooks in table.items()}

        return Hooks(bound(self.visit), bound(self.leave))


def hooks_of(checks: Sequence) -> Hooks:
    """The bound hooks of check instances."""
    return Hooks.of_classes([type(c) for c in checks]).bind(checks)


_HOOK_NAMES: dict[type, tuple[str, ...]] = {}


def _hook_names(cls: type) -> tuple[str, ...]:
    names = _HOOK_NAMES.get(cls)
    if names is None:
        names = _HOOK_NAMES[cls] = tuple(sorted(cls.hooks()))
    return names


def run(hooks: Hooks, events: Iterable) -> None:
    """Call the hooks on the recorded events, in order; a visit returning False mutes its
    check for the node's subtree (its leave of that node is still called)."""
    visit, leave = hooks.visit, hooks.leave
    muted: dict[int, ast.AST] = {}
    for event in events:
        if type(event) is tuple:
            node = event[0]
            found = leave.get(type(node))
            if muted:
                if found:
                    for i, hook in found:
                        at = muted.get(i)
                        if at is None or at is node:
                            hook(node)
                for i in [i for i, at in muted.items() if at is node]:
                    del muted[i]
            elif found:
                for _, hook in found:
                    hook(node)
        else:
            found = visit.get(type(event))
            if not found:
                continue
            for i, hook in found:
                if muted and i in muted:
                    continue
                if hook(event) is False:
                    muted[i] = event
