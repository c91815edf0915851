"""Run every selected rule in ONE traversal of a module.

Each rule instance contributes its ``visit_<Node>``/``leave_<Node>`` methods; we build a
dispatch table keyed by node class name once per file, so a node costs one dict lookup
plus the hooks that actually care about it (``MultiRuleVisitor``, in ``rule_visitor.py``).

Importing this module does not import libcst (``lazy_libcst``: the rules import ``walk`` and
an ast-only run never needs libcst): the names that read libcst, ``TRIVIA``, ``LEAVES`` and
``MultiRuleVisitor``, are made on their first read (``__getattr__`` below; in here, ``trivia_types()``
and ``leaf_types()``).
"""

from __future__ import annotations

import functools
import inspect
import re
from typing import Callable, Iterable

from .lazy_libcst import libcst as cst


# ---------------------------------------------------------------------------- walk
# ``CSTNode.visit`` rebuilds every node it passes (``_visit_and_replace_children``
# constructs a new dataclass per node, with validation) and calls two attribute hooks
# per field: on real code that costs 5-7x the parse itself. ``walk`` calls the same
# ``on_visit``/``on_leave`` on the same nodes in the same order, without rebuilding:
# the child order per node class is read once from libcst's own
# ``_visit_and_replace_children`` (the field names it passes to ``visit_*``).
# Attribute hooks (``visit_<Node>_<field>``) are not called: the engine never
# dispatched them to rules. The walk is iterative: no recursion limit.

_FIELD_RE = re.compile(
    r'visit_(required|optional|sentinel|sequence|iterable|body_sequence|body_iterable)\(\s*self,\s*"(\w+)"'
)
_SEQUENCE_HELPERS = frozenset({"sequence", "iterable", "body_sequence", "body_iterable"})
#: per class: ((field name, is_sequence), ...) in visiting order, or None (unreadable)
_ORDER: dict[type, tuple[tuple[str, bool], ...] | None] = {}


def _child_fields(cls: type) -> tuple[tuple[str, bool], ...] | None:
    """Field names in libcst's visiting order, each with whether it holds a sequence
    (a field visited both ways, like ``ImportFrom.names``, counts as single and is
    checked per value); None when they cannot be read (then ``node.children``, exact
    but slow, is used)."""
    try:
        return _ORDER[cls]
    except KeyError:
        pass
    try:
        kinds: dict[str, set[bool]] = {}
        for helper, name in _FIELD_RE.findall(inspect.getsource(cls._visit_and_replace_children)):
            kinds.setdefault(name, set()).add(helper in _SEQUENCE_HELPERS)
        order: tuple[tuple[str, bool], ...] | None = tuple((n, k == {True}) for n, k in kinds.items())
    except (OSError, TypeError):
        order = None
    _ORDER[cls] = order
    return order


def children(node: cst.CSTNode, skip: frozenset = frozenset()) -> list[cst.CSTNode]:
    """``node.children`` without rebuilding ``node``, leaving out nodes whose type is in
    ``skip``."""
    return _table(skip).of(type(node))(node)


class _ChildrenTable(dict):
    """Per node class, a function node -> its children except those whose type is in
    ``skip``, written out field by field for the class: the walks call it ~2 million times
    on a large corpus, and a generic loop over the field names (``getattr`` by name, an
    ``isinstance`` against libcst's abstract base per field) cost three times as much."""

    def __init__(self, skip: frozenset) -> None:
        super().__init__()
        self.skip = skip
        self.keep = frozenset(t for t in _node_types() if t not in skip)

    def of(self, cls: type) -> Callable:
        fn = self.get(cls)
        if fn is None:
            fn = self[cls] = self._make(cls)
        return fn

    def _make(self, cls: type) -> Callable:
        order = _child_fields(cls)
        skip = self.skip
        if order is None:
            return lambda node: [c for c in node.children if type(c) not in skip]
        lines = ["def children(node):", "    out = []"]
        for name, is_sequence in order:
            lines.append(f"    v = node.{name}")
            if is_sequence:  # a sequence field may be None (FormattedStringExpression.format_spec)
                lines += ["    if v:", "        out += [c for c in v if type(c) not in skip]"]
            else:
                lines += ["    t = type(v)",
                          "    if t in keep:", "        out.append(v)",
                          "    elif t is list or t is tuple:", "        out += [c for c in v if type(c) not in skip]",
                          # a node class libcst made after the table (never seen; kept exact)
                          "    elif v is not None and t not in skip and t is not MaybeSentinel"
                          " and isinstance(v, CSTNode):",
                          "        out.append(v)"]
        lines.append("    return out")
        namespace: dict = {"CSTNode": cst.CSTNode, "MaybeSentinel": cst.MaybeSentinel, "skip": skip,
                           "keep": self.keep}
        exec(compile("\n".join(lines), f"<children of {cls.__name__}>", "exec"), namespace)
        return namespace["children"]


