"""The rules' one traversal of a module: ``MultiRuleVisitor`` (see ``traversal.py``).

A module of its own because its class is based on libcst's ``CSTVisitor``: ``traversal`` and
``analyzer`` import it on first use, so that an ast-only run does not import libcst
(``lazy_libcst``)."""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence

import libcst as cst

from .rule import Rule
from .traversal import _types_named, leaf_types, skippable


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
        self.skip = skippable(hooked) | frozenset(t for t in leaf_types() if t.__name__ not in hooked)

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
        if not (skip >= skipped and skip - skipped <= leaf_types()):
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
