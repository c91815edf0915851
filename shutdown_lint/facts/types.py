"""Types from declarations: the type of the value a name, ``self.x`` or an expression holds.

Read from what the one walk recorded (no walk of its own): constructor calls
(``c = httpx.Client()``) and the calls whose result type is known (``open()`` -> a file,
``Path.resolve()`` -> a path), parameter annotations (every kind of parameter), variable
annotations (``client: httpx.Client = make()``, module globals too), ``Optional[T]``,
``T | None`` and unions whose non-None members all name the same type, string annotations
(``"io.TextIOWrapper"``), ``typing.IO``/``TextIO``/``BinaryIO``, generic subscripts
(``queue.Queue[int]``), tuple unpacking (``a, b = Path(x), Path(y)``), closures (a name
of an enclosing function), ``self.x`` assigned or annotated in any method or the class body,
attributes that are typed values (``proc.stdout``), ``p / "x"`` for a path, and a call's return
annotation (``def open_client() -> httpx.Client``; ``c = open_client()``, ``self.make()``,
``await`` of an ``async def``): of a function or method of this module, or, through the project
index (``ModuleFacts.project``), of a function of another module of the project (its summary
records the annotation as written, resolved against that module's imports; the callee's module
becomes a dependency of this file's cached result).

Types are qualified names with their spellings merged (``TYPE_ALIASES``): every file object
is ``FILE``. A declared type wins over the bound value's (``client: httpx.Client = ...``);
``Any``/``object`` declare nothing. ``ModuleFacts.typer(known, skip)`` gives the resolver
for one rule's view (``known``: the types a class of the module may stand for through a
base class; ``skip``: calls whose result is not typed, e.g. an allowed opener); it is
built once per module and view, and caches per expression.
"""

from __future__ import annotations

from typing import Optional

from ..lazy_libcst import libcst as cst, on_first_read

from .model import ClassInfo, Scope

#: Type of a file object: what ``open()`` and friends return, and what file annotations declare.
FILE = "io.<file>"
#: Type of a multiprocessing context (``multiprocessing.get_context()``).
MP_CONTEXT = "multiprocessing"

#: What a call returns, where the callee's name does not say it (a constructor does).
RESULT_TYPES = {
    **{opener: FILE for opener in ("builtins.open", "io.open", "io.open_code", "os.fdopen", "os.popen",
                                   "codecs.open", "gzip.open", "bz2.open", "lzma.open", "pathlib.Path.open")},
    "multiprocessing.get_context": MP_CONTEXT,
    "multiprocessing.pool.Pool.apply_async": "multiprocessing.pool.AsyncResult",
    "multiprocessing.pool.Pool.map_async": "multiprocessing.pool.AsyncResult",
    "multiprocessing.pool.Pool.starmap_async": "multiprocessing.pool.AsyncResult",
    "torch.multiprocessing.get_context": MP_CONTEXT,
    **{f"pathlib.Path.{m}": "pathlib.Path" for m in (
        "joinpath", "with_name", "with_suffix", "with_stem", "resolve", "absolute", "expanduser",
        "relative_to", "home", "cwd")},
}
#: Attributes of a typed value that are typed values themselves.
ATTRIBUTE_TYPES = {
    ("pathlib.Path", "parent"): "pathlib.Path",
    ("subprocess.Popen", "stdout"): FILE,
    ("subprocess.Popen", "stderr"): FILE,
    ("subprocess.Popen", "stdin"): FILE,
}
#: Spellings of the same types (``import torch.multiprocessing as mp``, ``PosixPath``, the
#: file classes of ``io`` and ``typing``). ``io.StringIO``/``BytesIO`` (in memory) and the
#: abstract ``io.*Base`` classes are not files here.
TYPE_ALIASES = {
    "pathlib.PosixPath": "pathlib.Path", "pathlib.WindowsPath": "pathlib.Path",
    "torch.multiprocessing": "multiprocessing",
    "multiprocessing.context.Process": "multiprocessing.Process",
    "multiprocessing.dummy.Process": "threading.Thread",
    "threading.Timer": "threading.Thread",
    "concurrent.futures._base.Future": "concurrent.futures.Future",
    "multiprocessing.pool.ApplyResult": "multiprocessing.pool.AsyncResult",
    "multiprocessing.Pool": "multiprocessing.pool.Pool",
    **{f"{m}.{c}": FILE for m in ("io", "_io") for c in (
        "TextIOWrapper", "BufferedReader", "BufferedWriter", "BufferedRandom", "BufferedRWPair", "FileIO")},
    **{f"{m}.{c}": FILE for m in ("typing", "typing_extensions") for c in ("IO", "TextIO", "BinaryIO")},
}
_WRAPPERS_OPTIONAL = frozenset({"typing.Optional", "typing_extensions.Optional"})
_WRAPPERS_UNION = frozenset({"typing.Union", "typing_extensions.Union"})
_WRAPPERS_FIRST = frozenset({"typing.Annotated", "typing_extensions.Annotated", "typing.Final",
                             "typing_extensions.Final", "typing.ClassVar"})