_TABLES: dict[frozenset, _ChildrenTable] = {}


def _table(skip: frozenset) -> _ChildrenTable:
    table = _TABLES.get(skip)
    if table is None:
        table = _TABLES[skip] = _ChildrenTable(skip)
    return table


def _node_types() -> set[type]:
    """Every libcst node class there is."""
    out: set[type] = set()
    stack = [cst.CSTNode]
    while stack:
        cls = stack.pop()
        for sub in cls.__subclasses__():
            if sub not in out:
                out.add(sub)
                stack.append(sub)
    return out


def walk(root: cst.CSTNode, visitor: cst.CSTVisitor, skip: frozenset | None = None) -> None:
    """``root.visit(visitor)`` for a read-only visitor, 5x+ cheaper (see above). Nodes
    whose type is in ``skip`` are not visited, nor anything under them (``TRIVIA``); by
    default, layout is skipped for a visitor with only ``visit_``/``leave_`` hooks that
    name no layout type, and walked for one that overrides ``on_visit``/``on_leave``."""
    if skip is None:
        skip = _auto_skip(type(visitor))
    from .rule_visitor import MultiRuleVisitor  # local: it imports libcst (already imported: a tree is here)

    if type(visitor) is MultiRuleVisitor and visitor.replay(root, skip):
        return
    if _plain(visitor):
        _walk_hooks(root, visitor, skip)
        return
    on_visit, on_leave = visitor.on_visit, visitor.on_leave
    if not on_visit(root):
        on_leave(root)
        return
    table = _table(skip)
    stack = [(root, iter(table.of(type(root))(root)))]
    while stack:
        node, pending = stack[-1]
        for child in pending:
            if on_visit(child):
                fn = table.get(type(child)) or table.of(type(child))
                stack.append((child, iter(fn(child))))
                break
            on_leave(child)
        else:
            stack.pop()
            on_leave(node)


def _plain(visitor: cst.CSTVisitor) -> bool:
    """``visitor`` dispatches as ``CSTVisitor`` does (its class keeps libcst's ``on_visit`` and
    ``on_leave``, and no hook is an attribute of the instance itself)."""
    cls = type(visitor)
    if cls.on_visit is not cst.CSTVisitor.on_visit or cls.on_leave is not cst.CSTVisitor.on_leave:
        return False
    own = getattr(visitor, "__dict__", None)
    return not own or not any(k.startswith(("visit_", "leave_")) for k in own)


def _hook(cls: type, visitor: cst.CSTVisitor, name: str):
    """``getattr(visitor, name, None)``, or None for libcst's empty default hook."""
    fn = getattr(cls, name, None)
    if fn is None or getattr(fn, "__module__", "").startswith("libcst"):
        return None
    return getattr(visitor, name)


def _walk_hooks(root: cst.CSTNode, visitor: cst.CSTVisitor, skip: frozenset) -> None:
    """``walk`` for a visitor with libcst's own ``on_visit``/``on_leave`` (``_plain``): those
    format the hook's name and ``getattr`` it twice per node, then call libcst's empty
    default for the ~95% of nodes the visitor has no hook for. Here each node class's hooks
    are looked up once per walk and the empty defaults are not called; the same hooks are
    called on the same nodes in the same order, and a ``visit_`` hook that returns False
    still prunes (the rules' nested walks: ~900 on rt's libcst files)."""
    cls = type(visitor)
    table = _table(skip)
    hooks: dict[type, tuple] = {}

    def hooks_of(t: type) -> tuple:
        found = hooks[t] = (_hook(cls, visitor, "visit_" + t.__name__), _hook(cls, visitor, "leave_" + t.__name__))
        return found

    visit, leave = hooks_of(type(root))
    if visit is not None and visit(root) is False:
        if leave is not None:
            leave(root)
        return
    stack = [(root, iter(table.of(type(root))(root)), leave)]
    while stack:
        top = stack[-1]
        for child in top[1]:
            t = type(child)
            visit, leave = hooks.get(t) or hooks_of(t)
            if visit is None or visit(child) is not False:
                stack.append((child, iter((table.get(t) or table.of(t))(child)), leave))
                break
            if leave is not None:
                leave(child)
        else:
            stack.pop()
            if top[2] is not None:
                top[2](top[0])


def _auto_skip(cls: type) -> frozenset:
    key = (cls.__module__, cls.__qualname__)  # visitors defined in functions: one entry per definition
    known = _AUTO.get(key)
    if known is None:
        overrides = any(k in vars(c) for c in _own_classes(cls) for k in ("on_visit", "on_leave"))
        known = _AUTO[key] = frozenset() if overrides else skippable(own_hooks(cls))
    return known


