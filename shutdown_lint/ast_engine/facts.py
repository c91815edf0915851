"""``AstFacts``: the shared facts of ``facts.ModuleFacts``, built from Python's ``ast`` tree
that the candidate tier already parsed (no libcst parse).

Same method names and meanings as ``ModuleFacts``, with ``ast`` nodes; the model classes
(``FunctionInfo``, ``ClassInfo``, ``_Binding``) are the same, holding ``ast`` nodes. What
does not depend on the tree's node classes is inherited from the libcst facts' mixins
(``TreeShape``, ``Names``: lookup, qualified-name caching, call-result types, callees, module
aliases); what does is written here for ``ast``; where code runs (``contexts``, ``callers``,
``runs_in_*``...) is ``ast_engine.execution``'s (R502). Where the two trees differ:

- ``enclosing_statement``: the ``ast`` statement (``a; b`` is two statements; libcst's is the
  ``SimpleStatementLine`` holding both).
- ``in_cleanup_block``: ``ast`` has no ``Finally`` node: a node in ``Try.finalbody`` or in an
  ``except`` handler's body (its own function's) is in one.
- ``name_nodes`` and ``_Binding.order`` count ``ast.Name`` nodes only: libcst's ``Name`` is
  also the name of a def, a class, a parameter, a keyword argument, an attribute, an alias.
- ``code_for_node``: libcst's text, rebuilt from the source lines (the leading comment and blank
  lines a statement owns, block footers, relative indentation, owned parentheses, ``elif`` as
  ``if``); equal on every statement alone on its line and every call, callee and argument of the
  tests' sources. A statement sharing its line (``a; b``, ``if x: f()``) gives its bare slice
  (libcst's adds the ``;`` and the space after it).
- ``_is_main_guard``: ``"__ma" "in__"`` counts (``ast`` joins the strings; libcst's does not).
- ``except* E as e`` binds nothing (as libcst's collector, which binds ``ExceptHandler`` names only).
"""

from __future__ import annotations

import ast
import bisect
import io
import re
import tokenize
from typing import Iterator, Optional

from ..facts.collector import _Scopes
from ..facts.model import ClassInfo, FunctionInfo, _Binding
from ..facts.module import FactTables
from ..facts.names import Names
from ..facts.tree import TreeShape
from .execution import AstExecutionQueries
from .walk import children, iter_children_of, leaf_type

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEF_TYPES = frozenset(_DEFS)
_FUNCTION_OR_LAMBDA = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda})
_SCOPE_LIKE = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
_TRYS = frozenset({ast.Try, getattr(ast, "TryStar", ast.Try)})


_UNASKED = object()


