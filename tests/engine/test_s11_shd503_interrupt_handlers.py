"""SHD503's "does this handler catch Ctrl+C" (``_catches_interrupt`` on libcst,
``_ast_catches_interrupt`` on ast), now read through ``caught_types``: bare counts, a type whose
last name is KeyboardInterrupt/BaseException counts, a ``*x`` element never does (read as
written: the rule did not unwrap it before ``caught_types`` did). The same answer on both trees.
Helper FOLD2's two surviving mutants (bare not counting; ``*x`` unwrapped) fail here."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from rules.shd503_executor_without_shutdown import _ast_catches_interrupt, _catches_interrupt

from .both_trees import Both

CASES = [
    ("except:", True),
    ("except KeyboardInterrupt:", True),
    ("except x.KeyboardInterrupt:", True),
    ("except BaseException as e:", True),
    ("except (OSError, KeyboardInterrupt):", True),
    ("except (*E, x.KeyboardInterrupt):", True),
    ("except (*KeyboardInterrupt, OSError):", False),
    ("except (*BaseException,):", False),
    ("except OSError:", False),
    ("except Exception:", False),
    ("except ():", False),
]


@pytest.mark.parametrize("header, expected", CASES, ids=[h for h, _ in CASES])
def test_catches_interrupt_on_both_trees(header: str, expected: bool) -> None:
    b = Both(f"E = (OSError,)\ntry:\n    pass\n{header}\n    pass\n")
    (ch,) = b.cst_nodes((cst.ExceptHandler,))
    (ah,) = [n for n in ast.walk(b.tree) if type(n) is ast.ExceptHandler]
    assert _catches_interrupt(b.cst, ch) is expected
    assert _ast_catches_interrupt(b.ast, ah) is expected
