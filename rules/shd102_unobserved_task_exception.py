from __future__ import annotations

import ast
import io
import tokenize
from typing import Optional, Union

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.exit_paths import exit_paths_of
from shutdown_lint.ast_engine.facts import first_argument
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.ast_tree import COMPREHENSIONS
from shutdown_lint.rule import Applicability, Fix, Invalid, Option, Replace, Rule
from shutdown_lint.traversal import walk

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._waits import only_waits, sleep_call

#: ``runtime_guard.supervise``'s policies; "log" is the only one that keeps the program's behaviour.
POLICIES = ("log", "cancel-main", "exit")


def supervise_call(task: cst.BaseExpression, policy: str) -> cst.Call:
    """``runtime_guard.supervise(<task>, on_error="<policy>")``: the policy is always explicit, so a
    fixed program does not depend on ``set_default_policy`` or ``$RUNTIME_GUARD_TASK_POLICY``."""
    return guard_call("supervise", [
        cst.Arg(task),
        cst.Arg(cst.SimpleString(f'"{policy}"'), keyword=cst.Name("on_error"),
                equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                      whitespace_after=cst.SimpleWhitespace(""))),
    ])

_SPAWNERS = frozenset({
    "asyncio.create_task", "asyncio.ensure_future", "asyncio.AbstractEventLoop.create_task",
})
#: Receivers of ``.create_task`` that are event loops by name when their type is unknown
#: (a ``loop`` parameter, ``self._loop`` set from an argument).
_LOOP_NAMES = ("loop", "_loop", "event_loop", "_event_loop", "io_loop")

# Methods of a task that look at its outcome, and ones that do not.
_OBSERVING_METHODS = frozenset({"result", "exception", "add_done_callback"})
_NEUTRAL_TASK_METHODS = frozenset({
    "cancel", "done", "cancelled", "get_name", "set_name", "get_coro", "get_loop", "get_context",
    "remove_done_callback", "print_stack", "get_stack", "cancelling", "uncancel",
})
# Methods of a collection that only add or drop entries.
_COLLECTION_MUTATORS = frozenset({
    "append", "add", "extend", "insert", "appendleft", "extendleft", "discard", "remove", "clear",
    "setdefault", "update",
})
_ADDERS = frozenset({"append", "add", "appendleft", "insert", "setdefault", "put_nowait"})
_ELEMENT_GETTERS = frozenset({"pop", "popleft", "get", "popitem"})
_VIEW_GETTERS = frozenset({"values", "copy", "items"})
_NEUTRAL_FUNCS = frozenset({"len", "bool", "id", "print", "repr", "str", "isinstance"})
_GATHERS = frozenset({"asyncio.gather", "tqdm.asyncio.tqdm.gather", "tqdm.asyncio.tqdm_asyncio.gather"})
#: ``asyncio.wait``: it waits for the tasks and returns ``(done, pending)`` without retrieving an
#: exception for the caller; what observes is what the code then does with the done set.
_WAITS = frozenset({"asyncio.wait", "asyncio.tasks.wait"})
#: builtins that copy a collection of tasks into another one (``asyncio.wait(list(d.values()))``):
#: the copy holds the same tasks, so it is followed as the collection itself.
_COPIES = frozenset({"list", "set", "tuple", "frozenset", "sorted"})
#: ``asyncio.wait``'s ``return_when`` values that wait for every task or for a failure (not a race)
_NOT_A_RACE = ("ALL_COMPLETED", "FIRST_EXCEPTION")

OBSERVED = "observed"
UNOBSERVED = "unobserved"
REFERENCE_ONLY = "reference-only"
LOG_ONLY = "log-only"  # a done callback retrieves the exception and only writes it into a log

#: Calls that only write what they are given into a log (the last part of the called name;
#: for a method, the receiver's name holds "log": ``logger``, ``self._log``, ``logging``).
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "fatal", "log"})
_LOG_FUNCS = frozenset({"print", "log", "warnings.warn", "traceback.print_exception", "traceback.print_exc",
                        "traceback.print_tb"})
#: Calls that turn a value into text: what they return is followed further.
_TEXT_FUNCS = frozenset({"str", "repr", "format", "type", "traceback.format_exception", "traceback.format_exc",
                         "traceback.format_tb", "getattr"})

Mode = str  # "task" (the node is a task) or "collection" (the node holds tasks)


class _Flow:
    """What SHD102 decides, on either tree (the libcst rule and ``_Ast``): whether a spawn is
    judged, the verdict of stored values (names, ``self`` attributes, subscripts), the cut of a
    revisited holder (``_seen``), the messages and the fix's presence, applicability and message.
    The tree's answers are each class's own: ``_follow`` and what it reads (``_as_argument``,
    ``_wait_result``, ``_method_use``, ``_iterated``...), ``_is_store``/``_unpacked_store``,
    ``_uses(region, value)`` (libcst's ``Name`` nodes spelled ``value``, in source order),
    ``_attribute_uses_of``, ``_name``/``_attr``/``_on_self``/``_subscript_value``/``_callee``,
    ``_text`` (libcst's code of a node), ``_own_errors``, ``_records_failures``, ``_report_spawn``."""

    def _judge_spawn(self, node, first) -> None:
        """``node`` is a spawn whose first argument is ``first``: report it unless its task's
        outcome is observed (``_follow``) or nothing can escape its coroutine."""
        if self._own_errors(node, first):
            return  # nothing can escape the coroutine: no exception to lose (a dropped one is SHD106's)
        target = self.facts.coroutine_target(first, node)
        other, why = self._coroutine_elsewhere(first, node) if target is None else (None, "")
        if other is not None and other.info["async"] and other.info["swallows"]:
            return  # the same, for a coroutine function in another module (project index)
        self._seen: set = set()
        self._lost_in_gather = False
        self._lost_in_wait = False
        verdict, where = self._follow(node, "task")
        if verdict == OBSERVED:
            return
        if (self._lost_in_gather or self._lost_in_wait) and target is not None and self._records_failures(target):
            return  # the coroutine keeps its own failures (`except BaseException as e: failure = e`)
        log_only = verdict == LOG_ONLY
        if verdict == REFERENCE_ONLY:
            if not self.config["flag-reference-only"]:
                return
            message = (f"task kept in `{where}` whose done callback only discards it: an exception it "
                       "raises is never looked at and the program goes on")
        elif log_only:
            message = (f"the task's exception is only written into a log by its done callback `{where}`: it is "
                       "not stored, forwarded, set on a future or re-raised, so the program goes on and code "
                       "waiting for this task's output waits forever")
        elif self._lost_in_gather:
            message = (f"task{'' if where is None else f' stored in `{where}`'} is awaited only through "
                       "`gather(..., return_exceptions=True)` whose results are discarded: an exception it "
                       "raises is lost and the program goes on")
        elif self._lost_in_wait:
            message = (f"task{'' if where is None else f' stored in `{where}`'} is awaited only through "
                       "`asyncio.wait`, whose done set is never asked for results (`.result()`, "
                       "`.exception()`, `await`, `gather(*done)`): `wait` does not raise a task's exception, "
                       "so it is lost and the program goes on")
        elif where is None:
            message = ("task is discarded: an exception it raises is lost and the program goes on "
                       "(and the loop holds only a weak reference to it)")
        else:
            message = (f"task stored in `{where}` is never awaited or checked: an exception it raises "
                       "is lost and the program goes on")
        self._report_spawn(node, message + why, log_only)

    def _coroutine_elsewhere(self, arg, at):
        """(function in another module that makes the task's coroutine, message suffix)."""
        callee = self._callee(arg)
        if callee is None:
            return None, ""
        other = self.facts.resolve_elsewhere(callee, at)
        if other is None or not other.info["async"]:
            return other, ""
        info = other.info
        if info["broad"] and info["finally_raises"]:
            return other, (f" (`{other.qualname}` at {other.where()} catches every exception, but its "
                           f"`finally` raises at {other.where(info['finally_raises'])})")
        return other, ""

    def _method_use(self, attr, mode: Mode) -> tuple[str, Optional[str]]:
        call, name = self._method_call(attr)
        if call is None:
            # `tasks.discard` handed over as a callback still only forgets tasks
            neutral = _COLLECTION_MUTATORS if mode == "collection" else _NEUTRAL_TASK_METHODS
            return (UNOBSERVED, None) if name in neutral else (OBSERVED, None)
        if mode == "task":
            if name == "add_done_callback":
                first = self._first(call)
                if first is not None and self._forgets(first):
                    return REFERENCE_ONLY, self._holder_text(first)
                if first is not None and self._callback_only_logs(first, call):
                    return LOG_ONLY, self._text(first)
                return OBSERVED, None
            if name in _OBSERVING_METHODS:
                return OBSERVED, None
            if name in _NEUTRAL_TASK_METHODS:
                return UNOBSERVED, None
            return OBSERVED, None
        if name in _COLLECTION_MUTATORS:
            return UNOBSERVED, None
        if name in _ELEMENT_GETTERS:
            if self._done_callback_body(call):
                return UNOBSERVED, None  # `add_done_callback(lambda _: tasks.pop(k, None))`: dropped
            return self._follow(call, "task")
        if name in _VIEW_GETTERS:
            return self._follow(call, "collection")
        return OBSERVED, None

    # ------------------------------------------------------------------ stored values
    def _stored(self, targets: list, mode: Mode) -> tuple[str, Optional[str]]:
        verdict: Optional[tuple[str, Optional[str]]] = None
        for t in targets:
            if self._name(t) is not None:
                v = self._name_uses(t, mode)
            elif self._attr(t) is not None:
                v = self._attribute_uses(t, mode)
            elif self._subscript_value(t) is not None:
                v = self._follow_collection(self._subscript_value(t))
            else:
                v = (OBSERVED, None)
            verdict = v if verdict is None else _best(verdict, v)
        return verdict or (OBSERVED, None)

    def _follow_collection(self, holder) -> tuple[str, Optional[str]]:
        if self._name(holder) is not None:
            return self._name_uses(holder, "collection")
        if self._attr(holder) is not None:
            return self._attribute_uses(holder, "collection")
        return OBSERVED, None

    def _name_uses(self, name, mode: Mode, unpacked: bool = False) -> tuple[str, Optional[str]]:
        """The verdict of the loads of ``name`` where it is bound. ``unpacked``: also leave out the
        names that are targets inside a tuple or list target (``done, pending = ...``), which
        ``_follow`` would otherwise read as an unmodelled use."""
        value = self._name(name)
        key = ("name", value, mode, id(self.facts.scope_of(name)))
        if key in self._seen:
            return UNOBSERVED, value
        self._seen.add(key)
        # search where the name is bound: a module-level set used in a function is global
        b = self.facts.lookup(value, self.facts.scope_of(name))
        fn = self.facts.enclosing_function(name)
        if b is not None:
            region = b.scope.node if b.scope is not None else self.facts.module
        else:
            region = fn.node if fn is not None else self.facts.module
        uses = [n for n in self._uses(region, value) if not self._is_store(n)
                and not (unpacked and self._unpacked_store(n))]
        return self._uses_verdict(uses, mode, value)

    def _attribute_uses(self, attr, mode: Mode) -> tuple[str, Optional[str]]:
        label = self._text(attr)
        name = self._attr(attr)
        key = ("attr", name, mode)
        if key in self._seen:
            return UNOBSERVED, label
        self._seen.add(key)
        if not self._on_self(attr):
            return OBSERVED, None  # someone else's attribute: we cannot see its users
        uses = [n for n in self._attribute_uses_of(name) if not self._is_store(n)]
        return self._uses_verdict(uses, mode, label)

    def _uses_verdict(self, uses: list, mode: Mode, label: str) -> tuple[str, Optional[str]]:
        verdict: tuple[str, Optional[str]] = (UNOBSERVED, label)
        for use in uses:
            v = self._follow(use, mode)
            if v[0] in (REFERENCE_ONLY, LOG_ONLY):
                verdict = _best(verdict, (v[0], v[1] or label))
            elif v[0] == OBSERVED:
                return v
        return verdict


def _fix_choice(policy: str, log_only: bool) -> tuple[Optional[bool], str]:
    """(safe: True/False, None for no fix; the fix's message). Only "log" leaves the program's
    behaviour alone; the other policies end it when a task fails. A log-only callback under
    "log" gets none: ``supervise(on_error="log")`` would log it a second time and change nothing else."""
    if log_only and policy == "log":
        return None, ""
    return policy == "log", f'Wrap in `runtime_guard.supervise(..., on_error="{policy}")`'


# ------------------------------------------------------------------ detection on ast
_ELTS = (ast.List, ast.Tuple, ast.Set)
_ELT_COMPS = (ast.ListComp, ast.SetComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.comprehension)
_TESTS = (ast.Compare, ast.BoolOp, ast.UnaryOp, ast.If, ast.While)
_AST_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SIMPLE_BOOKKEEPING = (ast.Pass, ast.Assert, ast.Continue, ast.Break, ast.Assign, ast.AnnAssign, ast.AugAssign,
                       ast.Nonlocal, ast.Global)