def decode(source: bytes) -> str:
    """The source's text, decoded as libcst decodes it (its encoding is ``tokenize``'s)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return source.decode("utf-8", errors="replace")


class AstFacts(FactTables, TreeShape, Names, AstExecutionQueries):
    """Facts about one module's ``ast``. Built by ``AstFacts.build(module, source_text)``."""

    # ``TreeShape``'s walks up the tree (``enclosing_function``, ``enclosing_class``, ``in_lambda``,
    # ``scope_of``) on ``ast``'s classes
    _DEF_TYPES = _DEF_TYPES
    _CLASS_TYPE = ast.ClassDef
    _LAMBDA_TYPE = ast.Lambda
    _FUNCTION_OR_LAMBDA_TYPES = _FUNCTION_OR_LAMBDA
    _CALL_TYPE = ast.Call

    def __init__(self, module: ast.Module, path: str = "<string>") -> None:
        super().__init__(module, path)  # ``FactTables``: the walk's tables, as libcst's
        self._lines: Optional[list[str]] = None
        #: the checks' walk events recorded by the facts' walk (``walk.run``)
        self._events: list = []
        #: call -> ``resolve_call``'s answer
        self._resolved_calls: dict = {}

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, module: ast.Module, source_text: Optional[str] = None, path: str = "<string>",
              visits: frozenset = frozenset(), leaves: frozenset = frozenset()) -> "AstFacts":
        """The facts of ``module`` (``source_text``: its text, for positions and code). The walk
        also records the events of the node types in ``visits``/``leaves`` (``walk.record``)."""
        facts = cls(module, path)
        facts.source_text = source_text
        _Collector(facts).run(module, visits, leaves)
        for fn, exprs in facts._decorator_exprs.items():
            fn.decorators = [d for d in (facts._decorator_name(e, fn.scope) for e in exprs) if d]
        for c, exprs in facts._class_decorator_exprs.items():
            c.decorators = [d for d in (facts._decorator_name(e, c.scope) for e in exprs) if d]
        return facts

    def release(self) -> None:
        """Break the reference cycles (as ``ModuleFacts.release``); unusable afterwards."""
        for fn in self.functions:
            fn.__dict__.clear()
        for c in self.classes:
            c.__dict__.clear()
        self.__dict__.clear()

    # ------------------------------------------------------------------ tree shape (ast)
    def name_nodes(self, region: ast.AST, value: str) -> list[ast.Name]:
        """The ``ast.Name`` nodes spelled ``value`` in ``region``, in source order."""
        return [n for n in self._names_by_value.get(value, ()) if self._within(region, n)]

    def enclosing_statement(self, node: ast.AST) -> Optional[ast.stmt]:
        """The statement that contains ``node``: its ``ast`` statement (``a; b``: two of them,
        where libcst has one line holding both), or, for a body written on its header's line
        (``if x: f()``), the compound statement, as libcst's (``SimpleStatementSuite`` is no
        statement there)."""
        cur: Optional[ast.AST] = node
        parents = self._parents
        while cur is not None and not isinstance(cur, ast.stmt):
            cur = parents.get(cur)
        while cur is not None and self._on_header_line(cur):
            cur = parents.get(cur)
            while cur is not None and not isinstance(cur, ast.stmt):
                cur = parents.get(cur)
        return cur  # type: ignore[return-value]

    def _on_header_line(self, stmt: ast.stmt) -> bool:
        """``stmt`` is in a body written on its header's line (``else: f()``, ``if x: a(); b()``)."""
        if type(stmt) in _COMPOUND or type(self._parents.get(stmt)) is ast.Module:
            return False
        first = self._first_on_line(stmt)
        line = first.lineno
        prefix = self.lines[line - 1].encode("utf-8")[:first.col_offset].rstrip()
        # ``if x: \`` + newline + ``f()``: the header's line is the logical line's first
        while not prefix and line > 1 and self.lines[line - 2].rstrip("\r\n").endswith("\\") \
                and line in self._verbatim_lines():
            line -= 1
            prefix = self.lines[line - 1].encode("utf-8").rstrip(b"\r\n").rstrip()
            if prefix.endswith(b"\\"):
                prefix = prefix[:-1].rstrip()
        return prefix.endswith(b":")

    def simple_statement_line(self, node: ast.AST) -> bool:
        """libcst's enclosing statement of ``node`` is a ``SimpleStatementLine`` (whose parent is
        always an ``IndentedBlock`` or the module): ``node`` is in a simple statement on a line of
        its own (``a; b`` counts), not in a body on its header's line (``if x: f()``, ``if x: a(); \\``
        + newline + ``f()``) nor in a compound statement's header. The question of statements;
        ``body_on_header_line`` is the same one asked of a block."""
        stmt = self.enclosing_statement(node)
        return stmt is not None and type(stmt) not in _COMPOUND

    def body_on_header_line(self, body: list) -> bool:
        """The block ``body`` (a def's, a class's, a clause's statements) is written on its
        header's line: libcst's ``SimpleStatementSuite`` (``def f(self): pass``, also after a
        backslash), not an ``IndentedBlock``."""
        return bool(body) and self._on_header_line(body[0])

    def _first_on_line(self, stmt: ast.stmt) -> ast.stmt:
        """The first statement of the ``a; b; c`` run ``stmt`` is in (``stmt`` when alone; a
        backslash may stand after a ``;``)."""
        parent = self._parents.get(stmt)
        for name in _BODIES:
            body = getattr(parent, name, None)
            if type(body) is list:
                for i, s in enumerate(body):
                    if s is stmt:
                        while i > 0 and (body[i - 1].end_lineno == body[i].lineno
                                         or same_logical_line(self, body[i - 1], body[i])):
                            i -= 1
                        return body[i]
        return stmt

    def enclosing_trys(self, node: ast.AST) -> Iterator[ast.AST]:
        """``try`` statements whose *body* contains ``node``, innermost first, within the
        enclosing function."""
        child = node
        for anc in self.ancestors(node):
            t = type(anc)
            if t in _SCOPE_LIKE:
                return
            if t in _TRYS and any(s is child for s in anc.body):
                yield anc
            child = anc

    def in_cleanup_block(self, node: ast.AST) -> bool:
        """``node`` sits in a ``finally:`` block or an ``except`` handler's body of its own
        function."""
        parents = self._parents
        child, anc = node, parents.get(node)
        while anc is not None:
            t = type(anc)
            if t in _FUNCTION_OR_LAMBDA:
                return False
            if t in _TRYS and any(s is child for s in anc.finalbody):
                return True
            if t is ast.ExceptHandler and any(s is child for s in anc.body):
                return True
            child, anc = anc, parents.get(anc)
        return False

    # ------------------------------------------------------------------ names (ast)
    # ``Names``' qualified names (``_qualified``, ``_instance_type``, ``_decorator_name``) on ``ast``
    _NAME_TYPE = ast.Name
    _ATTRIBUTE_TYPE = ast.Attribute
    _AWAIT_TYPE = ast.Await

    @staticmethod
    def _identifier(name: ast.Name) -> str:
        return name.id

    @staticmethod
    def _attribute_name(attribute: ast.Attribute) -> str:
        return attribute.attr

    @staticmethod
    def _await_operand(node: ast.Await) -> ast.expr:
        return node.value

    @staticmethod
    def _constant_qualified(expr: ast.AST) -> Optional[str]:
        """``None``, ``True``, ``False``: ``builtins.None`` and so on (libcst's ``Name``s)."""
        return _keyword_constant(expr) if type(expr) is ast.Constant else None

    @staticmethod
    def caught_types(handler: ast.ExceptHandler) -> Optional[list]:
        """As libcst's (``Names.caught_types``): a tuple's elements, ``*x`` by ``x`` (libcst's
        ``StarredElement.value``), else the expression; None for a bare ``except:``."""
        t = handler.type
        if t is None:
            return None
        return [e.value if type(e) is ast.Starred else e for e in t.elts] if type(t) is ast.Tuple else [t]

    def resolve_call(self, call: ast.Call) -> Optional[FunctionInfo]:
        """The same-module function that ``call`` calls, if any (``Names.resolve_call``), asked
        once per call: the answer depends on the tables the walk built only (rt: 32k questions
        about 12k calls)."""
        found = self._resolved_calls.get(call, _UNASKED)
        if found is _UNASKED:
            found = self._resolved_calls[call] = self.resolve_function(call.func, call)
        return found

    def resolve_function(self, expr: ast.AST, at: ast.AST) -> Optional[FunctionInfo]:
        """The same-module function/method that ``expr`` names (``f``, ``self.m``,
        ``Cls.m``), looking through ``functools.partial(f, ...)``."""
        scope = self.scope_of(at)
        t = type(expr)
        if t is ast.Call:
            first = first_argument(expr)
            if first is not None and self.qualified_name(expr.func, at) == "functools.partial":
                return self.resolve_function(first, at)
            return None
        if t is ast.Name:
            b = self.lookup(expr.id, scope)
            if b is not None and b.kind == "def":
                return b.target  # type: ignore[return-value]
            return None
        if t is ast.Attribute:
            if type(expr.value) is ast.Name:
                if expr.value.id in ("self", "cls") and scope is not None:
                    cls = self._method_class(scope)
                    if cls is not None:
                        return cls.methods.get(expr.attr)
                b = self.lookup(expr.value.id, scope)
                if b is not None and b.kind == "class":
                    return b.target.methods.get(expr.attr)  # type: ignore[union-attr]
        return None

    def coroutine_target(self, expr: ast.AST, at: ast.AST) -> Optional[FunctionInfo]:
        if type(expr) is ast.Call:
            return self.resolve_function(expr.func, at)
        return None

    def resolve_elsewhere(self, expr: ast.AST, at: ast.AST, words: tuple[str, ...] = ()):
        """The function in another module of the project that ``expr`` names
        (``project.ProjectFunction``), or None (``facts.elsewhere.resolve_elsewhere`` on ast)."""
        from .elsewhere import resolve_elsewhere

        return resolve_elsewhere(self, expr, at, words)

    # ------------------------------------------------------------------ text and positions
    def code(self) -> str:
        return self.source_text if self.source_text is not None else ""

    def spells(self, word: str) -> bool:
        return self.source_text is None or word in self.source_text

    def line_of(self, node: ast.AST) -> int:
        """1-based line of ``node``."""
        return node.lineno  # type: ignore[attr-defined]

    @property
    def lines(self) -> list[str]:
        """The source's lines, ends kept, split where Python's tokenizer ends a line
        (``\\n``, ``\\r\\n``, ``\\r``): ``ast``'s line numbers index these."""
        if self._lines is None:
            self._lines = _physical_lines(self.source_text or "")
        return self._lines

    def column(self, line: int, byte_col: int) -> int:
        """The character column of ``ast``'s UTF-8 byte column ``byte_col`` on ``line``."""
        lines = self.lines
        if not 0 < line <= len(lines):
            return byte_col
        text = lines[line - 1]
        if text.isascii():
            return byte_col
        return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="replace"))

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        """(line, column, end line, end column) of ``node``: libcst's convention (character columns)."""
        return (node.lineno, self.column(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                node.end_lineno, self.column(node.end_lineno, node.end_col_offset))  # type: ignore[attr-defined]

    def segment(self, node: ast.AST) -> str:
        """The source text of ``node`` (``ast.get_source_segment``; no surrounding parentheses)."""
        lines = self.lines
        first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
        if first == last:
            return lines[first].encode("utf-8")[node.col_offset:node.end_col_offset].decode(  # type: ignore
                "utf-8", errors="replace")
        head = lines[first].encode("utf-8")[node.col_offset:].decode("utf-8", errors="replace")  # type: ignore
        tail = lines[last].encode("utf-8")[:node.end_col_offset].decode("utf-8", errors="replace")  # type: ignore
        return "".join([head, *lines[first + 1:last], tail])

    def string_tokens(self, node: ast.AST) -> int:
        """How many string tokens the node's source holds (libcst: 1 a ``SimpleString``, more a ``ConcatenatedString``).

        0 where its source, in parentheses, does not tokenize."""
        try:
            toks = list(tokenize.generate_tokens(io.StringIO("(" + self.segment(node) + ")").readline))
        except (tokenize.TokenError, SyntaxError):
            return 0
        return sum(tok.type == tokenize.STRING for tok in toks)

    def code_without_module(self, node: ast.AST) -> str:
        """libcst's ``cst.Module([]).code_for_node(node)``: a line ending in brackets written ``\\n``.

        Only a line ending that is the module's default one (its first) changes; a string's lines and a
        line after a backslash keep theirs (SHD101's and SHD404's text, one definition)."""
        text = self.code_for_node(node)
        found = _LINE_END.search(self.code())
        default = found.group(0) if found else "\n"
        if default == "\n" or default not in text:
            return text
        lines = _LINES.split(text)
        wrapped = [ln.rstrip("\r\n") + "\n" for ln in lines]  # as one bracketed expression, ``\n`` ended
        wrapped[0], wrapped[-1] = "(" + wrapped[0], wrapped[-1][:-1] + ")\n"
        feed = iter(wrapped)
        try:
            inside = {tok.start[0] for tok in tokenize.generate_tokens(lambda: next(feed, ""))
                      if tok.type == tokenize.NL}
        except (tokenize.TokenError, SyntaxError):
            return text
        return "".join(ln[:-len(default)] + "\n" if i in inside and ln.endswith(default) else ln
                       for i, ln in enumerate(lines, 1))

    def code_for_node(self, node: ast.AST) -> str:
        """The node's code as libcst's ``Module.code_for_node`` gives it: an expression's source
        slice (without parentheses around it, which libcst includes when the node owns them); a
        statement alone on its line(s): from the comment and blank lines above it that libcst files
        under it (not the module's header, not a block footer of the statement before) to its end,
        with the comment lines of its own blocks' footers, its indentation taken off each line that
        starts with it, but the inner lines of strings and backslash continuations (``_verbatim_lines``); a
        statement sharing its line (``a; b``, ``if x: f()``): its slice. The module: its text."""
        if isinstance(node, ast.Module):
            return self.code()
        if not isinstance(node, ast.stmt):
            return self._expression_code(node)
        parent = self._parents.get(node)
        body, i = body_holding(parent, node)
        if body is None or (i > 0 and body[i - 1].end_lineno == node.lineno) or (
                i + 1 < len(body) and body[i + 1].lineno == node.end_lineno) or self._on_header_line(node):
            return self.segment(node)
        lines = self.lines
        first = (node.decorator_list[0].lineno if isinstance(node, _DECORATED) and node.decorator_list
                 else node.lineno) - 1
        if i > 0:
            floor = self._claimed_end(body[i - 1])
        elif type(parent) is ast.Module:
            floor = first  # the module's header is the module's
        else:
            floor = 0
        while first > floor and blank_or_comment(lines[first - 1]):
            first -= 1
        last = self._claimed_end(node)
        chunk = lines[first:last]
        indent = lines[node.lineno - 1][:node.col_offset]
        if indent and not indent.strip():
            # only a later line of the statement itself can be verbatim (a one-line one has none)
            verbatim = self._verbatim_lines() if node.end_lineno > node.lineno else ()
            chunk = [ln[len(indent):] if ln.startswith(indent) and (first + k + 1) not in verbatim else ln
                     for k, ln in enumerate(chunk)]
        k = node.lineno - 1 - first
        if type(node) is ast.If and chunk[k].lstrip().startswith("elif"):  # libcst renders an ``elif`` as ``if``
            head = chunk[k]
            at = len(head) - len(head.lstrip())
            chunk[k] = head[:at] + head[at + 2:]
        text = "".join(chunk)
        return text if text.endswith(("\n", "\r")) else text + "\n"

    def _expression_code(self, node: ast.AST) -> str:
        """An expression's code as libcst renders it: with the parentheses it owns (those around
        it that are not its parent's: a sole argument's call, a sole base's class, a lone ``with``
        item's), later lines without the indentation of the statement it is in (but inside strings
        and after a backslash)."""
        if not hasattr(node, "lineno"):
            return ""
        line, col, end_line, end_col = node.lineno, node.col_offset, node.end_lineno, node.end_col_offset
        if line == end_line and type(node) is not ast.GeneratorExp:
            found = self._one_line_code(node)
            if found is not None:
                return found
        toks, starts, _ = self._tokens_at(line)
        first = (line, self.column(line, col))
        i = bisect.bisect_left(starts, first)
        j = bisect.bisect_left(starts, (end_line, self.column(end_line, end_col))) - 1
        parent = self._parents.get(node)
        # ``f(x for x in y)``: the parentheses (and the space and comments inside them) are the call's
        call_parens = type(node) is ast.GeneratorExp and type(parent) is ast.Call and \
            (parent.end_lineno, parent.end_col_offset) == (end_line, end_col)
        if not (0 <= i <= j < len(toks) and toks[i][0] == first
                and toks[j][1] == (end_line, self.column(end_line, end_col))):  # inside an f-string: the slice
            if call_parens:
                return self._lines_of(line, col + 1, end_line, end_col - 1, node).strip()
            return self._lines_of(line, col, end_line, end_col, node)
        if call_parens and j - i >= 2:
            i, j = i + 1, j - 1
        else:
            pairs = 0
            while i > 0 and j + 1 < len(toks) and toks[i - 1][2] == "(" and toks[j + 1][2] == ")":
                i, j, pairs = i - 1, j + 1, pairs + 1
            if pairs and self._parents_pair(parent, node, j, toks):
                i, j = i + 1, j - 1
        (line, c1), (end_line, c2) = toks[i][0], toks[j][1]
        return self._lines_of(line, self._byte_col(line, c1), end_line, self._byte_col(end_line, c2), node)

    def _one_line_code(self, node: ast.AST) -> Optional[str]:
        """``_expression_code`` of a one-line node read off its line, without the file's tokens,
        when that line decides it: code on both sides of it, and no pair of parentheses around it
        or one pair, its own or its parent's (``_parents_pair``); else None."""
        line, col, end_col = node.lineno, node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
        text = self.lines[line - 1].encode("utf-8")
        before, after_raw = text[:col].rstrip(), text[end_col:]
        after = after_raw.lstrip()
        if not before or not after or after.startswith(b"#"):
            # what is next to it may be on another line, unless it starts or ends its statement
            stmt = self.enclosing_statement(node)
            if stmt is None or not ((stmt.lineno, stmt.col_offset) == (line, col)
                                    or (stmt.end_lineno, stmt.end_col_offset) == (line, end_col)):
                return None
            return text[col:end_col].decode("utf-8", errors="replace")
        if not (before.endswith(b"(") and after.startswith(b")")):
            return text[col:end_col].decode("utf-8", errors="replace")
        outer_before, outer_after = before[:-1].rstrip(), after[1:].lstrip()
        if not outer_before or not outer_after or outer_after.startswith(b"#") or (
                outer_before.endswith(b"(") and outer_after.startswith(b")")):
            return None
        close = end_col + len(after_raw) - len(after)  # the ``)``'s byte column
        parent = self._parents.get(node)
        t = type(parent)
        if t is ast.Call:
            theirs = (len(parent.args) + len(parent.keywords) == 1 and parent.func is not node
                      and (parent.end_lineno, parent.end_col_offset) == (line, close + 1))
        elif t is ast.ClassDef:
            theirs = len(parent.bases) + len(parent.keywords) == 1 and outer_after.startswith(b":")
        elif t is ast.withitem:
            holder = self._parents.get(parent)
            theirs = parent.optional_vars is None and len(getattr(holder, "items", ())) == 1 and \
                outer_after.startswith(b":")
        else:
            theirs = False
        if theirs:
            return text[col:end_col].decode("utf-8", errors="replace")
        return text[len(before) - 1:close + 1].decode("utf-8", errors="replace")

    def _parents_pair(self, parent: Optional[ast.AST], node: ast.AST, j: int, toks: list) -> bool:
        """The parentheses around ``node`` ending at token ``j`` (of ``toks``) are its parent's syntax."""
        t = type(parent)
        if t is ast.Call:
            return (len(parent.args) + len(parent.keywords) == 1 and parent.func is not node
                    and toks[j][1] == (parent.end_lineno, self.column(parent.end_lineno, parent.end_col_offset)))
        after = toks[j + 1][2] if j + 1 < len(toks) else ""
        if t is ast.ClassDef:
            return len(parent.bases) + len(parent.keywords) == 1 and after == ":"
        if t is ast.withitem:
            holder = self._parents.get(parent)
            return parent.optional_vars is None and len(getattr(holder, "items", ())) == 1 and after == ":"
        return False

    def _byte_col(self, line: int, chars: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        return chars if text.isascii() else len(text[:chars].encode("utf-8"))

    def _tokens(self) -> tuple[list, list, set]:
        """The source's tokens (``tokenize`` over ``lines``, each ended by ``\\n``): the significant
        ones as ((line, char col), (end line, end char col), string), their starts (for bisect),
        and the lines libcst renders verbatim inside a statement (``_verbatim_lines``)."""
        found = self.__dict__.get("_token_index")
        if found is None:
            found = self.__dict__["_token_index"] = _tokenized(self.lines, 1, len(self.lines))[0]
        return found

    def _tokens_at(self, line: int) -> tuple[list, list, set]:
        """``_tokens``' answer for the lines of ``line``'s run (``_token_runs``), as the same three:
        the file's tokens and verbatim lines there. Where no run holds ``line``, or its run does
        not tokenize on its own, the file's."""
        found = self.__dict__.get("_token_index")
        if found is not None:
            return found
        starts, done = self._token_runs()
        k = bisect.bisect_right(starts, line) - 1
        if k < 0 or line > len(self.lines):
            return self._tokens()
        found = done.get(k)
        if found is None:
            last = starts[k + 1] - 1 if k + 1 < len(starts) else len(self.lines)
            found, ok = _tokenized(self.lines, starts[k], last)
            if not ok:
                return self._tokens()
            done[k] = found
        return found

    def _token_runs(self) -> tuple[list, dict]:
        """The file cut into runs of lines where ``tokenize`` is as at a file's start (no bracket,
        string, backslash continuation or indentation open): each run from the first line (a
        decorator's) of a top-level statement that shares no line with the one before it
        (``a; b``, ``x = (`` ... ``); y = 1``: one run) to the line before the next run (the comment
        and blank lines after a statement are its run's), the first from line 1; a run's tokens are
        the file's on its lines. The runs' first lines, and those tokenized so far (index ->
        ``_tokens_at``'s answer)."""
        found = self.__dict__.get("_runs")
        if found is None:
            starts: list[int] = [1]
            end = 0
            for stmt in self.module.body:
                first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
                if first > end and first > starts[-1]:
                    starts.append(first)
                end = max(end, stmt.end_lineno)
            found = self.__dict__["_runs"] = (starts, {})
        return found

    def _lines_of(self, line: int, col: int, end_line: int, end_col: int, node: ast.AST) -> str:
        """The text from (line, byte col) to (end line, byte col), later lines without the
        indentation of ``node``'s statement (but inside strings and after a backslash)."""
        lines = self.lines
        first = lines[line - 1].encode("utf-8")
        if line == end_line:
            return first[col:end_col].decode("utf-8", errors="replace")
        chunk = [first[col:].decode("utf-8", errors="replace"), *lines[line:end_line - 1],
                 lines[end_line - 1].encode("utf-8")[:end_col].decode("utf-8", errors="replace")]
        stmt = self.enclosing_statement(node)
        indent = lines[stmt.lineno - 1][:stmt.col_offset] if stmt is not None else ""
        if indent and not indent.strip():
            verbatim = self._verbatim_lines()
            chunk = [chunk[0]] + [ln[len(indent):] if ln.startswith(indent) and (line + k + 1) not in verbatim
                                  else ln for k, ln in enumerate(chunk[1:])]
        return "".join(chunk)

    def _claimed_end(self, stmt: ast.stmt) -> int:
        """The last line libcst files under ``stmt``: its end, or for a statement whose last
        block is indented, that block's footer: the comment lines after it up to the last one
        indented at least as the block."""
        end = stmt.end_lineno
        block = _last_block(stmt)
        if not block or block[0].lineno == stmt.lineno or self._on_header_line(block[0]):
            return end
        depth = block[0].col_offset
        lines = self.lines
        j, last = end, end
        while j < len(lines) and blank_or_comment(lines[j]):
            text = lines[j]
            if text.strip() and len(text.encode("utf-8")) - len(text.lstrip(" \t").encode("utf-8")) >= depth:
                last = j + 1
            j += 1
        return last

    def _verbatim_lines(self) -> "_Verbatim":
        """Lines (1-based) libcst renders verbatim inside a statement: the second and later lines
        of a string, and a line after a backslash continuation. Every other line (a logical line,
        a continuation inside brackets, a comment or blank line) is rendered from the enclosing
        block's indentation, so a statement's code leaves its own indentation off them. (Asked
        line by line: each line's run of statements is tokenized, ``_tokens_at``.)"""
        return _Verbatim(self)


class _Verbatim:
    """``AstFacts._verbatim_lines`` for ``in``: a line's answer from its run's tokens."""

    __slots__ = ("facts",)

    def __init__(self, facts: "AstFacts") -> None:
        self.facts = facts

    def __contains__(self, line: object) -> bool:
        return line in self.facts._tokens_at(line)[2]  # type: ignore[arg-type]


_BREAKS = (tokenize.NEWLINE, tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.COMMENT)


def _tokenized(lines: list[str], first: int, last: int) -> tuple[tuple[list, list, set], bool]:
    """``AstFacts._tokens``' three for ``lines[first - 1:last]`` (1-based line numbers), tokenized
    as a file of their own, and whether ``tokenize`` read them to the end (when not: the tokens
    before the error, none, and the verbatim lines found until then)."""
    toks: list = []
    verbatim: set[int] = set()
    prev_end, prev_kind = 0, tokenize.NEWLINE
    shift = first - 1
    feed = iter([ln.rstrip("\r\n") + "\n" for ln in lines[shift:last]])
    ok = True
    try:
        for tok in tokenize.generate_tokens(lambda: next(feed, "")):
            kind, line, end = tok.type, tok.start[0] + shift, tok.end[0] + shift
            if line > prev_end and prev_end and prev_kind not in _BREAKS:
                verbatim.update(range(prev_end + 1, line + 1))  # ``\`` continuation
            if end > line:
                verbatim.update(range(line + 1, end + 1))
            prev_end, prev_kind = end, kind
            if kind not in _BREAKS and kind != tokenize.ENDMARKER:
                if shift:
                    (r, c), (er, ec) = tok.start, tok.end
                    toks.append(((r + shift, c), (er + shift, ec), tok.string))
                else:
                    toks.append((tok.start, tok.end, tok.string))
    except (tokenize.TokenError, SyntaxError):
        toks, ok = [], False
    return (toks, [t[0] for t in toks], verbatim), ok


#: the first line ending (libcst's default newline) and a split after each line ending
_LINE_END = re.compile(r"\r\n?|\n")
_LINES = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")


def body_holding(parent: Optional[ast.AST], stmt: ast.stmt) -> tuple[Optional[list], int]:
    """The body list of ``parent`` holding ``stmt`` and its index (libcst: the block's body, the place)."""
    for name in ("body", "orelse", "finalbody"):
        body = getattr(parent, name, None)
        if type(body) is list:
            for i, s in enumerate(body):
                if s is stmt:
                    return body, i
    return None, -1


def _last_block(stmt: ast.AST) -> Optional[list]:
    """The statements of ``stmt``'s last indented block (``elif``/``else``/``except``/``finally``
    included), or None for a simple statement."""
    if type(stmt) not in _COMPOUND:
        return None
    if getattr(stmt, "finalbody", None):
        return stmt.finalbody  # type: ignore[attr-defined]
    if getattr(stmt, "orelse", None):
        orelse = stmt.orelse  # type: ignore[attr-defined]
        if type(stmt) is ast.If and len(orelse) == 1 and type(orelse[0]) is ast.If and \
                orelse[0].col_offset == stmt.col_offset and orelse[0].lineno != stmt.lineno:
            return _last_block(orelse[0]) or orelse  # ``elif``
        return orelse
    if getattr(stmt, "handlers", None):
        return stmt.handlers[-1].body  # type: ignore[attr-defined]
    if type(stmt).__name__ == "Match":
        return stmt.cases[-1].body if stmt.cases else None  # type: ignore[attr-defined]
    return getattr(stmt, "body", None)


#: statements with a body (a body on their header's line is no statement of its own in libcst)
_COMPOUND = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
                       ast.With, ast.AsyncWith, ast.Try, getattr(ast, "TryStar", ast.Try),
                       getattr(ast, "Match", ast.If)})
