"""Run every selected rule in ONE traversal of a module.

Each rule instance contributes its ``visit_<Node>``/``leave_<Node>`` methods; we build a
dispatch table keyed by node class name once per file, so a node costs one dict lookup
plus the hooks that actually care about it.
"""

from __future__ import annotations

import inspect
import re
from collections import defaultdict
from typing import Callable, Iterable, Sequence

import libcst as cst

from .rule import Rule

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


_GENERIC_VISIT = cst.CSTVisitor.on_visit
_GENERIC_LEAVE = cst.CSTVisitor.on_leave


def _plain(visitor: cst.CSTVisitor) -> bool:
    """``visitor`` dispatches as ``CSTVisitor`` does (its class keeps libcst's ``on_visit`` and
    ``on_leave``, and no hook is an attribute of the instance itself)."""
    cls = type(visitor)
    if cls.on_visit is not _GENERIC_VISIT or cls.on_leave is not _GENERIC_LEAVE:
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


def _trivia_types() -> frozenset:
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


TRIVIA: frozenset = _trivia_types()
_TRIVIA_NAMES = frozenset(t.__name__ for t in TRIVIA)


#: Node types with nothing under them but layout: a walk may skip one that no hook names.
LEAVES: frozenset = frozenset(getattr(cst, n) for n in (
    "Name", "Integer", "Float", "Imaginary", "SimpleString", "FormattedStringText", "Asynchronous", "Ellipsis",
    "Pass", "Break", "Continue") if isinstance(getattr(cst, n, None), type))


def skippable(hooked: Iterable[str]) -> frozenset:
    """``TRIVIA`` when none of the ``hooked`` node type names is a layout type, else nothing
    (``Comma_whitespace_after``, an attribute hook's name, counts as ``Comma``)."""
    return frozenset() if _TRIVIA_NAMES.intersection(h.split("_", 1)[0] for h in hooked) else TRIVIA


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


class MultiRuleVisitor(cst.CSTVisitor):
    def __init__(self, rules: Sequence[Rule]) -> None:
        #: the facts all the rules read (their walk's record is replayed: ``replay``), or None
        shared = {id(getattr(rule, "facts", None)) for rule in rules}
        self._facts = getattr(rules[0], "facts", None) if rules and len(shared) == 1 else None
        self._visit: dict[str, list[Callable]] = defaultdict(list)
        self._leave: dict[str, list[Callable]] = defaultdict(list)
        for rule in rules:
            for attr in type(rule).visitor_methods():
                kind, _, node_type = attr.partition("_")
                table = self._visit if kind == "visit" else self._leave
                table[node_type].append(getattr(rule, attr))
        self._visit = dict(self._visit)
        self._leave = dict(self._leave)
        #: what the one traversal may skip (``walk(..., skip=visitor.skip)``): layout, and
        #: the leaves no rule hooks (names and literals are ~40% of what is left)
        hooked = {*self._visit, *self._leave}
        self.skip = skippable(hooked) | frozenset(t for t in LEAVES if t.__name__ not in hooked)

    def replay(self, root: cst.CSTNode, skip: frozenset) -> bool:
        """``walk(root, self, skip)`` without walking, when the rules' facts were built from
        ``root``: their walk recorded the nodes this one would call hooks on, in the same order
        (``ModuleFacts.build``), and calling the hooks on those costs a few percent of a walk.
        False (nothing done) when the record cannot stand in: other facts, or a hook on a type
        the facts' walk did not record (a rule from outside the registry, a hook on layout)."""
        events = self._recorded_events(root, skip)
        if events is None:
            return False
        visit, leave = self._visit, self._leave
        for event in events:
            if type(event) is tuple:
                node = event[0]
                hooks = leave.get(type(node).__name__)
            else:
                node = event
                hooks = visit.get(type(node).__name__)
            if hooks:
                for hook in hooks:
                    hook(node)
        return True

    def _recorded_events(self, root: cst.CSTNode, skip: frozenset) -> list | None:
        record = getattr(self._facts, "_walk_recorded", None)
        if record is None or record[0] is not root:
            return None
        _, skipped, visits, leaves = record
        # the same nodes: this walk skips what the facts' walk skipped, and besides only
        # leaves with nothing but layout under them (``LEAVES``)
        if not (skip >= skipped and skip - skipped <= LEAVES):
            return None
        if not (_types_named(self._visit) <= visits and _types_named(self._leave) <= leaves):
            return None
        return self._facts._walk_events

    def on_visit(self, node: cst.CSTNode) -> bool:
        hooks = self._visit.get(type(node).__name__)
        if hooks:
            for hook in hooks:
                # A rule cannot prune the walk for the others: return values are ignored.
                hook(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        hooks = self._leave.get(type(original_node).__name__)
        if hooks:
            for hook in hooks:
                hook(original_node)