class _Ident:
    """An identifier that libcst holds in a ``Name`` (a dotted import's later parts: in an
    ``Attribute``) and ``ast`` in a plain string. ``kind``: "param" (libcst's parent is a
    ``Param``), "keyword" (an ``Arg``: ``owner`` is the ``ast.keyword``), "dotted" (an import's
    name: ``after`` is the next part, libcst's parent ``Attribute``, None at its end) or "other"
    (a def's, class's, ``as``'s, ``except ... as``'s, ``global``'s, pattern's name). ``owner``:
    the ``ast`` node holding it (for regions); ``pos``: where it sorts among the names."""

    __slots__ = ("kind", "owner", "after", "pos")

    def __init__(self, kind: str, owner: ast.AST, after: Optional[str] = None) -> None:
        self.kind, self.owner, self.after = kind, owner, after
        self.pos = (getattr(owner, "lineno", 0), getattr(owner, "col_offset", 0))


def _identifiers(module: ast.Module) -> tuple[dict, dict]:
    """(value -> ``_Ident`` in libcst's ``Name`` nodes, attribute -> ``_Ident`` in its
    ``Attribute`` nodes) for the identifiers ``ast`` holds as strings."""
    names: dict = {}
    attrs: dict = {}

    def add(value: str, ident: _Ident) -> None:
        names.setdefault(value, []).append(ident)

    def dotted(text: str, owner: ast.AST) -> None:
        parts = text.split(".")
        for i, part in enumerate(parts):
            ident = _Ident("dotted", owner, parts[i + 1] if i + 1 < len(parts) else None)
            (attrs if i else names).setdefault(part, []).append(ident)

    for n in ast.walk(module):
        t = type(n)
        if t in _AST_DEFS or t is ast.ClassDef:
            add(n.name, _Ident("other", n))
        elif t is ast.arg:
            add(n.arg, _Ident("param", n))
        elif t is ast.keyword:
            if n.arg:
                add(n.arg, _Ident("keyword", n))
        elif t is ast.alias:
            if n.name != "*":
                dotted(n.name, n)
            if n.asname:
                add(n.asname, _Ident("other", n))
        elif t is ast.ImportFrom:
            if n.module:
                dotted(n.module, n)
        elif t is ast.ExceptHandler:
            if n.name:
                add(n.name, _Ident("other", n))
        elif t in (ast.Global, ast.Nonlocal):
            for name in n.names:
                add(name, _Ident("other", n))
        elif t.__name__ in ("MatchAs", "MatchStar"):
            if n.name:
                add(n.name, _Ident("other", n))
        elif t.__name__ == "MatchMapping":
            if n.rest:
                add(n.rest, _Ident("other", n))
        elif t.__name__ == "MatchClass":
            for name in n.kwd_attrs:
                add(name, _Ident("other", n))
    return names, attrs


def _merged(nodes: list, extra: list) -> list:
    """``nodes`` (source order) with ``extra`` placed by position, ``nodes``' order kept."""
    if not extra:
        return nodes
    extra = sorted(extra, key=lambda i: i.pos)
    out: list = []
    j = 0
    for n in nodes:
        while j < len(extra) and extra[j].pos < (n.lineno, n.col_offset):
            out.append(extra[j])
            j += 1
        out.append(n)
    out.extend(extra[j:])
    return out