#: declared types that say nothing about the value
_NO_TYPE = frozenset({"typing.Any", "typing_extensions.Any", "builtins.object"})
_MAX_DEPTH = 8


def normalise(qualified: str) -> str:
    """Spellings of the same type or function: ``torch.multiprocessing.Queue`` ->
    ``multiprocessing.Queue``, ``pathlib.PosixPath`` -> ``pathlib.Path``,
    ``io.TextIOWrapper.read`` -> ``io.<file>.read``. No alias is a dotted prefix of another
    (tests/perf/test_walk_replay.py), so the alias that is ``qualified`` or a dotted prefix of
    it is looked up prefix by prefix instead of trying every alias (~8,000 calls a corpus)."""
    canonical = TYPE_ALIASES.get(qualified)
    if canonical is not None:
        return canonical
    dot = qualified.find(".")
    while dot != -1:
        canonical = TYPE_ALIASES.get(qualified[:dot])
        if canonical is not None:
            return canonical + qualified[dot:]
        dot = qualified.find(".", dot + 1)
    return qualified


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None" or (
        isinstance(expr, cst.SimpleString) and expr.evaluated_value == "None")


class Typer:
    """The type resolver of one module for one view (``known``, ``skip``); see the module doc."""

    def __init__(self, facts, known: frozenset = frozenset(), skip: frozenset = frozenset()) -> None:
        self.facts = facts
        self.known = known
        self.skip = skip
        #: string annotations parsed once (kept alive: caches are keyed by node identity)
        self._parsed: dict[int, Optional[cst.BaseExpression]] = {}
        self._ann_cache: dict[tuple[int, int], Optional[str]] = {}
        self._name_index: dict[str, dict[int, int]] = {}

    # ------------------------------------------------------------------ values
    def type_of(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> Optional[str]:
        """The type of the value ``expr`` (seen from ``at``) refers to, or None when unknown."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            return self._name_type(expr, at, depth)
        if isinstance(expr, cst.Attribute):
            base = self.type_of(expr.value, at, depth + 1)
            if base is not None and (base, expr.attr.value) in ATTRIBUTE_TYPES:
                return ATTRIBUTE_TYPES[(base, expr.attr.value)]
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return self._attr_type(self._class_at(at), expr.attr.value, depth)
            return None  # a module attribute (``os.path``) is not a value
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
            left = self.type_of(expr.left, at, depth + 1)
            return left if left == "pathlib.Path" else None
        return self.value_type(expr, depth + 1)

    # the tree's shapes (``ast_engine.types.AstTyper`` reads the same on ``ast``)
    #: member expressions that name a type (``annotation_type``)
    _NAMED = on_first_read(lambda: (cst.Name, cst.Attribute))

    @staticmethod
    def _spelling(use: cst.Name) -> str:
        return use.value

    @staticmethod
    def _return_annotation(fn) -> Optional[cst.BaseExpression]:
        returns = fn.node.returns
        return returns.annotation if returns is not None else None

    @staticmethod
    def _base_expression(base: cst.Arg) -> cst.BaseExpression:
        return base.value

    def _name_type(self, use: cst.Name, at: cst.CSTNode, depth: int) -> Optional[str]:
        """The binding of ``use`` seen from ``at``: in its own function, the bindings before the
        use (all of them when none is, as in a loop), else its parameter; else the same in each
        enclosing function (a closure: their last binding), else the module's last binding (a
        function runs after the module has run). A declaration (``f: T``) holds for the later
        bindings of the name in that function (``f = make()`` keeps ``T``)."""
        name = self._spelling(use)
        own = cur = self.facts.scope_of(at)
        while cur is not None:
            bindings = cur.bindings.get(name)
            if bindings:
                if cur is own:
                    index = self._index(use)
                    before = [b for b in bindings if self._precedes(b, use, index)] if index is not None else []
                    if not before and name in cur.params:
                        return self._param_type(cur, name)
                    bindings = before or bindings
                return self._bindings_type(bindings, depth)
            if name in cur.params:
                return self._param_type(cur, name)
            cur = cur.scope
        bindings = self.facts._module_bindings.get(name)
        return self._bindings_type(bindings, depth) if bindings else None

    def _precedes(self, binding, use: cst.Name, index: int) -> bool:
        """``binding`` is made before ``use`` (``index``: where ``use`` is among the module's names
        of its spelling; a binding's ``order``: how many of them come before it)."""
        return binding.order < index

    def _param_type(self, fn, name: str) -> Optional[str]:
        ann = fn.params[name]
        return self.annotation_type(ann, fn.node) if ann is not None else None

    def _index(self, use: cst.Name) -> Optional[int]:
        """Where ``use`` is among the module's names of the same spelling (source order)."""
        name = self._spelling(use)
        table = self._name_index.get(name)
        if table is None:
            table = self._name_index[name] = {
                id(n): i for i, n in enumerate(self.facts._names_by_value.get(name, ()))}
        return table.get(id(use))

    def _bindings_type(self, bindings: list, depth: int) -> Optional[str]:
        last = bindings[-1]
        if last.kind in ("import", "def", "class"):
            return None
        for b in reversed(bindings):
            if b.kind in ("import", "def", "class"):
                break
            if b.annotation is not None:
                declared = self.annotation_type(b.annotation, b.annotation)
                if declared is not None:
                    return declared
                break
        if last.kind == "value":
            return self.value_type(last.target, depth + 1)
        if last.unpacked is not None:
            return self.value_type(last.unpacked, depth + 1)
        return None

    def _attr_type(self, cls: Optional[ClassInfo], attr: str, depth: int) -> Optional[str]:
        if cls is None:
            return None
        for ann, scope in reversed(cls.attr_annotations.get(attr, ())):
            declared = self.annotation_type(ann, ann)
            if declared is not None:
                return declared
        values = cls.attr_values.get(attr)
        if values:
            return self.value_type(values[-1][0], depth + 1)
        return None

    def value_type(self, value: cst.BaseExpression, depth: int = 0) -> Optional[str]:
        """The type of what evaluating ``value`` gives (a call's result, a name's value)."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(value, cst.Call):
            if isinstance(value.func, cst.Attribute):
                recv = self.type_of(value.func.value, value, depth + 1)
                if recv is not None:
                    return self._call_type(value, f"{recv}.{value.func.attr.value}")
            return self._call_type(value, None)
        if isinstance(value, cst.Await) and isinstance(value.expression, cst.Call):
            return self._awaited_type(value.expression)
        if isinstance(value, (cst.Name, cst.Attribute, cst.BinaryOperation)):
            return self.type_of(value, value, depth + 1)
        if isinstance(value, cst.IfExp):  # ``Path(p) if p else None``
            return self._either([v for v in (value.body, value.orelse) if not _is_none(v)], depth)
        return None

    # the tree-agnostic parts of ``value_type`` (``ast_engine.types.AstTyper`` shares them)
    def _call_type(self, call, method: Optional[str]) -> Optional[str]:
        """The type of ``call``'s result; ``method``: ``<receiver's type>.<method>`` when the
        callee is a method of a typed receiver."""
        facts = self.facts
        if method is not None:
            if method in RESULT_TYPES:
                return RESULT_TYPES[method]
            recv, _, attr = method.rpartition(".")
            if recv == MP_CONTEXT and attr[:1].isupper():
                return self._known(f"multiprocessing.{attr}")
        callee = facts.call_name(call)
        if callee is not None and normalise(callee) in RESULT_TYPES:
            return None if normalise(callee) in self.skip else RESULT_TYPES[normalise(callee)]
        if callee is not None:
            declared = self._returns(callee, awaited=False)
            if declared is not None:
                return declared or None
        if callee is not None and callee.startswith("<module>."):
            known = self._known(callee)  # ``Worker()`` of ``class Worker(threading.Thread)``
            return known if known != callee else None
        return self._known(facts.qualified_name(call, call))

    def _awaited_type(self, call) -> Optional[str]:
        """``c = await open_client()`` of ``async def open_client() -> httpx.AsyncClient``."""
        callee = self.facts.call_name(call)
        declared = self._returns(callee, awaited=True) if callee is not None else None
        return declared or None

    def _either(self, sides: list, depth: int) -> Optional[str]:
        """The one type of the non-None sides of ``a if c else b``, else None."""
        types = {self.value_type(v, depth + 1) for v in sides}
        return types.pop() if len(types) == 1 else None

    # ------------------------------------------------------------------ return annotations
    def _returns(self, callee: str, awaited: bool) -> Optional[str]:
        """The type a function's return annotation declares for a call of ``callee``
        (``def open_client() -> httpx.Client``; ``await`` of an ``async def``): a function or
        method of this module, or, through the project index, of another module of the project.
        ``""`` when the callee is such a function but declares nothing readable (or is a
        coroutine function called without ``await``, or the other way round); None when the
        callee is not a function found here (a class: its constructor gives the type)."""
        key = (callee, awaited)
        cache = self.__dict__.setdefault("_returns_cache", {})
        if key in cache:
            return cache[key]
        cache[key] = ""  # a cycle ends here
        result: Optional[str] = None
        if callee.startswith("<module>."):
            qual = callee[len("<module>."):]
            fn = next((g for g in self.facts.functions if g.qualname == qual), None)
            if fn is not None:
                result = ""
                returns = self._return_annotation(fn)
                if returns is not None and fn.is_async == awaited:
                    result = self.annotation_type(returns, fn.node) or ""
        elif not callee.startswith("builtins.") and self.facts.project is not None:
            result = self._returns_elsewhere(callee, awaited)
        cache[key] = result
        return result

    def _returns_elsewhere(self, callee: str, awaited: bool) -> Optional[str]:
        """``_returns`` for a function of another module of the project: its summary records the
        return annotation as written there (``Optional``/``| None``/strings removed), resolved
        against that module's imports."""
        try:
            fn = self.facts.project.function(callee)
        except (RecursionError, OSError):  # a pathological project layout must not end the analysis
            return None
        if fn is None:
            return None
        written = fn.info.get("returns")
        if not written or bool(fn.info.get("async")) != awaited:
            return ""
        index = self.facts.project.index
        s = index.summary(fn.path) or {}
        first, _, rest = written.partition(".")
        imports = {**s.get("imports", {}), **fn.info.get("imports", {})}
        if first in imports:
            full = index.absolute(imports[first], fn.module, fn.path.endswith("__init__.py")) + (
                "." + rest if rest else "")
        elif first in s.get("classes", {}):
            full = f"{fn.module}.{written}"
        else:
            return ""  # a builtin or a name this reading cannot place
        t = normalise(full)
        return "" if t in _NO_TYPE else t

    # ------------------------------------------------------------------ declarations
    def annotation_type(self, ann: cst.BaseExpression, at: cst.CSTNode) -> Optional[str]:
        """The type an annotation declares: ``T``, ``"T"``, ``Optional[T]``, ``T | None``,
        ``Union[A, B]`` when A and B are the same type, ``IO[str]``; None when it declares
        several types, nothing (``Any``), or cannot be read."""
        key = (id(ann), id(self.facts.scope_of(at)))
        if key in self._ann_cache:
            return self._ann_cache[key]
        self._ann_cache[key] = None  # a string annotation naming itself ends here
        members = self._members(ann, at, 0)
        result = None
        if members:
            types = set()
            for m in members:
                if isinstance(m, self._NAMED):
                    q = self.facts.qualified_name(m, at)
                    types.add(self._known(q) if q is not None else None)
                else:
                    types.add(None)
            if len(types) == 1:
                result = types.pop()
            if result in _NO_TYPE:
                result = None
        self._ann_cache[key] = result
        return result

    def _members(self, ann: cst.BaseExpression, at: cst.CSTNode, depth: int) -> list[cst.BaseExpression]:
        """The non-None types an annotation names, wrappers and strings removed."""
        if depth > _MAX_DEPTH:
            return [ann]
        if isinstance(ann, (cst.SimpleString, cst.ConcatenatedString)):
            parsed = self._parse(ann)
            return self._members(parsed, at, depth + 1) if parsed is not None else [ann]
        if isinstance(ann, cst.BinaryOperation) and isinstance(ann.operator, cst.BitOr):
            return [*self._members(ann.left, at, depth + 1), *self._members(ann.right, at, depth + 1)]
        if _is_none(ann):
            return []
        if isinstance(ann, cst.Subscript):
            wrapper = self.facts.qualified_name(ann.value, at) if isinstance(ann.value, (cst.Name, cst.Attribute)) \
                else None
            args = [el.slice.value for el in ann.slice if isinstance(el.slice, cst.Index)]
            if wrapper in _WRAPPERS_OPTIONAL or wrapper in _WRAPPERS_UNION:
                return [m for a in args for m in self._members(a, at, depth + 1)]
            if wrapper in _WRAPPERS_FIRST and args:
                return self._members(args[0], at, depth + 1)
            return self._members(ann.value, at, depth + 1)  # ``queue.Queue[int]``, ``IO[str]``
        return [ann]

    def _parse(self, ann: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        if id(ann) not in self._parsed:
            parsed = None
            try:
                text = ann.evaluated_value
                if isinstance(text, str) and len(text) < 200:
                    parsed = cst.parse_expression(text.strip())
            except Exception:  # not an expression: the annotation declares nothing we read
                parsed = None
            self._parsed[id(ann)] = parsed
        return self._parsed[id(ann)]

    # ------------------------------------------------------------------ helpers
    def _known(self, t: Optional[str]) -> Optional[str]:
        """``t`` normalised; a class of this module stands for the first known type among
        its bases (``class Worker(threading.Thread)`` -> ``threading.Thread``)."""
        if t is None:
            return None
        t = normalise(t)
        if t.startswith("<module>."):
            qual = t[len("<module>."):]
            for cls in self.facts.classes:
                if cls.qualname == qual:
                    for base in cls.node.bases:
                        bq = self.facts.qualified_name(self._base_expression(base), cls.node)
                        if bq is not None and normalise(bq) in self.known:
                            return normalise(bq)
                    return t
        return t

    def _class_at(self, at: cst.CSTNode) -> Optional[ClassInfo]:
        cur: Scope = self.facts.scope_of(at)
        while cur is not None:
            if cur.cls is not None:
                return cur.cls
            cur = cur.scope
        return None


class TypeQueries:
    """Mixin of ``ModuleFacts``: ``typer(known, skip)``, one resolver per view, built once."""

    def typer(self, known: frozenset = frozenset(), skip: frozenset = frozenset()) -> Typer:
        typers = self.__dict__.setdefault("_typers", {})
        key = (known, skip)
        found = typers.get(key)
        if found is None:
            found = typers[key] = Typer(self, known, skip)
        return found

    def type_of(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[str]:
        """The type of the value ``expr`` refers to (``typer()``'s view: no known base types)."""
        return self.typer().type_of(expr, at)
