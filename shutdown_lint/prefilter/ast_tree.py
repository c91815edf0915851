"""The second candidate tier: sound necessary conditions checked on Python's ``ast``.

The text tier (``prefilter.words``) keeps every file whose identifier words could make a
rule fire; on large code bases that is still ~14% of the lines, and libcst parses at
~13k lines per CPU-second. ``ast.parse`` runs ~10x faster, and a tree tells what words
cannot: *is* the blocking call inside an ``async def``, *is* ``ray.get`` called in a
function that is not a coroutine. A rule states such a condition as ``candidate_tree``,
a function of a ``Tree`` (see ``Rule.candidate_tree``); the file is parsed with libcst
only for rules whose condition holds. The rules themselves stay libcst rules.

Conditions must over-approximate what the rule can report, never under-approximate:

- names are matched by their *last word*, through every alias the module could make
  (``from time import sleep as nap``, ``q = queue.Queue()``, ``self.saver = torch.save``):
  ``Tree.words(expr)`` is the set of last words the facts' ``qualified_name(expr)`` could
  end with, a fixpoint over all bindings in the module, scopes ignored (a superset);
- "which function is a node in" follows ``facts``: a call belongs to the innermost
  ``def``/``async def`` whose node contains it (decorators and defaults included),
  class bodies do not start a scope, a ``lambda`` is noted but stays in its function.

``tests/perf/test_candidates.py`` lints every rule example and the example project with
the tiers on and off, and ``bench/bench_speed.py --check-candidates`` the whole reference
corpus: the findings must be identical.

``parse`` keeps the last few trees by content hash so that later stages of the same
process (the project index) can reuse a tree instead of parsing the file again.

This module must stay cheap to import: no libcst (facts' tables are read lazily).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import operator
import re
import warnings
from collections import OrderedDict
from functools import cached_property
from typing import Callable, Iterable, Iterator, Optional, Sequence

#: trees kept per process (a big file's tree is tens of MB: keep few)
_KEEP = 4
_trees: "OrderedDict[str, Optional[Tree]]" = OrderedDict()
_rejected: dict[str, tuple[int, int, str]] = {}


#: ``try`` statements (``try``/``except*`` included)
TRYS = (ast.Try, getattr(ast, "TryStar", ast.Try))
#: function definitions
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class TooDeep(Exception):
    """Python's own parser gives up on the file's nesting (libcst would crash on it)."""


def parse(source: bytes) -> Optional["Tree"]:
    """The file's ``Tree``; None when this interpreter's ``ast`` rejects it (a syntax
    error, or syntax newer than this Python: libcst judges then). Raises ``TooDeep``."""
    key = hashlib.sha1(source).hexdigest()
    if key in _trees:
        _trees.move_to_end(key)
        return _trees[key]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = compile(source, "<candidate>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (RecursionError, MemoryError):
        raise TooDeep() from None
    except SyntaxError as e:
        module = None
        _rejected[key] = (max(e.lineno or 1, 1), max(e.offset or 1, 1), e.msg)
    except ValueError as e:  # NUL bytes
        module = None
        _rejected[key] = (1, 1, str(e))
    tree = tree_of(module, source) if module is not None else None
    _trees[key] = tree
    while len(_trees) > _KEEP:
        _trees.popitem(last=False)
    while len(_rejected) > _KEEP:
        del _rejected[next(iter(_rejected))]
    return tree


def tree_of(module: ast.Module, source: bytes) -> "Tree":
    """The ``Tree`` of ``module``, Python's ``ast`` of ``source`` (``parse``'s, or one the
    project index made: ``prefilter.ahead``), not cached."""
    tree = Tree(module)
    if not source.isascii() and _normalises_a_name(source):
        # only identifiers are normalised: a run in a string or a comment changes no name (rare:
        # the whole text is asked first)
        from .code import code_only

        code = code_only(source)
        tree.exact_names = code is not None and not _normalises_a_name(code)
    return tree


def parse_reduced(source: bytes) -> Optional["Tree"]:
    """The ``Tree`` of ``source`` with its big inert literal tables hollowed (``literal.hollow``),
    for tier 2 to rule the file out without parsing them; None when ``source`` has none (or its
    full tree is at hand, or the reduced source does not parse, or a hollowed statement is not
    where the scan saw it): the caller then parses the whole source (``parse``). Never cached
    (``_trees`` holds full trees only: the index and the engine read them).

    Sound for every condition: when ``candidate_tree`` holds on the full tree it holds on this
    one. The two trees differ only inside the values of top-level ``NAME = <display>`` /
    ``NAME: T = <display>`` statements, where subtrees made only of ``Constant``, ``Tuple``,
    ``List``, ``Set``, ``Dict`` and ``UnaryOp`` nodes, holding no ``Name`` or ``Attribute``, are
    each one ``Constant(0)`` (an ``int``: not ``None``, a bool, a string or ``...``, the constants
    conditions look at). What the ``Tree`` and its conditions read:

    - the summary walk (``_collect``) reacts to no node in such a subtree: no call, await, raise,
      def, class, lambda, try, handler, ``if``, assignment, ``:=``, ``with``, import, alias,
      parameter, name or attribute. ``functions``, ``module_calls``, ``classes``, ``methods``,
      ``handlers``, ``has_main_guard``, ``mentioned``, the bindings (``value_bindings``,
      ``_attr_bindings``, ``_imports``: the same pairs, each value the same node type, so
      ``head``/``_unwrap``/``_aliases``/``words``/``may_alias``/``may_call*``/
      ``bound_to_method_of``/``named_bindings``/``binds_name`` answer the same) and ``assigns``
      (the same triples: the statement is not in a function) are the same;
    - ``binding_count``: such subtrees bind nothing (no name, no store);
    - ``parents``/``named_nodes`` and every walk from a name upwards: every ``Name``/``Attribute``
      has the same parent, ancestors, ``ctx`` and position; a container holding one keeps its
      type and its number of elements (a replaced element is one node again);
    - statement walks (``module.body``, ``nested_statements``): the same statements, the same
      types, targets, annotations and value types;
    - walks over every node of the module (``walk``, ``ast.walk``) meet fewer nodes of those five
      types and ``Constant(0)`` for some: the conditions that walk so look for calls, names,
      attributes, ``try``/``if``/assignments to attributes, constants ``True``/``None``/strings
      in them, never for a bare display or an ``int`` alone (audited per rule:
      ``tests/perf/test_s14_literal_tier2.py`` compares every rule's condition on both trees);
    - positions: every kept node is where it was (same offsets); a replaced subtree's
      ``Constant`` ends where it starts, and conditions read positions of statements, calls and
      functions only.
    """
    from .literal import hollow

    found = hollow(source)
    if found is None:
        return None
    if hashlib.sha1(source).hexdigest() in _trees:
        return None  # the whole tree is at hand: ``parse`` gives it for nothing
    reduced, spans = found
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = compile(reduced, "<candidate>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # ``parse`` judges the file (the same outcome: the rest of the text is the same)
    body = {st.lineno: st for st in module.body}
    for stmt, v0, v1 in spans:
        line, _ = _line_col(source, stmt)
        st = body.get(line)
        if type(st) is ast.Assign:
            ok = len(st.targets) == 1 and type(st.targets[0]) is ast.Name
        elif type(st) is ast.AnnAssign:
            ok = st.simple == 1 and type(st.target) is ast.Name
        else:
            ok = False
        value = st.value if ok else None
        if (value is None or type(value) not in (ast.Tuple, ast.List, ast.Set, ast.Dict) or st.col_offset != 0
                or (value.lineno, value.col_offset) != _line_col(source, v0)
                or (value.end_lineno, value.end_col_offset) != _line_col(source, v1)):
            return None
    tree = Tree(module)
    if not source.isascii() and _normalises_a_name(source):  # as ``parse`` decides it (the same names)
        from .code import code_only

        code = code_only(source)
        tree.exact_names = code is not None and not _normalises_a_name(code)
    return tree


_LINE_ENDS = re.compile(rb"\r\n|\r|\n")


def _line_col(source: bytes, offset: int) -> tuple[int, int]:
    """(line, column in bytes) of ``offset``, as ``ast`` counts them."""
    line, start = 1, 0
    for m in _LINE_ENDS.finditer(source, 0, offset):
        line += 1
        start = m.end()
    return line, offset - start


def release_trees(keep_lines: int) -> None:
    """Drop the cached trees older than the newest ones that span ``keep_lines`` lines: a big
    file's tree (tens of MB) must not stay alive under the next file's parse, while small ones
    stay for the index to reuse (see ``runner.KEEP_TREE_LINES``). A cache only: no result changes."""
    total = 0
    for key in reversed(list(_trees)):
        tree = _trees[key]
        body = tree.module.body if tree is not None else None
        total += (getattr(body[-1], "end_lineno", None) or 0) if body else 0
        if total > keep_lines:
            del _trees[key]


#: runs of characters that are not ASCII
_NON_ASCII = None


def _normalises_a_name(source: bytes) -> bool:
    """Python's parser may have changed an identifier of ``source``: it normalises them
    (NFKC: ``ｃlose`` is ``close`` in the ``ast``) while libcst, and so the rules, keep them
    as written. A superset: a text already in NFKC changes nothing; else each run of
    non-ASCII characters that holds an identifier character and changes under NFKC (with
    its neighbours: a combining accent changes the letter before it) counts, in strings
    and comments too (``parse`` asks again of ``code.code_only(source)``, where every
    identifier is as in the source and the insides of strings and comments are blank)."""
    global _NON_ASCII
    import unicodedata

    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return True  # another encoding: do not guess
    if unicodedata.is_normalized("NFKC", text):
        return False
    if _NON_ASCII is None:
        import re

        _NON_ASCII = re.compile(r"[^\x00-\x7f]+")
    normalize = unicodedata.normalize
    for m in _NON_ASCII.finditer(text):
        run = m.group()
        if not any(("a" + c).isidentifier() for c in run):
            continue  # punctuation, symbols: never in a name
        around = text[max(0, m.start() - 1):m.end() + 1]
        if normalize("NFKC", around) != around:
            return True
    return False


def rejection(source: bytes) -> Optional[tuple[int, int, str]]:
    """(line, column, message) of this Python's ``SyntaxError`` for ``source``, when
    ``parse`` saw one."""
    return _rejected.get(hashlib.sha1(source).hexdigest())


def cached(source: bytes) -> Optional[ast.Module]:
    """The ``ast.Module`` this process already parsed for ``source`` (None if none):
    the hook for later stages (the project index) to reuse the tier's parse."""
    tree = _trees.get(hashlib.sha1(source).hexdigest())
    return tree.module if tree is not None else None


class Function:
    """One ``def``/``async def`` and what runs directly in it (not in nested defs)."""

    __slots__ = ("node", "name", "is_async", "calls", "raises", "trys", "cls", "in_class")

    def __init__(self, node, cls: Optional[ast.ClassDef]) -> None:
        self.node = node
        self.name: str = node.name
        self.is_async = isinstance(node, ast.AsyncFunctionDef)
        #: (call, awaited, in a lambda)
        self.calls: list[tuple[ast.Call, bool, bool]] = []
        self.raises: list[ast.Raise] = []
        self.trys: list[ast.AST] = []
        self.cls = cls  # the class whose body it is directly in, or None
        self.in_class = cls is not None  # a method


class Tree:
    """One module's ``ast`` with the summaries the conditions read (each built once)."""

    def __init__(self, module: ast.Module) -> None:
        self.module = module
        self.functions: list[Function] = []
        self.module_calls: list[tuple[ast.Call, bool, bool]] = []
        self.classes: list[ast.ClassDef] = []
        self._bindings: list[tuple[str, ast.AST]] = []  # name = value
        self._attr_bindings: list[tuple[str, ast.AST]] = []  # self.x = value
        self._imports: list[tuple[str, str]] = []  # local name -> imported last word
        #: ``target = value`` (one target) and ``target: T = value``: (target, value, function)
        self.assigns: list[tuple[ast.AST, ast.AST, Optional[Function]]] = []
        #: names of functions defined directly in a class body (methods), by class
        self.methods: dict[int, list[Function]] = {}
        self.has_main_guard = False
        #: every ``except`` handler (``except*`` ones too), wherever it is
        self.handlers: list[ast.ExceptHandler] = []
        #: every identifier the module spells as a name, an attribute or an imported name's
        #: last word (``Tree.mentions``)
        self.mentioned: set[str] = set()
        #: the ``ast``'s names are spelled as in the source: False when Python's NFKC
        #: normalisation changed one (``parse``); conditions then decide nothing
        self.exact_names = True
        self._parent_maps: dict[int, list] = {}  # ``_region``
        self._once: dict = {}  # ``once``
        self._collect()

    # ------------------------------------------------------------------ the one walk
    def _collect(self) -> None:
        # iterative: deeply nested files must not hit the recursion limit here. The stack holds
        # bare nodes, in the state (function, in a lambda, class) of the node popped last; a
        # def, a class or a lambda changes the state for its children and pushes the state to
        # restore first (a tuple), which is popped once they are all done (a tuple per node
        # cost ~4% of this walk). A ``Name`` or a ``Constant`` is never pushed: a name is noted
        # where its parent is popped, a constant holds nothing the walk reads.
        stack: list = [self.module]
        fn: Optional[Function] = None
        in_lambda = False
        cls: Optional[ast.ClassDef] = None
        awaited: set[int] = set()
        FunctionDef, AsyncFunctionDef, ClassDef, Lambda = ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda
        Call, Await, Raise, Name, Constant, Attribute = ast.Call, ast.Await, ast.Raise, ast.Name, ast.Constant, ast.Attribute
        Arg, Assign, If, Alias = ast.arg, ast.Assign, ast.If, ast.alias
        trys = TRYS
        mentioned = self.mentioned
        mention = mentioned.add
        module_calls = self.module_calls
        reacts = _REACTS
        children_of = _CHILDREN
        pop, push = stack.pop, stack.append
        while stack:
            node = pop()
            t = type(node)
            # the commonest nodes the walk reacts to first, their children pushed here (the same
            # order as below: the last field first, each list from its end)
            if t is Attribute:
                mention(node.attr)
                value = node.value
                tv = type(value)
                if tv is Name:
                    mention(value.id)
                elif tv is not Constant:
                    push(value)
                continue
            if t is Call:
                (fn.calls if fn is not None else module_calls).append((node, id(node) in awaited, in_lambda))
                for c in reversed(node.keywords):
                    value = c.value
                    tv = type(value)
                    if tv is Name:  # the keyword's only child (a keyword itself is not read)
                        mention(value.id)
                    elif tv is not Constant:
                        push(value)
                for c in reversed(node.args):
                    tc = type(c)
                    if tc is Name:
                        mention(c.id)
                    elif tc is not Constant:
                        push(c)
                value = node.func
                tv = type(value)
                if tv is Name:
                    mention(value.id)
                elif tv is not Constant:
                    push(value)
                continue
            if t is tuple:  # a def's, class's or lambda's children are done: the state outside it
                fn, in_lambda, cls = node
                continue
            if t in reacts:  # most nodes (expressions, arguments, keywords) are none of these
                if t is Arg:
                    if node.annotation is not None:
                        _mention_string_annotation(node.annotation, mentioned)
                elif t is Assign:
                    targets = node.targets
                    if len(targets) == 1:  # several targets bind no value (``_bind`` of None)
                        self._bind(targets[0], node.value)
                        self.assigns.append((targets[0], node.value, fn))
                elif t is If:
                    if fn is None and cls is None and is_main_guard(node.test):
                        self.has_main_guard = True
                elif t is Alias:
                    mention(node.name.rsplit(".", 1)[-1])
                elif t is FunctionDef or t is AsyncFunctionDef:
                    info = Function(node, cls)
                    self.functions.append(info)
                    if cls is not None:
                        self.methods.setdefault(id(cls), []).append(info)
                    push((fn, in_lambda, cls))
                    fn, in_lambda, cls = info, False, None
                elif t is ClassDef:
                    self.classes.append(node)
                    push((fn, in_lambda, cls))
                    cls = node
                elif t is Lambda:
                    push((fn, in_lambda, cls))
                    in_lambda = True
                elif t is Await:
                    if type(node.value) is Call:
                        awaited.add(id(node.value))
                elif t is Raise:
                    if fn is not None:
                        fn.raises.append(node)
                elif t in trys:
                    if fn is not None:
                        fn.trys.append(node)
                elif t is ast.ExceptHandler:
                    self.handlers.append(node)
                elif t is ast.AnnAssign or t is ast.NamedExpr:
                    self._bind(node.target, node.value)
                    if t is ast.AnnAssign and node.value is not None:
                        self.assigns.append((node.target, node.value, fn))
                    if t is ast.AnnAssign:
                        _mention_string_annotation(node.annotation, mentioned)
                elif t is ast.withitem:
                    if node.optional_vars is not None:
                        self._bind(node.optional_vars, node.context_expr)
                elif t is ast.Import:
                    for alias in node.names:
                        if alias.asname:
                            self._imports.append((alias.asname, alias.name.rsplit(".", 1)[-1]))
                elif t is ast.ImportFrom:
                    for alias in node.names:
                        if alias.asname:
                            self._imports.append((alias.asname, alias.name))
            # ``cls`` reaches everything under a class body (an ``if`` in it too) until a
            # def resets it, as in the facts' collector. Children are pushed last field
            # first, each list from its end, so that they are popped in source order,
            # without ``ast.iter_child_nodes``' generators: this loop is most of the tier's
            # cost after the parse. Only the fields that can hold a node count (``_fields``),
            # read at once (``_CHILDREN``); in those the parser puts nodes or None only.
            get = children_of.get(t, _UNKNOWN)
            if get is _UNKNOWN:
                get = children_of[t] = _children_getter(t)
            if get is None:
                continue
            if type(get) is str:  # one field
                value = getattr(node, get)
                if type(value) is list:
                    for c in reversed(value):
                        tc = type(c)
                        if tc is Name:
                            mention(c.id)
                        elif tc is not Constant and c is not None:
                            push(c)
                elif value is not None:
                    tv = type(value)
                    if tv is Name:
                        mention(value.id)
                    elif tv is not Constant:
                        push(value)
                continue
            for value in get(node):
                if type(value) is list:
                    for c in reversed(value):
                        tc = type(c)
                        if tc is Name:
                            mention(c.id)
                        elif tc is not Constant and c is not None:
                            push(c)
                elif value is not None:
                    tv = type(value)
                    if tv is Name:
                        mention(value.id)
                    elif tv is not Constant:
                        push(value)

    def _bind(self, target: ast.AST, value: Optional[ast.AST]) -> None:
        if isinstance(target, ast.Name):
            if value is not None:
                self._bindings.append((target.id, value))
        elif isinstance(target, ast.Attribute) and value is not None:
            self._attr_bindings.append((target.attr, value))

    # ------------------------------------------------------------------ names
    @cached_property
    def _aliases(self) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
        """name -> last words it may stand for; attribute name -> the same for ``x.attr``
        (a fixpoint over every binding in the module, scopes ignored: a superset)."""
        names: dict[str, set[str]] = {}
        attrs: dict[str, set[str]] = {}
        for local, word in self._imports:
            names.setdefault(local, set()).add(word)
        # A value gives words only under any awaits and calls down to a name or an attribute
        # (``_words``): its own word, the table entry of that word (``names`` for a name,
        # ``attrs`` for an attribute), and one step of factory results per call. A binding is
        # read again only when that entry grew after it was read (a worklist, with one pass in
        # the bindings' order first: the same least fixpoint as rounds over every binding until
        # none changes, each entry made in the same order).
        results = _FACTORY_RESULTS or _factory_results()
        Name, Attribute = _Name, _Attribute
        #: (table bound, its key, the value's word, its table, its calls) of each wordy binding
        entries: list[tuple[dict, str, str, dict, int]] = []
        readers: dict[tuple[int, str], list[int]] = {}  # (id of a table, key) -> entries reading it
        for table, bound in ((names, self._bindings), (attrs, self._attr_bindings)):
            for name, value in bound:
                value, calls = _unwrap(value)
                t = type(value)
                if t is Name:
                    entries.append((table, name, value.id, names, calls))
                elif t is Attribute:
                    entries.append((table, name, value.attr, attrs, calls))
        for i, (_, _, word, source, _) in enumerate(entries):
            readers.setdefault((id(source), word), []).append(i)
        todo = list(range(len(entries)))
        waiting = [True] * len(entries)
        for i in todo:  # ``todo`` grows behind the loop
            waiting[i] = False
            table, name, word, source, calls = entries[i]
            words = {word}
            more = source.get(word)
            if more:
                words |= more
            for _ in range(calls):
                found = [r for w in words if (r := results.get(w)) is not None]
                for r in found:
                    words |= r
            have = table.get(name)
            if have is None:
                table[name] = words
            elif words <= have:
                continue
            else:
                have |= words
            for j in readers.get((id(table), name), ()):
                if not waiting[j]:
                    waiting[j] = True
                    todo.append(j)
        return names, attrs

    @property
    def value_bindings(self) -> list[tuple[str, ast.AST]]:
        """``name = value`` bindings (one target, ``: T = v``, ``:=``, ``with ... as name``):
        what the facts bind as values."""
        return self._bindings

    @functools.cached_property
    def named_bindings(self) -> set[str]:
        """Names given an import/def/class/value binding somewhere: a superset of the facts'
        collector's kinds other than "other" (every import alias wherever it is, every def and
        class, and the ``name = value`` bindings: one-target ``=``, ``: T = v``, ``:=``, ``with
        ... as name``, which is what the collector binds as "value"). A name outside it is bound
        only by a parameter, unpacking or a loop, or not at all: the facts cannot name it."""
        out = {fn.name for fn in self.functions} | {c.name for c in self.classes}
        out.update(name for name, _ in self._bindings)
        for st in nested_statements(self.module.body):  # imports are statements
            if type(st) is ast.Import:
                out.update(a.asname or a.name.split(".")[0] for a in st.names)
            elif type(st) is ast.ImportFrom:
                out.update(a.asname or a.name for a in st.names)
        return out

    def binding_count(self, name: str) -> int:
        """How many places may bind ``name`` in the module: defs, classes, import aliases (any
        ``*`` import counts for every name), targets (assignments, loops, ``with``, ``:=``,
        ``del``), parameters, ``except ... as``, ``global``/``nonlocal``, ``match`` captures.
        Each place counts once, however many of its parts spell the name."""
        counts, stars = self._binding_counts
        return counts.get(name, 0) + stars

    @cached_property
    def _binding_counts(self) -> tuple[dict[str, int], int]:
        counts: dict[str, int] = {}
        stars = 0
        get = counts.get
        kinds = _BINDING_KINDS
        Load = ast.Load

        def add(names: Iterable[Optional[str]]) -> None:
            for nm in set(names):
                if nm is not None:
                    counts[nm] = get(nm, 0) + 1

        for n in _nodes(self.module):  # counts: the order does not matter
            kind = kinds.get(type(n))
            if kind is None:  # most nodes
                continue
            if kind == 1:  # a name
                if type(n.ctx) is not Load:
                    counts[n.id] = get(n.id, 0) + 1
            elif kind == 2:  # a def, a class
                counts[n.name] = get(n.name, 0) + 1
            elif kind == 3:  # an import's name
                if n.name == "*":
                    stars += 1
                else:
                    add((n.asname, n.name, n.name.split(".")[0], n.name.rsplit(".", 1)[-1]))
            elif kind == 4:  # ``except ... as x``
                if n.name is not None:
                    counts[n.name] = get(n.name, 0) + 1
            elif kind == 5:  # a parameter
                counts[n.arg] = get(n.arg, 0) + 1
            elif kind == 6:  # ``global``, ``nonlocal``
                add(n.names)
            else:  # ``match`` captures
                add((getattr(n, "name", None), getattr(n, "rest", None)))
        return counts, stars

    def words(self, expr: ast.AST) -> set[str]:
        """Every last word the facts' qualified name of ``expr`` could end with."""
        names, attrs = self._aliases
        return self._words(expr, names, attrs)

    def _words(self, expr: ast.AST, names: dict, attrs: dict) -> set[str]:
        """A name's own word and its table's; an attribute's the same; an ``await x``'s are
        ``x``'s; a call's are its callee's and, an instance, the result types of the factories
        among them (one step per call: ``f()()`` takes two). A new set."""
        calls = 0
        t = type(expr)
        # ``_unwrap``, inline: ``words`` is asked of most calls a condition reads
        while t is _Await or t is _Call:  # a loop: a chain may be deeper than the recursion limit
            if t is _Call:
                calls += 1
                expr = expr.func
            else:
                expr = expr.value
            t = type(expr)
        if t is _Name:
            out = {expr.id}
            more = names.get(expr.id)
        elif t is _Attribute:
            out = {expr.attr}
            more = attrs.get(expr.attr)
        else:
            return set()
        if more:
            out |= more
        if calls:
            results = _FACTORY_RESULTS or _factory_results()
            for _ in range(calls):
                found = [r for w in out if (r := results.get(w)) is not None]
                for r in found:
                    out |= r
        return out

    def mentions(self, words: Iterable[str]) -> bool:
        """The module spells one of ``words`` as a name, an attribute or an imported
        name's last word (``import a.b as c`` spells ``b``)."""
        return not self.mentioned.isdisjoint(words)

    def may_alias(self, words: frozenset) -> bool:
        """Some set of last words that ``words()`` reads for a name or an attribute through
        bindings (``_aliases``) may hold one of ``words``, decided without building those sets.
        Their fixpoint only ever adds an import's last word, the word a bound value spells at its
        head (``head``), the words of other such sets and a factory's result types
        (``_alias_seeds``): without one of ``words`` among those, no set holds it, and
        ``may_call_any(call, names)`` for names whose last words are ``words`` holds only for a
        callee spelled with one of them (a name, an attribute) or of another shape."""
        return not words.isdisjoint(self._alias_seeds)

    @cached_property
    def _alias_seeds(self) -> frozenset:
        out = {w for _, w in self._imports}
        out.update(head(v) for bindings in (self._bindings, self._attr_bindings) for _, v in bindings)
        out.discard(None)
        for types in (_FACTORY_RESULTS or _factory_results()).values():
            out |= types
        return frozenset(out)

    def may_call_word(self, call: ast.Call, lasts: frozenset, aliased: bool) -> bool:
        """A necessary condition of ``may_call_any(call, names)`` for dotted ``names`` whose last
        words are ``lasts``: the callee's words (``words()``) meet ``lasts`` (an attribute callee:
        its name, or what ``x.attr = ...`` bindings make it). ``aliased``: ``may_alias(lasts)``;
        without an alias that may hold one, a name or an attribute callee meets them only when
        spelled with one of them, and the module's aliases are not read. Exact for a name callee."""
        func = call.func
        t = type(func)
        if t is _Attribute:
            return func.attr in lasts or (aliased and not lasts.isdisjoint(self.aliases_of_attr(func.attr)))
        if t is _Name:
            return func.id in lasts or (aliased and not lasts.isdisjoint(self.words(func)))
        return not lasts.isdisjoint(self.words(func))

    def binds_name(self, name: str) -> bool:
        """``name in named_bindings``, without building that set when it is not built yet: a def,
        a class, a ``name = value`` binding, then an import at the top level, then an import
        anywhere (``nested_statements``, as ``named_bindings`` reads them)."""
        built = self.__dict__.get("named_bindings")  # a ``cached_property``: there once built
        if built is not None:
            return name in built
        if any(fn.name == name for fn in self.functions) or any(c.name == name for c in self.classes):
            return True
        if any(bound == name for bound, _ in self._bindings):
            return True
        body = self.module.body
        return _imports_name(body, name) or _imports_name(nested_statements(body), name)

    def aliases_of_attr(self, attr: str) -> set[str]:
        """Last words that ``x.attr`` may stand for through ``x.attr = value`` bindings."""
        return self._aliases[1].get(attr, set())

    def may_call(self, call: ast.Call, last: str, receivers: Iterable[str] = ()) -> bool:
        """The callee's qualified name could be ``<r>.<last>`` with ``r`` ending in one of
        ``receivers`` (any receiver when empty): ``may_call(c, "get", {"ray"})`` for ray.get."""
        func = call.func
        names, attrs = self._aliases
        t = type(func)
        if t is ast.Attribute:
            aliased = attrs.get(func.attr)
            if aliased is not None and last in aliased:
                return True
            if func.attr != last:
                return False
            wanted = set(receivers)
            return not wanted or bool(self._words(func.value, names, attrs) & wanted)
        if t is ast.Name:  # ``self.words(func)`` without building it: the name or what it is bound to
            name = func.id
            return name == last or last in names.get(name, ())
        return last in self._words(func, names, attrs)

    def may_call_any(self, call: ast.Call, names: Iterable[str]) -> bool:
        """``may_call`` for any of the dotted ``names`` (``sys.exit``, ``builtins.exit``),
        spellings the facts canonicalise included (``asyncio.tasks.gather``). The callee is read
        once for all of them (rules ask this of every call with a dozen names)."""
        pairs = _pairs(names)
        func = call.func
        bound, attrs = self._aliases
        t = type(func)
        if t is ast.Attribute:  # ``may_call``'s tests, in its order, for each name
            attr = func.attr
            aliased = attrs.get(attr)
            words = None
            for last, wanted in pairs:
                if aliased is not None and last in aliased:
                    return True
                if attr != last:
                    continue
                if not wanted:
                    return True
                if words is None:
                    words = self._words(func.value, bound, attrs)
                if not words.isdisjoint(wanted):
                    return True
            return False
        if t is ast.Name:
            name = func.id
            to = bound.get(name, ())
            return any(name == last or last in to for last, _ in pairs)
        words = self._words(func, bound, attrs)
        return any(last in words for last, _ in pairs)

    def bound_to_method_of(self, name: str, types: set[str], attribute: bool = False) -> bool:
        """Some ``name = x.m`` (``self.name = x.m`` with ``attribute``) binds a method of
        an object whose words meet ``types`` (``get = session.get``)."""
        for bound, value in (self._attr_bindings if attribute else self._bindings):
            if bound == name and isinstance(value, ast.Attribute) and self.words(value.value) & types:
                return True
        return False

    @cached_property
    def argument_names(self) -> set[str]:
        """Identifiers used anywhere inside call arguments (callables handed to
        ``Thread(target=...)``, ``submit``, ``ray.remote(Cls)``, ``partial``...)."""
        out: set[str] = set()
        args: list[ast.AST] = []
        for call in self.all_calls():
            args += call.args
            args += [k.value for k in call.keywords]
        _identifiers_into(args, out)
        return out

    def names_handed_to(self, callees: Iterable[str]) -> set[str]:
        """Identifiers used inside the arguments of calls that may be one of the dotted
        ``callees`` (``may_call_any``): what ``Thread(target=self.run)`` or
        ``pool.submit(partial(work, x))`` can hand over. A subset of ``argument_names``."""
        names = tuple(callees)
        out: set[str] = set()
        args: list[ast.AST] = []
        for call in self.all_calls():
            if (call.args or call.keywords) and self.may_call_any(call, names):
                args += call.args
                args += [k.value for k in call.keywords]
        _identifiers_into(args, out)
        return out

    def signal_handler_installs(self) -> list[tuple[ast.Call, list[ast.AST]]]:
        """(call, its positional arguments) of the calls that may be ``signal.signal`` or
        ``loop.add_signal_handler`` (by last word) with a signal and a handler."""
        out = []
        for call in self.all_calls():
            args = positional_args(call)
            if len(args) >= 2 and (self.may_call(call, "signal") or self.may_call(call, "add_signal_handler")):
                out.append((call, args))
        return out

    def parents(self, root: ast.AST) -> dict[int, ast.AST]:
        """``id(node) -> parent`` for the nodes under ``root`` (a function's node or the
        module; not the field-less markers such as ``Load``: ``_parent_map``), built once per
        root: the summary walk keeps no parents, and only a few conditions ask where a value
        goes (``await create_task(...)``)."""
        return self._region(root)[0]

    def named_nodes(self, root: ast.AST) -> tuple[dict[str, list[ast.Name]], dict[str, list[ast.Attribute]]]:
        """(name -> its ``Name`` nodes, attribute -> its ``Attribute`` nodes) under ``root``, in
        ``ast.walk`` order, built once per root from the nodes ``parents(root)`` walked (the
        conditions that ask where a name's uses go ask both: one walk)."""
        region = self._region(root)
        if region[2] is None:
            names: dict[str, list[ast.Name]] = {}
            attrs: dict[str, list[ast.Attribute]] = {}
            Name, Attribute = ast.Name, ast.Attribute
            for n in region[1]:
                t = type(n)
                if t is Name:
                    names.setdefault(n.id, []).append(n)
                elif t is Attribute:
                    attrs.setdefault(n.attr, []).append(n)
            region[2] = (names, attrs)
        return region[2]

    def once(self, compute):
        """``compute(self)``, computed once per tree: what the conditions of several rules read
        (``compute`` is the key: a module-level function; the value must not be changed)."""
        found = self._once.get(compute, _UNKNOWN)
        if found is _UNKNOWN:
            found = self._once[compute] = compute(self)
        return found

    def _region(self, root: ast.AST) -> list:
        """[parent map, nodes walked, ``named_nodes`` or None] of ``root``, made once."""
        maps = self._parent_maps
        found = maps.get(id(root))
        if found is None:
            found = maps[id(root)] = [*_parents_and_nodes(root), None]
        return found

    def all_calls(self) -> Iterator[ast.Call]:
        for c, _, _ in self.module_calls:
            yield c
        for fn in self.functions:
            for c, _, _ in fn.calls:
                yield c

    # ------------------------------------------------------------------ helpers for conditions
    def sync_functions_reaching(self, direct: Iterable[Function], depth: int) -> set[str]:
        """Names of sync functions that make a ``direct`` call or, up to ``depth`` levels,
        call (by name) a function that does: what ``foo()`` / ``self.foo()`` may resolve to."""
        found = {fn.name for fn in direct if not fn.is_async}
        for _ in range(depth - 1):
            more = {fn.name for fn in self.functions if not fn.is_async and fn.name not in found and any(
                callee_name(c) in found for c, _, lam in fn.calls if not lam)}
            if not more:
                break
            found |= more
        return found

    def reached_by_name(self, roots: Iterable[str], step, only=None) -> list[Function]:
        """The functions named in ``roots`` and, transitively, in ``step(fn)`` of a function
        reached (names: a superset of what the facts resolve); with ``only``, the functions
        for which ``only(fn)`` holds (the others are neither reached nor followed)."""
        return self._reach(roots, step, only)[0]

    def reachable_names(self, roots: set[str]) -> set[str]:
        """Function names reachable from ``roots`` by calls (by name: a superset of the
        facts' same-module closure)."""
        return self._reach(roots, lambda fn: (n for c, _, _ in fn.calls if (n := callee_name(c)) is not None))[1]

    def _reach(self, roots: Iterable[str], step, only=None) -> tuple[list[Function], set[str]]:
        """(functions reached, every name seen) for ``reached_by_name``."""
        by_name: dict[str, list[Function]] = {}
        for fn in self.functions:
            if only is None or only(fn):
                by_name.setdefault(fn.name, []).append(fn)
        names = set(roots)
        todo, out = list(names), []
        while todo:
            for fn in by_name.get(todo.pop(), ()):
                out.append(fn)
                for name in step(fn):
                    if name not in names:
                        names.add(name)
                        todo.append(name)
        return out, names


def _parent_map(root: ast.AST) -> dict[int, ast.AST]:
    """``{id(child): node for node in ast.walk(root) for child in ast.iter_child_nodes(node)}``
    without the markers (``Load``, ``Add``, ``Eq``: nodes of the ASDL types ``_MARKERS``; the
    parser shares one of each between many nodes, so they have no parent of their own), and
    without the generators."""
    return _parents_and_nodes(root)[0]


def _parents_and_nodes(root: ast.AST) -> tuple[dict[int, ast.AST], list[ast.AST]]:
    """(``_parent_map(root)``, ``root`` and every node under it but the markers, in
    ``ast.walk``'s order): one walk, whose queue is the list. Only the fields ``_fields`` keeps
    are read (no ``ctx``, no operator: the markers' fields), all at once (``_FORWARD``)."""
    found: dict[int, ast.AST] = {}
    out = [root]
    push = out.append
    getters = _FORWARD
    for node in out:  # ``out`` grows behind the loop: breadth first
        t = type(node)
        get = getters.get(t, _UNKNOWN)
        if get is _UNKNOWN:
            get = getters[t] = _getter(_fields(t))
        if get is None:  # a ``Name``, a ``Constant``: nothing under it but markers
            continue
        for value in ((getattr(node, get),) if type(get) is str else get(node)):
            if type(value) is list:
                for item in value:
                    if item is not None:
                        found[id(item)] = node
                        push(item)
            elif value is not None:
                found[id(value)] = node
                push(value)
    return found, out


#: node type -> ``_getter(_fields(t))`` (``_parents_and_nodes``)
_FORWARD: dict[type, object] = {}


def _nodes(root: ast.AST) -> list[ast.AST]:
    """``root`` and every node under it but the markers (``_parents_and_nodes``' list, without
    the parents)."""
    return _flatten(root, _FORWARD, _forward_getter)


def _forward_getter(t: type):
    return _getter(_fields(t))


#: node type -> what ``Tree._binding_counts`` reads of it
_BINDING_KINDS: dict[type, int] = {
    ast.Name: 1, ast.FunctionDef: 2, ast.AsyncFunctionDef: 2, ast.ClassDef: 2, ast.alias: 3,
    ast.ExceptHandler: 4, ast.arg: 5, ast.Global: 6, ast.Nonlocal: 6,
    **{getattr(ast, name): 7 for name in ("MatchAs", "MatchStar", "MatchMapping") if hasattr(ast, name)},
}


def _mention_string_annotation(annotation: ast.AST, mentioned: set[str]) -> None:
    """The identifiers spelled in string annotations (``f: "io.TextIOWrapper"``,
    ``Optional["httpx.Client"]``) count as mentioned: the facts read those types."""
    node = annotation
    while type(node) is ast.Attribute:
        node = node.value
    if type(node) is ast.Name:
        return  # ``int``, ``torch.Tensor``: most annotations hold no string
    todo = [annotation]  # every node under it (``ast.walk``'s, in another order: a set is filled)
    pop, push = todo.pop, todo.append
    Constant, AST, fields_of = ast.Constant, ast.AST, _FIELDS_BACKWARDS
    while todo:
        sub = pop()
        t = type(sub)
        if t is Constant:
            if type(sub.value) is str:
                mentioned.update(w for w in _IDENTIFIER.findall(sub.value) if not w[0].isdigit())
            continue
        fields = fields_of.get(t)
        if fields is None:
            fields = fields_of[t] = tuple(reversed(_fields(t)))
        for field in fields:
            value = getattr(sub, field, None)
            if type(value) is list:
                for c in value:
                    if isinstance(c, AST):
                        push(c)
            elif isinstance(value, AST):
                push(value)


_IDENTIFIER = re.compile(r"\w+")


#: the node types ``Tree._collect`` does something with besides walking on (``Attribute`` and
#: ``Call`` are tested before it)
_REACTS = frozenset({ast.alias, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                     ast.Await, ast.Raise, *TRYS, ast.ExceptHandler, ast.Assign, ast.AnnAssign,
                     ast.NamedExpr, ast.arg, ast.withitem, ast.Import, ast.ImportFrom, ast.If})
#: node type -> ``_fields`` reversed (the walkers that push the last field first)
_FIELDS_BACKWARDS: dict[type, tuple[str, ...]] = {}
#: node type -> ``_children_getter(t)`` (``Tree._collect``)
_CHILDREN: dict[type, object] = {}
_UNKNOWN = object()


def _children_getter(t: type):
    """How ``Tree._collect`` reads the children of a node of type ``t``: ``_getter`` of
    ``_fields``, last first."""
    return _getter(tuple(reversed(_fields(t))))


def _getter(fields: tuple[str, ...]):
    """None when there is no field, the field's name when there is one, else an ``attrgetter``
    of them all (one call gives the tuple of their values)."""
    if not fields:
        return None
    if len(fields) == 1:
        return fields[0]
    return operator.attrgetter(*fields)


@functools.lru_cache(maxsize=None)
def _fields(t: type) -> tuple[str, ...]:
    """The fields of an ``ast`` node type that can hold nodes the tier reads, in ``_fields``
    order: ``_node_fields`` without ``ctx`` (a ``Load``/``Store`` marker on every name) and
    those declared as a field-less marker (operators, comparison ops, type-ignore comments)."""
    declared = _declared(t)
    return tuple(f for f in _node_fields(t) if f != "ctx" and declared.get(f) not in _MARKERS)


#: ``_fields`` for the other walkers of these trees (the project index's summary walk): one
#: reading of which fields can hold a node worth entering, from each node type's signature
subtree_fields = _fields


@functools.lru_cache(maxsize=None)
def _node_fields(t: type) -> tuple[str, ...]:
    """The fields of an ``ast`` node type that can hold a node (``ast.iter_child_nodes``
    finds its children in these only), in ``_fields`` order: not those the node type's
    signature declares as a name, a string, a number or a constant. A field the signature
    does not declare is kept."""
    declared = _declared(t)
    return tuple(f for f in t._fields if declared.get(f) not in _VALUES)


def _declared(t: type) -> dict[str, str]:
    """Field -> ASDL type (``signature``); empty when the type has no signature."""
    return {name: typ for name, (typ, _) in signature(t).items()}


@functools.lru_cache(maxsize=None)
def signature(t: type) -> dict[str, tuple[str, str]]:
    """Field -> (ASDL type, its mark: ``*`` a list, ``?`` optional, "" one), from the node type's
    docstring (Python's signature of it: ``BinOp(expr left, operator op, expr right)``); empty
    when it has none. Read by the tier's walks here and the engine's compiled readers."""
    doc = t.__doc__ or ""
    if not doc.startswith(t.__name__ + "("):
        return {}
    return {name: (typ, mark) for typ, mark, name in _SIGNATURE_FIELD.findall(doc[len(t.__name__) + 1:])}


#: ``type name`` / ``type* name`` / ``type? name`` in an ``ast`` node type's docstring
_SIGNATURE_FIELD = re.compile(r"(\w+)([*?]?) (\w+)")
#: ASDL builtin types: a field of one never holds a node
_VALUES = frozenset({"identifier", "string", "int", "constant", "object", "bytes"})
#: ASDL types of field-less nodes the tier never reads (``Load``, ``Add``, ``Eq``, ``TypeIgnore``)
_MARKERS = frozenset({"expr_context", "boolop", "operator", "unaryop", "cmpop", "type_ignore"})
#: node type -> ``_node_fields`` (``walk_within``)
_NODE_FIELDS: dict[type, tuple[str, ...]] = {}
#: node type -> ``_node_getter(t)`` (``walk``, ``children``)
_NODE_CHILDREN: dict[type, object] = {}


def compiled_reader(t: type) -> Optional[Callable[[ast.AST], Sequence[ast.AST]]]:
    """A function giving a node of type ``t`` its walked children (``_fields``) in field order,
    compiled from the type's ``signature``: a ``type*`` field (a list) is added whole, a ``type``
    or ``type?`` one when not None. ``no_children`` when none is walked; None when the
    signature does not declare a walked field (the caller falls back to reading the fields).
    The engine's walk and the index's summaries read children through it."""
    fields = _fields(t)
    if not fields:
        return no_children
    kinds = {name: mark for name, (_, mark) in signature(t).items()}
    if any(f not in kinds for f in fields):
        return None
    if len(fields) == 1 and kinds[fields[0]] == "*":
        return operator.attrgetter(fields[0])  # the node's own list
    if len(fields) == 1:  # one node or none
        lines = ["def read(n):", f"    v = n.{fields[0]}", "    return () if v is None else (v,)"]
    else:
        lines = ["def read(n):", "    out = []"]
        for f in fields:
            if kinds[f] == "*":
                lines.append(f"    out += n.{f}")
            else:
                lines += [f"    v = n.{f}", "    if v is not None:", "        out.append(v)"]
        lines.append("    return out")
    scope: dict = {}
    exec(compile("\n".join(lines), f"<children of {t.__name__}>", "exec"), scope)  # our own text
    return scope["read"]


def no_children(node: ast.AST) -> tuple:
    return ()


def _node_getter(t: type):
    """How the walks read the children of a node of type ``t``: ``_getter`` of all of
    ``_node_fields``, in order. The parser fills these fields with nodes, lists of nodes or
    None (a ``**x`` key of a dict, a keyword-only argument without a default) only."""
    return _getter(_node_fields(t))


def children(node: ast.AST) -> list[ast.AST]:
    """``list(ast.iter_child_nodes(node))``, without its generators."""
    t = type(node)
    get = _NODE_CHILDREN.get(t, _UNKNOWN)
    if get is _UNKNOWN:
        get = _NODE_CHILDREN[t] = _node_getter(t)
    if get is None:
        return []
    out: list[ast.AST] = []
    push = out.append
    for value in ((getattr(node, get),) if type(get) is str else get(node)):
        if type(value) is list:
            for item in value:
                if item is not None:
                    push(item)
        elif value is not None:
            push(value)
    return out


def walk(node: ast.AST) -> list[ast.AST]:
    """``list(ast.walk(node))``: the same nodes in the same (breadth-first) order, without
    ``ast.iter_child_nodes``' generators."""
    return _flatten(node, _NODE_CHILDREN, _node_getter)


def _flatten(root: ast.AST, getters: dict, make) -> list[ast.AST]:
    """``root`` and the nodes under it, breadth first, each node's children read by
    ``getters[type]`` (made by ``make(type)`` when first met: None for a type without children,
    a field's name, or a function giving the fields' values), None values left out."""
    out = [root]
    push = out.append
    for n in out:  # ``out`` grows behind the loop
        t = type(n)
        get = getters.get(t, _UNKNOWN)
        if get is _UNKNOWN:
            get = getters[t] = make(t)
        if get is None:  # ``Load``, ``Add``: a third of the nodes have no field
            continue
        if type(get) is str:
            value = getattr(n, get)
            if type(value) is list:
                for item in value:
                    if item is not None:
                        push(item)
            elif value is not None:
                push(value)
            continue
        for value in get(n):
            if type(value) is list:
                for item in value:
                    if item is not None:
                        push(item)
            elif value is not None:
                push(value)
    return out


def driver_names(tree: Tree, extra_roots: Iterable[str] = ()) -> set[str]:
    """Names of functions that may run in the driver (facts' ``DRIVER``): reachable by
    calls from ``main``, from functions calling ``ray.init``, and from module-level calls."""
    roots = {"main", *extra_roots}
    roots |= {fn.name for fn in tree.functions if any(tree.may_call(c, "init", ("ray",)) for c, _, _ in fn.calls)}
    roots |= {n for n in (callee_name(c) for c, _, _ in tree.module_calls) if n is not None}
    return tree.reachable_names(roots)


def head(value: ast.AST) -> Optional[str]:
    """The word ``Tree.words(value)`` starts from (``x`` of ``x``, ``m`` of ``a.m``, ``f`` of
    ``f(...)`` and of ``await f(...)``; the rest comes from the alias sets and the factory
    results), None when it gives none."""
    value = _unwrap(value)[0]
    t = type(value)
    return value.id if t is _Name else value.attr if t is _Attribute else None


def _unwrap(value: ast.AST) -> tuple[ast.AST, int]:
    """The node under ``value``'s awaits and calls (``f`` of ``await f(x)()``) and how many calls
    were stepped through: where ``Tree.words`` and the alias sets read a value's word. A loop: a
    chain may be deeper than the recursion limit."""
    calls = 0
    t = type(value)
    while t is _Await or t is _Call:
        if t is _Call:
            calls += 1
            value = value.func
        else:
            value = value.value
        t = type(value)
    return value, calls


def _imports_name(stmts: Iterable[ast.stmt], name: str) -> bool:
    """One of ``stmts`` is an import that binds ``name`` (as ``Tree.named_bindings`` reads it)."""
    for st in stmts:
        t = type(st)
        if t is ast.Import:
            if any((a.asname or a.name.split(".")[0]) == name for a in st.names):
                return True
        elif t is ast.ImportFrom:
            if any((a.asname or a.name) == name for a in st.names):
                return True
    return False


def callee_name(call: ast.Call) -> Optional[str]:
    """``f`` for ``f()``, ``m`` for ``x.m()``: the name a same-module def would have."""
    func = call.func
    if isinstance(func, ast.Call) and func.args:  # functools.partial(f, ...)()
        func = func.args[0]
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def walk_within(nodes: Iterable[ast.AST], stop: tuple = ()) -> Iterator[ast.AST]:
    """``nodes`` and every node under them, never entering (nor giving) a node of a ``stop``
    type: the body of a handler without the defs and lambdas nested in it."""
    todo = list(nodes)
    pop, push = todo.pop, todo.append
    AST, fields_of = ast.AST, _NODE_FIELDS
    while todo:
        node = pop()
        if isinstance(node, stop):
            continue
        yield node
        t = type(node)  # then ``todo.extend(ast.iter_child_nodes(node))``, without its generators
        fields = fields_of.get(t)
        if fields is None:
            fields = fields_of[t] = _node_fields(t)
        for field in fields:
            value = getattr(node, field, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, AST):
                        push(item)
            elif isinstance(value, AST):
                push(value)


def nested_statements(stmts: Iterable[ast.stmt], enter=lambda st: True) -> Iterator[ast.stmt]:
    """``stmts`` and the statements in their blocks (bodies, ``else``, handlers, ``finally``,
    ``case``s), for the statements ``enter(st)`` lets in: no expression is walked. ``enter``
    (a test without side effects) is asked only of statements that have blocks."""
    todo = list(stmts)
    pop, extend = todo.pop, todo.extend
    blocks_of = STATEMENT_BLOCKS
    while todo:
        st = pop()
        yield st
        t = type(st)
        blocks = blocks_of.get(t)
        if blocks is None:
            blocks = statement_blocks(t)
        if not blocks or not enter(st):
            continue
        for field in blocks:
            if field == "handlers" or field == "cases":
                for h in getattr(st, field, ()):
                    extend(h.body)
            else:
                block = getattr(st, field, None)
                if type(block) is list:
                    extend(block)


#: node type -> its ``statement_blocks`` (a hot loop reads the table first)
STATEMENT_BLOCKS: dict[type, tuple[str, ...]] = {}


def statement_blocks(t: type) -> tuple[str, ...]:
    """The fields of ``t`` that hold statements, in ``nested_statements``' order: ``body``,
    ``orelse``, ``finalbody`` (blocks), then ``handlers`` and ``cases`` (their bodies); empty
    for an expression or a simple statement. Remembered in ``STATEMENT_BLOCKS``."""
    found = STATEMENT_BLOCKS.get(t)
    if found is None:
        found = STATEMENT_BLOCKS[t] = _blocks(t)
    return found


def _blocks(t: type) -> tuple[str, ...]:
    """The fields of ``t`` that ``nested_statements`` reads, in its order: ``body``,
    ``orelse``, ``finalbody`` (blocks), then ``handlers`` and ``cases`` (their bodies)."""
    return tuple(f for f in ("body", "orelse", "finalbody", "handlers", "cases") if f in t._fields)


def identifiers(node: ast.AST) -> set[str]:
    """Every name and attribute spelled under ``node`` (``self.run`` gives ``self`` and
    ``run``; ``partial(work, x)`` gives ``partial``, ``work`` and ``x``)."""
    out: set[str] = set()
    _identifiers_into([node], out)
    return out


def _identifiers_into(nodes: list, out: set[str]) -> None:
    """Add the names and attributes spelled under ``nodes`` to ``out`` (``ast.walk``'s nodes,
    without its generators: conditions ask this of every call's arguments)."""
    Name, Attribute, Constant, AST = ast.Name, ast.Attribute, ast.Constant, ast.AST
    todo = list(nodes)
    pop, push = todo.pop, todo.append
    fields_of = _FIELDS_BACKWARDS
    while todo:
        n = pop()
        t = type(n)
        if t is Name:
            out.add(n.id)
            continue
        if t is Constant:
            continue
        if t is Attribute:
            out.add(n.attr)
        fields = fields_of.get(t)
        if fields is None:
            fields = fields_of[t] = tuple(reversed(_fields(t)))
        for field in fields:
            value = getattr(n, field, None)
            if type(value) is list:
                for c in value:
                    if isinstance(c, AST):
                        push(c)
            elif isinstance(value, AST):
                push(value)


def function_names(expr: ast.AST) -> set[str]:
    """Names of the same-module functions the facts' ``resolve_function(expr)`` could
    return: ``f``, the attribute of ``x.m``, and for a call (``functools.partial(f, ...)``)
    those of every argument (libcst's first argument may be a ``*a`` or a keyword one)."""
    t = type(expr)
    if t is ast.Name:
        return {expr.id}
    if t is ast.Attribute:
        return {expr.attr}
    if t is ast.Starred:
        return function_names(expr.value)
    if t is ast.Call:
        out: set[str] = set()
        for a in [*expr.args, *(k.value for k in expr.keywords)]:
            out |= function_names(a)
        return out
    return set()


def positional_args(call: ast.Call) -> list[ast.AST]:
    """The arguments libcst gives no keyword (``[a.value for a in call.args if a.keyword is
    None]``): the positional ones, ``*x`` and ``**x`` included (as ``x``), in source order
    (``**x`` comes last)."""
    out = [a.value if type(a) is ast.Starred else a for a in call.args]
    out += [k.value for k in call.keywords if k.arg is None]
    return out


def keyword(call: ast.Call, name: str) -> Optional[ast.AST]:
    for k in call.keywords:
        if k.arg == name:
            return k.value
    return None


def is_main_guard(test: ast.AST) -> bool:
    """``test`` is ``__name__ == ...`` (an ``if __name__ == "__main__":`` block)."""
    return (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and any(isinstance(s, ast.Name) and s.id == "__name__" for s in (test.left, *test.comparators)))


#: names (a tuple or a frozenset) -> ``_pairs(names)``
_PAIRS: dict = {}


def _pairs(names: Iterable[str]) -> tuple[tuple[str, frozenset], ...]:
    """(last word, receivers as a set) of each dotted name (``_last_and_receivers``), memoised
    for a tuple or a frozenset of names (in its iteration order: a frozenset's is fixed)."""
    if type(names) is not tuple and type(names) is not frozenset:
        return tuple((last, frozenset(r)) for last, r in map(_last_and_receivers, names))
    found = _PAIRS.get(names)
    if found is None:
        if len(_PAIRS) > 4096:
            _PAIRS.clear()
        found = _PAIRS[names] = tuple((last, frozenset(r)) for last, r in map(_last_and_receivers, names))
    return found


@functools.lru_cache(maxsize=None)
def _last_and_receivers(name: str) -> tuple[str, tuple[str, ...]]:
    """``asyncio.gather`` -> ("gather", ("asyncio", "tasks")): its last word and the words
    its receiver may end with, over the spellings the facts canonicalise to it."""
    from .words import _spellings

    parts = name.split(".")
    if len(parts) == 1:
        return name, ()
    return parts[-1], tuple(sorted({sp.split(".")[-2] for sp in (name, *_spellings(name))}))


_Await, _Call, _Name, _Attribute = ast.Await, ast.Call, ast.Name, ast.Attribute
#: ``_factory_results()`` once it was read (``Tree._words`` asks it of every call)
_FACTORY_RESULTS: dict[str, set[str]] = {}


@functools.lru_cache(maxsize=None)
def _factory_results() -> dict[str, set[str]]:
    """Last word of a factory callee -> last words of the types it returns (facts'
    ``FACTORY_TYPES``), so ``loop = get_running_loop(); loop.create_task`` is seen."""
    from ..facts import FACTORY_TYPES

    out: dict[str, set[str]] = {}
    for callee, typ in FACTORY_TYPES.items():
        out.setdefault(callee.rsplit(".", 1)[-1], set()).add(typ.rsplit(".", 1)[-1])
    _FACTORY_RESULTS.update(out)
    return out
