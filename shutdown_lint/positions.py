"""Line and column of libcst nodes.

libcst nodes carry no positions: they come from rendering the module with a codegen state
that records each node's span. That costs about a parse, so it is paid only for modules
that need a position (files with findings, messages naming a line), once per module.
"""

from __future__ import annotations

from .lazy_libcst import libcst as cst

from .facts.tree import chain_from_top


def positions_of(module: cst.Module):
    """``{node: CodeRange}`` for every node, as ``MetadataWrapper.resolve(PositionProvider)``
    gives, without what ``resolve`` adds around the provider: a full ``module.visit`` for
    an empty batch of batchable providers (which rebuilds every node) cost as much as the
    render itself, ~0.4 s per 1,000 lines. Falls back to ``resolve`` if libcst changes."""
    from libcst.metadata import MetadataWrapper, PositionProvider  # local: lazy_libcst

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
    """``{node: CodeRange}`` computed one statement at a time.

    A file with findings needs the positions of a few nodes, yet ``positions_of`` renders
    the whole module (about the cost of its parse). Here only the innermost statement that
    holds an asked-for node is rendered (a line of a method, not the whole class), from
    the line it starts on. That line comes from Python's ``ast`` of the same source (the
    candidate tier already parsed it): the statements of a block map one to one onto the
    ``ast``'s (a line of ``a; b`` is two there), and a statement's first line there, minus
    the blank and comment lines libcst files under it, is where its rendering starts. The
    rendering itself is checked against the source text (it must be there, at that line);
    when it is not, the top-level statement is tried, then the whole module is rendered
    as before, and so when no ``ast`` is at hand. Results are identical to
    ``positions_of`` (tests/perf/test_walk.py compares them node by node).
    """

    def __init__(self, module: cst.Module, text: str, tree, parent_of) -> None:
        self.module = module
        self.text = text
        self.tree = tree  # Python's ast.Module of the same text, or None (suppressions read it too)
        self._parent_of = parent_of  # node -> parent (the facts' map; layout nodes absent)
        self._known: dict = {}
        self._done: set[int] = set()  # ids of rendered statements
        self._full: dict | None = None
        self._line_offsets: list[int] | None = None

    def __getitem__(self, node: cst.CSTNode):
        if self._full is not None:
            return self._full[node]
        found = self._known.get(node)
        if found is not None:
            return found
        chain = chain_from_top(self.module, self._parent_of, node)
        if chain is not None and self.tree is not None:
            for stmt, line, indents in self._enclosing(chain):
                if id(stmt) not in self._done and self._render(stmt, line, indents):
                    found = self._known.get(node)
                    if found is not None:
                        return found
        return self._everything()[node]

    def _everything(self) -> dict:
        if self._full is None:
            self._full = positions_of(self.module)
        return self._full

    def _enclosing(self, chain: list):
        """(statement, first line, indents) for the statements of ``chain`` that the ``ast``
        locates, innermost first (the top-level one last)."""
        found = []
        stmt, node = _locate(self.module.body, self.tree.body, chain[0])
        if stmt is None:
            return found
        found.append((chain[0], _first_line(chain[0], node), []))
        on_chain = {id(n): i for i, n in enumerate(chain)}
        indents: list[str] = []
        cur, cur_ast = chain[0], node
        while True:
            step = None
            for block, ast_body in _blocks(cur, cur_ast):
                i = on_chain.get(id(block))
                if i is not None and i + 1 < len(chain):
                    step = block, ast_body, chain[i + 1]
                    break
            if step is None:
                break
            block, ast_body, child = step
            stmt, node = _locate(block.body, ast_body, child)
            if stmt is None:
                break
            indents = [*indents, self.module.default_indent if block.indent is None else block.indent]
            found.append((child, _first_line(child, node), indents))
            cur, cur_ast = child, node
        found.reverse()
        return found

    def _render(self, stmt: cst.CSTNode, start: int, indents: list[str]) -> bool:
        """Render ``stmt`` as if it began at line ``start`` under ``indents``; keep its
        positions if the rendering is what the source has there."""
        offsets = self._offsets()
        if start < 1 or start - 1 >= len(offsets):
            return False
        from libcst.metadata import PositionProvider  # local: lazy_libcst

        try:
            from libcst.metadata.position_provider import PositionProvidingCodegenState

            provider = PositionProvider()
            state = PositionProvidingCodegenState(default_indent=self.module.default_indent,
                                                  default_newline=self.module.default_newline, provider=provider)
            state.line = start
            state.indent_tokens.extend(indents)
            stmt._codegen(state)
        except (ImportError, AttributeError, TypeError):  # pragma: no cover - another libcst
            return False
        if not self.text.startswith("".join(state.tokens), offsets[start - 1]):
            return False  # the guessed line is wrong: try an enclosing statement
        self._known.update(provider._computed)
        self._done.add(id(stmt))
        return True

    def span(self, stmt: cst.CSTNode) -> tuple[int, int, list[str]] | None:
        """(start, end, indents) of ``stmt`` in the source text, its leading blank and comment
        lines excluded, and the indent tokens of its block: where a rendering of a changed
        ``stmt`` goes (the JSON edits of a fix). None when the ``ast`` cannot place it (then
        render the whole module)."""
        chain = chain_from_top(self.module, self._parent_of, stmt)
        if chain is None or self.tree is None:
            return None
        for found, line, indents in self._enclosing(chain):
            if found is not stmt:
                continue
            offsets = self._offsets()
            if line < 1 or line - 1 >= len(offsets):
                return None
            whole = render(self.module, stmt, indents)
            start = offsets[line - 1]
            if not self.text.startswith(whole, start):
                return None
            own = render(self.module, stmt.with_changes(leading_lines=()), indents)
            end = start + len(whole)
            if not whole.endswith(own):
                return None
            return end - len(own), end, indents
        return None

    def _offsets(self) -> list[int]:
        if self._line_offsets is None:
            offsets, pos = [0], 0
            for line in self.text.splitlines(keepends=True):
                pos += len(line)
                offsets.append(pos)
            self._line_offsets = offsets
        return self._line_offsets


