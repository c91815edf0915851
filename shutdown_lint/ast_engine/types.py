"""``facts.types`` on ``ast``: the type of the value a name, ``self.x`` or an expression holds,
read from ``AstFacts`` (session 9, issue 30).

``AstTyper`` is ``facts.types.Typer`` with the tree's shapes read on ``ast``: what does not
depend on the tree (bindings, parameters, ``self.x``, return annotations here and through the
project index, a class standing for a known base, the result types of calls) is the libcst
``Typer``'s own code. Where the trees differ:

- ``None``/``True``/``False`` are ``Constant``s (libcst: ``Name``s, which no binding can type);
- a string annotation is parsed with ``ast`` (libcst: ``parse_expression``); ``"a" "b"`` is one
  ``Constant`` (libcst: a ``ConcatenatedString``, read the same way);
- ``x[(A, B)]``: one subscript element, a tuple, as libcst has it (``ast`` gives the tuple in
  both spellings; the parentheses are read from the source);
- ``"None"`` as a side of ``a if c else b`` is None only written as one string (libcst's
  ``SimpleString``), not as ``"No" "ne"``.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from bisect import bisect_left
from typing import Optional

from ..facts.types import ATTRIBUTE_TYPES, _MAX_DEPTH, _WRAPPERS_FIRST, _WRAPPERS_OPTIONAL, _WRAPPERS_UNION, Typer

__all__ = ["AstTyper", "typer"]


def typer(facts, known: frozenset = frozenset(), skip: frozenset = frozenset()) -> "AstTyper":
    """The resolver of ``facts`` (an ``AstFacts``) for one view, built once (``TypeQueries.typer``)."""
    typers = facts.__dict__.setdefault("_typers", {})
    key = (known, skip)
    found = typers.get(key)
    if found is None:
        found = typers[key] = AstTyper(facts, known, skip)
    return found


class AstTyper(Typer):
    """``Typer`` on an ``AstFacts``; see the module doc."""

    _NAMED = (ast.Name, ast.Attribute)

    @staticmethod
    def _spelling(use: ast.Name) -> str:
        return use.id

    @staticmethod
    def _return_annotation(fn) -> Optional[ast.expr]:
        return fn.node.returns

    @staticmethod
    def _base_expression(base: ast.expr) -> ast.expr:
        # libcst's ``class C(*bases)`` base is an ``Arg`` whose value is ``bases``
        return base.value if type(base) is ast.Starred else base

    # ------------------------------------------------------------------ binding order
    def _precedes(self, binding, use: ast.Name, index: int) -> bool:
        """libcst's answer: a binding precedes a use when one of libcst's ``Name``s of that spelling
        lies between the two (its ``order`` counts them). ``AstFacts`` counts ``ast.Name``s only, a
        subset (libcst's ``Name`` is also an attribute's, a def's, a parameter's, an alias's...):
        the two counts agree but where no ``ast.Name`` lies between (``order == index``: a def, an
        import or an ``except ... as`` binding right before its use); there libcst's are counted."""
        if binding.order != index:
            return binding.order < index
        facts = self.facts
        order = _libcst_orders(facts, binding.scope).get(id(binding))
        if order is None:
            return False
        return order < bisect_left(_identifiers(facts).get(use.id, ()), (use.lineno, use.col_offset, 0))

    # ------------------------------------------------------------------ values
    def type_of(self, expr: ast.AST, at: ast.AST, depth: int = 0) -> Optional[str]:
        if depth > _MAX_DEPTH:
            return None
        t = type(expr)
        if t is ast.Name:
            return self._name_type(expr, at, depth)
        if t is ast.Attribute:
            base = self.type_of(expr.value, at, depth + 1)
            if base is not None and (base, expr.attr) in ATTRIBUTE_TYPES:
                return ATTRIBUTE_TYPES[(base, expr.attr)]
            if type(expr.value) is ast.Name and expr.value.id == "self":
                return self._attr_type(self._class_at(at), expr.attr, depth)
            return None  # a module attribute (``os.path``) is not a value
        if t is ast.BinOp and type(expr.op) is ast.Div:
            left = self.type_of(expr.left, at, depth + 1)
            return left if left == "pathlib.Path" else None
        return self.value_type(expr, depth + 1)

    def value_type(self, value: ast.AST, depth: int = 0) -> Optional[str]:
        if depth > _MAX_DEPTH:
            return None
        t = type(value)
        if t is ast.Call:
            func = value.func
            if type(func) is ast.Attribute:
                recv = self.type_of(func.value, value, depth + 1)
                if recv is not None:
                    return self._call_type(value, f"{recv}.{func.attr}")
            return self._call_type(value, None)
        if t is ast.Await:
            return self._awaited_type(value.value) if type(value.value) is ast.Call else None
        if t is ast.Name or t is ast.Attribute or t is ast.BinOp:
            return self.type_of(value, value, depth + 1)
        if t is ast.IfExp:
            return self._either([v for v in (value.body, value.orelse) if not self._is_none_value(v)], depth)
        return None

    def _is_none_value(self, v: ast.AST) -> bool:
        """libcst's ``_is_none``: ``None``, or the string ``"None"`` written as one string."""
        if type(v) is not ast.Constant:
            return False
        if v.value is None:
            return True
        return v.value == "None" and type(v.value) is str and _one_string(self.facts.segment(v))

    # ------------------------------------------------------------------ declarations
    def _members(self, ann: ast.AST, at: ast.AST, depth: int) -> list:
        if depth > _MAX_DEPTH:
            return [ann]
        t = type(ann)
        if t is ast.Constant and type(ann.value) is str:
            parsed = self._parse(ann)
            return self._members(parsed, at, depth + 1) if parsed is not None else [ann]
        if t is ast.BinOp and type(ann.op) is ast.BitOr:
            return [*self._members(ann.left, at, depth + 1), *self._members(ann.right, at, depth + 1)]
        if t is ast.Constant and ann.value is None:
            return []
        if t is ast.Subscript:
            value = ann.value
            wrapper = self.facts.qualified_name(value, at) if type(value) in (ast.Name, ast.Attribute) else None
            args = self._subscript_args(ann)
            if wrapper in _WRAPPERS_OPTIONAL or wrapper in _WRAPPERS_UNION:
                return [m for a in args for m in self._members(a, at, depth + 1)]
            if wrapper in _WRAPPERS_FIRST and args:
                return self._members(args[0], at, depth + 1)
            return self._members(value, at, depth + 1)  # ``queue.Queue[int]``, ``IO[str]``
        return [ann]

    def _subscript_args(self, ann: ast.Subscript) -> list:
        """libcst's ``[el.slice.value for el in ann.slice if isinstance(el.slice, cst.Index)]``:
        the elements that are no slice (``*a``: ``a``); ``x[(A, B)]`` is one element."""
        s = ann.slice
        if type(s) is ast.Tuple and not self._parenthesized(s, ann):
            elements = s.elts
        else:
            elements = [s]
        return [e.value if type(e) is ast.Starred else e for e in elements if type(e) is not ast.Slice]

    def _parenthesized(self, tup: ast.Tuple, ann: ast.Subscript) -> bool:
        """``tup`` (a subscript's slice) is written in parentheses of its own."""
        if id(ann) in self._parsed_ids():
            text = self._parsed_text[id(ann)]
            segment = ast.get_source_segment(text, tup) or ""
        else:
            segment = self.facts.segment(tup)
        if not segment.startswith("(") or not segment.endswith(")"):
            return False
        depth = 0
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(segment).readline))
        except (tokenize.TokenError, SyntaxError):
            return False
        ops = [tok for tok in tokens if tok.type == tokenize.OP]
        for i, tok in enumerate(ops):
            if tok.string in "([{":
                depth += 1
            elif tok.string in ")]}":
                depth -= 1
                if depth == 0:
                    return i == len(ops) - 1  # the first parenthesis closes at the end
        return False

    def _parsed_ids(self) -> set:
        return self.__dict__.setdefault("_parsed_subscripts", set())

    @property
    def _parsed_text(self) -> dict:
        return self.__dict__.setdefault("_parsed_texts", {})

    def _parse(self, ann: ast.Constant) -> Optional[ast.AST]:
        if id(ann) not in self._parsed:
            parsed = None
            text = ann.value
            if isinstance(text, str) and len(text) < 200:
                source = text.strip()
                try:
                    parsed = ast.parse(source, mode="eval").body
                except Exception:  # not an expression: the annotation declares nothing we read
                    parsed = None
                if parsed is not None:
                    # positions in a parsed string are the string's: remember its text for them
                    for node in ast.walk(parsed):
                        if type(node) is ast.Subscript:
                            self._parsed_ids().add(id(node))
                            self._parsed_text[id(node)] = source
            self._parsed[id(ann)] = parsed
        return self._parsed[id(ann)]