_BODIES = ("body", "orelse", "finalbody")
_DECORATED = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _keyword_constant(node: ast.Constant) -> Optional[str]:
    """``None``, ``True``, ``False`` are ``Name``s in libcst: ``builtins.None`` and so on."""
    from ..facts.vocabulary import _BUILTINS

    v = node.value
    if v is None or v is True or v is False:
        name = str(v)
        return f"builtins.{name}" if name in _BUILTINS else None
    return None


def blank_or_comment(line: str) -> bool:
    """A blank or comment-only line (libcst: an ``EmptyLine`` of leading lines or a block footer)."""
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def cst_names(expr: ast.AST) -> set[str]:
    """The values of libcst's ``Name`` nodes under ``expr`` (attributes', keywords' and parameters' names too)."""
    out: set[str] = set()
    for n in ast.walk(expr):
        t = type(n)
        if t is ast.Name:
            out.add(n.id)
        elif t is ast.Attribute:
            out.add(n.attr)
        elif t is ast.keyword:
            if n.arg is not None:
                out.add(n.arg)
        elif t is ast.arg:
            out.add(n.arg)
        elif t is ast.Constant and (n.value is None or n.value is True or n.value is False):
            out.add(str(n.value))
    return out


def same_logical_line(facts: "AstFacts", a: ast.stmt, b: ast.stmt) -> bool:
    """``b`` follows ``a`` as ``a; b`` (a backslash between too): one ``SimpleStatementLine`` in libcst."""
    if b.lineno - a.end_lineno > 0 and not all(  # type: ignore[operator]
            facts.lines[n - 1].rstrip("\r\n").endswith("\\") for n in range(a.end_lineno, b.lineno)):
        return False
    between = _text_between(facts.lines, a.end_lineno, a.end_col_offset, b.lineno, b.col_offset)
    return between.replace("\\", "").split() == [";"]


