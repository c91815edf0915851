"""Run every selected rule in ONE traversal of a module.

Each rule instance contributes its ``visit_<Node>``/``leave_<Node>`` methods; we build a
dispatch table keyed by node class name once per file, so a node costs one dict lookup
plus the hooks that actually care about it.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Callable, Sequence

import libcst as cst

from .rule import Rule


class MultiRuleVisitor(cst.CSTVisitor):
    def __init__(self, rules: Sequence[Rule]) -> None:
        self._visit: dict[str, list[Callable]] = defaultdict(list)
        self._leave: dict[str, list[Callable]] = defaultdict(list)
        for rule in rules:
            for attr in type(rule).visitor_methods():
                kind, _, node_type = attr.partition("_")
                table = self._visit if kind == "visit" else self._leave
                table[node_type].append(getattr(rule, attr))
        self._visit = dict(self._visit)
        self._leave = dict(self._leave)

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
