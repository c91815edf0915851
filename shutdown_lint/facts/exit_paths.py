"""Exit paths: how control leaves an ``except`` handler or a ``finally`` block, whether an
interrupt handler lets the process entrypoint end normally, and what exit status an exit
call gives.

Handlers are not flat lists of statements: a ``raise`` inside a ``try`` whose ``finally``
returns never propagates (the ``return`` swallows it), a ``raise`` under an ``if`` leaves a
fall-through path beside it, a ``break`` inside a loop of the handler stays in the handler.
``ExitPaths`` says which ways out exist; rules decide which ones matter to them.

The decisions are written once for both trees (``_WalkerBase``, ``paths_of``,
``ExitPathQueries``' entrypoint questions); ``_Walker`` and the ``_try_of``/``_finally_of``/...
methods read libcst's tree, ``ast_engine.exit_paths`` reads Python's ``ast``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

from ..lazy_libcst import libcst as cst

from .model import FunctionInfo

if TYPE_CHECKING:
    from .module import ModuleFacts

# ---------------------------------------------------------------- ways out of a block
RERAISE = "reraise"  # bare `raise`, or `raise e` of the caught exception
RAISE_OTHER = "raise-other"  # raising a different exception
EXIT = "exit"  # sys.exit / os._exit / exit() / raise SystemExit / hard_exit
RETURN = "return"
BREAK = "break"
CONTINUE = "continue"
FALL_THROUGH = "fall-through"  # runs off the end of the block

PROPAGATING = frozenset({RERAISE, RAISE_OTHER, EXIT})
SWALLOWING = frozenset({RETURN, BREAK, CONTINUE, FALL_THROUGH})

#: Calls that end the process (qualified names).
EXIT_FUNCTIONS = frozenset({"sys.exit", "os._exit", "builtins.exit", "builtins.quit", "runtime_guard.hard_exit",
                            "runtime_guard.exit.hard_exit"})
#: Exit statuses as this module reports them.
STATUS_ZERO = 0
STATUS_NONZERO = "nonzero"
STATUS_UNKNOWN = None

_Block = Union["cst.ExceptHandler", "cst.ExceptStarHandler", "cst.Finally"]


@dataclass(frozen=True)
class ExitPaths:
    """How control leaves one handler or ``finally`` block."""

    #: every way out that some path takes (the constants above)
    ways: frozenset[str]
    #: a nested ``finally`` whose ``return``/``break``/``continue`` swallows whatever was
    #: raised before it (the first one found; on ``ast``: its ``Try``), else None
    swallowing_finally: Optional[cst.Finally] = None
    #: the handler's bound exception (``except X as e``) is stored in a name or attribute
    #: that the function raises later (``err = e`` ... ``raise err``)
    reraised_later: bool = False
    #: the bound exception is used at all (handed to a call, stored): someone may pass it on
    hands_on: bool = False
    #: exit calls / ``raise SystemExit`` reached in the block (not in nested defs)
    exits: tuple[cst.CSTNode, ...] = field(default=())
    #: the statements that leave the block by a way of their own, with that way: a ``return``,
    #: a ``break``/``continue`` of a loop around the block, a ``raise`` of a different exception
    #: (``RAISE_OTHER``); not those a nested ``finally`` overrides, nor raises a nested
    #: ``try`` may catch
    leaves: tuple[tuple[cst.CSTNode, str], ...] = field(default=())
    #: ``yield`` expressions in the block (not in nested defs or lambdas): the block hands a
    #: value out and waits there
    yields: tuple[cst.CSTNode, ...] = field(default=())

    @property
    def propagates(self) -> bool:
        """Some path re-raises, raises or exits."""
        return bool(self.ways & PROPAGATING)

    @property
    def always_propagates(self) -> bool:
        return bool(self.ways) and self.ways <= PROPAGATING

    @property
    def always_reraises(self) -> bool:
        """Every way out re-raises what the block caught or ends the process (every path, not
        some: a ``raise`` on one branch, in a loop that may not run, in some ``match`` cases
        leaves the others)."""
        return bool(self.ways) and self.ways <= {RERAISE, EXIT}

    @property
    def swallows(self) -> bool:
        """Some path leaves normally (return, break, continue, falling through)."""
        return bool(self.ways & SWALLOWING)


class ExitPathQueries:
    """Mixin of ``ModuleFacts``: exit paths of handlers (computed on demand, cached)."""

    @cached_property
    def _exit_path_cache(self) -> dict[int, ExitPaths]:
        return {}

    def exit_paths(self, block: _Block) -> ExitPaths:
        """How control leaves ``block`` (an ``except`` handler or a ``finally``)."""
        key = id(block)
        cached = self._exit_path_cache.get(key)
        if cached is None:
            cached = self._exit_path_cache[key] = self._compute_exit_paths(block)
        return cached

    # ------------------------------------------------------------------ tree reads (libcst; ast_engine.exit_paths: ast)
    def _compute_exit_paths(self, block: _Block) -> ExitPaths:
        return _compute(self, block)

    def exit_status(self, node: cst.CSTNode) -> object:
        """The status an exit gives: ``0``, ``"nonzero"`` or ``None`` (unknown); ``node`` is an
        exit call (``sys.exit(0)``) or a ``raise SystemExit(...)``. Not an exit: None."""
        if isinstance(node, cst.Raise):
            exc = node.exc
            if exc is None:
                return STATUS_UNKNOWN
            target = exc.func if isinstance(exc, cst.Call) else exc
            if self.qualified_name(target, node) != "builtins.SystemExit":
                return STATUS_UNKNOWN
            args = [a for a in exc.args if a.keyword is None] if isinstance(exc, cst.Call) else []
            return _status_of_args(args, default=STATUS_ZERO)
        if isinstance(node, cst.Call):
            name = self.call_name(node)
            if name not in EXIT_FUNCTIONS:
                return STATUS_UNKNOWN
            args = [a for a in node.args if a.keyword is None]
            if name.endswith("hard_exit"):
                return _status_of_args(args, default=STATUS_NONZERO)  # hard_exit() defaults to 1
            if name == "os._exit" and not args:
                return STATUS_UNKNOWN  # a TypeError, not an exit
            return _status_of_args(args, default=STATUS_ZERO)
        return STATUS_UNKNOWN

    def is_exit(self, node: cst.CSTNode) -> bool:
        """An exit call or ``raise SystemExit``."""
        if isinstance(node, cst.Call):
            return self.call_name(node) in EXIT_FUNCTIONS
        if isinstance(node, cst.Raise) and node.exc is not None:
            exc = node.exc
            target = exc.func if isinstance(exc, cst.Call) else exc
            return self.qualified_name(target, node) == "builtins.SystemExit"
        return False

    # ------------------------------------------------------------------ signal handlers
    @cached_property
    def signal_handlers(self) -> dict[cst.CSTNode, frozenset[str]]:
        """Handlers installed for SIGINT/SIGTERM in this module: the handler's
        ``FunctionDef`` or ``Lambda`` node -> the signal names (``SIGINT``, ``SIGTERM``)."""
        found: dict[cst.CSTNode, set[str]] = {}
        for call in self.calls:
            name = self.call_name(call)
            if name not in ("signal.signal", "asyncio.AbstractEventLoop.add_signal_handler"):
                continue
            args = [a for a in call.args if a.keyword is None]
            if len(args) < 2:
                continue
            sig = _signal_name(args[0].value)
            if sig not in ("SIGINT", "SIGTERM"):
                continue
            handler = args[1].value
            if isinstance(handler, cst.Lambda):
                found.setdefault(handler, set()).add(sig)
                continue
            fn = self.resolve_function(handler, call)
            if fn is not None:
                found.setdefault(fn.node, set()).add(sig)
        return {k: frozenset(v) for k, v in found.items()}

    def signal_handler_of(self, node: cst.CSTNode) -> Optional[tuple[cst.CSTNode, frozenset[str]]]:
        """The SIGINT/SIGTERM handler (function or lambda) whose own body holds ``node``."""
        handlers = self.signal_handlers
        if not handlers:
            return None
        for anc in self.ancestors(node):
            if isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                sigs = handlers.get(anc)
                return (anc, sigs) if sigs else None
        return None

    # ------------------------------------------------------------------ entrypoints
    def normal_return_to_entrypoint(self, handler: Union[cst.ExceptHandler, cst.ExceptStarHandler]) -> Optional[str]:
        """For an ``except`` handler that can leave normally: when that normal exit ends a
        process entrypoint with status 0, a description of the entrypoint (``"main()"``,
        ``"the __main__ block"``, ``"the coroutine passed to asyncio.run"``); else None.

        Covered: the handler's function is called as a statement from the ``__main__`` block
        (or is ``main`` with such a call), or is the coroutine ``asyncio.run`` runs there;
        the handler sits at module level in the ``__main__`` block. The handler must reach
        the end of the function (no loop around it that goes on, no later statement that
        exits or raises) and a ``return`` must give None (``sys.exit(main())`` with
        ``return 1`` exits 1). Whether Ctrl+C reaches the handler at all is the caller's
        question: since Python 3.11 ``asyncio.run`` cancels its main task on SIGINT instead of
        raising ``KeyboardInterrupt`` inside it.
        """
        paths = self.exit_paths(handler)
        tr = self._try_of(handler)
        fn = self.enclosing_function(handler)
        in_loop = self._loop_between(handler, fn)
        returns_none = RETURN in paths.ways and self._returns_only_none(self._handler_body(handler))
        leaves = (FALL_THROUGH in paths.ways and not in_loop) or returns_none
        if not leaves or tr is None:
            return None
        final = self._finally_of(tr)
        if final is not None and not self.exit_paths(final).ways <= {FALL_THROUGH}:
            return None
        if FALL_THROUGH in paths.ways and not returns_none and self._later_code_exits(tr, fn):
            return None
        if fn is None:
            return "the `__main__` block" if self.in_main_guard(handler) and not self._later_code_exits(tr, None) \
                else None
        return self._entrypoint_of(fn)

    def _entrypoint_of(self, fn: FunctionInfo, depth: int = 0) -> Optional[str]:
        if fn.cls is not None or fn.scope is not None or depth > 2:
            return None
        for node, kind in self.references(fn):
            if kind == "call" and self._is_call(node) and self._ends_entrypoint(node):
                return f"`{fn.name}()`"
            if kind == "main" and self._is_call(node):
                # asyncio.run(fn()) in the __main__ block, or in a function that is itself an entrypoint
                if self._ends_entrypoint(node):
                    return f"`{fn.name}()` (the coroutine passed to `asyncio.run`)"
                runner = self.enclosing_function(node)
                if runner is not None and self._entrypoint_of(runner, depth + 1):
                    return f"`{fn.name}()` (the coroutine passed to `asyncio.run`)"
        return None

    # ------------------------------------------------------------------ tree reads of the entrypoint questions
    def _try_of(self, handler: cst.CSTNode) -> Optional[cst.CSTNode]:
        """The ``try`` statement of ``handler``, or None."""
        tr = self.parent(handler)
        return tr if isinstance(tr, (cst.Try, cst.TryStar)) else None

    @staticmethod
    def _finally_of(tr: Union[cst.Try, cst.TryStar]) -> Optional[cst.Finally]:
        """What ``exit_paths`` takes for the ``finally`` of ``tr`` (None: it has none)."""
        return tr.finalbody

    @staticmethod
    def _handler_body(handler: cst.CSTNode) -> cst.CSTNode:
        return handler.body

    def _loop_between(self, node: cst.CSTNode, fn: Optional[FunctionInfo]) -> bool:
        return _loop_between(self, node, fn)

    @staticmethod
    def _returns_only_none(body: cst.CSTNode) -> bool:
        return _returns_only_none(body)

    def _later_code_exits(self, stmt: cst.CSTNode, fn: Optional[FunctionInfo]) -> bool:
        return _later_code_exits(self, stmt, fn)

    @staticmethod
    def _is_call(node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call)

    def _ends_entrypoint(self, call: cst.Call) -> bool:
        """``call`` is a statement of the ``__main__`` block (``main()`` or
        ``sys.exit(main())`` / ``asyncio.run(main())`` wrapped in an exit), with nothing after
        it in the block that exits or raises."""
        if not self.in_main_guard(call) or self.enclosing_function(call) is not None:
            return False
        stmt = self.enclosing_statement(call)
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return False
        small = stmt.body[0]
        value = small.value if isinstance(small, cst.Expr) else None
        if value is not call:
            # sys.exit(main()): the return value becomes the status (None -> 0)
            if not (isinstance(value, cst.Call) and self.call_name(value) == "sys.exit"
                    and len(value.args) == 1 and value.args[0].value is call):
                return False
        return not _later_code_exits(self, stmt, None)


# ---------------------------------------------------------------------- computation


def paths_of(walker: "_WalkerBase", body: object, bound: Optional[str], hands_on: Callable[[], bool],
             later: Callable[[], bool], yields: Callable[[], Sequence]) -> ExitPaths:
    """The ``ExitPaths`` of a block whose statements are ``body``, on either tree: ``walker``
    walks them; ``hands_on``/``later``/``yields`` read the tree (called only when needed)."""
    ways, falls = walker.block(body, loop_depth=0)
    if falls:
        ways = ways | {FALL_THROUGH}
    handed = bound is not None and hands_on()
    reraised = bound is not None and handed and later()
    return ExitPaths(frozenset(ways), walker.swallowing_finally, reraised, handed, tuple(walker.exits),
                     tuple(walker.leaves), tuple(yields()))


def _compute(facts: "ModuleFacts", block: _Block) -> ExitPaths:
    bound = None
    if isinstance(block, (cst.ExceptHandler, cst.ExceptStarHandler)) and block.name is not None \
            and isinstance(block.name.name, cst.Name):
        bound = block.name.name.value
    return paths_of(_Walker(facts, bound), block.body, bound,
                    lambda: _uses_name(block.body, bound, skip_raise=True),
                    lambda: _reraised_later(facts, block, bound), lambda: _yields(block.body))


#: qualified names of handler types that catch a new cancellation or an interrupt
_CATCH_ALL = frozenset({"builtins.BaseException", "asyncio.CancelledError", "asyncio.exceptions.CancelledError",
                        "concurrent.futures.CancelledError"})


def catches_everything(names: Sequence[tuple[str, Optional[str]]]) -> bool:
    """A typed nested handler catches everything: one of its types (each given as its qualified
    name or "", and for a name or an attribute its last word, else None) is BaseException or a
    cancellation, or is unresolved and spelled so."""
    for name, last in names:
        if name in _CATCH_ALL:
            return True
        if name == "" and last in ("BaseException", "CancelledError"):
            return True
    return False


class _WalkerBase:
    """Abstract interpretation over statements: the ways out, and whether a block can fall
    off its end. The decisions, on either tree; a subclass reads its tree (``block``,
    ``statement``: which kind of statement, its parts)."""

    def __init__(self, facts, bound: Optional[str]) -> None:
        self.facts = facts
        self.bound = bound
        #: the first nested ``finally`` whose ``return``/``break``/``continue`` swallows
        #: (libcst: its ``Finally``; ast: its ``Try``)
        self.swallowing_finally: Optional[object] = None
        self.exits: list = []
        self.leaves: list[tuple[object, str]] = []
        #: nested handlers being walked, innermost last: (bound name, catches everything)
        self.nested: list[tuple[Optional[str], bool]] = []
        #: > 0 inside the body of a nested ``try`` with handlers (a raise there may be caught)
        self.guarded = 0

    def block(self, suite, loop_depth: int) -> tuple[set[str], bool]:
        raise NotImplementedError

    def statement(self, st, loop_depth: int) -> tuple[set[str], bool]:
        raise NotImplementedError

    def statements(self, stmts: Sequence, loop_depth: int) -> tuple[set[str], bool]:
        ways: set[str] = set()
        for st in stmts:
            w, falls = self.statement(st, loop_depth)
            ways |= w
            if not falls:
                return ways, False
        return ways, True

    # ------------------------------------------------------------------ simple statements
    def exit_here(self, node) -> set[str]:
        self.exits.append(node)
        return {EXIT}

    def raise_here(self, node, plain: bool, name: Optional[str]) -> set[str]:
        """A ``raise`` that is no exit: ``plain`` when its exception is absent or a name
        (``name``: that name, None when absent)."""
        way = self._raise_way(plain, name)
        if way == RAISE_OTHER and not self.guarded:
            self.leaves.append((node, RAISE_OTHER))
        return {way}

    def leave_here(self, node, way: str, loop_depth: int) -> set[str]:
        """A ``return`` (``RETURN``), ``break`` or ``continue``: a ``break``/``continue`` of a
        loop inside the block stays in it."""
        if way != RETURN and loop_depth:
            return set()
        self.leaves.append((node, way))
        return {way}

    def _raise_way(self, plain: bool, name: Optional[str]) -> str:
        """RERAISE for a bare ``raise`` / ``raise e`` of the caught exception; in a nested
        handler, a bare ``raise`` or ``raise f`` of its own name re-raises what that handler
        caught: RERAISE when it catches everything (a new cancellation, an interrupt may be
        what it holds), else RAISE_OTHER; anything else is RAISE_OTHER."""
        if not plain:
            return RAISE_OTHER
        for bound, broad in reversed(self.nested):
            if name is None or name == bound:
                return RERAISE if broad else RAISE_OTHER
        if name is None or name == self.bound:
            return RERAISE
        return RAISE_OTHER

    # ------------------------------------------------------------------ compound statements
    def if_statement(self, body, orelse, elif_: bool, loop_depth: int) -> tuple[set[str], bool]:
        """``orelse``: None, the ``elif`` statement (``elif_``) or the ``else`` block."""
        ways, falls = self.block(body, loop_depth)
        if orelse is None:
            return ways, True
        w, f = self.statement(orelse, loop_depth) if elif_ else self.block(orelse, loop_depth)
        return ways | w, falls or f

    def loop(self, body, orelse, forever: bool, runs: bool, breaks: bool, continues: Callable[[], bool],
             loop_depth: int) -> tuple[set[str], bool]:
        """A loop's body may run no time (``for`` over anything but a non-empty literal,
        ``while`` with any test but a true constant): a ``raise`` in it covers no path by
        itself. Its ``else`` (``orelse``, None: none) runs when it ends without ``break``.
        ``forever``: a ``while`` with a true constant (it ends only by ``break``); ``runs``: a
        ``for`` over a non-empty literal; ``breaks``: a ``break`` of this loop;
        ``continues()``: a ``continue`` of this loop."""
        ways, body_falls = self.block(body, loop_depth + 1)
        # the loop can end by running out: its body may not run, may fall off its end or continue
        ends = not forever and (not runs or body_falls or continues())
        if orelse is not None and ends:
            w, else_falls = self.block(orelse, loop_depth)
            ways |= w
            return ways, else_falls or breaks
        return ways, ends or breaks

    def match(self, cases: Sequence[tuple[object, bool]], loop_depth: int) -> tuple[set[str], bool]:
        """``cases``: (body, irrefutable). No case may match unless one is irrefutable
        (``case _:``, ``case name:``, no guard)."""
        ways: set[str] = set()
        falls = not any(irrefutable for _, irrefutable in cases)
        for body, _ in cases:
            w, f = self.block(body, loop_depth)
            ways |= w
            falls = falls or f
        return ways, falls

    def try_statement(self, body, handlers: Sequence[tuple[object, Optional[str], Callable[[], bool]]], orelse,
                      finalbody, finally_node, loop_depth: int) -> tuple[set[str], bool]:
        """``handlers``: (body, bound name, catches everything?); ``orelse``/``finalbody``: the
        blocks or None; ``finally_node``: what ``swallowing_finally`` names."""
        mark = len(self.leaves)
        self.guarded += bool(handlers)
        try:
            ways, falls = self.block(body, loop_depth)
        finally:
            self.guarded -= bool(handlers)
        for h_body, bound, broad in handlers:
            self.nested.append((bound, broad()))
            try:
                w, f = self.block(h_body, loop_depth)
            finally:
                self.nested.pop()
            ways |= w
            falls = falls or f
        if orelse is not None:
            w, f = self.block(orelse, loop_depth)
            ways |= w
            falls = falls or f
        if finalbody is None:
            return ways, falls
        outer = self.leaves[mark:]
        del self.leaves[mark:]
        fin_ways, fin_falls = self.block(finalbody, loop_depth)
        if fin_ways & {RETURN, BREAK, CONTINUE} and self.swallowing_finally is None:
            self.swallowing_finally = finally_node
        if not fin_falls:
            # the finally always leaves by itself: whatever the body raised is dropped
            return fin_ways, False
        self.leaves[mark:mark] = outer
        return ways | fin_ways, falls


class _Walker(_WalkerBase):
    """``_WalkerBase`` on libcst."""

    def block(self, suite: cst.BaseSuite, loop_depth: int) -> tuple[set[str], bool]:
        if isinstance(suite, cst.SimpleStatementSuite):
            return self.smalls(suite.body, loop_depth)
        return self.statements(suite.body, loop_depth)

    def smalls(self, smalls: Sequence[cst.BaseSmallStatement], loop_depth: int) -> tuple[set[str], bool]:
        ways: set[str] = set()
        for small in smalls:
            w = self.small(small, loop_depth)
            if w is not None:
                return ways | w, False
        return ways, True

    def small(self, small: cst.BaseSmallStatement, loop_depth: int) -> Optional[set[str]]:
        """The ways out when ``small`` ends the block, else None (control goes on)."""
        if isinstance(small, cst.Raise):
            if self.facts.is_exit(small):
                return self.exit_here(small)
            exc = small.exc
            return self.raise_here(small, exc is None or isinstance(exc, cst.Name),
                                   exc.value if isinstance(exc, cst.Name) else None)
        if isinstance(small, cst.Return):
            return self.leave_here(small, RETURN, loop_depth)
        if isinstance(small, cst.Break):
            return self.leave_here(small, BREAK, loop_depth)
        if isinstance(small, cst.Continue):
            return self.leave_here(small, CONTINUE, loop_depth)
        if isinstance(small, cst.Expr):
            value = small.value
            if isinstance(value, cst.Await):
                value = value.expression
            if isinstance(value, cst.Call) and self.facts.is_exit(value):
                return self.exit_here(value)
        return None

    def _catches_everything(self, handler: Union[cst.ExceptHandler, cst.ExceptStarHandler]) -> bool:
        exprs = self.facts.caught_types(handler)
        if exprs is None:
            return True
        names = []
        for e in exprs:
            name = self.facts.qualified_name(e, handler) or ""
            last = e.value if isinstance(e, cst.Name) else e.attr.value if isinstance(e, cst.Attribute) else None
            names.append((name, last))
        return catches_everything(names)

    def statement(self, st: cst.BaseStatement, loop_depth: int) -> tuple[set[str], bool]:
        if isinstance(st, cst.SimpleStatementLine):
            return self.smalls(st.body, loop_depth)
        if isinstance(st, cst.If):
            orelse = st.orelse
            if isinstance(orelse, cst.If):
                return self.if_statement(st.body, orelse, True, loop_depth)
            return self.if_statement(st.body, None if orelse is None else orelse.body, False, loop_depth)
        if isinstance(st, (cst.For, cst.While)):
            return self.loop(st.body, None if st.orelse is None else st.orelse.body,
                             isinstance(st, cst.While) and _is_true(st.test),
                             isinstance(st, cst.For) and _non_empty(st.iter), _breaks(st.body),
                             lambda: _continues(st.body), loop_depth)
        if isinstance(st, (cst.Try, cst.TryStar)):
            handlers = [(h.body, h.name.name.value if h.name is not None and isinstance(h.name.name, cst.Name)
                         else None, lambda h=h: self._catches_everything(h)) for h in st.handlers]
            return self.try_statement(st.body, handlers, None if st.orelse is None else st.orelse.body,
                                      None if st.finalbody is None else st.finalbody.body, st.finalbody, loop_depth)
        if isinstance(st, cst.With):
            return self.block(st.body, loop_depth)
        if isinstance(st, cst.Match):
            return self.match([(case.body, _irrefutable(case)) for case in st.cases], loop_depth)
        return set(), True  # def, class: defining runs nothing


def _scan(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)`` for these read-only scans, without libcst rebuilding every node
    it passes (``traversal.walk``: the same hooks in the same order, layout skipped when no
    hook names it)."""
    from ..traversal import walk  # local: traversal imports rule, which names facts

    walk(node, visitor)


