"""Small builders for the code that fixes insert (runtime_guard calls and imports)."""

from __future__ import annotations

from typing import Sequence

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.rule import AddImport


def dotted(name: str) -> cst.BaseExpression:
    """``"runtime_guard.ray.interruptible_get"`` -> the Attribute chain expression."""
    parts = name.split(".")
    expr: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def guard_call(func: str, args: Sequence[cst.Arg] = ()) -> cst.Call:
    """A call of ``runtime_guard.<func>`` with ``args`` (e.g. ``hard_exit``)."""
    return cst.Call(func=dotted(f"runtime_guard.{func}"), args=list(args))


def strip_trailing_comma(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    args = list(args)
    if args and args[-1].comma is not cst.MaybeSentinel.DEFAULT:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return args


IMPORT_RUNTIME_GUARD = AddImport("runtime_guard")
