"""``AstFacts``: the shared facts of ``facts.ModuleFacts``, built from Python's ``ast`` tree
that the candidate tier already parsed (no libcst parse).

Same method names and meanings as ``ModuleFacts``, with ``ast`` nodes; the model classes
(``FunctionInfo``, ``ClassInfo``, ``_Binding``) are the same, holding ``ast`` nodes. What
does not depend on the tree's node classes is inherited from the libcst facts' mixins
(``TreeShape``, ``Names``: lookup, qualified-name caching, call-result types, callees, module
aliases); what does is written here for ``ast``. Where the two trees differ:

- ``enclosing_statement``: the ``ast`` statement (``a; b`` is two statements; libcst's is the
  ``SimpleStatementLine`` holding both).
- ``in_cleanup_block``: ``ast`` has no ``Finally`` node: a node in ``Try.finalbody`` or in an
  ``except`` handler's body (its own function's) is in one.
- ``name_nodes`` and ``_Binding.order`` count ``ast.Name`` nodes only: libcst's ``Name`` is
  also the name of a def, a class, a parameter, a keyword argument, an attribute, an alias.
- ``code_for_node``: a statement's lines (with the comment and blank lines above it, as libcst
  files them under the statement, and without its own indentation), an expression's source
  slice (``ast.get_source_segment``: without parentheses around the node, which libcst's
  ``code_for_node`` includes when the node owns them).
- ``_is_main_guard``: ``"__ma" "in__"`` counts (``ast`` joins the strings; libcst's does not).
- ``except* E as e`` binds nothing (as libcst's collector, which binds ``ExceptHandler`` names only).
"""

from __future__ import annotations

import ast
import io
import tokenize
from typing import Iterator, Optional

from ..facts.model import ClassInfo, FunctionInfo, Scope, _Binding
from ..facts.names import Names
from ..facts.tree import TreeShape
from ..facts.vocabulary import _canonical
from .walk import children, children_of

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DEF_TYPES = frozenset(_DEFS)
_FUNCTION_OR_LAMBDA = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda})
_SCOPE_LIKE = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
_TRYS = frozenset({ast.Try, getattr(ast, "TryStar", ast.Try)})
_NAME_OR_ATTRIBUTE = frozenset({ast.Name, ast.Attribute})
_NOT_RECORDED = object()


