from __future__ import annotations

import ast
import re
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine.check import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import same_module_bases as ast_same_module_bases
from shutdown_lint.ast_engine.facts import first_argument
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.code import code_only
from shutdown_lint.facts import ClassInfo, FunctionInfo
from shutdown_lint.facts.execution import _same_module_bases as same_module_bases
from shutdown_lint.index.project import ProjectClass, display as display_path
from shutdown_lint.rule import Fix, InsertAfter, InsertBefore, Invalid, Option, Replace, Rule
from shutdown_lint.traversal import walk
from shutdown_lint.prefilter.ast_tree import TRYS
from shutdown_lint.prefilter.ast_tree import walk as ast_walk

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._vocabulary import RESOURCE_WORDS, identifier_words, mentions
from shutdown_lint.facts.vocabulary import _BUILTINS

_SETUP = "runtime_guard.ray.setup_worker"
_HOOK_KEY = "worker_process_setup_hook"
_SIGNAL_INSTALLERS = ("signal.signal", "asyncio.AbstractEventLoop.add_signal_handler")
_CLEANUP_VERBS = frozenset({"close", "aclose", "delete", "remove", "stop", "release", "shutdown", "terminate",
                            "cleanup", "teardown", "destroy", "kill", "unlink"})
_LOCK_WORDS = frozenset({"lock", "rlock", "condition", "cond", "semaphore", "sem", "mutex", "timeout", "event",
                         "barrier", "limiter", "throttle", "flock"})
_CANCEL_TYPES = frozenset({"asyncio.CancelledError", "asyncio.exceptions.CancelledError", "builtins.BaseException"})


#: after ``class``: anything but ``class Name:`` (no bases, no type parameters)
_NOT_BASELESS = r"(?![ \t\f]+[A-Za-z_][A-Za-z0-9_]*[ \t\f]*:)"


#: after ``class``: a name and what follows it (``_MayBeRemoteSubclass``)
_CLASS_NAME = re.compile(rb"[ \t\f]+([A-Za-z_][A-Za-z0-9_]*)")
_NOT_BASELESS_AT = re.compile(_NOT_BASELESS.encode())


class _MayBeRemoteSubclass(C.Cond):
    """Tier 1, for a file with no ``async`` in code: ``_check_inherited`` reports only a class
    with bases that the facts make a Ray actor: decorated with ``ray.remote`` (or an alias of it),
    or whose name is the only positional argument of a call to ``ray.remote`` / the call that
    ``ray.remote(...)`` returns (``Actor = ray.remote(Cls)``, ``ray.remote(num_cpus=1)(Cls)``: a
    ``Name``, the class's name written again in code). Read on the file's code
    (``FileText.code``): some ``class <name>`` not followed by ``:`` whose name may be such an
    argument (``_remote_argument``), or that follows a decorator that may be ``ray.remote``
    (``_remote_decorated_class``). Anything it cannot read for sure counts: a ``class`` not at a
    line start, a ``\\r`` line end, a quote or a comment's text where it reads lines (a formatted
    string keeps its text in the code), a file whose code cannot be built (``code_only`` None),
    a name it cannot read."""

    reads_code = True
    key = ("MayBeRemoteSubclass",)

    def holds(self, text: "C.FileText") -> bool:
        # a class statement with bases first (on the text: cheap; the code's are the text's)
        return _WITH_BASES.holds(text) and text.memo(self.key, self._scan)

    def holds_on_text(self, text: "C.FileText") -> bool:
        """The class statement only (no code built: ``select.filter_rules`` asks ``holds`` when
        the code decides; else tier 2 judges)."""
        return _WITH_BASES.holds(text)

    @staticmethod
    def _scan(text: "C.FileText") -> bool:
        code = text.code()
        if code is text and code_only(text.source) is None:
            return True  # no code could be built (comments and strings would read as code)
        src = code.source
        if b"\r" in src:
            return True
        for p in code.iter_positions(b"class"):
            start = src.rfind(b"\n", 0, p) + 1
            if src[start:p].strip(b" \t\f"):
                return True  # not a statement's first word: not read here
            if _NOT_BASELESS_AT.match(src, p + 5) is None:
                continue  # ``class Name:``: no base
            m = _CLASS_NAME.match(src, p + 5)
            if m is None:
                return True
            if any(_remote_argument(code, q) for q in code.positions(m.group(1))):
                return True
        return _remote_decorated_class(code)


_WITH_BASES = C.WordThen("class", _NOT_BASELESS)

#: what a code scan skips between tokens: spaces, line ends, backslash continuations and the ``#``
#: of a comment whose text the code blanked
_SKIP = b" \t\f\n\\#"
#: the same and the brackets that may close around a binding's target (``(word) = ...``), or open
#: around it (``with x as (word):``)
_SKIP_OUT, _SKIP_IN = _SKIP + b")", _SKIP + b"("
#: a decorator's head, a dotted name (spaces around the dots), at its ``@``
_DECORATOR_HEAD = re.compile(rb"@[ \t\f]*([A-Za-z_][A-Za-z0-9_]*(?:[ \t\f]*\.[ \t\f]*[A-Za-z_][A-Za-z0-9_]*)*)")
#: a string literal on one line with no prefix, its text blanked (``code_only``); a formatted
#: string (``f"``) keeps its text (brackets, ``#``, ``@``) in the code, a string over lines its
#: quotes on two lines: a line with any quote left outside these is not read
_BLANK_STRING = re.compile(rb"""(?<![A-Za-z0-9_])(\"\"\"|'''|"|')[ ]*\1""")
_QUOTE = re.compile(rb"""['"]""")


#: a decorator: ``@`` first on its line (a decorator always starts a statement)
_DECORATOR_AT = re.compile(rb"^[ \t\f]*@", re.M)


def _remote_decorated_class(code: "C.FileText") -> bool:
    """Some class statement with bases may have a decorator that the facts resolve to
    ``ray.remote``: a decorator whose head (``_decorator_word``) may be ``remote``
    (``_may_be_remote``), or cannot be read, followed (other decorators, blank and comment lines
    between) by ``class <name>`` and not ``:``. True where the lines after it cannot be read."""
    src = code.source
    for m in _DECORATOR_AT.finditer(src):
        at = m.end() - 1
        word = _decorator_word(src, at)
        if word is not None and not _may_be_remote(code, word):
            continue
        stmt = _decorated_statement(src, at)
        if stmt is None:
            return True
        if _CLASS_STATEMENT.match(src, stmt):
            if _NOT_BASELESS_AT.match(src, stmt + 5) is not None:
                return True  # a class with bases
        elif not _DEF_STATEMENT.match(src, stmt):
            return True  # neither a class nor a function: not read
    return False


_CLASS_STATEMENT = re.compile(rb"class[ \t\f]")
_DEF_STATEMENT = re.compile(rb"(?:async[ \t\f]+)?def[ \t\f]")