class _Ast(_Flow, AstCheck):
    """SHD102 on ``ast`` (``ast_engine``): the same decisions (``_Flow``), the tree's answers
    read from ``ast`` as libcst's: every identifier libcst holds in a ``Name`` (``_Ident``:
    parameters, keyword arguments, defs, imports with their dotted parts, ``except ... as``,
    ``global``, patterns), libcst's ``Arg`` (a positional argument, ``*a``, a keyword's value),
    ``Element`` (an item of a list, tuple or set display; ``del a, b``'s targets), ``Param``
    defaults, ``CompFor`` regions (an inner ``for`` holds the outer ones, not the element),
    bodies on their header's line (no statements for libcst's tests), code text with the
    parentheses a node owns, the exit paths of ``ast_engine.exit_paths``."""

    def visit_Call(self, node: ast.Call) -> None:
        if (node.args or node.keywords) and self._spawn(node):
            self._judge_spawn(node, first_argument(node))

    # ------------------------------------------------------------------ reads
    def _spawn(self, node: ast.Call) -> bool:
        """``is_task_spawn``."""
        qn = self.facts.call_name(node)
        if qn in _SPAWNERS:
            return True
        f = node.func
        if qn is None and type(f) is ast.Attribute and f.attr == "create_task":
            return _last_name(f.value) in _LOOP_NAMES
        return False

    def _own_errors(self, node: ast.Call, first) -> bool:
        """``handles_own_errors``."""
        target = self.facts.coroutine_target(first, node)
        return target is not None and target.is_async and (self._swallows(target.node.body)
                                                           or self._only_waits(target.node.body))

    @staticmethod
    def _callee(expr: ast.AST) -> Optional[ast.AST]:
        return expr.func if type(expr) is ast.Call else None

    @staticmethod
    def _name(node) -> Optional[str]:
        return node.id if type(node) is ast.Name else None

    @staticmethod
    def _attr(node) -> Optional[str]:
        return node.attr if type(node) is ast.Attribute else None

    @staticmethod
    def _on_self(attr: ast.Attribute) -> bool:
        return type(attr.value) is ast.Name and attr.value.id in ("self", "cls")

    @staticmethod
    def _subscript_value(node) -> Optional[ast.AST]:
        return node.value if type(node) is ast.Subscript else None

    def _text(self, node: ast.AST) -> str:
        return self.facts.code_for_node(node)

    def _idents(self) -> tuple[dict, dict]:
        found = self.__dict__.get("_ident_index")
        if found is None:
            found = self._ident_index = _identifiers(self.facts.module)
        return found

    def _uses(self, region, value: str) -> list:
        """libcst's ``name_nodes(region, value)``: ``region`` a node, or a list of nodes (a body)."""
        facts = self.facts
        if isinstance(region, list):
            nodes = [n for n in facts._names_by_value.get(value, ()) if any(facts._within(r, n) for r in region)]
            extra = [i for i in self._idents()[0].get(value, ()) if any(facts._within(r, i.owner) for r in region)]
        else:
            nodes = facts.name_nodes(region, value)
            extra = [i for i in self._idents()[0].get(value, ()) if facts._within(region, i.owner)]
        return _merged(nodes, extra)

    def _attribute_uses_of(self, attr: str) -> list:
        return _merged(self.facts.attribute_nodes(self.facts.module, attr), list(self._idents()[1].get(attr, ())))

    def _report_spawn(self, node: ast.Call, message: str, log_only: bool) -> None:
        safe, fix_message = _fix_choice(self.config["on-error"], log_only)
        fix = None if safe is None else FixPlan(Applicability.SAFE if safe else Applicability.UNSAFE, fix_message)
        self.report(node, message, fix=fix)

    def _argument_of(self, expr, parent) -> Optional[tuple[ast.AST, bool]]:
        """``expr`` is the value of a libcst ``Arg``: (its call, or the class it is a base or keyword
        of; whether it is the call's first argument, positional and not starred), else None."""
        t = type(parent)
        if t is ast.Call:
            if parent.func is expr:
                return None
            return parent, bool(parent.args) and parent.args[0] is expr
        if t is ast.keyword:
            return self.facts.parent(parent), False
        if t is ast.Starred:
            outer = self.facts.parent(parent)
            if type(outer) is ast.Call and any(a is parent for a in outer.args):
                return outer, False
            return None
        if t is ast.ClassDef and any(b is expr for b in parent.bases):
            return parent, False
        return None

    # ------------------------------------------------------------------ flow
    def _follow(self, expr, mode: Mode) -> tuple[str, Optional[str]]:
        """Where does the value of ``expr`` (a task, or a collection of tasks) go?"""
        if type(expr) is _Ident:
            if expr.kind == "keyword":
                call = self.facts.parent(expr.owner)
                return self._as_argument(call, False, mode) if type(call) is ast.Call else (OBSERVED, None)
            if expr.kind == "dotted" and expr.after is not None:  # ``a.<after>`` of an import: not called
                neutral = _COLLECTION_MUTATORS if mode == "collection" else _NEUTRAL_TASK_METHODS
                return (UNOBSERVED, None) if expr.after in neutral else (OBSERVED, None)
            return OBSERVED, None
        facts = self.facts
        parent = facts.parent(expr)
        t = type(parent)
        if t in (ast.Await, ast.Return, ast.Yield, ast.Lambda):
            return OBSERVED, None
        if t is ast.Expr:
            return UNOBSERVED, None
        arg = self._argument_of(expr, parent)
        if arg is not None:
            return self._as_argument(arg[0], arg[1], mode) if type(arg[0]) is ast.Call else (OBSERVED, None)
        if t is ast.Assign and parent.value is expr:
            return self._stored(list(parent.targets), mode)
        if t is ast.AnnAssign and parent.value is expr:
            return self._stored([parent.target], mode)
        if t is ast.NamedExpr and parent.value is expr:
            return _best(self._stored([parent.target], mode), self._follow(parent, mode))
        if t is ast.Attribute and parent.value is expr:
            return self._method_use(parent, mode)
        if t in _ELTS:
            return self._follow(parent, "collection")
        if t is ast.Starred:
            literal = facts.parent(parent)
            return self._follow(literal, "collection") if type(literal) in _ELTS else (OBSERVED, None)
        if t in _ELT_COMPS and parent.elt is expr:
            return self._follow(parent, "collection")
        if t is ast.Dict:
            for k, v in zip(parent.keys, parent.values):
                if v is expr:
                    return self._follow(parent, "collection") if k is not None else (OBSERVED, None)
        if t is ast.DictComp and parent.value is expr:
            return self._follow(parent, "collection")
        if t is ast.IfExp and expr is not parent.test:
            return self._follow(parent, mode)
        if t in _TESTS:
            return UNOBSERVED, None  # a test, not a use of the outcome
        if t is ast.Subscript and parent.value is expr and mode == "collection":
            if self._is_store(parent):
                return UNOBSERVED, None  # `holder[k] = ...`, `del holder[k]`: an entry put or dropped
            return self._follow(parent, "task")
        if t in _LOOPS and parent.iter is expr:
            return self._iterated(parent, mode)
        if t is ast.arguments:
            # `async def watch(tasks=generator_tasks)`: what the function does with the parameter
            name = _defaulted(parent, expr)
            fn_node = facts.parent(parent)
            if name is not None and type(fn_node) in _AST_DEFS:
                uses = [n for n in self._uses(fn_node.body, name) if not self._is_store(n)]
                return self._uses_verdict(uses, mode, name)
        return OBSERVED, None  # anything we do not model: assume the code knows

    def _as_argument(self, call: ast.Call, first_plain: bool, mode: Mode) -> tuple[str, Optional[str]]:
        f = call.func
        if type(f) is ast.Attribute:
            method = f.attr
            if method in ("discard", "remove"):
                return UNOBSERVED, None
            if method in _ADDERS or (method == "extend" and mode == "collection"):
                return self._follow_collection(f.value)
        if type(f) is ast.Name and f.id in _NEUTRAL_FUNCS:
            return UNOBSERVED, None
        if (mode == "collection" and type(f) is ast.Name and f.id in _COPIES and first_plain
                and self._waited_on(call) and self.facts.lookup(f.id, self.facts.scope_of(call)) is None):
            return self._follow(call, "collection")  # ``asyncio.wait(list(tasks))``: the same tasks
        if self._discarding_gather(call):
            self._lost_in_gather = True
            return UNOBSERVED, None
        if self.facts.call_name(call) in _WAITS:
            verdict = self._wait_result(call)
            if verdict[0] == UNOBSERVED:
                self._lost_in_wait = True
            return verdict
        return OBSERVED, None  # gather/shield/supervise or another function: handed over

    def _waited_on(self, copy: ast.Call) -> bool:
        outer = self.facts.parent(copy)
        return (type(outer) is ast.Call and any(a is copy for a in outer.args)
                and self.facts.call_name(outer) in _WAITS)

    def _wait_result(self, call: ast.Call) -> tuple[str, Optional[str]]:
        """``_wait_result`` on ``ast``."""
        for k in call.keywords:
            if k.arg == "return_when" and self._text(k.value).rsplit(".", 1)[-1] not in _NOT_A_RACE:
                return OBSERVED, None
        facts = self.facts
        node: ast.AST = call
        parent = facts.parent(node)
        if type(parent) is ast.Await:
            node, parent = parent, facts.parent(parent)
        else:
            arg = self._argument_of(node, parent)
            if arg is not None:
                outer = arg[0]
                if not (type(outer) is ast.Call and type(outer.func) is ast.Attribute
                        and outer.func.attr == "run_until_complete" and first_argument(outer) is node):
                    return OBSERVED, None
                node, parent = outer, facts.parent(outer)
        if type(parent) is ast.Expr:
            return UNOBSERVED, None
        if not (type(parent) is ast.Assign and len(parent.targets) == 1 and parent.value is node):
            return OBSERVED, None
        target = parent.targets[0]
        if type(target) in (ast.Tuple, ast.List) and target.elts:  # ``*done, p``: not a name
            target = target.elts[0]
            mode = "collection"
        elif type(target) is ast.Name:
            mode = ""
        else:
            return OBSERVED, None
        if type(target) is not ast.Name:
            return OBSERVED, None
        if target.id == "_":
            return UNOBSERVED, None
        if not mode:
            fn = facts.enclosing_function(call)
            region = fn.node if fn is not None else facts.module
            read = [n for n in self._uses(region, target.id) if n is not target and not self._is_store(n)]
            return (OBSERVED, None) if read else (UNOBSERVED, None)
        verdict = self._name_uses(target, mode, unpacked=True)
        return (UNOBSERVED, None) if verdict[0] == UNOBSERVED else verdict

    def _discarding_gather(self, call: ast.Call) -> bool:
        facts = self.facts
        if facts.call_name(call) not in _GATHERS or not any(
            k.arg == "return_exceptions" and type(k.value) is ast.Constant and k.value.value is True
            for k in call.keywords
        ):
            return False
        node: ast.AST = call
        parent = facts.parent(node)
        if type(parent) is ast.Await:
            node, parent = parent, facts.parent(parent)
        if type(parent) is ast.Expr:
            return True
        if type(parent) is ast.Assign and len(parent.targets) == 1 and type(parent.targets[0]) is ast.Name:
            name = parent.targets[0]
            if name.id == "_":
                return True
            fn = facts.enclosing_function(call)
            region = fn.node if fn is not None else facts.module
            return not [n for n in self._uses(region, name.id) if n is not name and not self._is_store(n)]
        return False

    def _method_call(self, attr: ast.Attribute) -> tuple[Optional[ast.Call], str]:
        call = self.facts.parent(attr)
        return (call if type(call) is ast.Call and call.func is attr else None), attr.attr

    @staticmethod
    def _first(call: ast.Call) -> Optional[ast.AST]:
        return first_argument(call)

    @staticmethod
    def _forgets(callback: ast.AST) -> bool:
        return _only_forgets_ast(callback)

    def _holder_text(self, callback: ast.AST) -> str:
        if type(callback) is ast.Lambda and type(callback.body) is ast.Call:
            callback = callback.body.func
        return self._text(callback.value) if type(callback) is ast.Attribute else self._text(callback)

    def _done_callback_body(self, expr: ast.AST) -> bool:
        lam = self.facts.parent(expr)
        if not (type(lam) is ast.Lambda and lam.body is expr):
            return False
        arg = self._argument_of(lam, self.facts.parent(lam))
        call = arg[0] if arg is not None else None
        return (type(call) is ast.Call and type(call.func) is ast.Attribute
                and call.func.attr == "add_done_callback" and first_argument(call) is lam)

    def _iterated(self, loop, mode: Mode) -> tuple[str, Optional[str]]:
        if mode == "task":
            return OBSERVED, None
        target = loop.target
        if type(target) is ast.Tuple and target.elts:
            target = target.elts[-1]  # `for key, task in d.items()`
            if type(target) is ast.Starred:
                target = target.value
        if type(target) is not ast.Name:
            return OBSERVED, None
        region = loop
        if type(loop) is ast.comprehension:
            comp = self.facts.parent(loop)
            i = next(k for k, g in enumerate(comp.generators) if g is loop)
            # libcst: the first ``for`` is the comprehension's; an inner one is held by the ``for``
            # before it (which holds the later ones, not the element)
            region = comp if i == 0 else list(comp.generators[i - 1:])
        uses = [n for n in self._uses(region, target.id) if n is not target]
        return self._uses_verdict(uses, "task", target.id)

    def _is_store(self, node) -> bool:
        if type(node) is _Ident:
            return False
        parent = self.facts.parent(node)
        t = type(parent)
        if t is ast.Assign:
            return any(x is node for x in parent.targets)
        if t in (ast.AnnAssign, ast.AugAssign, ast.NamedExpr, ast.For, ast.AsyncFor, ast.comprehension):
            return parent.target is node
        if t is ast.Delete:
            return len(parent.targets) == 1  # ``del a, b``: libcst's targets are a tuple's elements
        return False

    def _unpacked_store(self, node) -> bool:
        if type(node) is _Ident:
            return False
        facts = self.facts
        parent = facts.parent(node)
        while True:
            if type(parent) in _ELTS:
                literal = parent
            elif type(parent) is ast.Starred and type(facts.parent(parent)) in _ELTS:
                literal = facts.parent(parent)
            elif type(parent) is ast.Delete and len(parent.targets) > 1:
                return True  # libcst: an element of the tuple ``del`` takes
            else:
                break
            if type(literal) not in (ast.Tuple, ast.List):
                return False
            node, parent = literal, facts.parent(literal)
        return type(node) in (ast.Tuple, ast.List) and self._is_store(node)

    # ------------------------------------------------------------------ done callbacks
    def _callback_only_logs(self, cb: ast.AST, at: ast.Call) -> bool:
        if type(cb) is ast.Lambda:
            params = cb.args.args
            body = cb.body
        else:
            if type(cb) is ast.Call:
                return False
            fn = self.facts.resolve_function(cb, at)
            if fn is None:
                return False
            params = list(fn.node.args.args)
            if fn.cls is not None and params and params[0].arg in ("self", "cls"):
                params = params[1:]
            body = fn.node.body
        if not params:
            return False
        task = params[0].arg
        retrieved = False
        for use in self._uses(body, task):
            if type(use) is _Ident:
                if use.kind == "param":
                    continue
                if use.kind == "keyword" and self._only_logged(use, body):
                    continue
                return False
            parent = self.facts.parent(use)
            if type(parent) is ast.Attribute and parent.value is use:
                method = parent.attr
                call = self.facts.parent(parent)
                if not (type(call) is ast.Call and call.func is parent):
                    return False  # `t.result` handed over
                if method in ("exception", "result"):
                    retrieved = True
                    if self._kept(call, body):
                        return False
                    continue
                if method in _NEUTRAL_TASK_METHODS:
                    continue
                return False
            if self._only_logged(use, body):
                continue
            return False  # the task itself handed to a call, stored, returned
        return retrieved and not self._acts(body, task)

    def _is_log_call(self, call: ast.Call) -> bool:
        name = (self.facts.call_name(call) or self._text(call.func)).removeprefix("builtins.")
        if name in _LOG_FUNCS:
            return True
        f = call.func
        return type(f) is ast.Attribute and f.attr in _LOG_METHODS and "log" in self._text(f.value).lower()

    def _only_logged(self, expr, region) -> bool:
        """``_only_logged`` on ``ast``."""
        facts = self.facts
        node = expr
        while True:
            if type(node) is _Ident:
                if node.kind != "keyword":
                    return False
                arg: Optional[tuple] = (facts.parent(node.owner), False)
                parent = None
            else:
                parent = facts.parent(node)
                t = type(parent)
                if t is ast.JoinedStr and type(facts.parent(parent)) is not ast.FormattedValue \
                        and self._string(parent):
                    return False  # ``"a" f"{x}"``: libcst's ``ConcatenatedString``, not climbed
                if t in (ast.FormattedValue, ast.JoinedStr, ast.BinOp, ast.Tuple, ast.List):
                    node = parent
                    continue
                if t is ast.Dict:
                    if any(v is node and k is None for k, v in zip(parent.keys, parent.values)):
                        return False  # ``{**x}``
                    node = parent
                    continue
                arg = self._argument_of(node, parent)
            if arg is not None:
                call = arg[0]
                if type(call) is ast.Call:
                    if self._is_log_call(call):
                        return True
                    if (facts.call_name(call) or self._text(call.func)).removeprefix("builtins.") in _TEXT_FUNCS:
                        node = call
                        continue
                return False
            if type(parent) in (ast.If, ast.While, ast.IfExp, ast.Compare, ast.BoolOp, ast.UnaryOp):
                return True
            return False

    def _acts(self, body, task: str) -> bool:
        for n in _walk_all(body):
            t = type(n)
            if t is ast.Raise:
                return True
            if t is not ast.Call:
                continue
            if self._is_log_call(n):
                continue
            name = (self.facts.call_name(n) or self._text(n.func)).removeprefix("builtins.")
            if name in _TEXT_FUNCS or name in ("isinstance", "len", "bool"):
                continue
            f = n.func
            if type(f) is ast.Attribute and type(f.value) is ast.Name and f.value.id == task \
                    and f.attr in ("exception", "result", *_NEUTRAL_TASK_METHODS):
                continue
            return True
        return False

    def _kept(self, expr, region) -> bool:
        if self._only_logged(expr, region):
            return False
        if type(expr) is _Ident:
            return True
        parent = self.facts.parent(expr)
        if type(parent) is ast.Assign and parent.value is expr:
            for t in parent.targets:
                if type(t) is not ast.Name:
                    return True  # self.error = e, errors[k] = e
                uses = [n for n in self._uses(region, t.id) if n is not t and not self._assign_target(n)]
                if any(self._kept(n, region) for n in uses):
                    return True
            return False
        if type(parent) is ast.NamedExpr and parent.value is expr:
            target = parent.target
            if type(target) is not ast.Name:
                return True
            uses = [n for n in self._uses(region, target.id) if n is not target]
            return any(self._kept(n, region) for n in uses) or self._kept(parent, region)
        return True  # raised, returned, handed to a call, a bare `t.result()`: kept

    def _assign_target(self, node) -> bool:
        """libcst's parent of ``node`` is an ``AssignTarget``."""
        if type(node) is _Ident:
            return False
        parent = self.facts.parent(node)
        return type(parent) is ast.Assign and any(x is node for x in parent.targets)

    def _records_failures(self, fn) -> bool:
        facts = self.facts
        exits = exit_paths_of(facts)
        found = False
        for h in _walk_all(fn.node.body):
            if type(h) is not ast.ExceptHandler or type(facts.parent(h)) is not ast.Try:
                continue  # ``except*``: libcst's ExceptStarHandler
            names = facts.caught_types(h)
            broad = names is None or any(
                facts.qualified_name(n, h) in ("builtins.Exception", "builtins.BaseException") for n in names)
            if broad and exits.exit_paths(h).hands_on:
                found = True
        return found

    # ------------------------------------------------------------------ the coroutine's own handling
    def _block(self, stmts: list) -> list:
        """The statements libcst's tests read of a body: none when it is written on its header's
        line (a ``SimpleStatementSuite``)."""
        return [] if stmts and self.facts._on_header_line(stmts[0]) else stmts

    def _swallows(self, stmts: list) -> bool:
        """``_swallows_errors``."""
        guarded = False
        for st in self._block(stmts):
            t = type(st)
            if t is ast.Try:
                broad = [h for h in st.handlers
                         if h.type is None or self._text(h.type).split(".")[-1] in _BROAD_HANDLERS]
                if not broad or any(_raises_ast(h.body) for h in broad) or st.orelse:
                    return False
                if st.finalbody and _raises_ast(st.finalbody):
                    return False  # what the finally raises escapes the task
                guarded = True
            elif t in (ast.While, ast.For, ast.AsyncFor) and not st.orelse:
                if not self._swallows(st.body):
                    return False
                guarded = True
            elif not self._bookkeeping(st):
                return False
        return guarded

    def _bookkeeping(self, st: ast.stmt) -> bool:
        t = type(st)
        if t is ast.If:
            for block in (st.body, st.orelse):
                if block and (self.facts._on_header_line(block[0]) or not all(self._bookkeeping(s) for s in block)):
                    return False
            return True
        if t in _SIMPLE_BOOKKEEPING:
            return True
        if t is not ast.Expr:
            return False
        v = st.value
        if self._string(v):
            return True
        return type(v) is ast.Await and type(v.value) is ast.Call and self._text(v.value.func).endswith("sleep")

    def _only_waits(self, stmts: list) -> bool:
        """``_only_waits``."""
        stmts = self._block(stmts)
        if not stmts:
            return False
        for st in stmts:
            if type(st) is ast.Pass:
                continue
            if type(st) is not ast.Expr:
                return False
            v = st.value
            if self._string(v):
                continue
            if type(v) is ast.Await and type(v.value) is ast.Call:
                call = v.value
                name = self._text(call.func)
                if name.endswith("sleep") or (name.endswith("gather") and any(
                        k.arg == "return_exceptions" and self._text(k.value) == "True" for k in call.keywords)):
                    continue
                return False
            if type(v) is ast.Call and type(v.func) is ast.Attribute and v.func.attr == "set" \
                    and not (v.args or v.keywords):
                continue
            return False
        return True

    def _string(self, v: ast.AST) -> bool:
        """libcst's ``SimpleString``/``ConcatenatedString``: a string or bytes literal, or an
        f-string written next to another string (one f-string alone is a ``FormattedString``)."""
        if type(v) is ast.Constant:
            return type(v.value) in (str, bytes)
        if type(v) is not ast.JoinedStr:
            return False
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO("(" + self.facts.segment(v) + ")").readline))
        except (tokenize.TokenError, SyntaxError):
            return False
        return sum(tok.type == tokenize.STRING for tok in tokens) > 1


def _defaulted(arguments: ast.arguments, expr: ast.AST) -> Optional[str]:
    """The name of the parameter whose default is ``expr``."""
    positional = [*arguments.posonlyargs, *arguments.args]
    for a, d in zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults):
        if d is expr:
            return a.arg
    for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults):
        if d is expr:
            return a.arg
    return None


def _walk_all(roots):
    """Every node under ``roots`` (a node or a list of them), ``roots`` included."""
    stack = list(roots) if isinstance(roots, list) else [roots]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(ast.iter_child_nodes(n))


def _raises_ast(stmts: list) -> bool:
    """``_raises``: a ``raise`` in ``stmts``, not in a nested ``def``."""
    stack = list(stmts)
    while stack:
        n = stack.pop()
        t = type(n)
        if t is ast.Raise:
            return True
        if t not in _AST_DEFS:
            stack.extend(ast.iter_child_nodes(n))
    return False