def own_hooks(cls: type) -> list[str]:
    """Node type names a visitor class has ``visit_``/``leave_`` hooks for: its own and its
    bases', not the empty ones every ``CSTVisitor`` inherits from libcst."""
    return [a.split("_", 1)[1] for c in _own_classes(cls) for a in vars(c) if a.startswith(("visit_", "leave_"))]


def _own_classes(cls: type) -> list[type]:
    return [c for c in cls.__mro__ if c is not object and not c.__module__.startswith("libcst")]


_AUTO: dict[tuple[str, str], frozenset] = {}


# ---------------------------------------------------------------------------- trivia
# About 60% of a libcst tree is layout: whitespace, newlines, commas, dots, brackets,
# operators and the comments inside them. The engine's two walks (the facts' collector and
# the rules' traversal) hook none of these types, so they skip them, and everything under
# them: nothing under a layout node is anything but layout. A walk whose hooks name one of
# them (a nested walk looking for comments) walks everything.


@functools.cache
def trivia_types() -> frozenset:
    """``TRIVIA``: the layout node types."""
    names = ("SimpleWhitespace", "ParenthesizedWhitespace", "Newline", "TrailingWhitespace", "EmptyLine",
             "Comment", "Comma", "Dot", "Colon", "Semicolon", "AssignEqual", "LeftParen", "RightParen",
             "LeftSquareBracket", "RightSquareBracket", "LeftCurlyBrace", "RightCurlyBrace")
    out = {getattr(cst, n) for n in names if isinstance(getattr(cst, n, None), type)}
    bases = tuple(getattr(cst, n) for n in ("BaseBinaryOp", "BaseBooleanOp", "BaseCompOp", "BaseUnaryOp",
                                             "BaseAugOp") if hasattr(cst, n))
    for name in dir(cst):
        obj = getattr(cst, name)
        if isinstance(obj, type) and issubclass(obj, bases) and not inspect.isabstract(obj) and obj not in bases:
            out.add(obj)
    return frozenset(out)


@functools.cache
def _trivia_names() -> frozenset:
    return frozenset(t.__name__ for t in trivia_types())


@functools.cache
def leaf_types() -> frozenset:
    """``LEAVES``: node types with nothing under them but layout: a walk may skip one that no hook names."""
    return frozenset(getattr(cst, n) for n in (
        "Name", "Integer", "Float", "Imaginary", "SimpleString", "FormattedStringText", "Asynchronous", "Ellipsis",
        "Pass", "Break", "Continue") if isinstance(getattr(cst, n, None), type))


def __getattr__(name: str):
    """``TRIVIA`` (``trivia_types()``), ``LEAVES`` (``leaf_types()``) and ``MultiRuleVisitor``
    (``rule_visitor.py``), made on their first read: they read libcst."""
    if name == "TRIVIA":
        value = trivia_types()
    elif name == "LEAVES":
        value = leaf_types()
    elif name == "MultiRuleVisitor":
        from .rule_visitor import MultiRuleVisitor as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def skippable(hooked: Iterable[str]) -> frozenset:
    """``TRIVIA`` when none of the ``hooked`` node type names is a layout type, else nothing
    (``Comma_whitespace_after``, an attribute hook's name, counts as ``Comma``)."""
    return frozenset() if _trivia_names().intersection(h.split("_", 1)[0] for h in hooked) else trivia_types()


_BY_NAME: dict[frozenset, frozenset] = {}


def _types_named(names: Iterable[str]) -> frozenset:
    """The libcst node classes named in ``names`` (other names are left out)."""
    wanted = frozenset(names)
    known = _BY_NAME.get(wanted)
    if known is None:
        known = _BY_NAME[wanted] = frozenset(t for t in _node_types() if t.__name__ in wanted)
    return known


_RECORDED: dict[frozenset, tuple[frozenset, frozenset]] = {}


def recorded_types(skip: frozenset) -> tuple[frozenset, frozenset]:
    """The node types some registered rule has a ``visit_`` hook for, and those it has a
    ``leave_`` hook for, less the types in ``skip``: the facts' walk (which skips ``skip``)
    records where they are visited and left, for ``MultiRuleVisitor.replay``."""
    known = _RECORDED.get(skip)
    if known is None:
        from . import registry  # local: the registry imports the rules, which import this module

        visits: set[str] = set()
        leaves: set[str] = set()
        for rule in registry.all_rules():
            for attr in rule.visitor_methods():
                kind, _, name = attr.partition("_")
                (visits if kind == "visit" else leaves).add(name)
        known = _RECORDED[skip] = (_types_named(visits) - skip, _types_named(leaves) - skip)
    return known
