"""The package declares ``requires-python >= 3.10``; CI runs 3.11. Two 3.11-only features
broke shutdown-lint on 3.10 before they were caught (session 11: a traceback at start-up, and an
internal error on every file with a ``try``/``except`` that SHD101 reads):

- possessive quantifiers and atomic groups in regular expressions (``x*+``, ``(?>x)``), which
  3.10's ``re`` rejects ("multiple repeat");
- ``ast`` node classes added after 3.10 (``ast.TryStar``, the 3.12 type-parameter nodes, 3.14's
  template strings) read without a guard.

Checked statically over the installed sources (shutdown_lint, rules, runtime_guard), so the check
runs here whatever interpreter is installed."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for top in ("shutdown_lint", "rules", "runtime_guard") for p in (ROOT / top).rglob("*.py")
                 if "shutdown_lint/rules" not in p.as_posix())
#: a quantifier followed by ``+`` (possessive), not an escaped ``\+`` then ``+``; an atomic group
_NEWER_REGEX = re.compile(r"(?<!\\)[*+?}]\+|\(\?>")
#: ``ast`` classes 3.10 does not have
_NEWER_NODES = {"TryStar", "TypeAlias", "TypeVar", "ParamSpec", "TypeVarTuple", "TemplateStr", "Interpolation"}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _header(stmt: ast.stmt) -> list:
    """The parts of ``stmt`` that are not statements of their own (a compound statement's header)."""
    return [v for name, value in ast.iter_fields(stmt) for v in (value if isinstance(value, list) else [value])
            if isinstance(v, ast.AST) and not isinstance(v, (ast.stmt, ast.excepthandler))]


def _statements(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            yield node


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_regex_syntax_newer_than_310(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and id(node) not in docs:
            text = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
            if _NEWER_REGEX.search(text):
                found.append(f"{path.name}:{node.lineno}: {text!r}")
    assert not found, found


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_newer_ast_nodes_are_guarded(path):
    """A statement that reads ``ast.TryStar`` (or another newer class) as an attribute also asks
    ``hasattr(ast, ...)``; ``getattr(ast, "TryStar", None)`` needs no guard."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for stmt in _statements(tree):
        parts = _header(stmt)
        reads = [n for part in parts for n in ast.walk(part) if isinstance(n, ast.Attribute)
                 and n.attr in _NEWER_NODES and isinstance(n.value, ast.Name) and n.value.id == "ast"]
        guarded = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "hasattr"
                      and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id == "ast"
                      for part in parts for n in ast.walk(part))
        if reads and not guarded:
            found.append(f"{path.name}:{stmt.lineno}: ast.{reads[0].attr}")
    assert not found, found


def test_the_checks_catch_what_broke():
    assert _NEWER_REGEX.search(r"(?:[^'\\]++|\\[\s\S])*+'")
    assert _NEWER_REGEX.search("(?>a)")
    assert not _NEWER_REGEX.search(r"\++|[+]+|a+b*")
    tree = ast.parse("def f(t):\n    return None if type(t) is ast.TryStar else t.handlers\n")
    stmt = tree.body[0].body[0]
    assert any(isinstance(n, ast.Attribute) and n.attr == "TryStar" for part in _header(stmt) for n in ast.walk(part))
    header = ast.parse("if type(t) is ast.TryStar:\n    pass\n").body[0]
    assert any(isinstance(n, ast.Attribute) and n.attr == "TryStar" for part in _header(header) for n in ast.walk(part))