class UnobservedTaskException(_Flow, Rule):
    """
    ## What it does
    Flags a task made by `asyncio.create_task`, `loop.create_task` (a loop from
    `asyncio.get_running_loop()` / `get_event_loop()` / `new_event_loop()`, a `self.loop`
    attribute assigned from those, or any receiver named `loop`/`_loop`/`event_loop`) or
    `asyncio.ensure_future` whose outcome nobody looks at: the task is discarded, or it is
    kept in a name, a `self` attribute or a collection that is never awaited, passed to
    `gather`/`wait`/`wait_for`/`shield`/`as_completed`, given a done callback, or asked for
    `.result()`/`.exception()`. `TaskGroup.create_task` is never flagged.

    A coroutine function in another module of the project (the project index) is judged
    like a local one: if it catches every exception and nothing escapes, its task is not
    flagged; if it catches everything except what its `finally` raises, the message names
    the file and both lines.

    The search covers the function that makes the task (or the module), and for `self.x`
    attributes every use of `.x` in the module. A task (or its collection) handed to any
    other call, returned or yielded counts as observed: the receiver is responsible.
    `.cancel()`, `.done()` and `len()` do not observe.

    Awaiting is not observing when the only await is `gather(..., return_exceptions=True)`
    whose result list is discarded (a bare `await gather(...)` statement, or a name nobody
    reads): the exceptions are collected into the list and dropped with it (the SkyRL #1691
    trainer: generation workers gathered this way after `cancel()` at the end of an epoch).
    Tasks handed to a function as a parameter default (`async def watch(tasks=workers)`) are
    followed into that function.

    Nor is `asyncio.wait` observing by itself: it returns `(done, pending)` and never raises a
    task's exception. A task waited for only that way is flagged when the result is discarded
    (`await asyncio.wait(tasks)`, with a timeout, with `return_when=FIRST_EXCEPTION`, whose
    own look at the exception only decides when to return, so even the garbage collector's
    log line is gone; `loop.run_until_complete(asyncio.wait(tasks))`), bound to `_` or to a
    name nobody reads, or unpacked into a done set that is only counted, tested or cancelled.
    It is observed when the done set is asked (`for t in done: t.result()`, `t.exception()`,
    `await t`, `await gather(*done)`, `done.pop().result()`, the set handed to a call or
    returned), or when the task itself is (`t.result()` after the wait). A builtin copy handed
    straight to `wait` (`list(d.values())`, `set`, `tuple`, `frozenset`, `sorted`, `[*tasks]`)
    holds the same tasks and is read the same way; any other copy stays a hand-over. Measured
    (tests/behaviour/test_shd102_asyncio_wait.py): each flagged shape ends with status 0 and
    the error never reaching the program; each observing shape raises it (status 1). A
    `return_when=FIRST_COMPLETED` call still counts as observing: it is a race whose code asks
    which task won (`if get in done`), and on real code its losers are waiters: of the 6 such
    races in the corpora (ray serve, vllm, SkyRL), 5 race an `Event.wait()`, a sleep or a poll in
    a thread, which cannot fail, and one vllm's client-disconnect listener. A failed task dropped
    with the rest of such a done set is lost too: that is left unreported. Measured on the three corpora (ray/torch site-packages, the
    ray/transformers/vllm wheels, 28 RL/agent code bases): 2 new findings, both true
    (transformers' `_stream_subprocess` waits for its two pipe readers and drops the done set:
    a reader's `UnicodeDecodeError` or over-long-line error is lost and the output is cut
    short as if the child had printed nothing more).

    A done callback observes the task only when it does something with the exception: stores
    it (`self.error = t.exception()`), forwards it (`fut.set_exception(exc)`,
    `queue.put_nowait(exc)`, any call that is not a log), re-raises it, or acts (`os._exit`,
    `event.set()`, any other call). A callback of this module (function, method or lambda)
    that retrieves the exception and only writes it into a log (`log.error("failed: %s",
    t.exception())`, `print(f"...{t.exception()}")`) is flagged with its own message: the
    failure is printed, but code waiting for the task's output waits forever. No fix then
    under `on-error = "log"` (supervising would log it a second time); with `"cancel-main"` /
    `"exit"` the unsafe fix ends the run. A callback from another module or a
    `functools.partial` is not judged (observed).

    A coroutine "handles its own errors" (not flagged here, see SHD106) only when no broad
    handler and no `finally` of it raises: `try: ... except Exception: log() finally: if
    dirty: raise ...` lets the `finally`'s error escape the task, and it is flagged.
    Measured on ten RL/agent code bases and this repository's venv site-packages: neither
    change adds or drops a finding there (74 SHD102/SHD106 findings before and after); the
    one log-only callback found (verl's `on_run_headless_done`) ends the process with
    `os._exit(1)` after logging, which counts as acting.

    The asyncio docs' "keep a reference" idiom, `tasks.add(t)` plus
    `t.add_done_callback(tasks.discard)`, keeps the task alive but never looks at its
    exception: it is flagged with its own message (option `flag-reference-only`). The same
    with a dict: `tasks[k] = t` plus `t.add_done_callback(lambda _: tasks.pop(k, None))`
    (asyncio drops what a done callback returns, so the popped task is only forgotten).

    A task kept in a dict or list by subscript (`self._tasks[k] = t`) is followed through the
    holder like one added with `.append`/`.add`: putting or deleting an entry
    (`holder[k] = ...`, `del holder[k]`) does not look at a task; reading one does
    (`await holder[k]`, `.values()`/`.items()` iterated and awaited, `.pop(k)` whose task is
    awaited, `gather(*holder.values())`, the holder handed to any call or returned). Measured
    on ten RL/agent code bases, the ray/torch site-packages, the ray/transformers/vllm wheels
    and four more public agent/inference repositories: 12 such stores, one reported (ray's
    sandbox host: tasks only cancelled, popped by a done callback); 8 are observed (awaited
    through the dict or the name, or given a caller's done callback) and 3 run a coroutine
    that catches its own errors.

    ## Why is this bad?
    An exception raised in a task is stored on the task. If nobody awaits it or asks for
    it, asyncio logs "Task exception was never retrieved" only when the task object is
    garbage-collected - never, if it sits in a list - and the rest of the program goes on
    waiting for work the dead task will never do. In SkyRL a `RuntimeError` raised in a
    fire-and-forget generation loop left 128 H100 GPUs idle for five days. A discarded
    task can also be garbage-collected mid-run: the loop keeps only a weak reference.

    ## Example
    ```python
    async def train(self):
        asyncio.create_task(self._generate_loop())  # dies silently on EngineDeadError
        while True:
            batch = await self.queue.get()  # waits forever
    ```

    ## Use instead
    ```python
    import runtime_guard

    async def train(self):
        runtime_guard.supervise(asyncio.create_task(self._generate_loop()), on_error="log")
        while True:
            batch = await self.queue.get()
    ```
    `runtime_guard.supervise(task, on_error=...)` returns the task itself, keeps a strong
    reference to it until it ends and adds a done callback: when the task raises, the failure is
    logged at once with its traceback (on the `runtime_guard.supervise` logger), instead of being
    lost or reported only when the task object is garbage-collected. What happens next is the
    policy, which the fix always passes explicitly (so neither `runtime_guard.set_default_policy`
    nor `$RUNTIME_GUARD_TASK_POLICY` can change what a fixed program does):

    - `"log"` (the default of the option `on-error`): nothing more. The program goes on exactly as
      before - a server keeps serving after a failed best-effort write; a trainer that waits for
      the dead task's output still waits, but the reason is on stderr at once.
    - `"cancel-main"`: the loop's main task (the one `asyncio.run` waits for) is cancelled, so the
      program unwinds through its `finally` blocks and exits non-zero; with no main task (a loop
      run by `run_forever` in a thread) the main thread gets SIGINT, or the process exits with
      status 1; if the loop still runs 30 s later the process exits.
    - `"exit"`: `runtime_guard.hard_exit(1)` at once (no `finally` blocks run).

    Choose `on-error = "cancel-main"` for programs in which any failed background task makes the
    whole run worthless and waiting would only burn time: trainers, rollout generators, batch
    jobs (the SkyRL trainer above ends instead of idling 128 GPUs). Keep `"log"` for servers and
    anything whose background tasks are best-effort (telemetry, cache writes, notifications).

    ## Fix safety
    Safe with the default `on-error = "log"`. The hazard's path is a run in which the task
    raises and nothing the rule can see looks at the exception: there the fixed program logs
    `runtime_guard: supervised task <name> failed` with the traceback at once (and asyncio's late
    "Task exception was never retrieved" no longer appears), and does nothing else - no signal,
    no handler or hook installed, no cancellation, no exit: it goes on as before. On every other
    path (no task fails) `supervise` returns the task itself, so the expression keeps its value
    and type, and the program does exactly what it did; the strong reference only keeps a pending
    task from being garbage-collected mid-run (the hazard of SHD106). The policy is written into
    the fixed code, so `$RUNTIME_GUARD_TASK_POLICY` and `set_default_policy` cannot change it. If
    code the rule cannot see (another module) also awaits the task, a failure is logged there as
    well. The fix adds `import runtime_guard`.

    Unsafe with `on-error = "cancel-main"` or `"exit"`: a failed task then ends a program that
    used to go on (a web server whose background write fails stops serving), which is the point
    for a trainer but a change of behaviour, so the fix is only applied with `--unsafe-fixes`.

    A task whose coroutine catches and logs every `Exception` itself (nothing can be lost) is
    left to SHD106 (task-not-retained), which flags it only when no reference is kept: the two
    rules never report the same call.

    ## References
    - SkyRL #1691: process hang when the vLLM engine dies during async generation
    - Python docs: `asyncio.create_task` ("save a reference to the result of this function")
    - Python docs: asyncio "Detect never-retrieved exceptions"
    """

    code = "SHD102"
    name = "unobserved-task-exception"
    ast_check = _Ast
    summary = "A task whose exception nobody observes fails silently while the program goes on"
    triggers = ("create_task", "ensure_future")
    # tier 1: create_task (any receiver named like a loop) / ensure_future
    candidate = C.AnyOf(C.Word("create_task"), C.qualified("asyncio.ensure_future"))
    # tier 2: a spawn whose task does not go straight to an await or a call that takes it
    candidate_tree = staticmethod(lambda tree: _may_lose_a_task(tree))
    facts_needed = ("functions", "calls")
    options = {
        "on-error": Option(
            default="log", kind=str, choices=POLICIES,
            doc="The policy the fix passes to `runtime_guard.supervise(..., on_error=...)`: `\"log\"` "
                "(log the failure with its traceback and go on: a safe fix), `\"cancel-main\"` (also cancel "
                "the main task so the program unwinds and exits non-zero) or `\"exit\"` (also exit with "
                "status 1). Any policy but `\"log\"` makes the fix unsafe.",
        ),
        "flag-reference-only": Option(
            default=True, kind=bool,
            doc="Also flag tasks kept in a set whose done callback only discards them "
                "(`tasks.add(t); t.add_done_callback(tasks.discard)`).",
        ),
    }

    valid = [
        # a periodic loop that catches and logs every error cannot lose one
        """
        import asyncio
        class Replica:
            async def _report_forever(self):
                while True:
                    try:
                        await asyncio.sleep(1)
                        self.report()
                    except Exception:
                        logger.exception("report failed")
            def start(self):
                self._loop.create_task(self._report_forever())
        """,
        # awaited
        """
        import asyncio
        async def main():
            t = asyncio.create_task(work())
            await other()
            await t
        """,
        # gathered later from a collection attribute
        """
        import asyncio as aio
        class Pool:
            def start(self):
                self.tasks = []
                for i in range(4):
                    self.tasks.append(aio.create_task(self.worker(i)))
            async def join(self):
                await aio.gather(*self.tasks)
        """,
        # TaskGroup.create_task is structured
        """
        import asyncio
        async def main():
            async with asyncio.TaskGroup() as tg:
                tg.create_task(work())
        """,
        # returned: the caller observes it
        """
        from asyncio import ensure_future
        def spawn(coro):
            task = ensure_future(coro)
            return task
        """,
        # a done callback that forwards the exception to the waiting side (set on a future)
        """
        import asyncio
        async def main(loop, result):
            def on_done(t):
                if t.exception() is not None:
                    log.error("producer failed: %s", t.exception())
                    result.set_exception(t.exception())
            task = asyncio.get_running_loop().create_task(work())
            task.add_done_callback(on_done)
            await result
        """,
        # a done callback that stores the exception for the consumer
        """
        import asyncio
        class Pump:
            def start(self):
                self.task = asyncio.create_task(self.produce())
                self.task.add_done_callback(self._on_done)
            def _on_done(self, t):
                exc = t.exception()
                if exc:
                    logger.error(f"producer failed: {exc}")
                    self.error = exc
            async def produce(self):
                await self.queue.put(1)
        """,
        # a finally that cannot raise does not stop the task handling its own errors
        """
        import asyncio
        async def poll(q):
            while True:
                try:
                    await q.step()
                except Exception:
                    logger.exception("poll failed")
                finally:
                    q.mark()
        async def main(q):
            asyncio.create_task(poll(q))
        """,
        # already supervised
        """
        import asyncio, runtime_guard
        async def main():
            runtime_guard.supervise(asyncio.create_task(work()))
        """,
        # handed to another function
        """
        import asyncio
        async def main(registry):
            registry.track(asyncio.create_task(work()))
        """,
        # a dict of tasks waited on, whose done set is asked for results
        """
        import asyncio
        class Server:
            async def serve(self, key):
                self._pending[key] = asyncio.create_task(self.handle(key))
            async def drain(self):
                done, _ = await asyncio.wait(self._pending.values())
                for t in done:
                    t.result()
        """,
        # asyncio.wait then the done set gathered; FIRST_EXCEPTION then each exception looked at
        """
        import asyncio
        async def main(jobs):
            tasks = [asyncio.create_task(run(j)) for j in jobs]
            done, pending = await asyncio.wait(tasks)
            await asyncio.gather(*done)
        async def first_failure(jobs):
            tasks = [asyncio.create_task(run(j)) for j in jobs]
            done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for t in pending:
                t.cancel()
            for t in done:
                if t.exception() is not None:
                    raise t.exception()
        """,
        # a FIRST_COMPLETED race against a waiter that cannot fail
        """
        import asyncio
        async def next_item(queue, stopped):
            get = asyncio.create_task(queue.get())
            stop = asyncio.create_task(stopped.wait())
            done, pending = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
            for t in pending:
                t.cancel()
            return get.result() if get in done else None
        """,
        # gather with return_exceptions=True whose results are inspected
        """
        import asyncio
        async def main(xs):
            tasks = [asyncio.create_task(f(x)) for x in xs]
            results = await asyncio.gather(*tasks, return_exceptions=True)
            for r in results:
                if isinstance(r, Exception):
                    raise r
        """,
        # the coroutine records its failure itself; the gather only waits
        """
        import asyncio
        async def run(jobs):
            failure = None
            async def one(j):
                nonlocal failure
                try:
                    await j()
                except BaseException as exc:
                    failure = exc
            tasks = [asyncio.create_task(one(j)) for j in jobs]
            await asyncio.gather(*tasks, return_exceptions=True)
            if failure is not None:
                raise failure
        """,
        # a watcher task that only waits for others cannot fail
        """
        import asyncio
        async def main(workers, done):
            async def watch(tasks=workers):
                await asyncio.gather(*tasks, return_exceptions=True)
                done.set()
            w = asyncio.create_task(watch())
            w.cancel()
            await asyncio.gather(w, return_exceptions=True)
        """,
        # iterated and awaited
        """
        import asyncio
        async def main(xs):
            tasks = [asyncio.create_task(f(x)) for x in xs]
            for t in tasks:
                print(await t)
        """,
        # a dict of tasks: an entry popped, cancelled and awaited on shutdown
        """
        import asyncio
        class Sessions:
            def open(self, sid):
                self._events[sid] = asyncio.create_task(self.pump(sid))
            async def close(self, sid):
                task = self._events.pop(sid, None)
                if task is not None:
                    task.cancel()
                    await task
        """,
        # a local dict of tasks whose entries are awaited by key
        """
        import asyncio
        async def main(names):
            tasks = {}
            for n in names:
                tasks[n] = asyncio.get_running_loop().create_task(fetch(n))
            del tasks["skip"]
            return {n: await tasks[n] for n in names}
        """,
    ]
    invalid = [
        # the done callback only writes the exception into a log: the consumer waits forever
        Invalid(
            """
            import asyncio
            def on_done(t):
                if t.exception():
                    log.error("producer failed: %s", t.exception())
            async def main(queue):
                task = asyncio.get_running_loop().create_task(produce(queue))
                task.add_done_callback(on_done)
                await queue.get()
            """,
            fixed=None,
            message_contains="only written into a log",
        ),
        # ... also with a lambda and an f-string
        Invalid(
            """
            import asyncio
            async def main(queue):
                task = asyncio.create_task(produce(queue))
                task.add_done_callback(lambda t: print(f"producer ended: {t.exception()!r}"))
                await queue.get()
            """,
            fixed=None,
            message_contains="only written into a log",
        ),
        # ... with on-error = "cancel-main" the fix ends the run instead (unsafe)
        Invalid(
            """
            import asyncio
            def on_done(t):
                if t.exception():
                    log.error("producer failed: %s", t.exception())
            async def main(queue):
                task = asyncio.create_task(produce(queue))
                task.add_done_callback(on_done)
                await queue.get()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            def on_done(t):
                if t.exception():
                    log.error("producer failed: %s", t.exception())
            async def main(queue):
                task = runtime_guard.supervise(asyncio.create_task(produce(queue)), on_error="cancel-main")
                task.add_done_callback(on_done)
                await queue.get()
            """,
            options={"on-error": "cancel-main"},
        ),
        # the task catches every Exception, but its finally raises: that error is lost
        Invalid(
            """
            import asyncio
            async def drain(queue):
                try:
                    await queue.run()
                except Exception:
                    logger.exception("drain failed")
                finally:
                    if queue.dirty:
                        raise RuntimeError("queue left dirty")
            async def main(queue):
                asyncio.create_task(drain(queue))
                await queue.wait()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            async def drain(queue):
                try:
                    await queue.run()
                except Exception:
                    logger.exception("drain failed")
                finally:
                    if queue.dirty:
                        raise RuntimeError("queue left dirty")
            async def main(queue):
                runtime_guard.supervise(asyncio.create_task(drain(queue)), on_error="log")
                await queue.wait()
            """,
        ),
        Invalid(
            """
            import asyncio

            class Trainer:
                async def train(self):
                    # fire and forget
                    asyncio.create_task(self._generate_loop())  # background
                    while True:
                        await self.queue.get()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Trainer:
                async def train(self):
                    # fire and forget
                    runtime_guard.supervise(asyncio.create_task(self._generate_loop()), on_error="log")  # background
                    while True:
                        await self.queue.get()
            """,
            message_contains="discarded",
        ),
        Invalid(
            """
            import asyncio as aio

            class Trainer:
                def start(self):
                    self._gen_task = aio.create_task(self.run())

                def stop(self):
                    self._gen_task.cancel()
            """,
            fixed="""
            import asyncio as aio
            import runtime_guard

            class Trainer:
                def start(self):
                    self._gen_task = runtime_guard.supervise(aio.create_task(self.run()), on_error="log")

                def stop(self):
                    self._gen_task.cancel()
            """,
            message_contains="_gen_task",
        ),
        Invalid(
            """
            from asyncio import ensure_future, get_event_loop

            def start_workers(n):
                loop = get_event_loop()
                workers = []
                for i in range(n):
                    workers.append(loop.create_task(worker(i)))
                ensure_future(monitor())
                loop.run_forever()
            """,
            fixed="""
            from asyncio import ensure_future, get_event_loop
            import runtime_guard

            def start_workers(n):
                loop = get_event_loop()
                workers = []
                for i in range(n):
                    workers.append(runtime_guard.supervise(loop.create_task(worker(i)), on_error="log"))
                runtime_guard.supervise(ensure_future(monitor()), on_error="log")
                loop.run_forever()
            """,
            count=2,
        ),
        Invalid(
            """
            import asyncio

            background_tasks = set()

            async def handle(request):
                task = asyncio.create_task(log_request(request))
                background_tasks.add(task)
                task.add_done_callback(background_tasks.discard)
            """,
            fixed="""
            import asyncio
            import runtime_guard

            background_tasks = set()

            async def handle(request):
                task = runtime_guard.supervise(asyncio.create_task(log_request(request)), on_error="log")
                background_tasks.add(task)
                task.add_done_callback(background_tasks.discard)
            """,
            message_contains="discard",
        ),
        Invalid(
            """
            import asyncio

            class Engine:
                def __init__(self):
                    self.loop = asyncio.new_event_loop()

                def submit(self, req):
                    self.pending = [self.loop.create_task(self.generate(r)) for r in req]
                    for t in self.pending:
                        t.cancel()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Engine:
                def __init__(self):
                    self.loop = asyncio.new_event_loop()

                def submit(self, req):
                    self.pending = [runtime_guard.supervise(self.loop.create_task(self.generate(r)), on_error="log") for r in req]
                    for t in self.pending:
                        t.cancel()
            """,
        ),
        # waited for with asyncio.wait, whose done set nobody asks for results
        Invalid(
            """
            import asyncio

            class Server:
                async def serve(self, key):
                    self._pending[key] = asyncio.create_task(self.handle(key))
                async def drain(self):
                    await asyncio.wait(self._pending.values())
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Server:
                async def serve(self, key):
                    self._pending[key] = runtime_guard.supervise(asyncio.create_task(self.handle(key)), on_error="log")
                async def drain(self):
                    await asyncio.wait(self._pending.values())
            """,
            message_contains="`asyncio.wait`",
        ),
        Invalid(
            """
            import asyncio

            async def main(jobs):
                tasks = [asyncio.create_task(run(j)) for j in jobs]
                done, pending = await asyncio.wait(tasks, timeout=60)
                print(f"{len(done)} done, {len(pending)} still running")
            """,
            fixed="""
            import asyncio
            import runtime_guard

            async def main(jobs):
                tasks = [runtime_guard.supervise(asyncio.create_task(run(j)), on_error="log") for j in jobs]
                done, pending = await asyncio.wait(tasks, timeout=60)
                print(f"{len(done)} done, {len(pending)} still running")
            """,
            message_contains="done set is never asked for results",
        ),
        # awaited only through a discarded gather(return_exceptions=True): failures vanish
        Invalid(
            """
            import asyncio

            class Trainer:
                async def train(self, buffer):
                    workers = [asyncio.create_task(self._generate(buffer)) for _ in range(4)]
                    while not buffer.exhausted():
                        await self._step(await buffer.get())
                    for w in workers:
                        w.cancel()
                    await asyncio.gather(*workers, return_exceptions=True)  # wait for them
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Trainer:
                async def train(self, buffer):
                    workers = [runtime_guard.supervise(asyncio.create_task(self._generate(buffer)), on_error="log") for _ in range(4)]
                    while not buffer.exhausted():
                        await self._step(await buffer.get())
                    for w in workers:
                        w.cancel()
                    await asyncio.gather(*workers, return_exceptions=True)  # wait for them
            """,
            message_contains="return_exceptions=True",
        ),
        Invalid(
            """
            import asyncio

            async def run(jobs, done):
                tasks = [asyncio.create_task(j()) for j in jobs]

                async def watch(pending=tasks):
                    _ = await asyncio.gather(*pending, return_exceptions=True)
                    done.set()

                await watch()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            async def run(jobs, done):
                tasks = [runtime_guard.supervise(asyncio.create_task(j()), on_error="log") for j in jobs]

                async def watch(pending=tasks):
                    _ = await asyncio.gather(*pending, return_exceptions=True)
                    done.set()

                await watch()
            """,
        ),
        Invalid(
            """
            import asyncio

            async def serve(loop, conns):
                for c in conns:
                    loop.create_task(
                        handle(c),  # one per connection
                    )
            """,
            fixed="""
            import asyncio
            import runtime_guard

            async def serve(loop, conns):
                for c in conns:
                    runtime_guard.supervise(loop.create_task(
                        handle(c),  # one per connection
                    ), on_error="log")
            """,
        ),
        # a dict of tasks whose entries are only put, dropped and cancelled: none is looked at
        Invalid(
            """
            import asyncio

            class Loader:
                def request(self, name):
                    self._loading[name] = asyncio.create_task(self.load(name))

                def forget(self, name):
                    del self._loading[name]

                def close(self):
                    for t in self._loading.values():
                        t.cancel()
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Loader:
                def request(self, name):
                    self._loading[name] = runtime_guard.supervise(asyncio.create_task(self.load(name)), on_error="log")

                def forget(self, name):
                    del self._loading[name]

                def close(self):
                    for t in self._loading.values():
                        t.cancel()
            """,
            message_contains="self._loading",
        ),
        # ... popped by a done callback that drops it: the idiom of a set, with a dict
        Invalid(
            """
            import asyncio

            class Host:
                def start(self, key):
                    task = asyncio.create_task(self.run(key))
                    self._running[key] = task
                    task.add_done_callback(lambda _: self._running.pop(key, None))
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Host:
                def start(self, key):
                    task = runtime_guard.supervise(asyncio.create_task(self.run(key)), on_error="log")
                    self._running[key] = task
                    task.add_done_callback(lambda _: self._running.pop(key, None))
            """,
            message_contains="kept in `self._running` whose done callback only discards it",
        ),
        # a trainer that chose to end the run on a failed background task (an unsafe fix)
        Invalid(
            """
            import asyncio

            class Trainer:
                async def train(self):
                    self.gen = asyncio.create_task(self.generate_loop(), name="generator")
                    while True:
                        await self.step(await self.batches.get())
            """,
            fixed="""
            import asyncio
            import runtime_guard

            class Trainer:
                async def train(self):
                    self.gen = runtime_guard.supervise(asyncio.create_task(self.generate_loop(), name="generator"), on_error="cancel-main")
                    while True:
                        await self.step(await self.batches.get())
            """,
            options={"on-error": "cancel-main"},
        ),
    ]

    # ------------------------------------------------------------------ visitor
    def visit_Call(self, node: cst.Call) -> None:
        if node.args and is_task_spawn(self.facts, node):
            self._judge_spawn(node, node.args[0].value)

    # ------------------------------------------------------------------ the tree's answers (libcst)
    def _own_errors(self, node: cst.Call, first: cst.BaseExpression) -> bool:
        return handles_own_errors(self.facts, node)

    @staticmethod
    def _callee(expr: cst.CSTNode) -> Optional[cst.BaseExpression]:
        return expr.func if isinstance(expr, cst.Call) else None

    @staticmethod
    def _name(node: cst.CSTNode) -> Optional[str]:
        return node.value if isinstance(node, cst.Name) else None

    @staticmethod
    def _attr(node: cst.CSTNode) -> Optional[str]:
        return node.attr.value if isinstance(node, cst.Attribute) else None

    @staticmethod
    def _on_self(attr: cst.Attribute) -> bool:
        return isinstance(attr.value, cst.Name) and attr.value.value in ("self", "cls")

    @staticmethod
    def _subscript_value(node: cst.CSTNode) -> Optional[cst.BaseExpression]:
        return node.value if isinstance(node, cst.Subscript) else None

    @staticmethod
    def _text(node: cst.CSTNode) -> str:
        return _code(node)

    def _uses(self, region: cst.CSTNode, value: str) -> list:
        return self.facts.name_nodes(region, value)

    def _attribute_uses_of(self, attr: str) -> list:
        return self.facts.attribute_nodes(self.facts.module, attr)

    def _report_spawn(self, node: cst.Call, message: str, log_only: bool) -> None:
        policy = self.config["on-error"]
        safe, fix_message = _fix_choice(policy, log_only)
        fix = None
        if safe is not None:
            edits = (Replace(node, supervise_call(node, policy)), IMPORT_RUNTIME_GUARD)
            fix = Fix.safe(*edits, message=fix_message) if safe else Fix.unsafe(*edits, message=fix_message)
        self.report(node, message, fix=fix)

    # ------------------------------------------------------------------ flow
    def _follow(self, expr: cst.CSTNode, mode: Mode) -> tuple[str, Optional[str]]:
        """Where does the value of ``expr`` (a task, or a collection of tasks) go?"""
        parent = self.facts.parent(expr)
        if isinstance(parent, (cst.Await, cst.Return, cst.Yield, cst.Lambda)):
            return OBSERVED, None
        if isinstance(parent, cst.Expr):
            return UNOBSERVED, None
        if isinstance(parent, cst.Arg):
            return self._as_argument(parent, mode)
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is expr:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            return self._stored(targets, mode)
        if isinstance(parent, cst.NamedExpr) and parent.value is expr:
            return _best(self._stored([parent.target], mode), self._follow(parent, mode))
        if isinstance(parent, cst.Attribute) and parent.value is expr:
            return self._method_use(parent, mode)
        if isinstance(parent, (cst.Element, cst.StarredElement)):
            literal = self.facts.parent(parent)
            if isinstance(literal, (cst.List, cst.Tuple, cst.Set)):
                return self._follow(literal, "collection")
            return OBSERVED, None
        if isinstance(parent, (cst.ListComp, cst.SetComp, cst.GeneratorExp)) and parent.elt is expr:
            return self._follow(parent, "collection")
        if isinstance(parent, cst.DictElement) and parent.value is expr:
            return self._follow(self.facts.parent(parent), "collection")  # type: ignore[arg-type]
        if isinstance(parent, cst.DictComp) and parent.value is expr:
            return self._follow(parent, "collection")
        if isinstance(parent, cst.IfExp) and expr is not parent.test:
            return self._follow(parent, mode)
        if isinstance(parent, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation,
                               cst.If, cst.While)):
            return UNOBSERVED, None  # a test, not a use of the outcome
        if isinstance(parent, cst.Subscript) and parent.value is expr and mode == "collection":
            if self._is_store(parent):
                return UNOBSERVED, None  # `holder[k] = ...`, `del holder[k]`: an entry put or dropped
            return self._follow(parent, "task")
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is expr:
            return self._iterated(parent, mode)
        if isinstance(parent, cst.Param) and parent.default is expr:
            # `async def watch(tasks=generator_tasks)`: what the function does with the parameter
            fn_node = next((a for a in self.facts.ancestors(parent) if isinstance(a, (cst.FunctionDef, cst.Lambda))),
                           None)
            if isinstance(fn_node, cst.FunctionDef):
                uses = [n for n in self.facts.name_nodes(fn_node.body, parent.name.value) if not self._is_store(n)]
                return self._uses_verdict(uses, mode, parent.name.value)
        return OBSERVED, None  # anything we do not model: assume the code knows

    def _as_argument(self, arg: cst.Arg, mode: Mode) -> tuple[str, Optional[str]]:
        call = self.facts.parent(arg)
        assert isinstance(call, cst.Call)
        f = call.func
        if isinstance(f, cst.Attribute):
            method = f.attr.value
            if method in ("discard", "remove"):
                return UNOBSERVED, None
            if method in _ADDERS or (method == "extend" and mode == "collection"):
                return self._follow_collection(f.value)
        if isinstance(f, cst.Name) and f.value in _NEUTRAL_FUNCS:
            return UNOBSERVED, None
        if (mode == "collection" and isinstance(f, cst.Name) and f.value in _COPIES and call.args[0] is arg
                and not arg.star and arg.keyword is None and self._waited_on(call)
                and self.facts.lookup(f.value, self.facts.scope_of(call)) is None):
            return self._follow(call, "collection")  # ``asyncio.wait(list(tasks))``: the same tasks
        if self._discarding_gather(call):
            self._lost_in_gather = True
            return UNOBSERVED, None
        if self.facts.call_name(call) in _WAITS:
            verdict = self._wait_result(call)
            if verdict[0] == UNOBSERVED:
                self._lost_in_wait = True
            return verdict
        return OBSERVED, None  # gather/shield/supervise or another function: handed over

    def _waited_on(self, copy: cst.Call) -> bool:
        """``copy`` (``list(tasks)``) is a positional argument of ``asyncio.wait``; any other use
        of a copy stays a hand-over."""
        arg = self.facts.parent(copy)
        if not (isinstance(arg, cst.Arg) and arg.keyword is None and not arg.star):
            return False
        outer = self.facts.parent(arg)
        return isinstance(outer, cst.Call) and self.facts.call_name(outer) in _WAITS

    def _wait_result(self, call: cst.Call) -> tuple[str, Optional[str]]:
        """What the code does with ``asyncio.wait``'s ``(done, pending)``: a task whose
        exception nobody asks for is lost when the result is discarded (``await
        asyncio.wait(tasks)``, also with ``FIRST_EXCEPTION``, whose own look at the exception
        only decides when to return; ``loop.run_until_complete(asyncio.wait(tasks))``), bound to
        ``_`` or to a name nobody reads, or unpacked into a done set none of whose uses observes
        (``for t in done: t.result()``, ``await gather(*done)``, ``done.pop().exception()``,
        ``done`` handed to a call or returned all do). Any other use of the result: observed.
        So is every ``return_when=FIRST_COMPLETED`` call: a race whose code asks which task won
        (``if t in done``) and whose losers are, on real code, waiters (5 of the corpora's 6 race
        an ``Event.wait()``, a sleep or a poll in a thread, which cannot fail; one a client-disconnect
        listener)."""
        for a in call.args:
            if (a.keyword is not None and a.keyword.value == "return_when"
                    and _code(a.value).rsplit(".", 1)[-1] not in _NOT_A_RACE):
                return OBSERVED, None  # a race (``FIRST_COMPLETED``), or a mode this reading cannot place
        node: cst.CSTNode = call
        parent = self.facts.parent(node)
        if isinstance(parent, cst.Await):
            node, parent = parent, self.facts.parent(parent)
        elif isinstance(parent, cst.Arg):
            outer = self.facts.parent(parent)
            if not (isinstance(outer, cst.Call) and isinstance(outer.func, cst.Attribute)
                    and outer.func.attr.value == "run_until_complete" and outer.args and outer.args[0] is parent):
                return OBSERVED, None
            node, parent = outer, self.facts.parent(outer)
        if isinstance(parent, cst.Expr):
            return UNOBSERVED, None
        if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and parent.value is node):
            return OBSERVED, None
        target = parent.targets[0].target
        if isinstance(target, (cst.Tuple, cst.List)) and target.elements and isinstance(target.elements[0], cst.Element):
            target = target.elements[0].value
            mode = "collection"
        elif isinstance(target, cst.Name):
            mode = ""
        else:
            return OBSERVED, None
        if not isinstance(target, cst.Name):
            return OBSERVED, None
        if target.value == "_":
            return UNOBSERVED, None
        if not mode:
            fn = self.facts.enclosing_function(call)
            region = fn.node if fn is not None else self.facts.module
            read = [n for n in self.facts.name_nodes(region, target.value) if n is not target and not self._is_store(n)]
            return (OBSERVED, None) if read else (UNOBSERVED, None)
        verdict = self._name_uses(target, mode, unpacked=True)
        return (UNOBSERVED, None) if verdict[0] == UNOBSERVED else verdict

    def _callback_only_logs(self, cb: cst.BaseExpression, at: cst.Call) -> bool:
        """A done callback (a same-module function, method or lambda) that retrieves the task's
        exception (``t.exception()`` / ``t.result()``) and only writes it into a log: it is
        never stored, forwarded, set on a future or re-raised, and the task is handed to no
        other call. Unresolved callbacks and ``functools.partial`` are not judged (False)."""
        if isinstance(cb, cst.Lambda):
            params = cb.params.params
            body: cst.CSTNode = cb.body
        else:
            if isinstance(cb, cst.Call):
                return False
            fn = self.facts.resolve_function(cb, at)
            if fn is None:
                return False
            params = list(fn.node.params.params)
            if fn.cls is not None and params and params[0].name.value in ("self", "cls"):
                params = params[1:]
            body = fn.node.body
        if not params:
            return False
        task = params[0].name.value
        retrieved = False
        for use in self.facts.name_nodes(body, task):
            parent = self.facts.parent(use)
            if isinstance(parent, cst.Param):
                continue
            if isinstance(parent, cst.Attribute) and parent.value is use:
                method = parent.attr.value
                call = self.facts.parent(parent)
                if not (isinstance(call, cst.Call) and call.func is parent):
                    return False  # `t.result` handed over
                if method in ("exception", "result"):
                    retrieved = True
                    if _kept(self.facts, call, body):
                        return False
                    continue
                if method in _NEUTRAL_TASK_METHODS:
                    continue
                return False
            if _only_logged(self.facts, use, body):
                continue
            return False  # the task itself handed to a call, stored, returned
        return retrieved and not _acts(self.facts, body, task)

    def _records_failures(self, fn) -> bool:
        """A broad handler in ``fn`` hands the exception on (stores it, passes it to a call,
        logs it): the task catches its own failure there, so it does not end with it, and a
        discarded gather result does not matter. (Logging counts here: it is the task
        handling its own error, not someone else looking at the task's exception.)"""
        found = [False]
        facts = self.facts

        class _Scan(cst.CSTVisitor):
            def visit_ExceptHandler(self, h: cst.ExceptHandler) -> None:
                names = facts.caught_types(h)
                broad = names is None or any(
                    facts.qualified_name(n, h) in ("builtins.Exception", "builtins.BaseException") for n in names)
                if broad and facts.exit_paths(h).hands_on:
                    found[0] = True

        walk(fn.node.body, _Scan())
        return found[0]

    def _discarding_gather(self, call: cst.Call) -> bool:
        """``gather(..., return_exceptions=True)`` whose result list is discarded or bound to a
        name nobody reads: the exceptions it collected are lost (SkyRL #1691)."""
        if self.facts.call_name(call) not in _GATHERS or not any(
            a.keyword is not None and a.keyword.value == "return_exceptions"
            and isinstance(a.value, cst.Name) and a.value.value == "True" for a in call.args
        ):
            return False
        node: cst.CSTNode = call
        parent = self.facts.parent(node)
        if isinstance(parent, cst.Await):
            node, parent = parent, self.facts.parent(parent)
        if isinstance(parent, cst.Expr):
            return True
        if (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            name = parent.targets[0].target
            if name.value == "_":
                return True
            fn = self.facts.enclosing_function(call)
            region = fn.node if fn is not None else self.facts.module
            return not [n for n in self.facts.name_nodes(region, name.value) if n is not name and not self._is_store(n)]
        return False

    def _method_call(self, attr: cst.Attribute) -> tuple[Optional[cst.Call], str]:
        call = self.facts.parent(attr)
        return (call if isinstance(call, cst.Call) and call.func is attr else None), attr.attr.value

    @staticmethod
    def _first(call: cst.Call) -> Optional[cst.BaseExpression]:
        return call.args[0].value if call.args else None

    @staticmethod
    def _forgets(callback: cst.BaseExpression) -> bool:
        return _only_forgets(callback)

    @staticmethod
    def _holder_text(callback: cst.BaseExpression) -> str:
        return _forgetting_holder(callback)

    def _done_callback_body(self, expr: cst.CSTNode) -> bool:
        """``expr`` is the body of a lambda given to ``<x>.add_done_callback(...)``: asyncio drops
        what a done callback returns, so an entry it pops is only forgotten."""
        lam = self.facts.parent(expr)
        if not (isinstance(lam, cst.Lambda) and lam.body is expr):
            return False
        arg = self.facts.parent(lam)
        call = self.facts.parent(arg) if isinstance(arg, cst.Arg) else None
        return (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value == "add_done_callback" and bool(call.args) and call.args[0] is arg)

    def _iterated(self, loop: Union[cst.For, cst.CompFor], mode: Mode) -> tuple[str, Optional[str]]:
        if mode == "task":
            return OBSERVED, None
        target = loop.target
        if isinstance(target, cst.Tuple) and target.elements:
            target = target.elements[-1].value  # `for key, task in d.items()`
        if not isinstance(target, cst.Name):
            return OBSERVED, None
        region = loop if isinstance(loop, cst.For) else self.facts.parent(loop)
        uses = [n for n in self.facts.name_nodes(region, target.value) if n is not target]  # type: ignore[arg-type]
        return self._uses_verdict(uses, "task", target.value)

    def _unpacked_store(self, node: cst.CSTNode) -> bool:
        """``node`` is a target inside a tuple or list target (``done, _ = ...``,
        ``for _, (done, x) in ...``)."""
        parent = self.facts.parent(node)
        while isinstance(parent, (cst.Element, cst.StarredElement)):
            literal = self.facts.parent(parent)
            if not isinstance(literal, (cst.Tuple, cst.List)):
                return False
            node, parent = literal, self.facts.parent(literal)
        return isinstance(node, (cst.Tuple, cst.List)) and self._is_store(node)

    def _is_store(self, node: cst.CSTNode) -> bool:
        parent = self.facts.parent(node)
        if isinstance(parent, cst.AssignTarget) and parent.target is node:
            return True
        if isinstance(parent, (cst.AnnAssign, cst.AugAssign)) and parent.target is node:
            return True
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.target is node:
            return True
        if isinstance(parent, cst.NamedExpr) and parent.target is node:
            return True
        if isinstance(parent, cst.Del):
            return True
        if isinstance(parent, cst.Element) and isinstance(self.facts.parent(parent), cst.Del):
            return True
        return False


# ---------------------------------------------------------------------- helpers
# (also used by SHD106: the split between the two rules is ``handles_own_errors``)


def is_task_spawn(facts, node: cst.Call) -> bool:
    """``asyncio.create_task`` / ``ensure_future`` / ``loop.create_task`` (a receiver typed as a loop,
    or named like one); never ``TaskGroup.create_task``."""
    qn = facts.call_name(node)
    if qn in _SPAWNERS:
        return True
    f = node.func
    if qn is None and isinstance(f, cst.Attribute) and f.attr.value == "create_task":
        receiver = f.value
        last = receiver.attr.value if isinstance(receiver, cst.Attribute) else (
            receiver.value if isinstance(receiver, cst.Name) else "")
        return last in _LOOP_NAMES
    return False


def handles_own_errors(facts, node: cst.Call) -> bool:
    """The spawned coroutine is a same-module ``async def`` that catches and does not re-raise every
    ``Exception``, or a watcher that only waits and cannot fail: no failure can be lost (SHD102 stays
    quiet; SHD106 looks at the reference)."""
    if not node.args:
        return False
    target = facts.coroutine_target(node.args[0].value, node)
    return target is not None and target.is_async and (_swallows_errors(target.node.body)
                                                       or _only_waits(target.node.body))


_BROAD_HANDLERS = ("Exception", "BaseException")


def _swallows_errors(body: cst.BaseSuite) -> bool:
    """The body catches every ``Exception`` (directly or in each loop iteration) and does not
    re-raise, in a handler or a ``finally``: ``while True: try: ... except Exception: log(...)``.
    Around the ``try``, only
    bookkeeping is allowed: docstrings, ``assert``, assignments, ``await asyncio.sleep(...)``
    and ``if`` blocks made of those."""
    stmts = body.body if isinstance(body, cst.IndentedBlock) else []
    guarded = False
    for st in stmts:
        if isinstance(st, cst.Try):
            broad = [h for h in st.handlers if h.type is None or _code(h.type).split(".")[-1] in _BROAD_HANDLERS]
            if not broad or any(_raises(h.body) for h in broad) or st.orelse is not None:
                return False
            if st.finalbody is not None and _raises(st.finalbody.body):
                return False  # what the finally raises escapes the task
            guarded = True
        elif isinstance(st, (cst.While, cst.For)) and st.orelse is None:
            if not _swallows_errors(st.body):
                return False
            guarded = True
        elif not _bookkeeping(st):
            return False
    return guarded


def _only_waits(body: cst.BaseSuite) -> bool:
    """A watcher that cannot fail: only ``await gather(..., return_exceptions=True)`` /
    ``await asyncio.sleep(...)``, ``event.set()``, docstrings and ``pass``."""
    stmts = body.body if isinstance(body, cst.IndentedBlock) else []
    if not stmts:
        return False
    for st in stmts:
        if not isinstance(st, cst.SimpleStatementLine):
            return False
        for small in st.body:
            if isinstance(small, cst.Pass):
                continue
            if not isinstance(small, cst.Expr):
                return False
            v = small.value
            if isinstance(v, (cst.SimpleString, cst.ConcatenatedString)):
                continue
            if isinstance(v, cst.Await) and isinstance(v.expression, cst.Call):
                call = v.expression
                name = _code(call.func)
                if name.endswith("sleep") or (name.endswith("gather") and any(
                        a.keyword is not None and a.keyword.value == "return_exceptions"
                        and _code(a.value) == "True" for a in call.args)):
                    continue
                return False
            if isinstance(v, cst.Call) and isinstance(v.func, cst.Attribute) and v.func.attr.value == "set" \
                    and not v.args:
                continue
            return False
    return True


def _bookkeeping(st: cst.BaseStatement) -> bool:
    if isinstance(st, cst.If):
        blocks = [st.body]
        orelse = st.orelse
        while orelse is not None:
            blocks.append(orelse.body)
            orelse = orelse.orelse if isinstance(orelse, cst.If) else None
        return all(_bookkeeping(s) for b in blocks for s in getattr(b, "body", ()))
    if not isinstance(st, cst.SimpleStatementLine):
        return False
    for small in st.body:
        if isinstance(small, (cst.Pass, cst.Assert, cst.Continue, cst.Break, cst.Assign, cst.AnnAssign,
                              cst.AugAssign, cst.Nonlocal, cst.Global)):
            continue
        if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            continue
        if (isinstance(small, cst.Expr) and isinstance(small.value, cst.Await)
                and isinstance(small.value.expression, cst.Call)
                and _code(small.value.expression.func).endswith("sleep")):
            continue
        return False
    return True


def _raises(body: cst.BaseSuite) -> bool:
    found = []

    class V(cst.CSTVisitor):
        def visit_Raise(self, node: cst.Raise) -> None:
            found.append(node)

        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return False

    walk(body, V())
    return bool(found)


def _is_log_call(facts, call: cst.Call) -> bool:
    name = (facts.call_name(call) or _code(call.func)).removeprefix("builtins.")
    if name in _LOG_FUNCS:
        return True
    f = call.func
    return isinstance(f, cst.Attribute) and f.attr.value in _LOG_METHODS and "log" in _code(f.value).lower()


def _only_logged(facts, expr: cst.CSTNode, region: cst.CSTNode) -> bool:
    """The value of ``expr`` goes only into a log: an argument of a log call, directly or
    formatted (f-string, ``%``/``+``, ``str()``/``repr()``/``format_exception()``, a keyword
    such as ``exc_info=``), or only tested (``if exc:``, ``exc is None``)."""
    node = expr
    while True:
        parent = facts.parent(node)
        if isinstance(parent, (cst.FormattedStringExpression, cst.FormattedString, cst.BinaryOperation,
                               cst.Element, cst.Tuple, cst.List, cst.DictElement, cst.Dict)):
            node = parent
            continue
        if isinstance(parent, cst.Arg):
            call = facts.parent(parent)
            if isinstance(call, cst.Call):
                if _is_log_call(facts, call):
                    return True
                if (facts.call_name(call) or _code(call.func)).removeprefix("builtins.") in _TEXT_FUNCS:
                    node = call
                    continue
            return False
        if isinstance(parent, (cst.If, cst.While, cst.IfExp, cst.Comparison, cst.ComparisonTarget,
                               cst.BooleanOperation, cst.UnaryOperation)):
            return True
        return False


def _acts(facts, body: cst.CSTNode, task: str) -> bool:
    """The callback does something besides logging: a ``raise``, or a call that is not a log
    call, a text conversion or a method of the task (``os._exit(1)``, ``event.set()``,
    ``self.stop()``, ``loop.call_soon_threadsafe(...)``): it may end the run or wake the
    waiting code."""
    found = [False]

    class _Scan(cst.CSTVisitor):
        def visit_Raise(self, n: cst.Raise) -> None:
            found[0] = True

        def visit_Call(self, n: cst.Call) -> None:
            if _is_log_call(facts, n):
                return
            name = (facts.call_name(n) or _code(n.func)).removeprefix("builtins.")
            if name in _TEXT_FUNCS or name in ("isinstance", "len", "bool"):
                return
            f = n.func
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == task \
                    and f.attr.value in ("exception", "result", *_NEUTRAL_TASK_METHODS):
                return
            found[0] = True

    walk(body, _Scan())
    return found[0]


def _kept(facts, expr: cst.CSTNode, region: cst.CSTNode) -> bool:
    """The exception ``expr`` (``t.exception()``, ``t.result()``, a handler's bound name) is
    kept: stored in an attribute, a subscript or a name used for more than logging,
    forwarded to a call that is not a log (``fut.set_exception(e)``, ``queue.put_nowait(e)``),
    returned, or re-raised (``raise e``, a bare ``t.result()``). Only written into a log,
    or only tested: not kept."""
    if _only_logged(facts, expr, region):
        return False
    parent = facts.parent(expr)
    if isinstance(parent, cst.Assign) and parent.value is expr:
        for t in parent.targets:
            if not isinstance(t.target, cst.Name):
                return True  # self.error = e, errors[k] = e
            name = t.target.value
            uses = [n for n in facts.name_nodes(region, name) if n is not t.target
                    and not isinstance(facts.parent(n), cst.AssignTarget)]
            if any(_kept(facts, n, region) for n in uses):
                return True
        return False
    if isinstance(parent, cst.NamedExpr) and parent.value is expr:
        name = parent.target.value if isinstance(parent.target, cst.Name) else None
        if name is None:
            return True
        uses = [n for n in facts.name_nodes(region, name) if n is not parent.target]
        return any(_kept(facts, n, region) for n in uses) or _kept(facts, parent, region)
    return True  # raised, returned, handed to a call, a bare `t.result()`: kept


def _best(a: tuple[str, Optional[str]], b: tuple[str, Optional[str]]) -> tuple[str, Optional[str]]:
    """Observed if either path observes."""
    order = {OBSERVED: 3, LOG_ONLY: 2, REFERENCE_ONLY: 1, UNOBSERVED: 0}
    return a if order[a[0]] >= order[b[0]] else b


def _only_forgets(callback: cst.BaseExpression) -> bool:
    """``tasks.discard`` / ``tasks.remove`` / ``lambda t: tasks.discard(t)``: keeps no eye on
    the outcome."""
    if isinstance(callback, cst.Attribute):
        return callback.attr.value in ("discard", "remove", "pop")
    if isinstance(callback, cst.Lambda) and isinstance(callback.body, cst.Call):
        f = callback.body.func
        return isinstance(f, cst.Attribute) and f.attr.value in ("discard", "remove", "pop")
    return False


def _forgetting_holder(callback: cst.BaseExpression) -> str:
    """The code of the collection an ``_only_forgets`` callback drops the task from: ``tasks`` for
    ``tasks.discard`` and for ``lambda _: tasks.pop(k, None)``."""
    if isinstance(callback, cst.Lambda) and isinstance(callback.body, cst.Call):
        callback = callback.body.func
    return _code(callback.value) if isinstance(callback, cst.Attribute) else _code(callback)


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


# ---------------------------------------------------------------------- candidate tier 2 (ast)
# (the spawns are shared with SHD105 and SHD106)
_SPAWN_WORDS = ("create_task", "ensure_future")
#: calls that take a task without handing it over, as ``_as_argument`` reads them (``extend``
#: too: it follows a collection)
_KEEPS_OR_DROPS = _ADDERS | {"extend", "discard", "remove"}


def spawns(tree) -> list[tuple[ast.Call, object]]:
    """(call, its ``ast_tree.Function`` or None) for every call that may make a task
    (``is_task_spawn``: a qualified name in ``_SPAWNERS``, which ``Tree.may_call_any`` over-
    approximates through aliases and the receiver's words; or ``<x>.create_task`` whose
    receiver's last name is a loop's, ``_LOOP_NAMES``. ``tg.create_task``, where ``tg`` is
    no loop by its words nor its name, is not one). Found once per tree (``Tree.once``: SHD106
    reads them too); the list must not be changed."""
    return tree.once(_spawns)


def _spawns(tree) -> list[tuple[ast.Call, object]]:
    out = []
    for fn, calls in ((None, tree.module_calls), *((fn, fn.calls) for fn in tree.functions)):
        for c, _, _ in calls:
            if (c.args or c.keywords) and may_spawn(tree, c) and not _method_receiver(tree, c, fn):
                out.append((c, fn))
    return out


def _method_receiver(tree, c: ast.Call, fn) -> bool:
    """``self.<m>.create_task(...)`` directly in a method whose class defines ``m`` (a property,
    say): the facts' qualified name of ``self.<m>`` is that method's (``_qualified``: the class
    of the call's scope, ``cls.methods``), so the callee's is ``<module>.<Cls>.<m>.create_task``,
    not None (``is_task_spawn``'s fallback on a loop-like name is not taken) and no spawner's:
    ``is_task_spawn`` is False, whatever words ``may_spawn`` saw."""
    func = c.func
    if fn is None or fn.cls is None or type(func) is not ast.Attribute or func.attr != "create_task":
        return False
    receiver = func.value
    if type(receiver) is not ast.Attribute or type(receiver.value) is not ast.Name or receiver.value.id != "self":
        return False
    return any(m.name == receiver.attr for m in tree.methods.get(id(fn.cls), ()))


def may_spawn(tree, c: ast.Call) -> bool:
    """``c`` may be a spawn as ``is_task_spawn`` reads it (see ``spawns``)."""
    return tree.may_call_any(c, _SPAWN_WORDS) and (_loop_receiver(c) or tree.may_call_any(c, _SPAWNERS))


def _loop_receiver(call: ast.Call) -> bool:
    """``<x>.create_task(...)`` with ``x``'s last name in ``_LOOP_NAMES`` (``is_task_spawn``'s
    fallback when the facts do not know the receiver's type)."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr != "create_task":
        return False
    receiver = func.value
    last = receiver.attr if type(receiver) is ast.Attribute else receiver.id if type(receiver) is ast.Name else ""
    return last in _LOOP_NAMES


def _may_lose_a_task(tree) -> bool:
    """``_follow`` reports a spawn unless it finds the task observed; here a spawn is ruled
    out only where ``_follow`` surely says OBSERVED: the task (or a list, tuple or set
    display holding it) is handed over at once (``_handed_over``), or it is assigned to
    names one of which is used so (``_stored_and_observed``)."""
    for call, fn in spawns(tree):
        if _tree_handles_own_errors(tree, call, fn):
            continue
        parents = tree.parents(fn.node if fn is not None else tree.module)
        holder = parents.get(id(call))
        if isinstance(holder, (ast.List, ast.Tuple, ast.Set)):
            if not _handed_over(holder, parents):
                return True
        elif type(holder) in COMPREHENSIONS and (holder.value if type(holder) is ast.DictComp else holder.elt) is call:
            # ``_follow(comprehension, "collection")``: handed over at once, or kept in names
            # one of which is handed over (``_as_argument`` in collection mode: the same
            # exceptions as ``_handed_over``'s)
            if not _handed_over(holder, parents) and not _stored_and_observed(tree, holder, fn, parents, True):
                return True
        elif not _handed_over(call, parents) and not _stored_and_observed(tree, call, fn, parents):
            return True
    return False


def _stored_and_observed(tree, call: ast.AST, fn, parents: dict, collection: bool = False) -> bool:
    """``_stored``: the best verdict of the assignment's targets. A ``self``/``cls``
    attribute is looked at through every attribute of that name in the module
    (``_attribute_uses``), another object's attribute counts as observed, and a name
    through its loads in the function that binds it (``_name_uses``' region holds that
    function). A subset of the rule's uses: a use that observes here observes there. For a
    ``collection`` of tasks only a use handed over at once counts."""
    p = parents.get(id(call))
    if isinstance(p, ast.Assign) and p.value is call:
        targets = p.targets
    elif isinstance(p, ast.AnnAssign) and p.value is call:
        targets = [p.target]
    elif type(p) is ast.Call and not collection and any(a is call for a in p.args):
        return _added_and_observed(tree, p, fn)
    else:
        return False
    for t in targets:
        if type(t) is ast.Subscript and type(t.value) is ast.Attribute and not collection:
            # ``_stored``: ``_follow_collection(holder)``, the holder's uses in collection mode
            # (its first visit: what observes at once there ends in OBSERVED)
            holder = t.value
            if not (type(holder.value) is ast.Name and holder.value.id in ("self", "cls")):
                return True  # someone else's attribute (``_attribute_uses``)
            where = tree.parents(tree.module)
            if any(type(n.ctx) is ast.Load and _collection_use_observes(n, where)
                   for n in tree.named_nodes(tree.module)[1].get(holder.attr, ())):
                return True
            continue
        if isinstance(t, ast.Attribute):
            if not (isinstance(t.value, ast.Name) and t.value.id in ("self", "cls")):
                return True  # someone else's attribute: the rule cannot see its users either
            region = tree.module
            found = tree.named_nodes(region)[1].get(t.attr, ())
        elif isinstance(t, ast.Name):
            region = fn.node if fn is not None else tree.module
            found = tree.named_nodes(region)[0].get(t.id, ())
        else:
            continue
        where = tree.parents(region)
        if any(type(n.ctx) is ast.Load and (_handed_over(n, where) if collection else (
                _observes(n, where, tree) or _restored_and_observed(tree, n, where))) for n in found):
            return True
    return False


def _added_and_observed(tree, adder: ast.Call, fn) -> bool:
    """The task is a positional argument of ``<holder>.<m>(...)`` with ``m`` one of ``_ADDERS``
    (``_as_argument``: ``_follow_collection(holder)``, the holder's uses in collection mode, on
    their first visit) and a use of the holder observes at once there (``_collection_use_observes``):
    a ``self``/``cls`` attribute's loads anywhere in the module (another object's attribute, or
    any other holder than a name, is observed), a name's loads in ``fn`` (``_name_uses`` reads the region of the holder's binding
    seen from ``fn``: ``fn``, a function around it or the module, each holding ``fn``'s nodes)."""
    func = adder.func
    if type(func) is not ast.Attribute or func.attr not in _ADDERS:
        return False
    holder = func.value
    if type(holder) is ast.Attribute:
        if not (type(holder.value) is ast.Name and holder.value.id in ("self", "cls")):
            return True
        region, found = tree.module, tree.named_nodes(tree.module)[1].get(holder.attr, ())
    elif type(holder) is ast.Name:
        region = fn.node if fn is not None else tree.module
        found = tree.named_nodes(region)[0].get(holder.id, ())
    else:
        return True  # ``_follow_collection`` of anything else: OBSERVED
    where = tree.parents(region)
    return any(type(n.ctx) is ast.Load and _collection_use_observes(n, where) for n in found)


