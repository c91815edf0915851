"""Which rules a file still needs after each candidate tier, and the switches that turn the tiers off.

A rule declares its conditions on its own class (its words and vocabulary stay in the rule's
module): ``candidate`` (tier 1, a ``prefilter.words`` formula) and ``candidate_tree`` (tier
2, a function of a ``prefilter.ast_tree.Tree``). A rule that declares nothing is always a
candidate; so is a rule whose options are set explicitly in the settings (its vocabulary may
name words the declaration does not know).

This module must stay cheap to import: no libcst.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any, Callable, Iterator, Optional, Sequence

from .words import Cond, FileText

if TYPE_CHECKING:
    from ..rule import Rule
    from ..settings import Settings

#: Module switches, read by ``filter_rules`` / ``filter_rules_by_tree``; ``disabled()``
#: flips them for a block. ``SHUTDOWN_LINT_CANDIDATES=0`` turns both tiers off,
#: ``SHUTDOWN_LINT_TREE_TIER=0`` only the second (``ast``) one.
enabled: bool = os.environ.get("SHUTDOWN_LINT_CANDIDATES", "1") != "0"
tree_enabled: bool = os.environ.get("SHUTDOWN_LINT_TREE_TIER", "1") != "0"


@contextlib.contextmanager
def disabled(tree_only: bool = False) -> Iterator[None]:
    """Both tiers off for the block (only tier 2 with ``tree_only``)."""
    global enabled, tree_enabled
    before = enabled, tree_enabled
    if tree_only:
        tree_enabled = False
    else:
        enabled = False
    try:
        yield
    finally:
        enabled, tree_enabled = before


# --------------------------------------------------------------------------- declarations


def declaration(rule: "type[Rule]") -> Optional[Cond]:
    """The rule's tier-1 condition (``Rule.candidate``), or None: always a candidate."""
    cond = getattr(rule, "candidate", None)
    return cond if isinstance(cond, Cond) else None


def tree_declaration(rule: "type[Rule]"):
    """The rule's tier-2 condition (``Rule.candidate_tree``, a function of a
    ``prefilter.ast_tree.Tree``), or None: always a candidate."""
    cond = getattr(rule, "candidate_tree", None)
    return cond if callable(cond) else None


def filter_rules(source: bytes, rules: Sequence["type[Rule]"], settings: "Settings",
                 present=None) -> list["type[Rule]"]:
    """The rules that may report in ``source`` (order kept). ``present``: the file's one-pass
    scan (``prefilter.present``), which answers the names it did not find without a search.

    A condition that reads the file's code (``words.InCode``: built by scanning every string and
    comment) is checked on the code only when that can keep the file from ``ast``: when every
    rule still in is one such. Else the file is parsed for another rule anyway, and the rule's
    ``candidate_tree`` (sound on its own) judges it there: the code would cost more than it saves."""
    if not enabled:
        return list(rules)
    text = FileText(source, present)
    out = []
    code_only = True  # every rule in so far has a condition that reads the code
    for rule in rules:
        cond = declaration(rule)
        if cond is None or settings.rule_options.get(rule.code):
            out.append(rule)
            code_only = False
        elif cond.holds_on_text(text):
            out.append(rule)
            code_only = code_only and cond.reads_code
    if out and code_only:
        out = [rule for rule in out if declaration(rule).holds(text)]  # type: ignore[union-attr]
    return out


def filter_rules_by_tree(tree, rules: Sequence["type[Rule]"], settings: "Settings",
                         project: Optional[Callable[[], Any]] = None) -> list["type[Rule]"]:
    """Tier 2: the rules whose ``candidate_tree`` holds on ``tree`` (order kept).
    ``tree`` is None when ``ast`` could not parse the file: every rule stays (libcst judges).
    ``project``: gives the project index seen from the file (a ``ProjectView``, or None when the
    run has none), called once, when a rule declaring ``candidate_tree_project`` asks first."""
    if not enabled or not tree_enabled or tree is None or not tree.exact_names:
        return list(rules)
    out = []
    view: Any = _UNASKED
    for rule in rules:
        cond = tree_declaration(rule)
        if cond is None or settings.rule_options.get(rule.code):
            out.append(rule)
        elif getattr(rule, "candidate_tree_project", False):
            if view is _UNASKED:
                view = project() if project is not None else None
            if cond(tree, view):
                out.append(rule)
        elif cond(tree):
            out.append(rule)
    return out


_UNASKED = object()
