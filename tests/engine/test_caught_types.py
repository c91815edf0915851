"""``caught_types``: the exception types an ``except`` / ``except*`` handler names, asked of
libcst's facts (``Names.caught_types``) and of ``ast``'s (``AstFacts.caught_types``). One answer
per handler shape, the same on both trees: None for a bare ``except:``, a tuple's elements (a
starred one by its value), else the expression itself (SHD101, SHD104, SHD202, SHD403, SHD501
and the libcst exit paths read handlers through it)."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from .both_trees import Both

# (what follows ``except``, the types' code in order; None: bare)
SHAPES = [
    ("", None),
    (" KeyboardInterrupt", ["KeyboardInterrupt"]),
    (" asyncio.CancelledError", ["asyncio.CancelledError"]),
    (" (KeyboardInterrupt, asyncio.CancelledError)", ["KeyboardInterrupt", "asyncio.CancelledError"]),
    (" (KeyboardInterrupt,)", ["KeyboardInterrupt"]),
    (" ()", []),
    (" ((KeyboardInterrupt, OSError), asyncio.CancelledError)",
     ["(KeyboardInterrupt, OSError)", "asyncio.CancelledError"]),
    (" (*ERRORS, asyncio.CancelledError)", ["ERRORS", "asyncio.CancelledError"]),
    (" (OSError, *(KeyboardInterrupt, ValueError))", ["OSError", "(KeyboardInterrupt, ValueError)"]),
    (" (KeyboardInterrupt)", ["(KeyboardInterrupt)"]),
    (" (\n    KeyboardInterrupt,\n    asyncio.CancelledError,\n)", ["KeyboardInterrupt", "asyncio.CancelledError"]),
    (" anyio.get_cancelled_exc_class()", ["anyio.get_cancelled_exc_class()"]),
    (" ERRORS[0]", ["ERRORS[0]"]),
]


def _answers(header: str) -> tuple:
    """Each tree's answer for the one handler of ``try: ... <header>: ...``: None, or per type
    its code, its node class's name and its qualified name."""
    source = f"import asyncio\nimport anyio\nERRORS = (OSError,)\ntry:\n    pass\n{header}:\n    pass\n"
    b = Both(source)
    (ch,) = b.cst_nodes((cst.ExceptHandler, cst.ExceptStarHandler))
    (ah,) = [n for n in ast.walk(b.tree) if type(n) is ast.ExceptHandler]
    code = cst.Module([]).code_for_node

    def read(facts, handler, code_of):
        types = facts.caught_types(handler)
        if types is None:
            return None
        return [(code_of(e), type(e).__name__, facts.qualified_name(e, handler)) for e in types]

    return read(b.cst, ch, code), read(b.ast, ah, b.ast.code_for_node)


# every shape after ``except`` and (all but the bare one) after ``except*``
CASES = [(f"except{star}{shape}", expected) for star in ("", "*") for shape, expected in SHAPES if shape or not star]


@pytest.mark.parametrize("header, expected", CASES, ids=[h for h, _ in CASES])
def test_caught_types_same_on_both_trees(header: str, expected) -> None:
    on_cst, on_ast = _answers(header)
    assert on_cst == on_ast
    assert (None if on_cst is None else [text for text, _, _ in on_cst]) == expected


def test_qualified_names_of_the_types() -> None:
    """The elements are the nodes the rules ask ``qualified_name`` of (a starred one's value)."""
    on_cst, on_ast = _answers("except (KeyboardInterrupt, *ERRORS, asyncio.CancelledError)")
    assert on_cst == on_ast
    assert [(kind, name) for _, kind, name in on_cst] == [
        ("Name", "builtins.KeyboardInterrupt"), ("Name", None), ("Attribute", "asyncio.CancelledError")]