def _collection_use_observes(use: ast.AST, parents: dict) -> bool:
    """``_follow(use, "collection")`` says OBSERVED at once: the collection is handed over
    (``_handed_over``), or a view of it (``.values()``, ``.copy()``, ``.items()``: ``_method_use``
    follows the call in collection mode) is."""
    if _handed_over(use, parents):
        return True
    p = parents.get(id(use))
    if type(p) is not ast.Attribute or p.value is not use or p.attr not in _VIEW_GETTERS:
        return False
    call = parents.get(id(p))
    return type(call) is ast.Call and call.func is p and _handed_over(call, parents)


def _restored_and_observed(tree, use: ast.AST, parents: dict) -> bool:
    """``use`` (a load of the name the task was stored in) is the whole value of an assignment
    to an attribute that ``_stored`` surely finds observed: another object's attribute, or a
    ``self``/``cls`` attribute one of whose loads anywhere in the module observes the task at
    once (``_observes``). ``_follow`` reaches that assignment through the name's uses, and the
    first visit of an attribute (``_seen``) whose uses hold one that observes at once ends in
    OBSERVED, which every step above it keeps."""
    p = parents.get(id(use))
    if type(p) is ast.Assign and p.value is use:
        targets = p.targets
    elif type(p) is ast.AnnAssign and p.value is use:
        targets = [p.target]
    else:
        return False
    for t in targets:
        if type(t) is not ast.Attribute:
            continue
        if not (type(t.value) is ast.Name and t.value.id in ("self", "cls")):
            return True
        where = tree.parents(tree.module)
        if any(type(n.ctx) is ast.Load and _observes(n, where, tree) for n in tree.named_nodes(tree.module)[1].get(t.attr, ())):
            return True
    return False