def _text_between(lines: list[str], line: int, col: int, end_line: int, end_col: int) -> str:
    """The source from (line, byte col) to (end line, byte col)."""
    if line == end_line:
        return lines[line - 1].encode("utf-8")[col:end_col].decode("utf-8", errors="replace")
    return "".join([lines[line - 1].encode("utf-8")[col:].decode("utf-8", errors="replace"), *lines[line:end_line - 1],
                    lines[end_line - 1].encode("utf-8")[:end_col].decode("utf-8", errors="replace")])



#: A physical line with its end (``\r\n``, ``\r`` or ``\n``: libcst's and the tokenizer's line
#: ends, not ``str.splitlines``' others such as ``\f`` or ``\u2028``), or the last line without one.
_PHYSICAL_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+\Z")


def _physical_lines(text: str) -> list[str]:
    return _PHYSICAL_LINE.findall(text)  # a regex, not a loop per character: 11x faster on torch/_tensor.py


def first_argument(call: ast.Call) -> Optional[ast.AST]:
    """The value of ``call``'s first argument as written (positional, ``*a``'s ``a``, or a
    keyword's value): libcst's ``call.args[0].value``."""
    first = None
    if call.args:
        first = call.args[0]
    if call.keywords:
        k = call.keywords[0]
        if first is None or (k.lineno, k.col_offset) < (first.lineno, first.col_offset):  # type: ignore
            return k.value
    if type(first) is ast.Starred:
        return first.value
    return first