def decode(source: bytes) -> str:
    """The source's text, decoded as libcst decodes it (its encoding is ``tokenize``'s)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        return source.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return source.decode("utf-8", errors="replace")


class AstFacts(TreeShape, Names):
    """Facts about one module's ``ast``. Built by ``AstFacts.build(module, source_text)``."""

    def __init__(self, module: ast.Module, path: str = "<string>") -> None:
        self.module = module
        self.path = path
        self._parents: dict[ast.AST, ast.AST] = {}
        self._names_by_value: dict[str, list[ast.Name]] = {}
        self._attributes_by_name: dict[str, list[ast.Attribute]] = {}
        self._module_bindings: dict[str, list[_Binding]] = {}
        self.functions: list[FunctionInfo] = []
        self.classes: list[ClassInfo] = []
        self.calls: list[ast.Call] = []
        self.module_calls: list[ast.Call] = []
        self.main_guards: list[ast.If] = []
        self.has_imports = False
        self._function_of: dict[ast.AST, FunctionInfo] = {}
        self._class_of: dict[ast.ClassDef, ClassInfo] = {}
        self._call_scope: dict[ast.Call, Scope] = {}
        self._awaited: set[ast.Call] = set()
        self._decorator_exprs: dict[FunctionInfo, list[ast.expr]] = {}
        self._class_decorator_exprs: dict[ClassInfo, list[ast.expr]] = {}
        self._qn_cache: dict[tuple[int, int], Optional[str]] = {}
        self._call_names: dict[ast.Call, Optional[str]] = {}
        self._typing_stack: set[int] = set()
        #: the project index seen from this file (``project.ProjectView``), set by the engine
        self.project = None
        #: the module's source text (set by ``build``; None: unknown)
        self.source_text: Optional[str] = None
        self._lines: Optional[list[str]] = None
        #: the checks' walk events recorded by the facts' walk (``walk.run``)
        self._events: list = []

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

    def enclosing_function(self, node: ast.AST) -> Optional[FunctionInfo]:
        parents = self._parents
        anc = parents.get(node)
        while anc is not None:
            if type(anc) in _DEF_TYPES:
                return self._function_of.get(anc)
            anc = parents.get(anc)
        return None

    def enclosing_class(self, node: ast.AST) -> Optional[ClassInfo]:
        parents = self._parents
        anc = parents.get(node)
        while anc is not None:
            if type(anc) is ast.ClassDef:
                return self._class_of.get(anc)
            anc = parents.get(anc)
        return None

    def in_lambda(self, node: ast.AST) -> bool:
        parents = self._parents
        anc = parents.get(node)
        while anc is not None:
            if type(anc) in _FUNCTION_OR_LAMBDA:
                return type(anc) is ast.Lambda
            anc = parents.get(anc)
        return False

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
        prefix = self.lines[first.lineno - 1].encode("utf-8")[:first.col_offset]
        return prefix.rstrip().endswith(b":")

    def _first_on_line(self, stmt: ast.stmt) -> ast.stmt:
        """The first statement of the ``a; b; c`` run ``stmt`` is in (``stmt`` when alone)."""
        parent = self._parents.get(stmt)
        for name in _BODIES:
            body = getattr(parent, name, None)
            if type(body) is list:
                for i, s in enumerate(body):
                    if s is stmt:
                        while i > 0 and body[i - 1].end_lineno == body[i].lineno:
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

    def scope_of(self, node: ast.AST) -> Scope:
        if type(node) is ast.Call:
            scope = self._call_scope.get(node, _NOT_RECORDED)
            if scope is not _NOT_RECORDED:
                return scope
        return self.enclosing_function(node)

    # ------------------------------------------------------------------ names (ast)
    def _qualified(self, expr: ast.AST, scope: Scope) -> Optional[str]:
        t = type(expr)
        if t is ast.Name:
            from ..facts.vocabulary import _BUILTINS

            b = self.lookup(expr.id, scope)
            if b is None:
                return f"builtins.{expr.id}" if expr.id in _BUILTINS else None
            if b.kind == "import":
                return b.qualified
            if b.kind in ("def", "class"):
                return f"<module>.{b.target.qualname}"  # type: ignore[union-attr]
            if b.kind == "value":
                return self._instance_type(b.target, b.scope)  # type: ignore[arg-type]
            return None
        if t is ast.Attribute:
            base = expr.value
            if type(base) is ast.Name and base.id == "self" and scope is not None:
                cls = self._method_class(scope)
                if cls is not None:
                    attr = expr.attr
                    if attr in cls.methods:
                        return f"<module>.{cls.methods[attr].qualname}"
                    values = cls.attr_values.get(attr)
                    if values:
                        return self._instance_type(values[-1][0], values[-1][1])
                    return None
            inner = self._qualified(base, scope)
            if inner is None:
                return None
            return f"{_canonical(inner)}.{expr.attr}"
        if t is ast.Call:
            return self._call_result_type(expr, scope)
        if t is ast.Constant:
            return _keyword_constant(expr)
        return None

    def _instance_type(self, value: ast.AST, scope: Scope) -> Optional[str]:
        if type(value) is ast.Await:
            value = value.value
        if type(value) is ast.Call:
            return self._call_result_type(value, scope)
        if type(value) in _NAME_OR_ATTRIBUTE:
            if id(value) in self._typing_stack:
                return None
            self._typing_stack.add(id(value))
            try:
                return self._qualified(value, scope)
            finally:
                self._typing_stack.discard(id(value))
        if type(value) is ast.Constant:
            return _keyword_constant(value)
        return None

    def _decorator_name(self, expr: ast.AST, scope: Scope) -> Optional[str]:
        if type(expr) is ast.Call:
            expr = expr.func
        q = self._qualified(expr, scope)
        return _canonical(q) if q else None

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

    def code_for_node(self, node: ast.AST) -> str:
        """The node's code, as libcst's ``Module.code_for_node`` gives it where the two agree:
        an expression's source slice (parentheses the node owns left out); a statement's lines
        from the comment and blank lines above it (those libcst files under it) to its last
        line's end, its own indentation taken off every line that starts with it. The
        module: the whole text."""
        if isinstance(node, ast.Module):
            return self.code()
        if not isinstance(node, ast.stmt):
            return self.segment(node)
        lines = self.lines
        first = node.lineno - 1
        while first > 0 and _blank_or_comment(lines[first - 1]) and not self._ends_statement_at(first):
            first -= 1
        if isinstance(node, _DECORATED) and node.decorator_list:
            first = min(first, node.decorator_list[0].lineno - 1)
        chunk = lines[first:node.end_lineno]  # type: ignore[attr-defined]
        indent = lines[node.lineno - 1][:node.col_offset]
        if indent and not indent.strip():
            chunk = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip(" \t") for ln in chunk]
        text = "".join(chunk)
        return text if text.endswith(("\n", "\r")) else text + "\n"

    def _ends_statement_at(self, line: int) -> bool:
        """A statement ends on 1-based ``line`` (a string spanning lines ends there)."""
        ends = self.__dict__.get("_statement_ends")
        if ends is None:
            ends = self.__dict__["_statement_ends"] = {getattr(n, "end_lineno", 0) for n in self._parents
                                                       if isinstance(n, ast.stmt)}
        return line in ends


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