def _decorated_statement(src: bytes, at: int) -> Optional[int]:
    """The offset of the first word of the statement that the decorator at ``at`` (and those
    after it) decorates: its logical line read on (brackets and backslashes followed), then blank
    and comment lines and other decorators skipped. None when a line cannot be read for sure (a
    quote that does not close a blanked string on its line: a formatted string keeps its
    brackets in the code; a comment's text; more closing brackets than opening)."""
    depth = 0
    pos = at
    decorator = True  # the current logical line is a decorator (or blank)
    while pos < len(src):
        end = src.find(b"\n", pos)
        end = len(src) if end < 0 else end
        line = src[pos:end]
        if (b'"' in line or b"'" in line) and _QUOTE.search(_BLANK_STRING.sub(b"", line)):
            return None
        hash_at = line.find(b"#")
        if hash_at >= 0:
            if line[hash_at + 1:].strip():
                return None  # a comment with its text: not the blanked code
            line = line[:hash_at]
        body = line.strip(b" \t\f")
        if depth == 0 and not decorator:
            if not body:
                pos = end + 1
                continue  # a blank or comment line
            if not body.startswith(b"@"):
                return pos + len(line) - len(line.lstrip(b" \t\f"))
        depth += sum(line.count(c) for c in b"([{") - sum(line.count(c) for c in b")]}")
        if depth < 0:
            return None
        decorator = depth > 0 or line.rstrip(b" \t\f").endswith(b"\\")  # the logical line goes on
        pos = end + 1
    return None


def _decorator_word(src: bytes, at: int) -> Optional[bytes]:
    """The last word of the dotted name a decorator at ``at`` is, or calls (``@ray.remote``,
    ``@ray.remote(num_cpus=1)``: ``remote``): the word its facts' name ends with (``Tree.words``
    of the decorator, or of its callee). None for any other shape (``@f(x).remote``, ``@a[0]``,
    ``@(ray.remote)``, a name over lines): not read."""
    m = _DECORATOR_HEAD.match(src, at)
    if m is None:
        return None
    word = m.group(1).rsplit(b".", 1)[-1].strip(b" \t\f")
    k = m.end()
    while k < len(src) and src[k] in b" \t\f":
        k += 1
    if k >= len(src) or src[k] in b"\n#":
        return word  # the name alone (a comment after it)
    if src[k] != 40:  # "("
        return None
    depth, j = 0, k
    while j < len(src):  # to the matching ")": the call must be the whole decorator
        c = src[j]
        if c in b"([{":
            depth += 1
        elif c in b")]}":
            depth -= 1
            if depth == 0:
                break
        elif c in b"'\"" and j > 0 and src[j - 1] in _IDENT_BYTES:
            return None  # a prefixed string: brackets in a formatted string's text are code here
        j += 1
    else:
        return None
    rest = src[j + 1:src.find(b"\n", j) if src.find(b"\n", j) >= 0 else len(src)]
    return word if not rest.strip(b" \t\f#") else None