def _is_true(expr: cst.BaseExpression) -> bool:
    return (isinstance(expr, cst.Name) and expr.value == "True") or (
        isinstance(expr, cst.Integer) and expr.evaluated_value != 0)


def _breaks(body: cst.CSTNode) -> bool:
    """A ``break`` that leaves this loop (not one of a nested loop)."""
    return _jumps(body, cst.Break)


def _continues(body: cst.CSTNode) -> bool:
    """A ``continue`` of this loop (not one of a nested loop)."""
    return _jumps(body, cst.Continue)


def _jumps(body: cst.CSTNode, kind: type) -> bool:
    """A statement of ``kind`` (``Break``/``Continue``) in ``body`` outside nested loops and defs."""
    found = [False]

    class _Scan(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, kind):
                found[0] = True
            return not isinstance(node, (cst.For, cst.While, cst.FunctionDef))

    _scan(body, _Scan())
    return found[0]


def _non_empty(expr: cst.BaseExpression) -> bool:
    """A ``for`` iterable that surely has an element: a non-empty literal list, tuple, set,
    dict or string, or ``range(n)`` with a positive literal ``n``."""
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return any(not isinstance(el, cst.StarredElement) or _non_empty(el.value) for el in expr.elements)
    if isinstance(expr, cst.Dict):
        return any(isinstance(el, cst.DictElement) or _non_empty(el.value) for el in expr.elements)
    if isinstance(expr, cst.SimpleString):
        return len(expr.raw_value) > 0
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "range" \
            and len(expr.args) == 1 and isinstance(expr.args[0].value, cst.Integer):
        return expr.args[0].value.evaluated_value > 0
    return False