def _blank_or_comment(line: str) -> bool:
    stripped = line.strip()
    return not stripped or stripped.startswith("#")


def _physical_lines(text: str) -> list[str]:
    out: list[str] = []
    start, n = 0, len(text)
    i = 0
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(text[start:i + 1])
            start = i + 1
        elif c == "\r":
            end = i + 2 if i + 1 < n and text[i + 1] == "\n" else i + 1
            out.append(text[start:end])
            start = i = end
            continue
        i += 1
    if start < n:
        out.append(text[start:])
    return out


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


class _Collector:
    """The one walk: parents, scopes, bindings, functions, classes, calls (``facts.collector``
    on ``ast``), recording the checks' events on the way."""

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
        table: dict = {}

        def kids(t: type):
            fn = table[t] = children_of(t)
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
                elif t is Attribute:
                    found = attributes.get(child.attr)
                    if found is None:
                        attributes[child.attr] = [child]
                    else:
                        found.append(child)
                else:
                    hook = enter.get(t)
                    if hook is not None:
                        hook(self, child)
                if t in visits:
                    events.append(child)
                stack.append((child, iter((table.get(t) or kids(t))(child))))
                break
            else:
                stack.pop()
                t = type(node)
                hook = leave_of.get(t)
                if hook is not None:
                    hook(self, node)
                if t in leaves:
                    events.append((node,))

    @property
    def scope(self) -> Scope:
        return self.scopes[-1] if self.scopes else None

    def _in_class_body(self) -> Optional[ClassInfo]:
        return self.classes[-1] if self.kinds and self.kinds[-1] == "class" else None

    def bind(self, name: str, binding: _Binding) -> None:
        binding.scope = self.scope
        binding.order = -1 if self._in_comp_for else len(self.f._names_by_value.get(name, ()))
        table = self.scope.bindings if self.scope is not None else self.f._module_bindings
        table.setdefault(name, []).append(binding)

    # -- definitions
    def visit_FunctionDef(self, node) -> None:
        cls = self._in_class_body()
        name = node.name
        if cls is not None:
            qual = f"{cls.qualname}.{name}"
        elif self.scope is not None:
            qual = f"{self.scope.qualname}.<locals>.{name}"
        else:
            qual = name
        info = FunctionInfo(node=node, name=name, qualname=qual, is_async=type(node) is ast.AsyncFunctionDef,
                            scope=self.scope, cls=cls)
        a = node.args
        for param in (*a.posonlyargs, *a.args, *a.kwonlyargs):
            info.params[param.arg] = param.annotation
        for star in (a.vararg, a.kwarg):
            if star is not None:
                info.params[star.arg] = None
        self.f._decorator_exprs[info] = list(node.decorator_list)
        self.f.functions.append(info)
        self.f._function_of[node] = info
        if cls is not None:
            cls.methods.setdefault(name, info)
        else:
            if self.scope is not None:
                self.scope.nested.setdefault(name, info)
            self.bind(name, _Binding("def", target=info))
        self.scopes.append(info)
        self.kinds.append("function")

    def leave_FunctionDef(self, node) -> None:
        self.scopes.pop()
        self.kinds.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        outer = self._in_class_body()
        name = node.name
        qual = f"{outer.qualname}.{name}" if outer else (
            f"{self.scope.qualname}.<locals>.{name}" if self.scope else name)
        info = ClassInfo(node=node, name=name, qualname=qual, scope=self.scope, outer_class=outer)
        self.f._class_decorator_exprs[info] = list(node.decorator_list)
        self.f.classes.append(info)
        self.f._class_of[node] = info
        if outer is None:
            self.bind(name, _Binding("class", target=info))
        self.classes.append(info)
        self.kinds.append("class")

    def leave_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.pop()
        self.kinds.pop()

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
    def visit_Call(self, node: ast.Call) -> None:
        self.f.calls.append(node)
        self.f._call_scope[node] = self.scope
        if self.scope is not None:
            self.scope.calls.append(node)
        else:
            self.f.module_calls.append(node)

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
        ast.withitem: visit_withitem, ast.ExceptHandler: visit_ExceptHandler, ast.Call: visit_Call,
        ast.Await: visit_Await, ast.If: visit_If,
    }
    _leave = {ast.FunctionDef: leave_FunctionDef, ast.AsyncFunctionDef: leave_FunctionDef,
              ast.ClassDef: leave_ClassDef}


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