# ---------------------------------------------------------------------------- the walk


class _Collector(_Scopes):
    """The one walk: parents, scopes, bindings, functions, classes, calls (``facts.collector``
    on ``ast``: ``_Scopes`` is its code), recording the checks' events on the way."""

    def __init__(self, facts: AstFacts) -> None:
        self.f = facts
        self.scopes: list[FunctionInfo] = []
        self.classes: list[ClassInfo] = []
        self.kinds: list[str] = []
        self._in_comp_for = False

    def run(self, root: ast.Module, visits: frozenset, leaves: frozenset) -> None:
        parents = self.f._parents
        events = self.f._events
        enter, leave_of = self._enter, self._leave
        names, attributes = self.f._names_by_value, self.f._attributes_by_name
        Name, Attribute = ast.Name, ast.Attribute
        name_visit, name_leave = Name in visits, Name in leaves
        # node type -> its children's reader (``walk.iter_children_of``), or False for a leaf: no
        # walked child and no hook of the collector's (``Constant``, ``alias``...), visited and left
        # where it is met, not pushed (as ``Name``)
        table: dict = {}

        def kids(t: type):
            fn = table[t] = False if leaf_type(t) and t not in enter and t not in leave_of else iter_children_of(t)
            return fn

        if type(root) in visits:
            events.append(root)
        stack = [(root, iter(children(root)))]
        while stack:
            node, it = stack[-1]
            for child in it:
                parents[child] = node
                t = type(child)
                if t is Name:
                    found = names.get(child.id)
                    if found is None:
                        names[child.id] = [child]
                    else:
                        found.append(child)
                    if name_visit:
                        events.append(child)
                    if name_leave:
                        events.append((child,))
                    continue
                get = table.get(t)
                if get is None:
                    get = kids(t)
                if get is False:
                    if t in visits:
                        events.append(child)
                    if t in leaves:
                        events.append((child,))
                    continue
                if t is Attribute:
                    found = attributes.get(child.attr)
                    if found is None:
                        attributes[child.attr] = [child]
                    else:
                        found.append(child)
                    value = child.value
                    if type(value) is Name:  # ``x.y``: its only walked child a leaf, met here, not pushed
                        if t in visits:
                            events.append(child)
                        parents[value] = child
                        found = names.get(value.id)
                        if found is None:
                            names[value.id] = [value]
                        else:
                            found.append(value)
                        if name_visit:
                            events.append(value)
                        if name_leave:
                            events.append((value,))
                        if t in leaves:
                            events.append((child,))
                        continue
                else:
                    hook = enter.get(t)
                    if hook is not None:
                        hook(self, child)
                if t in visits:
                    events.append(child)
                stack.append((child, iter(get(child))))
                break
            else:
                stack.pop()
                t = type(node)
                hook = leave_of.get(t)
                if hook is not None:
                    hook(self, node)
                if t in leaves:
                    events.append((node,))

    # -- definitions
    def visit_FunctionDef(self, node) -> None:
        a = node.args
        params = [(param.arg, param.annotation) for param in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
        params += [(star.arg, None) for star in (a.vararg, a.kwarg) if star is not None]
        self._enter_function(node, node.name, type(node) is ast.AsyncFunctionDef, params, list(node.decorator_list))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._enter_class(node, node.name, list(node.decorator_list))

    # -- imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname is not None:
                self.bind(alias.asname, _Binding("import", qualified=alias.name))
            else:
                top = alias.name.split(".")[0]
                self.bind(top, _Binding("import", qualified=top))
        self.f.has_imports = True

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = f"{'.' * (node.level or 0)}{node.module or ''}"
        if len(node.names) == 1 and node.names[0].name == "*":
            return
        for alias in node.names:
            name = alias.name
            local = alias.asname or name
            qualified = f"{base}.{name}" if base and not base.endswith(".") else f"{base}{name}"
            self.bind(local, _Binding("import", qualified=qualified))

    # -- bindings we can type
    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._bind_target(target, node.value if len(node.targets) == 1 else None)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        ann = node.annotation
        target = node.target
        cls = self._in_class_body()
        if cls is not None and type(target) is ast.Name:
            cls.attr_annotations.setdefault(target.id, []).append((ann, None))
        elif (type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self"
              and self.scope is not None and self.scope.cls is not None):
            self.scope.cls.attr_annotations.setdefault(target.attr, []).append((ann, self.scope))
        self._bind_target(target, node.value, ann)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._bind_target(node.target, None)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self._bind_target(node.target, node.value)

    def visit_For(self, node) -> None:
        self._bind_target(node.target, None)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self._in_comp_for = True
        try:
            self._bind_target(node.target, None)
        finally:
            self._in_comp_for = False

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self._bind_target(node.optional_vars, node.context_expr)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        # libcst's collector binds ``except`` names, not ``except*`` ones (``ExceptStarHandler``)
        if node.name is not None and type(self.f._parents.get(node)) is ast.Try:
            self.bind(node.name, _Binding("other"))

    def _bind_target(self, target: ast.AST, value: Optional[ast.AST], annotation: Optional[ast.AST] = None,
                     unpacked: Optional[ast.AST] = None) -> None:
        t = type(target)
        if t is ast.Name:
            if value is not None:
                self.bind(target.id, _Binding("value", target=value, annotation=annotation))
            else:
                self.bind(target.id, _Binding("other", annotation=annotation, unpacked=unpacked))
        elif t is ast.Tuple or t is ast.List:
            pairs = _elements(value) if value is not None else None
            if pairs is not None and (len(pairs) != len(target.elts)
                                      or any(type(el) is ast.Starred for el in target.elts)):
                pairs = None
            for i, el in enumerate(target.elts):
                inner = el.value if type(el) is ast.Starred else el
                self._bind_target(inner, None, unpacked=pairs[i] if pairs is not None else None)
        elif t is ast.Starred:
            self._bind_target(target.value, None)
        elif (t is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self"
              and self.scope is not None and self.scope.cls is not None and value is not None):
            self.scope.cls.attr_values.setdefault(target.attr, []).append((value, self.scope))

    # -- calls, awaits, main guard
    def visit_Await(self, node: ast.Await) -> None:
        if type(node.value) is ast.Call:
            self.f._awaited.add(node.value)

    def visit_If(self, node: ast.If) -> None:
        if self.scope is None and not self.classes and _is_main_guard(node.test):
            self.f.main_guards.append(node)

    _enter = {
        ast.FunctionDef: visit_FunctionDef, ast.AsyncFunctionDef: visit_FunctionDef, ast.ClassDef: visit_ClassDef,
        ast.Import: visit_Import, ast.ImportFrom: visit_ImportFrom, ast.Assign: visit_Assign,
        ast.AnnAssign: visit_AnnAssign, ast.AugAssign: visit_AugAssign, ast.NamedExpr: visit_NamedExpr,
        ast.For: visit_For, ast.AsyncFor: visit_For, ast.comprehension: visit_comprehension,
        ast.withitem: visit_withitem, ast.ExceptHandler: visit_ExceptHandler, ast.Call: _Scopes.visit_Call,
        ast.Await: visit_Await, ast.If: visit_If,
    }
    _leave = {ast.FunctionDef: _Scopes.leave_FunctionDef, ast.AsyncFunctionDef: _Scopes.leave_FunctionDef,
              ast.ClassDef: _Scopes.leave_ClassDef}


def _elements(value: ast.AST) -> Optional[list[ast.AST]]:
    """The elements of a tuple or list display with no starred element, else None."""
    if type(value) not in (ast.Tuple, ast.List):
        return None
    if any(type(el) is ast.Starred for el in value.elts):  # type: ignore[attr-defined]
        return None
    return list(value.elts)  # type: ignore[attr-defined]


def _is_main_guard(test: ast.AST) -> bool:
    if type(test) is not ast.Compare or len(test.ops) != 1 or type(test.ops[0]) is not ast.Eq:
        return False
    sides = [test.left, test.comparators[0]]
    has_name = any(type(s) is ast.Name and s.id == "__name__" for s in sides)
    has_main = any(type(s) is ast.Constant and s.value == "__main__" for s in sides)
    return has_name and has_main