def _irrefutable(case: cst.MatchCase) -> bool:
    pattern = case.pattern
    while isinstance(pattern, cst.MatchAs) and pattern.pattern is not None:
        pattern = pattern.pattern
    return case.guard is None and isinstance(pattern, cst.MatchAs) and pattern.pattern is None


def _yields(body: cst.CSTNode) -> list[cst.CSTNode]:
    """``yield`` / ``yield from`` in ``body``, not in nested defs, lambdas or classes."""
    found: list[cst.CSTNode] = []

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_ClassDef(self, n: cst.ClassDef) -> bool:
            return False

        def visit_Yield(self, n: cst.Yield) -> None:
            found.append(n)

    _scan(body, _Scan())
    return found


def _status_of_args(args: list[cst.Arg], default: object) -> object:
    if not args:
        return default
    if len(args) > 1:
        return STATUS_UNKNOWN
    return literal_status(args[0].value)


def literal_status(expr: cst.BaseExpression) -> object:
    """The exit status an argument gives: 0, "nonzero" or None (unknown)."""
    if isinstance(expr, cst.Integer):
        return STATUS_ZERO if expr.evaluated_value == 0 else STATUS_NONZERO
    if isinstance(expr, cst.Name):
        if expr.value in ("None", "False", "EXIT_SUCCESS"):
            return STATUS_ZERO
        if expr.value in ("True", "EXIT_FAILURE"):
            return STATUS_NONZERO
        return STATUS_UNKNOWN
    if isinstance(expr, cst.Attribute):
        if expr.attr.value in ("EX_OK", "EXIT_SUCCESS"):
            return STATUS_ZERO
        if expr.attr.value == "EXIT_FAILURE":
            return STATUS_NONZERO
        return STATUS_UNKNOWN
    if isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return STATUS_NONZERO  # sys.exit("message") prints it and exits 1
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        # 128 + signum
        if isinstance(expr.left, cst.Integer) and expr.left.evaluated_value > 0:
            return STATUS_NONZERO
    return STATUS_UNKNOWN