def _one_string(segment: str) -> bool:
    """``segment`` is one string literal (not ``"a" "b"``)."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(segment).readline)
                  if t.type not in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.COMMENT)]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(tokens) == 1 and tokens[0].type == tokenize.STRING


# ---------------------------------------------------------------------------- libcst's Name order


def _identifiers(facts) -> dict[str, list[tuple[int, int, int]]]:
    """Where libcst's ``Name`` nodes are, by spelling: (line, byte column, 0), sorted (source
    order, which is both walks' order): an ``ast.Name``, an attribute's name, a keyword argument's,
    a parameter's, a def's or class's name, an import's module parts and aliases, an ``except``'s
    ``as`` name, ``global``/``nonlocal`` names, a pattern's captures. Built once per module."""
    found = facts.__dict__.get("_libcst_names")
    if found is not None:
        return found
    out: dict[str, list[tuple[int, int, int]]] = {}
    lines = facts.lines

    def add(name: str, line: int, col: int, sub: int = 0) -> None:
        out.setdefault(name, []).append((line, col, sub))

    # the facts' walk met every node (``_parents``: each but the module) and indexed the
    # ``Name``s and attributes by spelling: the same nodes as ``ast.walk(facts.module)``
    for name, uses in facts._names_by_value.items():
        out[name] = [(n.lineno, n.col_offset, 0) for n in uses]
    for attr, uses in facts._attributes_by_name.items():
        width = len(attr.encode("utf-8"))
        out.setdefault(attr, []).extend([(n.end_lineno, n.end_col_offset - width, 0) for n in uses])
    others = _NAMING
    for n in facts._parents:
        t = type(n)
        if t not in others:
            continue
        if t is ast.keyword:
            if n.arg is not None:
                add(n.arg, n.lineno, n.col_offset)
        elif t is ast.arg:
            add(n.arg, n.lineno, n.col_offset)
        elif t is ast.FunctionDef or t is ast.AsyncFunctionDef or t is ast.ClassDef:
            line = lines[n.lineno - 1].encode("utf-8")
            m = (_CLASS_NAME if t is ast.ClassDef else _DEF_NAME).search(line, n.col_offset)
            add(n.name, n.lineno, m.start(1) if m else n.col_offset)
        elif t is ast.Import or t is ast.ImportFrom:
            sub = 1
            if t is ast.ImportFrom and n.module:
                for part in n.module.split("."):
                    add(part, n.lineno, n.col_offset, sub)
                    sub += 1
            for a in n.names:
                if a.name != "*":
                    for part in a.name.split("."):
                        add(part, a.lineno, a.col_offset, sub)
                        sub += 1
                if a.asname:
                    add(a.asname, a.end_lineno, a.end_col_offset, sub)
                    sub += 1
        elif t is ast.ExceptHandler:
            if n.name and n.type is not None:
                add(n.name, n.type.end_lineno, n.type.end_col_offset, 1)
        elif t is ast.Global or t is ast.Nonlocal:
            for i, name in enumerate(n.names):
                add(name, n.lineno, n.col_offset, 1 + i)
        elif t in _CAPTURES:
            for attr in _CAPTURES[t]:
                value = getattr(n, attr, None)
                for i, name in enumerate([value] if isinstance(value, str) else value or ()):
                    add(name, n.lineno, n.col_offset, 1 + i)
    for positions in out.values():
        positions.sort()
    facts.__dict__["_libcst_names"] = out
    return out


