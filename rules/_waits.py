"""Tier-2 readings, on the ``ast``, of SHD102's ``_only_waits`` (a watcher coroutine that only
waits and cannot fail, so ``handles_own_errors`` holds): shared by SHD102, which rules a spawn
out only where the test surely holds, and SHD106, which keeps a file wherever it may hold."""

from __future__ import annotations

import ast
from typing import Optional


def sleep_call(c: ast.AST) -> bool:
    """Surely a call whose callee's code ends with ``sleep``: a name or attribute so ending,
    written with no parentheses around it."""
    if type(c) is not ast.Call or c.col_offset != c.func.col_offset:
        return False
    f = c.func
    return (type(f) is ast.Name and f.id.endswith("sleep")) or (type(f) is ast.Attribute and f.attr.endswith("sleep"))


def callee_word(c: ast.Call) -> Optional[str]:
    """The callee's name (a name's, an attribute's last), None for any other callee."""
    f = c.func
    return f.id if type(f) is ast.Name else f.attr if type(f) is ast.Attribute else None


def may_sleep(c: ast.AST) -> bool:
    """``c`` is a call whose callee's code may end in ``sleep``: a name or attribute so ending, or
    another callee (left to the rule)."""
    if type(c) is not ast.Call:
        return False
    name = callee_word(c)
    return name is None or name.endswith("sleep")


def only_waits(stmts: list, surely: bool) -> bool:
    """``_only_waits`` on the ``ast``: some statements, each ``pass`` or an expression statement
    holding a plain string, ``<x>.set()`` with no argument, or an awaited call that waits.

    ``surely`` (SHD102: True only where the rule's test is): the awaited call is ``sleep_call``.
    Otherwise (SHD106: False only where the rule's test is): the callee may end in ``sleep``
    (``may_sleep``) or its word ends in ``gather`` and it has a ``return_exceptions`` keyword."""
    if not stmts:
        return False
    for st in stmts:
        if type(st) is ast.Pass:
            continue
        if type(st) is not ast.Expr:
            return False
        v = st.value
        if type(v) is ast.Constant and type(v.value) in (str, bytes):
            continue
        if type(v) is ast.Await:
            c = v.value
            if surely:
                if sleep_call(c):
                    continue
                return False
            if type(c) is not ast.Call:
                return False
            if may_sleep(c) or (callee_word(c) or "").endswith("gather") and any(
                    k.arg == "return_exceptions" for k in c.keywords):
                continue
            return False
        if type(v) is ast.Call and type(v.func) is ast.Attribute and v.func.attr == "set" and not v.args \
                and not v.keywords:
            continue
        return False
    return True
