"""Line and column of libcst nodes.

libcst nodes carry no positions: they come from rendering the module with a codegen state
that records each node's span. That costs about a parse, so it is paid only for modules
that need a position (files with findings, messages naming a line), once per module.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


def positions_of(module: cst.Module):
    """``{node: CodeRange}`` for every node, as ``MetadataWrapper.resolve(PositionProvider)``
    gives, without what ``resolve`` adds around the provider: a full ``module.visit`` for
    an empty batch of batchable providers (which rebuilds every node) cost as much as the
    render itself, ~0.4 s per 1,000 lines. Falls back to ``resolve`` if libcst changes."""
    try:
        from libcst.metadata.position_provider import PositionProvidingCodegenState

        provider = PositionProvider()
        state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                              default_newline=module.default_newline, provider=provider)
        module._codegen(state)
        return provider._computed
    except (ImportError, AttributeError, TypeError):  # pragma: no cover - another libcst
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


class Positions:
    """``{node: CodeRange}`` computed one top-level statement at a time.

    A file with findings needs the positions of a few nodes, yet ``positions_of`` renders
    the whole module (about the cost of its parse). Here only the top-level statements that
    hold an asked-for node are rendered, each from the line it starts on. That line comes
    from Python's ``ast`` of the same source (the candidate tier already parsed it): a
    statement's first line there, minus the blank and comment lines libcst files under it.
    Every guess is checked against the source text (the rendered statement must be there,
    at that line); when one is wrong, or no ``ast`` is at hand, or the node is not under a
    top-level statement, the whole module is rendered as before. Results are identical to
    ``positions_of`` (tests/perf/test_walk.py compares them node by node).
    """

    def __init__(self, module: cst.Module, text: str, tree, parent_of) -> None:
        self.module = module
        self.text = text
        self._tree = tree  # ast.Module or None
        self._parent_of = parent_of  # node -> parent (the facts' map; layout nodes absent)
        self._known: dict = {}
        self._done: set[int] = set()  # ids of rendered top-level statements
        self._full: dict | None = None
        self._starts: dict[int, int] | None = None  # id(top-level statement) -> 1-based line
        self._line_offsets: list[int] | None = None

    def __getitem__(self, node: cst.CSTNode):
        if self._full is not None:
            return self._full[node]
        found = self._known.get(node)
        if found is not None:
            return found
        top = self._top_level(node)
        if top is None or id(top) in self._done or not self._render(top):
            return self._everything()[node]
        return self._known[node]

    def _everything(self) -> dict:
        if self._full is None:
            self._full = positions_of(self.module)
        return self._full

    def _top_level(self, node: cst.CSTNode):
        cur, parent = node, self._parent_of(node)
        while parent is not None and parent is not self.module:
            cur, parent = parent, self._parent_of(parent)
        return cur if parent is self.module else None

    def _render(self, stmt: cst.CSTNode) -> bool:
        start = self._start_lines().get(id(stmt))
        if start is None:
            return False
        offsets = self._offsets()
        if start - 1 >= len(offsets):
            return False
        code = self.module.code_for_node(stmt)
        if not self.text.startswith(code, offsets[start - 1]):
            return False  # the guessed line is wrong: render the whole module instead
        try:
            from libcst.metadata.position_provider import PositionProvidingCodegenState

            provider = PositionProvider()
            state = PositionProvidingCodegenState(default_indent=self.module.default_indent,
                                                  default_newline=self.module.default_newline, provider=provider)
            state.line = start
            stmt._codegen(state)
        except (ImportError, AttributeError, TypeError):  # pragma: no cover - another libcst
            return False
        self._known.update(provider._computed)
        self._done.add(id(stmt))
        return True

    def _offsets(self) -> list[int]:
        if self._line_offsets is None:
            offsets, pos = [0], 0
            for line in self.text.splitlines(keepends=True):
                pos += len(line)
                offsets.append(pos)
            self._line_offsets = offsets
        return self._line_offsets

    def _start_lines(self) -> dict[int, int]:
        """Where each top-level statement starts, from the ``ast`` (see the class doc)."""
        if self._starts is None:
            import ast

            self._starts = {}
            body = list(self._tree.body) if self._tree is not None else None
            if body is None:
                return self._starts
            i = 0
            for stmt in self.module.body:
                count = len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
                if i >= len(body):
                    break
                first = body[i]
                line = first.lineno
                if isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and first.decorator_list:
                    line = min(d.lineno for d in first.decorator_list)
                self._starts[id(stmt)] = line - len(stmt.leading_lines)
                i += count
        return self._starts