_DEF_NAME = re.compile(rb"\bdef\s+([^\s(:\[]+)")
_CLASS_NAME = re.compile(rb"\bclass\s+([^\s(:\[]+)")
_CAPTURES = {getattr(ast, k): v for k, v in (
    ("MatchAs", ("name",)), ("MatchStar", ("name",)), ("MatchMapping", ("rest",)), ("MatchClass", ("kwd_attrs",)))
    if hasattr(ast, k)}
#: the node types other than ``Name`` and ``Attribute`` that hold one of libcst's ``Name``s
_NAMING = frozenset({ast.keyword, ast.arg, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                     ast.ImportFrom, ast.ExceptHandler, ast.Global, ast.Nonlocal, *_CAPTURES})


def _libcst_orders(facts, scope) -> dict[int, int]:
    """id(binding) -> the ``order`` libcst's collector gives it, for the bindings of ``scope`` (a
    ``FunctionInfo``): the binding sites are met as ``AstFacts``' collector meets them (same walk,
    same sites), each paired with its binding by name and rank; a site's count is taken where
    libcst's collector binds (before the node's own names)."""
    if scope is None:
        return {}
    cache = facts.__dict__.setdefault("_libcst_orders", {})
    found = cache.get(id(scope))
    if found is not None:
        return found
    names = _identifiers(facts)
    sites: dict[str, list[int]] = {}

    def bind(name: str, at: Optional[tuple[int, int, int]]) -> None:
        sites.setdefault(name, []).append(-1 if at is None else bisect_left(names.get(name, ()), at))

    def target(node: ast.AST, at: Optional[tuple[int, int, int]]) -> None:
        t = type(node)
        if t is ast.Name:
            bind(node.id, at)
        elif t is ast.Tuple or t is ast.List:
            for el in node.elts:
                target(el.value if type(el) is ast.Starred else el, at)
        elif t is ast.Starred:
            target(node.value, at)

    def start(node: ast.AST) -> tuple[int, int, int]:
        return (node.lineno, node.col_offset, -1)

    from .walk import iter_children as children

    stack = [(c, "function", None) for c in reversed(children(scope.node))]
    while stack:
        node, kind, parent = stack.pop()
        t = type(node)
        inner = kind
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            if kind != "class":
                bind(node.name, start(node.decorator_list[0] if node.decorator_list else node))
            continue  # a scope of its own
        if t is ast.ClassDef:
            if kind != "class":
                bind(node.name, start(node.decorator_list[0] if node.decorator_list else node))
            inner = "class"
        elif t is ast.Import:
            for a in node.names:
                bind(a.asname if a.asname is not None else a.name.split(".")[0], start(node))
        elif t is ast.ImportFrom:
            if not (len(node.names) == 1 and node.names[0].name == "*"):
                for a in node.names:
                    bind(a.asname or a.name, start(node))
        elif t is ast.Assign:
            for tg in node.targets:
                target(tg, start(node))
        elif t is ast.AnnAssign or t is ast.AugAssign or t is ast.For or t is ast.AsyncFor:
            target(node.target, start(node))
        elif t is ast.NamedExpr:
            target(node.target, start(node))
        elif t is ast.comprehension:
            target(node.target, None)
        elif t is ast.withitem:
            if node.optional_vars is not None:
                target(node.optional_vars, start(node.context_expr))
        elif t is ast.ExceptHandler:
            if node.name is not None and type(parent) is ast.Try:
                bind(node.name, start(node))
        stack.extend((c, inner, node) for c in reversed(children(node)))
    out: dict[int, int] = {}
    for name, bindings in scope.bindings.items():
        counts = sites.get(name, [])
        if len(counts) != len(bindings):
            continue  # not met as the facts met them: no answer (the facts' own order stands)
        for b, count in zip(bindings, counts):
            out[id(b)] = count
    cache[id(scope)] = out
    return out