_IDENT_BYTES = frozenset(b"_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def _remote_argument(code: "C.FileText", at: int) -> bool:
    """The name at ``at`` may be the only positional argument of a call that the facts resolve
    to ``ray.remote``, or of the call ``ray.remote(...)`` returns: the first byte after it (gaps
    skipped) is ``)`` or ``,``, the first byte before it is ``(`` (``*`` too: libcst counts
    ``f(k=1, *Cls)`` as an argument ``Cls``), and before that ``)`` (a call's result called), a
    word that may be ``remote`` (``_may_be_remote``), or anything else but a word (not read); a
    ``class``/``def`` name before the ``(`` is a statement's, no call."""
    src = code.source
    j = at
    while j < len(src) and src[j] in _IDENT_BYTES:
        j += 1
    while j < len(src) and src[j] in _SKIP:
        j += 1
    if j < len(src) and src[j] not in b"),":
        return False  # ``Cls.attr``, ``Cls[...]``, ``Cls(...)``, ``Cls + 1``: not the name alone
    k = at - 1
    while k >= 0 and src[k] in _SKIP:
        k -= 1
    if k < 0 or src[k] not in b"(*":
        return False
    if src[k] == 42:  # "*": ``f(*Cls)``, ``f(k=1, *Cls)``: not read further
        return True
    k -= 1
    while k >= 0 and src[k] in _SKIP:
        k -= 1
    if k < 0 or src[k] not in _IDENT_BYTES:
        return k >= 0  # ``)``, ``]``, ``(``...: a callee not read
    end = k + 1
    while k >= 0 and src[k] in _IDENT_BYTES:
        k -= 1
    word = src[k + 1:end]
    if word[:1].isdigit():
        return True
    j = k
    while j >= 0 and src[j] in b" \t\f":
        j -= 1
    if C.ends_with_definition_keyword(src, j):
        return False  # ``class C(Cls)``, ``def f(Cls)``: a base, a parameter
    return _may_be_remote(code, word)


def _may_be_remote(code: "C.FileText", word: bytes) -> bool:
    """A name or attribute spelled ``word`` may be ``ray.remote`` to the facts: it is ``remote``
    (or a factory's name whose result is one: ``Tree.words``), or the module binds ``word``
    somewhere to a value (``word = ...``, ``word: T = ...``, ``(word := ...)``, ``... as word``:
    an import alias or a ``with`` target; ``x.word = ...`` too), through which an alias of
    ``ray.remote`` goes. A name only imported as itself (``from ray.util import PublicAPI``) or
    bound by a ``def``/``class`` is never ``ray.remote``."""
    if word == b"remote" or word in _remote_factories():
        return True
    return code.memo(("MayBeRemote", word), lambda c: _bound(c, word))


def _bound(code: "C.FileText", word: bytes) -> bool:
    src = code.source
    n = len(word)
    for q in code.iter_positions(word):
        j = q + n
        while j < len(src) and src[j] in _SKIP_OUT:
            j += 1
        if j < len(src) and (src[j] == 58 or (src[j] == 61 and src[j + 1:j + 2] != b"=")):  # ":" / "=" not "=="
            return True
        k = q - 1
        while k >= 0 and src[k] in _SKIP_IN:
            k -= 1
        if k >= 1 and src[k - 1:k + 1] == b"as" and (k < 2 or src[k - 2] not in _IDENT_BYTES):
            return True
    return False


_REMOTE_FACTORIES: Optional[frozenset] = None


def _remote_factories() -> frozenset:
    """Last words of the facts' factories whose result's last word is ``remote`` (``Tree.words``
    of a call adds them): none today."""
    global _REMOTE_FACTORIES
    if _REMOTE_FACTORIES is None:
        from shutdown_lint.facts import FACTORY_TYPES

        _REMOTE_FACTORIES = frozenset(c.rsplit(".", 1)[-1].encode() for c, t in FACTORY_TYPES.items()
                                      if t.rsplit(".", 1)[-1] == "remote")
    return _REMOTE_FACTORIES


_OWNER_MESSAGE = ("async actor `{cls}` holds resources in `{owner}()` but does not handle SIGTERM: "
                  "its event loop's tasks are never cancelled, so their cleanup never runs")
_INHERITED_MESSAGE = ("async actor `{cls}` holds resources in {owner}, inherited, but does not handle SIGTERM: "
                      "its event loop's tasks are never cancelled, so their cleanup never runs")
_CALL_IN_INIT = "Call `runtime_guard.ray.setup_worker()` in `__init__`"
_ADD_INIT = "Add an `__init__` that calls `runtime_guard.ray.setup_worker()`"


class _Decide:
    """What SHD404 decides, on either tree (``AsyncActorWithoutSigtermCleanup``: libcst; ``_Ast``:
    ``ast``). The tree answers ``_owns_resource`` (a function's body holds a resource),
    ``_first_argument_text`` (libcst's ``call.args[0].value`` as code, None without arguments),
    ``_module_setup_hook``, ``_bases`` (the class's base expressions, ``*b`` as ``b``),
    ``_module_bases`` (``same_module_bases``), ``_code``, ``_fix`` and ``_report_name`` (a finding
    on the class's name)."""

    def _check_class(self, node) -> None:
        cls = self.facts.class_of(node)
        if cls is not None and self.facts.is_threaded_ray_actor(cls):
            self._check_threaded(node, cls)
            return
        if cls is None or not self.facts.is_ray_remote_class(cls):
            return
        if not cls.has_async_methods:
            self._check_inherited(node, cls)
            return
        owner = next((m for m in cls.methods.values() if m.is_async and self._owns_resource(m)), None)
        if owner is None or self._handles_sigterm(cls) or self._module_setup_hook():
            return
        self._report_name(node, _OWNER_MESSAGE.format(cls=cls.name, owner=owner.name), self._fix(cls))

    def _check_inherited(self, node, cls: ClassInfo) -> None:
        """An actor class whose async methods are all inherited: from a base of this module, or
        one in another module of the project (the project index, through the class hierarchy).
        The fix only goes into an ``__init__`` the class has (a new one would skip the base's)."""
        owner: Optional[str] = None
        handled = False
        for base in self._module_bases(cls):
            if self._handles_sigterm(base):
                handled = True
            m = next((m for m in base.methods.values() if m.is_async and m.name not in cls.methods
                      and self._owns_resource(m)), None)
            if m is not None and owner is None:
                owner = f"`{base.name}.{m.name}()`"
        view = self.facts.project
        if owner is None and view is not None:
            for base in self._bases(cls.node):
                q = self.facts.qualified_name(base, node)
                hit = view.resolve(q) if q else None
                if not isinstance(hit, ProjectClass):
                    continue
                for c in view.index.mro(hit, view.deps):
                    for name, info in c.info["methods"].items():
                        if any(call[0].rsplit(".", 1)[-1] in self._setup_words() for call in info["calls"]):
                            handled = True
                        if owner is None and info["async"] and name not in cls.methods and (
                                info["finally"] or info["async_with"]):
                            owner = f"`{c.name}.{name}()` ({display_path(c.path)}:{info['line']})"
                view.deps.pop(view.path, None)
        if owner is None or handled or self._handles_sigterm(cls) or self._module_setup_hook():
            return
        self._report_name(node, _INHERITED_MESSAGE.format(cls=cls.name, owner=owner),
                          self._fix(cls) if "__init__" in cls.methods else None)

    def _setup_words(self) -> set[str]:
        return {name.rsplit(".", 1)[-1] for name in self.config["setup_calls"]} | {"signal", "add_signal_handler"}

    def _check_threaded(self, node, cls: ClassInfo) -> None:
        """A threaded actor (``max_concurrency`` > 1) whose method runs a resource-owning coroutine
        with ``asyncio.run``: that loop lives on a pool thread, where SIGTERM never arrives and
        ``signal.signal`` raises. Only ``setup_worker`` (or the setup hook) counts as handling it."""
        for method in cls.methods.values():
            for call, coro in self.facts.main_runner_calls(method):
                owner = self._owning_coroutine(coro)
                if owner is None:
                    continue
                if self._calls_setup(cls) or self._module_setup_hook():
                    return
                runner = self._code(call.func)
                self._report_name(
                    node,
                    f"threaded actor `{cls.name}` (max_concurrency > 1) runs `{runner}({coro.name}())` in "
                    f"`{method.name}()` on a thread of its pool: SIGTERM never reaches that event loop "
                    f"(and `signal.signal` raises off the main thread), so `{owner.name}()`'s cleanup never runs",
                    self._fix(cls),
                )
                return

    def _owning_coroutine(self, coro: Optional[FunctionInfo]) -> Optional[FunctionInfo]:
        """``coro`` or a same-module coroutine it awaits (transitively) that owns a resource."""
        if coro is None or not coro.is_async:
            return None
        seen: set = set()
        todo = [coro]
        while todo:
            fn = todo.pop()
            if fn in seen:
                continue
            seen.add(fn)
            if self._owns_resource(fn):
                return fn
            todo.extend(t for _, t in self.facts.callees(fn) if t.is_async)
        return None

    def _calls_setup(self, cls: ClassInfo) -> bool:
        setup_calls = set(self.config["setup_calls"])
        return any(self.facts.call_name(call) in setup_calls
                   for method in cls.methods.values() for call in method.calls)

    def _handles_sigterm(self, cls: ClassInfo) -> bool:
        setup_calls = set(self.config["setup_calls"])
        methods = set(cls.methods.values())
        for call in self.facts.calls:
            # a call under one of the methods' nodes: its scope (the function the walk was in: a
            # method's decorators and defaults count as the method's) is one of them or nested in one
            scope = self.facts.scope_of(call)
            while scope is not None and scope not in methods:
                scope = scope.scope
            if scope is not None:
                name = self.facts.call_name(call)
                if name in setup_calls:
                    return True
                if name in _SIGNAL_INSTALLERS and "SIGTERM" in (self._first_argument_text(call) or ""):
                    return True
        return False


class _Ast(_Decide, AstCheck):
    """SHD404 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers read
    from ``ast``: ``try`` (not ``try*``) finally blocks and ``except`` handlers (not ``except*``),
    ``async with`` items, a sole-string dict key (not joined strings), bases with ``*b`` as ``b``,
    code text as libcst's, a body on its header's line (no fix), and the class name's position
    read from the source after ``class`` (character columns; a backslash may come between)."""

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._check_class(node)

    def _report_name(self, node: ast.ClassDef, message: str, fix: Optional[FixPlan]) -> None:
        self.report(None, message, fix=fix, span=self._name_span(node))

    def _name_span(self, node: ast.ClassDef) -> tuple[int, int, int, int]:
        """libcst's span of the class's ``Name``: after ``class``, spaces and backslash continuations."""
        lines = self.facts.lines
        line = node.lineno
        text = lines[line - 1]
        at = node.col_offset + len("class")  # only spaces before ``class``: bytes are characters
        while True:
            at = _GAP.match(text, at).end()
            if text.startswith("\\", at) and line < len(lines) and not text[at + 1:].strip("\r\n"):
                line += 1
                text, at = lines[line - 1], 0
                continue
            break
        end = _NAME_END.match(text, at).end()
        return (line, at, line, end)

    def _owns_resource(self, fn: FunctionInfo) -> bool:
        facts = self.facts
        words = self.config["resource_words"]
        resource = cleanup = False
        starred: set[int] = set()  # ``except*`` handlers: libcst's ExceptStarHandler
        for stmt in fn.node.body:
            for n in ast.walk(stmt):
                t = type(n)
                if t is ast.Try:
                    if n.finalbody and _may_clean_up(n.finalbody):
                        return True
                elif t is _TRY_STAR:
                    starred.update(id(h) for h in n.handlers)
                elif t is ast.AsyncWith:
                    # Only context managers that hold something outside the process count: an
                    # HTTP client session or a lock dies with the process, a sandbox does not.
                    if any(_ast_external_resource(item.context_expr, words, facts) for item in n.items):
                        return True
                elif t is ast.ExceptHandler:
                    if id(n) not in starred and n.type is not None and \
                            facts.qualified_name(n.type, n) in _CANCEL_TYPES and _may_clean_up(n.body):
                        return True
                elif t is ast.Call:
                    name = _ast_callee_name(n.func)
                    if name is not None:
                        resource = resource or mentions(name, words)
                        cleanup = cleanup or bool(set(identifier_words(name)) & _CLEANUP_VERBS)
        return resource and cleanup

    def _first_argument_text(self, call: ast.Call) -> Optional[str]:
        first = first_argument(call)
        return None if first is None else self.facts.code_for_node(first)

    def _module_setup_hook(self) -> bool:
        facts = self.facts
        if _HOOK_KEY not in facts.code():
            return False
        for n in ast.walk(facts.module):
            t = type(n)
            if t is ast.Dict:
                for key, value in zip(n.keys, n.values):
                    if type(key) is ast.Constant and key.value == _HOOK_KEY and self._one_string(key) \
                            and "setup_worker" in facts.code_for_node(value):
                        return True
            elif t is ast.keyword and n.arg == _HOOK_KEY and "setup_worker" in facts.code_for_node(n.value):
                return True
        return False

    def _one_string(self, node: ast.Constant) -> bool:
        """libcst's ``SimpleString``: one string token (not ``"a" "b"``, whose value ``ast`` joins)."""
        return self.facts.string_tokens(node) == 1

    @staticmethod
    def _bases(node: ast.ClassDef) -> list:
        return [b.value if type(b) is ast.Starred else b for b in node.bases]

    def _module_bases(self, cls: ClassInfo) -> list[ClassInfo]:
        return ast_same_module_bases(self.facts, cls)

    def _code(self, node: ast.AST) -> str:
        return self.facts.code_without_module(node)

    def _fix(self, cls: ClassInfo) -> Optional[FixPlan]:
        init = cls.methods.get("__init__")
        if init is not None:
            if init.is_async or self.facts.body_on_header_line(init.node.body):
                return None
            return FixPlan.safe(_CALL_IN_INIT)
        if self.facts.body_on_header_line(cls.node.body):
            return None
        return FixPlan.safe(_ADD_INIT)


#: spaces between ``class`` and its name (a backslash continuation is followed by ``_name_span``)
_GAP = re.compile(r"[ \t\f]*")
#: a class name: up to its bases, type parameters, ``:``, a space or a backslash
_NAME_END = re.compile(r"[^\s(\[:\\#]*")
_TRY_STAR = getattr(ast, "TryStar", None)


def _ast_external_resource(expr: ast.AST, words, facts) -> bool:
    """``_external_resource`` on Python's ``ast``."""
    if _ast_lock_like(expr):
        return False
    target = expr.func if type(expr) is ast.Call else expr
    qualified = facts.qualified_name(target, expr) or ""
    if qualified.startswith(_IN_PROCESS_PREFIXES):
        return False
    name = _ast_callee_name(target)
    return name is not None and mentions(name, words)


class AsyncActorWithoutSigtermCleanup(_Decide, Rule):
    """
    ## What it does
    Flags an `@ray.remote` class (or a class passed to `ray.remote(...)`) that has
    `async def` methods owning resources — a `finally` block, an `async with`, an
    `except asyncio.CancelledError`/`except BaseException` handler, or calls that name a
    resource (`sandbox`, `session`, `lease`, ...) together with a cleanup call (`close`,
    `delete`, `release`, ...) — when nothing in the actor handles SIGTERM: no
    `runtime_guard.ray.setup_worker()` call in the class, no `signal.signal(SIGTERM, ...)`
    or `loop.add_signal_handler(SIGTERM, ...)`, and no
    `ray.init(runtime_env={"worker_process_setup_hook": "runtime_guard.ray.setup_worker"})`
    in the module.

    Also flagged: an actor class whose async methods are all inherited (a subclass built in a
    factory function, `class GPUWorker(RolloutWorker): pass; return ray.remote(...)(GPUWorker)`)
    when a base class of this module, or one in another module of the project (the project
    index), has an async method with a `finally` or an `async with` and no base calls the setup
    or installs a signal handler. The fix then goes only into an `__init__` the class has (a
    new one would skip the base's).

    Also flagged: a *threaded* actor, a sync actor declared with `max_concurrency` > 1 (or a
    `max_concurrency` that is not a literal, or `concurrency_groups`) in `@ray.remote(...)`,
    `ray.remote(...)(Cls)` or `Cls.options(...)`, whose method runs a resource-owning
    coroutine (same module, or a coroutine it awaits) with `asyncio.run(...)`: its methods run
    on a thread pool, so that loop lives off the main thread. There `signal.signal` raises
    `ValueError` and `loop.add_signal_handler` fails, and SIGTERM (whose `SystemExit` Ray raises
    in the main thread) never unwinds it: only `setup_worker()` or the setup hook count as
    handling SIGTERM. With the default `max_concurrency=1` the methods run on the main thread,
    where that `SystemExit` does unwind `asyncio.run` (measured: 0 leaked), so it is not flagged.

    Not flagged: `async with` on locks, conditions, semaphores and timeouts and a `finally`
    that neither awaits nor calls a cleanup (`close`, `remove`, `release`, ...): such state
    dies with the process. Synchronous actors (Ray's SIGTERM handler raises `SystemExit` in the
    thread that runs their methods, so `finally` blocks run), async actors whose methods
    hold nothing to clean up, and plain classes.

    Options: `resource_words` (list of lower-case words) names resources for the
    vocabulary check; `setup_calls` (list of qualified names) are calls that make the
    worker handle SIGTERM (default: `runtime_guard.ray.setup_worker`).

    ## Why is this bad?
    An async actor runs its coroutines on an event loop in a thread of its own. When the
    worker gets SIGTERM (node drain, autoscaler down-scaling, `ray stop`, a Kubernetes
    eviction, `ray.kill` escalation), Ray's handler raises `SystemExit` in the main thread
    only: the loop's tasks are never cancelled, their `finally` blocks and `async with`
    exits never run, and every sandbox, container or lease they hold leaks (5 of 5 in our
    measurement on Ray 2.60; `ray.cancel` on the same call cleans up all 5).

    ## Example
    ```python
    @ray.remote
    class Generator:
        async def rollout(self, prompt):
            box = await create_sandbox()
            try:
                return await run_agent(box, prompt)
            finally:
                await box.delete()  # never runs on SIGTERM
    ```

    ## Use instead
    ```python
    import runtime_guard

    @ray.remote
    class Generator:
        def __init__(self):
            runtime_guard.ray.setup_worker()

        async def rollout(self, prompt):
            ...
    ```
    Or, for every worker of the job:
    `ray.init(runtime_env={"worker_process_setup_hook": "runtime_guard.ray.setup_worker"})`.
    `setup_worker()` makes SIGTERM cancel the tasks on the actor's event loop and wait,
    bounded, for their cleanup; it works off the main thread and survives the SIGTERM
    handler Ray installs later.

    ## Fix safety
    Safe. The fix inserts `runtime_guard.ray.setup_worker()` as the first statement of
    `__init__` (after its docstring and a `super().__init__(...)` call), or adds an
    `__init__` that makes the call, and adds `import runtime_guard` (every Ray worker's
    environment must then provide it, see docs/fix-safety.md). No fix is offered for a
    one-line `def __init__(self): ...`.

    A run with no SIGTERM to the actor is unchanged: its methods, sync and async, return
    the same values and types, and a child it forks meets the same fate under SIGTERM
    (measured in tests/behaviour/test_shd404_async_actor_sigterm.py). The helper keeps the
    actor's loops ticking (a timer callback every 0.2 s, no task) and wraps Ray's SIGTERM
    handler instead of replacing it. On SIGTERM (the hazard's path) the tasks on the
    actor's loops are cancelled and their cleanup runs, at most
    `RUNTIME_GUARD_CLEANUP_TIMEOUT` seconds (default 10), then Ray's handler ends the
    worker as before.

    ## References
    - SkyRL #1160: sandboxes leak when the Ray worker is terminated
    - Ray docs: "AsyncIO / Concurrency for Actors", `worker_process_setup_hook`
    - shutdown-lint lab: `ray_async_actor_sigterm.py`
    """

    code = "SHD404"
    name = "async-actor-without-sigterm-cleanup"
    summary = "Async Ray actor holding resources with no SIGTERM handling: its tasks' cleanup never runs"
    triggers = ("remote",)
    # tier 1: a Ray actor class (with async methods, its own or inherited), or a threaded actor
    # (max_concurrency) running asyncio.run
    # (an actor class's async methods may be inherited from a base in another module: no `async` here)
    # and either a coroutine (``_check_threaded`` needs one too) or a class with bases (async methods
    # inherited, maybe from another module); all in code (``C.InCode``: the facts' actor classes
    # come from qualified names only)
    # with no ``async`` in code, a class with bases must be an actor for ``_check_inherited``:
    # decorated by what may be ``ray.remote`` (``remote``, or a word the module binds), or its name
    # the only argument of a call that may be (``ray.remote(Cls)``): ``_MayBeRemoteSubclass``, read
    # on the code only when the code decides (``select.filter_rules``)
    candidate = C.All(C.InCode(C.All(C.qualified("ray.remote", "ray.actor.remote"),
                                     C.AnyOf(C.Word("async"), C.WordThen("class", _NOT_BASELESS)))),
                      C.AnyOf(C.InCode(C.Word("async")), _MayBeRemoteSubclass()))
    # tier 2: a class that may be a Ray actor (decorated with ray.remote, or handed to a
    # call: ``ray.remote(Cls)``) with an async method, or in a file that sets
    # max_concurrency / concurrency_groups somewhere (a threaded actor)
    candidate_tree = staticmethod(lambda tree: _may_be_async_actor(tree))
    facts_needed = ("functions", "execution")
    options = {
        "resource_words": Option(
            default=list(RESOURCE_WORDS),
            kind=list,
            item_kind=str,
            doc="Words in called names that mean an async method holds a resource.",
        ),
        "setup_calls": Option(
            default=[_SETUP],
            kind=list,
            item_kind=str,
            doc="Qualified names of calls that make the actor's worker handle SIGTERM.",
        ),
    }

    valid = [
        # setup_worker at the top of __init__
        """
        import ray
        import runtime_guard

        @ray.remote
        class Gen:
            def __init__(self):
                runtime_guard.ray.setup_worker()

            async def run(self):
                try:
                    await work()
                finally:
                    await cleanup()
        """,
        # a synchronous actor: Ray's SystemExit unwinds its finally blocks
        """
        import ray

        @ray.remote
        class Store:
            def put(self, k):
                try:
                    save(k)
                finally:
                    close()
        """,
        # an async actor with nothing to clean up
        """
        import ray

        @ray.remote
        class Counter:
            async def incr(self):
                self.n += 1
                return self.n
        """,
        # the cluster-wide setup hook
        """
        import ray

        ray.init(runtime_env={"worker_process_setup_hook": "runtime_guard.ray.setup_worker"})

        @ray.remote
        class Gen:
            async def run(self):
                async with open_session() as s:
                    await s.go()
        """,
        # not an actor
        """
        import ray

        class Local:
            async def run(self):
                try:
                    await ray_step()
                finally:
                    await close()
        """,
        # the actor handles SIGTERM itself
        """
        import asyncio, signal
        import ray

        @ray.remote
        class Server:
            async def start(self):
                loop = asyncio.get_running_loop()
                loop.add_signal_handler(signal.SIGTERM, self.stop)
                try:
                    await serve()
                finally:
                    await close()
        """,
        # a threaded actor whose coroutine holds nothing
        """
        import asyncio
        import ray

        async def fetch(url):
            return await get(url)

        @ray.remote(max_concurrency=8)
        class Fetcher:
            def run(self, url):
                return asyncio.run(fetch(url))
        """,
        # max_concurrency=1: methods run on the main thread, SIGTERM unwinds asyncio.run
        """
        import asyncio
        import ray

        async def rollout(box):
            try:
                await box.run()
            finally:
                await box.delete()

        @ray.remote(max_concurrency=1)
        class Env:
            def run(self, box):
                asyncio.run(rollout(box))
        """,
        # imported under another name
        """
        from ray import remote
        from runtime_guard.ray import setup_worker as guard

        @remote(num_cpus=1)
        class Gen:
            def __init__(self):
                guard()

            async def run(self):
                try:
                    await work()
                finally:
                    await done()
        """,
    ]
    invalid = [
        Invalid(
            """
            import asyncio, os
            import ray

            @ray.remote(max_restarts=0)
            class Gen:
                async def run(self, d):
                    async def child(i):
                        open(f"{d}/box{i}", "w").close()
                        try:
                            await asyncio.sleep(100)
                        finally:
                            os.remove(f"{d}/box{i}")
                    await asyncio.gather(*[child(i) for i in range(5)])
            """,
            fixed="""
            import asyncio, os
            import ray
            import runtime_guard

            @ray.remote(max_restarts=0)
            class Gen:
                def __init__(self):
                    runtime_guard.ray.setup_worker()

                async def run(self, d):
                    async def child(i):
                        open(f"{d}/box{i}", "w").close()
                        try:
                            await asyncio.sleep(100)
                        finally:
                            os.remove(f"{d}/box{i}")
                    await asyncio.gather(*[child(i) for i in range(5)])
            """,
            message_contains="SIGTERM",
        ),
        Invalid(
            """
            import ray

            @ray.remote
            class Worker(BaseWorker):
                \"\"\"Runs trajectories in sandboxes.\"\"\"

                def __init__(self, cfg):
                    \"\"\"Keep the config.\"\"\"
                    super().__init__(cfg)
                    # remember it
                    self.cfg = cfg

                async def trajectory(self, i):
                    async with self.sandbox(i) as box:
                        return await box.run()
            """,
            fixed="""
            import ray
            import runtime_guard

            @ray.remote
            class Worker(BaseWorker):
                \"\"\"Runs trajectories in sandboxes.\"\"\"

                def __init__(self, cfg):
                    \"\"\"Keep the config.\"\"\"
                    super().__init__(cfg)
                    # remember it
                    runtime_guard.ray.setup_worker()
                    self.cfg = cfg

                async def trajectory(self, i):
                    async with self.sandbox(i) as box:
                        return await box.run()
            """,
        ),
        Invalid(
            """
            import ray as r

            class Sessions:
                \"\"\"Pool.\"\"\"

                # the main entry
                async def serve(self, n):
                    s = await make_session(n)
                    s.close()

            Pool = r.remote(Sessions)
            """,
            fixed="""
            import ray as r
            import runtime_guard

            class Sessions:
                \"\"\"Pool.\"\"\"

                def __init__(self):
                    runtime_guard.ray.setup_worker()

                # the main entry
                async def serve(self, n):
                    s = await make_session(n)
                    s.close()

            Pool = r.remote(Sessions)
            """,
        ),
        Invalid(
            """
            import asyncio
            from ray import remote

            @remote(num_gpus=1)
            class Env:
                def __init__(self):
                    pass

                async def step(self):
                    try:
                        await self.sim()
                    except asyncio.CancelledError:
                        await self.release()
                        raise
            """,
            fixed="""
            import asyncio
            from ray import remote
            import runtime_guard

            @remote(num_gpus=1)
            class Env:
                def __init__(self):
                    runtime_guard.ray.setup_worker()
                    pass

                async def step(self):
                    try:
                        await self.sim()
                    except asyncio.CancelledError:
                        await self.release()
                        raise
            """,
        ),
        # a threaded actor (max_concurrency > 1) driving asyncio.run: the loop runs on a pool thread
        Invalid(
            """
            import asyncio
            import ray

            async def rollout(box):
                try:
                    await box.run()
                finally:
                    await box.delete()  # never runs on SIGTERM

            @ray.remote(max_concurrency=8)
            class Env:
                def run(self, box):
                    asyncio.run(rollout(box))
            """,
            fixed="""
            import asyncio
            import ray
            import runtime_guard

            async def rollout(box):
                try:
                    await box.run()
                finally:
                    await box.delete()  # never runs on SIGTERM

            @ray.remote(max_concurrency=8)
            class Env:
                def __init__(self):
                    runtime_guard.ray.setup_worker()

                def run(self, box):
                    asyncio.run(rollout(box))
            """,
            message_contains="max_concurrency",
        ),
        # declared threaded through .options(); its signal.signal would raise off the main thread
        Invalid(
            """
            import asyncio, signal
            import ray

            async def hold(lease):
                async with lease_sandbox(lease) as box:
                    await box.wait()

            class Worker:
                def __init__(self, n):
                    self.n = n

                def serve(self, lease):
                    signal.signal(signal.SIGTERM, lambda *a: None)
                    asyncio.run(hold(lease))

            Remote = ray.remote(Worker)
            workers = [Remote.options(max_concurrency=n).remote(n) for n in range(2, 4)]
            """,
            fixed="""
            import asyncio, signal
            import ray
            import runtime_guard

            async def hold(lease):
                async with lease_sandbox(lease) as box:
                    await box.wait()

            class Worker:
                def __init__(self, n):
                    runtime_guard.ray.setup_worker()
                    self.n = n

                def serve(self, lease):
                    signal.signal(signal.SIGTERM, lambda *a: None)
                    asyncio.run(hold(lease))

            Remote = ray.remote(Worker)
            workers = [Remote.options(max_concurrency=n).remote(n) for n in range(2, 4)]
            """,
        ),
        # a one-line __init__: flagged, no mechanical fix
        Invalid(
            """
            import ray

            @ray.remote
            class Leases:
                def __init__(self): self.held = set()

                async def hold(self, k):
                    try:
                        await wait_for(k)
                    finally:
                        await release_lease(k)
            """,
            fixed=None,
        ),
        # no finally, but a resource (configured word) and its cleanup call
        Invalid(
            """
            import ray

            @ray.remote
            class Browser:
                async def visit(self, url):
                    tab = await open_tab(url)
                    await tab.close()
            """,
            fixed="""
            import ray
            import runtime_guard

            @ray.remote
            class Browser:
                def __init__(self):
                    runtime_guard.ray.setup_worker()

                async def visit(self, url):
                    tab = await open_tab(url)
                    await tab.close()
            """,
            options={"resource_words": ["tab"]},
        ),
    ]

    ast_check = _Ast

    # ------------------------------------------------------------------ visitors
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._check_class(node)

    def _report_name(self, node: cst.ClassDef, message: str, fix: Optional[Fix]) -> None:
        self.report(node.name, message, fix=fix)

    # ------------------------------------------------------------------ the tree's answers (libcst)
    @staticmethod
    def _bases(node: cst.ClassDef) -> list:
        return [base.value for base in node.bases]

    def _module_bases(self, cls: ClassInfo) -> list[ClassInfo]:
        return same_module_bases(self.facts, cls)

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        return cst.Module([]).code_for_node(node)

    def _first_argument_text(self, call: cst.Call) -> Optional[str]:
        return cst.Module([]).code_for_node(call.args[0].value) if call.args else None

    def _owns_resource(self, fn: FunctionInfo) -> bool:
        found = {"resource": False, "cleanup": False, "strong": False}
        facts = self.facts
        words = self.config["resource_words"]

        class _Scan(cst.CSTVisitor):
            def visit_Try(self, n: cst.Try) -> None:
                if n.finalbody is not None and _cleans_up(n.finalbody):
                    found["strong"] = True

            def visit_With(self, n: cst.With) -> None:
                # Only context managers that hold something outside the process count: an
                # HTTP client session or a lock dies with the process, a sandbox does not.
                if n.asynchronous is not None and any(
                    _external_resource(item.item, words, facts) for item in n.items
                ):
                    found["strong"] = True

            def visit_ExceptHandler(self, n: cst.ExceptHandler) -> None:
                # cleanup done on cancellation is cleanup SIGTERM must let run
                if n.type is not None and facts.qualified_name(n.type, n) in _CANCEL_TYPES and _cleans_up(n.body):
                    found["strong"] = True

            def visit_Call(self, n: cst.Call) -> None:
                name = _callee_name(n.func)
                if name is None:
                    return
                if mentions(name, words):
                    found["resource"] = True
                if set(identifier_words(name)) & _CLEANUP_VERBS:
                    found["cleanup"] = True

        walk(fn.node.body, _Scan())
        return found["strong"] or (found["resource"] and found["cleanup"])

    def _module_setup_hook(self) -> bool:
        found = [False]

        class _Scan(cst.CSTVisitor):
            def visit_DictElement(self, n: cst.DictElement) -> None:
                if isinstance(n.key, cst.SimpleString) and n.key.evaluated_value == _HOOK_KEY:
                    found[0] = found[0] or _names_setup(n.value)

            def visit_Arg(self, n: cst.Arg) -> None:
                if n.keyword is not None and n.keyword.value == _HOOK_KEY:
                    found[0] = found[0] or _names_setup(n.value)

        if _HOOK_KEY in self.facts.code():
            walk(self.facts.module, _Scan())
        return found[0]

    # ------------------------------------------------------------------ fix
    def _fix(self, cls: ClassInfo) -> Optional[Fix]:
        call_line = cst.SimpleStatementLine([cst.Expr(guard_call("ray.setup_worker"))])
        init = cls.methods.get("__init__")
        if init is not None:
            body = init.node.body
            if not isinstance(body, cst.IndentedBlock) or init.is_async:
                return None
            stmts = list(body.body)
            skip = 0
            if stmts and _is_docstring(stmts[0]):
                skip = 1
            if len(stmts) > skip and _is_super_init(stmts[skip]):
                skip += 1
            edit = InsertBefore(stmts[skip], (call_line,)) if len(stmts) > skip else InsertAfter(stmts[-1], (call_line,))
            return Fix.safe(edit, IMPORT_RUNTIME_GUARD, message="Call `runtime_guard.ray.setup_worker()` in `__init__`")
        body = cls.node.body
        if not isinstance(body, cst.IndentedBlock):
            return None
        stmts = list(body.body)
        new_init = cst.FunctionDef(
            name=cst.Name("__init__"),
            params=cst.Parameters([cst.Param(cst.Name("self"))]),
            body=cst.IndentedBlock([call_line]),
        )
        message = "Add an `__init__` that calls `runtime_guard.ray.setup_worker()`"
        if stmts and _is_docstring(stmts[0]):
            new_init = new_init.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
            return Fix.safe(InsertAfter(stmts[0], (new_init,)), IMPORT_RUNTIME_GUARD, message=message)
        anchor = stmts[0]
        lines = list(anchor.leading_lines)
        blank = 0
        while blank < len(lines) and lines[blank].comment is None:
            blank += 1
        # blank lines stay above the new __init__; one blank line and the comments stay above the anchor
        new_init = new_init.with_changes(leading_lines=lines[:blank])
        moved = anchor.with_changes(leading_lines=[cst.EmptyLine(indent=False), *lines[blank:]])
        return Fix.safe(Replace(anchor, cst.FlattenSentinel([new_init, moved])), IMPORT_RUNTIME_GUARD, message=message)


def _lock_like(expr: cst.BaseExpression) -> bool:
    """``async with self._lock`` / ``asyncio.Condition()`` / ``asyncio.timeout(5)``: in-process
    state that dies with the process, nothing outside to release."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    name = _callee_name(expr)
    return name is not None and bool(set(identifier_words(name)) & _LOCK_WORDS)


#: Libraries whose context managers hold only in-process state (sockets, locks, timers): the
#: OS reclaims them when the process dies, so an unrun ``__aexit__`` leaks nothing outside.
_IN_PROCESS_PREFIXES = ("aiohttp.", "httpx.", "asyncio.", "anyio.", "contextlib.", "grpc.", "websockets.",
                        "aiofiles.", "trio.", "threading.")


def _external_resource(expr: cst.BaseExpression, words, facts) -> bool:
    if _lock_like(expr):
        return False
    target = expr.func if isinstance(expr, cst.Call) else expr
    qualified = facts.qualified_name(target, expr) or ""
    if qualified.startswith(_IN_PROCESS_PREFIXES):
        return False
    name = _callee_name(target)
    return name is not None and mentions(name, words)


def _cleans_up(finalbody: cst.CSTNode) -> bool:
    """A ``finally`` that does external cleanup: it awaits (an API call), or calls something
    named like a cleanup (``close``, ``os.remove``, ``release_sandbox``)."""
    found = [False]

    class _Scan(cst.CSTVisitor):
        def visit_Await(self, n: cst.Await) -> None:
            found[0] = True

        def visit_Call(self, n: cst.Call) -> None:
            name = _callee_name(n.func)
            if name is not None and set(identifier_words(name)) & _CLEANUP_VERBS and not _lock_like(n.func):
                found[0] = True

    walk(finalbody, _Scan())
    return found[0]


def _callee_name(func: cst.BaseExpression) -> Optional[str]:
    if isinstance(func, cst.Name):
        return func.value
    if isinstance(func, cst.Attribute):
        base = _callee_name(func.value) if isinstance(func.value, (cst.Name, cst.Attribute)) else None
        return f"{base}_{func.attr.value}" if base else func.attr.value
    return None


def _names_setup(value: cst.BaseExpression) -> bool:
    return "setup_worker" in cst.Module([]).code_for_node(value)


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_super_init(stmt: cst.BaseStatement) -> bool:
    """``super().__init__(...)`` or ``Base.__init__(self, ...)``."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return False
    call = stmt.body[0].value
    if isinstance(call, cst.Await):
        call = call.expression
    return isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "__init__"


# ------------------------------------------------------------------ candidate tier 2 (ast)
_THREADED = ("max_concurrency", "concurrency_groups")
_RUNNER_WORDS = ("run", "run_until_complete")  # last words of MAIN_RUNNERS


def _may_be_async_actor(tree) -> bool:
    """A class that may be a Ray actor (decorated with something named ``remote``, or named
    in a call's arguments: ``ray.remote(Cls)``) with an async method that may own a resource
    (``_owns_resource``); or, in a file that sets ``max_concurrency``/``concurrency_groups``
    (a threaded actor), such a class with a method that may call a main runner while the
    module has a coroutine that may own a resource (``_check_threaded``)."""
    threaded = None  # read from every call's keywords once a class asks
    owning_coroutine = None
    for cls in tree.classes:
        methods = tree.methods.get(id(cls), ())
        if not cls.bases and not any(m.is_async for m in methods):
            if threaded is None:
                threaded = _threaded(tree)
            if not threaded:
                continue  # none of the three shapes below can hold: no need to ask whether it is an actor
        # a name handed to a call is spelled (``mentioned``): that test first, the argument walk last
        if not (any("remote" in tree.words(d) for d in cls.decorator_list)
                or (cls.name in tree.mentioned and cls.name in tree.argument_names)):
            continue
        if any(m.is_async and _may_own_resource(m.node, tree) for m in methods):
            return True
        if cls.bases and not any(m.is_async for m in methods) and _may_name_a_base(tree, cls) \
                and _made_remote(tree, cls) and not _inherits_no_owner(tree, cls):
            return True  # its async methods may be inherited (``_check_inherited``: another module too)
        if threaded is None:
            threaded = _threaded(tree)
        if threaded and any(_may_run_loop(tree, m.node) for m in methods):
            if owning_coroutine is None:
                owning_coroutine = any(f.is_async and _may_own_resource(f.node, tree) for f in tree.functions)
            if owning_coroutine:
                return True
    return False


def _threaded(tree) -> bool:
    """Some call sets ``max_concurrency``/``concurrency_groups`` (a threaded actor)."""
    return any(k.arg in _THREADED for c in tree.all_calls() for k in c.keywords)


def _made_remote(tree, cls) -> bool:
    """``is_ray_remote_class`` for a class with no async method of its own: decorated with
    something named ``remote``, or named in the arguments of a call that may be ``ray.remote``
    / ``ray.remote(...)(Cls)`` (``_ray_remote_call_classes``)."""
    if any("remote" in tree.words(d.func if isinstance(d, ast.Call) else d) for d in cls.decorator_list):
        return True
    name, Name = cls.name, ast.Name
    for c in tree.all_calls():  # the class named among the arguments first, the callee last
        if c.args and any(type(a) is Name and a.id == name for a in c.args):
            func = c.func
            if tree.may_call_any(c, _REMOTE) or (type(func) is ast.Call and tree.may_call_any(func, _REMOTE)):
                return True
    return False


_REMOTE = ("ray.remote", "ray.actor.remote")


def _may_name_a_base(tree, cls) -> bool:
    """``_check_inherited`` finds an owner only in a base the facts can name: a class of the module
    (``same_module_bases``: a name bound to a class) or one whose qualified name the project index
    resolves (``qualified_name``: its root name bound by an import, a def, a class or a value, or a
    builtin). A base spelled from a parameter (``class _wrapper(env_cls)`` in a factory) or a name
    bound only by unpacking or a loop has none; any other shape of base is kept."""
    for base in cls.bases:
        root = base
        while type(root) in (ast.Attribute, ast.Call, ast.Subscript, ast.Starred):
            root = root.func if type(root) is ast.Call else root.value
        # ``binds_name``: ``root.id in tree.named_bindings`` without building it for one name
        if type(root) is not ast.Name or root.id in _BUILTINS or tree.binds_name(root.id):
            return True
    return False


def _may_own_resource(fn: ast.AST, tree=None) -> bool:
    """What ``_owns_resource`` needs somewhere under ``fn`` (its body, nested defs included; a
    superset: decorators and defaults too), judged as the rule judges it on the same names:
    a ``finally`` that cleans up (``_cleans_up``: an ``await``, or a call named with a cleanup
    verb that is not lock-like: ``finally: self._lock.release()`` cleans nothing up), an
    ``async with`` on something named with a resource word and not lock-like
    (``_external_resource``; the in-process libraries it also excludes are left to the rule),
    an ``except`` of a type that may be ``CancelledError``/``BaseException`` whose body cleans
    up, or both a call named with a cleanup verb and one named with a resource word."""
    cleanup = resource = False
    for n in ast_walk(fn):  # ``ast.walk``'s nodes, without its generators
        t = type(n)
        if t in TRYS and n.finalbody and _may_clean_up(n.finalbody):
            return True
        if t is ast.AsyncWith and any(_may_hold_external(item.context_expr) for item in n.items):
            return True
        if t is ast.ExceptHandler and n.type is not None and _may_clean_up(n.body) and (
                tree is None or tree.words(n.type) & _CANCEL_LAST):
            return True
        if t is ast.Call:
            name = _ast_callee_name(n.func)
            if name is None:
                continue
            words = set(identifier_words(name))
            cleanup = cleanup or bool(words & _CLEANUP_VERBS)
            resource = resource or any(w in words for w in RESOURCE_WORDS)
            if cleanup and resource:
                return True
    return False


#: last words of ``_CANCEL_TYPES`` (``Tree.words`` of a handler's type must meet them)
_CANCEL_LAST = frozenset(t.rsplit(".", 1)[-1] for t in _CANCEL_TYPES)


def _ast_callee_name(func: ast.AST) -> Optional[str]:
    """``_callee_name`` on Python's ``ast`` (the same names: ``self_lock_release``)."""
    if type(func) is ast.Name:
        return func.id
    if type(func) is ast.Attribute:
        base = _ast_callee_name(func.value) if type(func.value) in (ast.Name, ast.Attribute) else None
        return f"{base}_{func.attr}" if base else func.attr
    return None


def _ast_lock_like(expr: ast.AST) -> bool:
    """``_lock_like`` on Python's ``ast``."""
    if type(expr) is ast.Call:
        expr = expr.func
    name = _ast_callee_name(expr)
    return name is not None and bool(set(identifier_words(name)) & _LOCK_WORDS)


def _may_clean_up(stmts: list) -> bool:
    """``_cleans_up`` on Python's ``ast``: an ``await``, or a call named with a cleanup verb that
    is not lock-like, anywhere under ``stmts``."""
    for st in stmts:
        for n in ast.walk(st):
            t = type(n)
            if t is ast.Await:
                return True
            if t is ast.Call:
                name = _ast_callee_name(n.func)
                if name is not None and set(identifier_words(name)) & _CLEANUP_VERBS and not _ast_lock_like(n.func):
                    return True
    return False


def _may_hold_external(expr: ast.AST) -> bool:
    """``_external_resource`` on Python's ``ast``, less its test of the qualified name (a superset)."""
    if _ast_lock_like(expr):
        return False
    name = _ast_callee_name(expr.func if type(expr) is ast.Call else expr)
    return name is not None and mentions(name, RESOURCE_WORDS)


def _may_run_loop(tree, fn: ast.AST) -> bool:
    return any(type(n) is ast.Call and any(tree.may_call(n, w) for w in _RUNNER_WORDS) for n in ast.walk(fn))


def _inherits_no_owner(tree, cls) -> bool:
    """``_check_inherited`` surely finds no owner: every base, and every base of those, is a
    name bound in the module by one ``class`` statement and nothing else (the facts' lookup and
    the project index both find that class), and no ``async def`` of those classes may own a
    resource: ``_may_own_resource`` (``same_module_bases``' ``_owns_resource``) nor any ``finally``
    or ``async with`` in it (the index's ``finally``/``async_with``)."""
    seen: set[int] = set()
    todo = list(cls.bases)
    while todo:
        base = todo.pop()
        if type(base) is not ast.Name:
            return False
        target = _only_a_class(tree, base.id)
        if target is None:
            return False  # ``object`` too: ``builtins.object`` is left to the index (a project's ``builtins``)
        if id(target) in seen:
            continue
        seen.add(id(target))
        for m in tree.methods.get(id(target), ()):
            if m.is_async and (_may_own_resource(m.node, tree) or any(
                    (type(n) in TRYS and n.finalbody) or type(n) is ast.AsyncWith for n in ast.walk(m.node))):
                return False
        todo.extend(target.bases)
    return True


def _only_a_class(tree, name: str) -> Optional[ast.ClassDef]:
    """The one ``class <name>`` of the module when nothing else binds ``name``; else None."""
    found = [c for c in tree.classes if c.name == name]
    if len(found) != 1 or tree.binding_count(name) != 1:
        return None
    return found[0]
