"""One source parsed both ways (libcst with its facts and positions, Python's ``ast`` with its
facts), shared by the engine-equality tests (test_ast_engine, test_ast_exit_paths): a file's
comparisons of facts and of exit paths run on one parse, one positions pass and one walk."""

from __future__ import annotations

import ast
from pathlib import Path

import libcst as cst

from shutdown_lint.ast_engine import AstFacts
from shutdown_lint.facts import ModuleFacts
from shutdown_lint.positions import positions_of
from shutdown_lint.traversal import walk as cst_walk

REPO = Path(__file__).resolve().parents[2]


def own_sources() -> list[Path]:
    """The example project, the engine's sources, the rules (with their helpers) and runtime_guard."""
    files = sorted((REPO / "examples").rglob("*.py"))
    files += sorted((REPO / "shutdown_lint").rglob("*.py"))
    files += sorted((REPO / "rules").glob("*.py"))
    files += sorted((REPO / "runtime_guard").rglob("*.py"))
    return files


class Both:
    """One source parsed both ways, with libcst's positions."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.module = cst.parse_module(source)
        self.cst = ModuleFacts.build(self.module)
        self.cst.source_text = source
        self.pos = positions_of(self.module)
        self.tree = ast.parse(source)
        self.ast = AstFacts.build(self.tree, source)
        self._preorder: list | None = None

    def cst_span(self, node) -> tuple[int, int, int, int]:
        r = self.pos[node]
        return (r.start.line, r.start.column, r.end.line, r.end.column)

    def cst_nodes(self, types: tuple) -> list:
        """The libcst nodes of ``types`` in walk order (every node is walked once per source)."""
        if self._preorder is None:
            found = self._preorder = []

            class _V(cst.CSTVisitor):
                def on_visit(self, node) -> bool:
                    found.append(node)
                    return True

            cst_walk(self.module, _V())
        return [n for n in self._preorder if isinstance(n, types)]