def _signal_name(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    if isinstance(expr, cst.Name):
        return expr.value
    return None


def _uses_name(node: cst.CSTNode, name: str, skip_raise: bool = False) -> bool:
    """``name`` appears in ``node``; with ``skip_raise``, not counting ``raise`` statements
    (``raise e``, ``raise X from e`` raise it, they do not hand it on)."""
    found = [False]

    class _Scan(cst.CSTVisitor):
        def visit_Raise(self, n: cst.Raise) -> bool:
            return not skip_raise

        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                found[0] = True

    _scan(node, _Scan())
    return found[0]


def _stores(handler: cst.CSTNode, bound: str) -> set[str]:
    """Where the handler keeps the bound exception: ``err = e`` -> ``err``, ``self.err = e``
    -> ``self.err``, ``errors.append(e)`` -> ``errors``."""
    code = cst.Module([]).code_for_node
    out: set[str] = set()

    class _Scan(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            if _uses_name(n.value, bound):
                for t in n.targets:
                    if isinstance(t.target, (cst.Name, cst.Attribute)):
                        out.add(code(t.target))
                    elif isinstance(t.target, cst.Subscript):
                        out.add(code(t.target.value))

        def visit_Call(self, n: cst.Call) -> None:
            if isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "add", "extend", "put_nowait") \
                    and any(_uses_name(a.value, bound) for a in n.args):
                out.add(code(n.func.value))

    _scan(handler, _Scan())
    return out


def _reraised_later(facts: "ModuleFacts", handler: cst.CSTNode, bound: str) -> bool:
    stored = _stores(handler, bound)
    if not stored:
        return False
    fn = facts.enclosing_function(handler)
    region = fn.node if fn is not None else facts.module
    code = cst.Module([]).code_for_node
    found = [False]

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return n is region

        def visit_Raise(self, n: cst.Raise) -> None:
            if n.exc is None or facts.is_ancestor(handler, n):
                return
            text = code(n.exc)
            if any(text == s or text.startswith((s + ".", s + "[", s + "(")) or f"({s}" in text or f" {s}" in text
                   for s in stored):
                found[0] = True

    _scan(region, _Scan())
    return found[0]


def _returns_only_none(body: cst.CSTNode) -> bool:
    """Every ``return`` in ``body`` (not in nested defs) returns None."""
    ok = [True]

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_Return(self, n: cst.Return) -> None:
            v = n.value
            if v is not None and not (isinstance(v, cst.Name) and v.value == "None"):
                ok[0] = False

    _scan(body, _Scan())
    return ok[0]


def _loop_between(facts: "ModuleFacts", node: cst.CSTNode, fn: Optional[FunctionInfo]) -> bool:
    stop = fn.node if fn is not None else None
    for anc in facts.ancestors(node):
        if anc is stop or isinstance(anc, (cst.FunctionDef, cst.ClassDef)):
            return False
        if isinstance(anc, (cst.For, cst.While)):
            return True
    return False


def _later_code_exits(facts: "ModuleFacts", stmt: cst.CSTNode, fn: Optional[FunctionInfo]) -> bool:
    """Some statement after ``stmt`` (in its block and the enclosing blocks up to the
    function, or the module) raises or exits: the normal exit does not end the process with 0."""
    stop = fn.node if fn is not None else None
    walker = _Walker(facts, None)
    cur: cst.CSTNode = stmt
    while True:
        block = facts.parent(cur)
        if block is None or block is stop:
            return False
        if isinstance(block, (cst.IndentedBlock, cst.Module)):
            siblings = list(block.body)
            idx = next((i for i, s in enumerate(siblings) if s is cur), None)
            if idx is not None:
                ways, falls = walker.statements(siblings[idx + 1:], loop_depth=0)
                if ways & PROPAGATING or ways & {RETURN}:
                    return True
                if not falls:
                    return True
        if isinstance(block, (cst.FunctionDef, cst.ClassDef)):
            return False
        cur = block