def render(module: cst.Module, node: cst.CSTNode, indents: list[str]) -> str:
    """``node``'s code as ``module`` writes it inside blocks indented by ``indents``."""
    from libcst._nodes.internal import CodegenState

    state = CodegenState(default_indent=module.default_indent, default_newline=module.default_newline)
    state.indent_tokens.extend(indents)
    node._codegen(state)
    return "".join(state.tokens)


def _locate(statements, ast_statements, target):
    """(target, its ``ast`` statement) when ``target`` is one of ``statements``, a block's
    libcst statements, and the block's ``ast`` statements line up; else (None, None)."""
    i = 0
    for stmt in statements:
        if i >= len(ast_statements):
            return None, None
        if stmt is target:
            return stmt, ast_statements[i]
        i += len(stmt.body) if isinstance(stmt, cst.SimpleStatementLine) else 1
    return None, None


def _first_line(stmt: cst.CSTNode, node) -> int:
    """The line ``stmt``'s rendering starts on: its ``ast`` line (a decorated definition's
    first decorator), less the blank and comment lines libcst puts before it."""
    import ast

    line = node.lineno
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
        line = min(d.lineno for d in node.decorator_list)
    return line - len(getattr(stmt, "leading_lines", ()))


def _blocks(stmt: cst.CSTNode, node):
    """The indented blocks of a compound statement, each with the ``ast`` statements it
    holds: a body, an ``else``, each handler, a ``finally``, and an ``elif``'s blocks as
    the ``if``'s own (an ``elif`` renders only as part of its ``if``)."""
    import ast

    def block(b):
        return b if isinstance(b, cst.IndentedBlock) else None

    out = []
    body = block(getattr(stmt, "body", None))
    ast_body = getattr(node, "body", None)
    if body is not None and isinstance(ast_body, list):
        out.append((body, ast_body))
    if isinstance(stmt, (cst.Try, cst.TryStar)) and isinstance(node, (ast.Try, getattr(ast, "TryStar", ast.Try))):
        if len(stmt.handlers) == len(node.handlers):
            for h, ah in zip(stmt.handlers, node.handlers):
                if block(h.body) is not None:
                    out.append((h.body, ah.body))
        if stmt.finalbody is not None and block(stmt.finalbody.body) is not None:
            out.append((stmt.finalbody.body, node.finalbody))
    orelse = getattr(stmt, "orelse", None)
    ast_orelse = getattr(node, "orelse", None)
    if isinstance(orelse, cst.Else) and block(orelse.body) is not None and isinstance(ast_orelse, list):
        out.append((orelse.body, ast_orelse))
    elif isinstance(orelse, cst.If) and isinstance(ast_orelse, list) and len(ast_orelse) == 1 \
            and isinstance(ast_orelse[0], ast.If):
        out.extend(_blocks(orelse, ast_orelse[0]))
    return out