def _observes(use: ast.AST, parents: dict, tree=None) -> bool:
    """``_follow(use, "task")`` says OBSERVED at its first step: handed over at once, or a
    method of the task that looks at it (``_method_use``: not a neutral one; a done
    callback that does more than forget the task)."""
    if _handed_over(use, parents):
        return True
    p = parents.get(id(use))
    if type(p) in (ast.List, ast.Tuple, ast.Set):
        return _handed_over(p, parents)  # an element: ``_follow(literal, "collection")``
    if not (isinstance(p, ast.Attribute) and p.value is use):
        return False
    call = parents.get(id(p))
    if not (isinstance(call, ast.Call) and call.func is p):
        return p.attr not in _NEUTRAL_TASK_METHODS  # e.g. ``task.result`` handed over as a callback
    if p.attr == "add_done_callback":
        first = call.args[0] if call.args else (call.keywords[0].value if call.keywords else None)
        # a callback observes unless it only forgets the task or only logs its exception
        # (``_callback_only_logs``: judged on libcst); a partial is never judged
        if first is None or type(first) is ast.Call:
            return True
        if _only_forgets_ast(first):
            return False
        if type(first) in (ast.Name, ast.Attribute) and tree is not None:
            # ``_callback_only_logs`` judges only a function of this module by that name
            name = first.id if type(first) is ast.Name else first.attr
            return not any(fn.name == name for fn in tree.functions)
        return False
    return p.attr in _OBSERVING_METHODS or p.attr not in _NEUTRAL_TASK_METHODS


def _only_forgets_ast(callback: ast.AST) -> bool:
    """``_only_forgets`` on the ``ast``."""
    if isinstance(callback, ast.Lambda) and isinstance(callback.body, ast.Call):
        callback = callback.body.func
    return isinstance(callback, ast.Attribute) and callback.attr in ("discard", "remove", "pop")


def _handed_over(node: ast.AST, parents: dict) -> bool:
    parent = parents.get(id(node))
    if type(parent) is ast.Starred:  # ``f(*tasks)``: libcst's ``Arg(star="*")``, read as any argument
        node, parent = parent, parents.get(id(parent))
    if isinstance(parent, (ast.Await, ast.Return, ast.Yield, ast.YieldFrom, ast.Lambda)):
        return True
    if isinstance(parent, ast.keyword):
        parent = parents.get(id(parent))
    elif not (isinstance(parent, ast.Call) and any(a is node for a in parent.args)):
        return False
    func = parent.func
    if isinstance(func, ast.Attribute) and func.attr in _KEEPS_OR_DROPS:
        return False
    if isinstance(func, ast.Name) and func.id in _NEUTRAL_FUNCS:
        return False
    if type(func) is ast.Name and func.id in _COPIES and parent.args and parent.args[0] is node:
        outer = parents.get(id(parent))
        if type(outer) is ast.Call and any(a is parent for a in outer.args) and _last_name(outer.func) == "wait":
            # ``asyncio.wait(list(tasks))``: ``_as_argument`` follows the copy as the
            # collection; handed over at once, it is OBSERVED in either mode
            return _handed_over(parent, parents)
    if _last_name(func) == "wait" and not any(k.arg == "return_when" and _last_name(k.value) not in _NOT_A_RACE
                                              for k in parent.keywords):
        return False  # ``asyncio.wait``: ``_wait_result`` follows what is done with its result
    return not any(k.arg == "return_exceptions" for k in parent.keywords)


def _last_name(node: ast.AST) -> str:
    """``X`` of ``X`` / ``<...>.X``; any other expression gives "" (``_code``'s last part is then
    never a plain name either)."""
    return node.attr if type(node) is ast.Attribute else node.id if type(node) is ast.Name else ""


def _tree_handles_own_errors(tree, call: ast.Call, fn) -> bool:
    """``handles_own_errors`` surely holds (``visit_Call`` returns): the spawn, in a method of a
    class, runs ``self.<m>(...)``/``cls.<m>(...)`` (its first argument; ``coroutine_target`` finds
    the class's method ``m``: the class has one ``def`` of that name) and that method is an
    ``async def`` whose body surely swallows every ``Exception`` or only waits
    (``_swallows_errors_ast``, ``_waits.only_waits(surely=True)``: subsets of the rule's tests)."""
    if fn is None or not fn.in_class:
        return False
    first = call.args[0] if call.args else call.keywords[0].value if call.keywords else None
    if type(first) is not ast.Call or type(first.func) is not ast.Attribute:
        return False
    owner = first.func.value
    if type(owner) is not ast.Name or owner.id not in ("self", "cls"):
        return False
    same = [m for m in tree.methods.get(id(fn.cls), ()) if m.name == first.func.attr]
    if len(same) != 1 or not same[0].is_async:
        return False
    body = same[0].node.body
    return _swallows_errors_ast(body) or only_waits(body, surely=True)


def _swallows_errors_ast(stmts: list) -> bool:
    """``_swallows_errors`` where surely True: a ``try`` (not ``except*``) with no ``else`` and a
    handler that is bare or names ``Exception``/``BaseException`` (a plain name right after
    ``except ``: ``_code`` is that name), no ``raise`` in the broad handlers nor in the
    ``finally``; loops with no ``else`` whose body does the same; around them only simple
    bookkeeping statements (``_bookkeeping_ast``)."""
    guarded = False
    for st in stmts:
        t = type(st)
        if t is ast.Try:
            broad = [h for h in st.handlers if h.type is None or (
                type(h.type) is ast.Name and h.type.id in _BROAD_HANDLERS
                and h.type.lineno == h.lineno and h.type.col_offset == h.col_offset + 7)]
            if not broad or st.orelse or any(type(n) is ast.Raise for h in broad for n in ast.walk(h)):
                return False
            if any(type(n) is ast.Raise for x in st.finalbody for n in ast.walk(x)):
                return False
            guarded = True
        elif t in (ast.While, ast.For, ast.AsyncFor) and not st.orelse:
            if not _swallows_errors_ast(st.body):
                return False
            guarded = True
        elif not _bookkeeping_ast(st):
            return False
    return guarded


def _bookkeeping_ast(st: ast.stmt) -> bool:
    """``_bookkeeping`` where surely True: a simple statement of those kinds (an ``if`` is left to
    the rule: libcst counts only an indented block's statements)."""
    t = type(st)
    if t in (ast.Pass, ast.Assert, ast.Continue, ast.Break, ast.Assign, ast.AnnAssign, ast.AugAssign,
             ast.Nonlocal, ast.Global):
        return True
    if t is not ast.Expr:
        return False
    v = st.value
    if type(v) is ast.Constant and type(v.value) in (str, bytes):
        return True
    return type(v) is ast.Await and sleep_call(v.value)
