from __future__ import annotations

import ast
from typing import Optional, Union

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.prefilter import words as C
from shutdown_lint.facts.exit_paths import (
    BREAK, CONTINUE, FALL_THROUGH, PROPAGATING, RAISE_OTHER, RETURN, SWALLOWING, _breaks, _is_true, _returns_only_none,
    _Walker,
)
from shutdown_lint.ast_engine.check import AstCheck, FixPlan
from shutdown_lint.ast_engine.exit_paths import AstWalker, breaks, exit_paths_of, is_true, returns_only_none, unnamed_arguments
from shutdown_lint.rule import AddImport, Fix, Invalid, Replace, Rule
from shutdown_lint.traversal import walk
from shutdown_lint.prefilter.ast_tree import DEFS, TRYS, walk_within

_CANCELLED = frozenset({"asyncio.CancelledError", "asyncio.exceptions.CancelledError"})
_BROAD = frozenset({"builtins.BaseException"})
#: Wrappers whose argument is an existing task/future when it is a plain name.
_AWAIT_WRAPPERS = frozenset({"asyncio.gather", "asyncio.wait", "asyncio.wait_for", "asyncio.shield"})

_Handler = Union["cst.ExceptHandler", "cst.ExceptStarHandler"]  # strings: libcst is imported on first use (lazy_libcst)


class _Decide:
    """What SHD104 decides, on either tree (``SwallowedCancellation``: libcst; ``_Ast``: ``ast``).
    The handler's types come from the facts (``caught_types``: None when bare). The tree
    answers: ``_is_tuple``, ``_is_star``, ``_try_of``, ``_try_awaits``, ``_paths`` (the
    exit-path facts), ``_describe``, ``_names_cancellation_of``, ``_books``, ``_cancel_then_await``,
    ``_returns_value_last``, ``_terminal_way_of``, ``_returns_only_none_of``,
    ``_falls_into_raise``, ``_loop_of``, ``_in_loop``, ``_climb``, ``_is_true_loop``,
    ``_has_else``, ``_raises_a_cancellation``, and builds the fixes (``_make_fix``,
    ``_make_narrow_fix``)."""

    def _check(self, handler) -> None:
        fn = self.facts.enclosing_function(handler)
        if fn is None or not fn.is_async:
            return
        kind = self._catch_kind(handler)
        if kind is None:
            return
        tr = self._try_of(handler)
        if tr is None or not self._try_awaits(tr):
            return
        if self._unreachable_for_cancel(tr, handler):
            return  # an earlier handler of the same try catches cancellation (or everything)
        paths = self._paths(handler)
        what = self._describe(handler)
        anchor = self._anchor(handler)
        if paths.swallowing_finally is not None and paths.ways & SWALLOWING:
            # `except CancelledError: try: ... raise finally: return`: the return wins
            self.report(
                anchor,
                f"{what} in a coroutine leaves through a `return`/`break`/`continue` in a `finally`, "
                "which swallows the cancellation and anything raised before it: the task returns normally",
            )
            return
        if self._books(handler):
            return
        if paths.reraised_later or (kind != "cancelled" and paths.hands_on):
            return  # `except BaseException as e: errors.append(e)` / `saved = e` ... `raise saved`
        if self._cancel_then_await(fn, tr):
            if kind == "cancelled" or not self._catches_everything(handler) or not paths.ways & SWALLOWING:
                return  # the task we cancelled ourselves: its CancelledError is expected
            self.report(
                anchor,
                f"{what} around awaiting a task this coroutine cancelled swallows more than that task's "
                "cancellation: the caller's own cancellation, KeyboardInterrupt and SystemExit stop here too",
                fix=self._narrow_fix(handler) if self._raise_skips_nothing(handler, paths.ways) else None,
            )
            return
        swallowing = paths.ways & SWALLOWING or not paths.ways  # (no way out: an endless loop)
        if swallowing and not self._falls_into_raise(handler, tr, paths):
            some = " on some paths" if paths.ways & PROPAGATING else ""
            self.report(
                anchor,
                f"{what} in a coroutine swallows cancellation{some}: the task keeps running or returns normally, "
                "so its canceller, timeouts and TaskGroup/asyncio.run shutdown lose the cancel",
                fix=None if some else self._fix(handler, kind, paths),
            )
            line = self._line(handler)
            exits = [(node, way) for node, way in paths.leaves if way in SWALLOWING]
            # each exit is pointed at when the handler finding alone does not say where the
            # cancellation is lost: the handler has several ways out (some re-raise, or more
            # than one leaves); a handler whose one way out is one `return` gets one finding
            if len(paths.ways) > 1 or len(exits) > 1:
                for node, way in exits:
                    if self._line(node) != line:
                        word = {RETURN: "return", BREAK: "break", CONTINUE: "continue"}[way]
                        self.report(
                            node,
                            f"`{word}` leaves the {what} handler (line {line}) without re-raising: "
                            "the cancellation stops here",
                        )
        for node, way in paths.leaves:
            if way == RAISE_OTHER and not self._raises_a_cancellation(node):
                self.report(
                    node,
                    f"a different exception is raised in place of the cancellation the {what} handler caught: "
                    "the canceller, `wait_for`/`timeout()` and a TaskGroup see an error, not a cancelled task",
                )
        if not swallowing:  # (a handler reported for swallowing already says what its yield does)
            for node in paths.yields:
                self.report(
                    node,
                    f"`yield` in the {what} handler: the cancelled generator hands out a value and waits for "
                    "the consumer instead of stopping",
                )

    def _line(self, node) -> int:
        return self.facts.line_of(node)

    def _anchor(self, handler):
        """The handler, or for a tuple spread over lines the element that catches the cancellation."""
        if self._is_tuple(handler):
            line = self._line(handler)
            for e in self.facts.caught_types(handler):
                name = self.facts.qualified_name(e, handler)
                if name in _BROAD or name in _CANCELLED:
                    return e if self._line(e) != line else handler
        return handler

    def _unreachable_for_cancel(self, tr, handler) -> bool:
        """An earlier handler of the same ``try`` catches cancellation: this one never sees it
        (a bare ``except:`` after ``except BaseException:`` never runs at all)."""
        for h in tr.handlers:
            if h is handler:
                return False
            if self._catch_kind(h) is not None or self._names_cancellation_of(h):
                return True
        return False

    def _catch_kind(self, handler) -> Optional[str]:
        """'cancelled' (only CancelledError), 'broad' (BaseException or a tuple with
        CancelledError), 'bare' or None (does not catch cancellation)."""
        exprs = self.facts.caught_types(handler)
        if exprs is None:
            return "bare"
        names = [self.facts.qualified_name(e, handler) for e in exprs]
        if any(n in _BROAD for n in names):
            return "broad"
        if any(n in _CANCELLED for n in names):
            return "cancelled" if len(names) == 1 else "broad"
        return None

    def _catches_everything(self, handler) -> bool:
        """Bare ``except:`` or ``BaseException`` (alone or in a tuple)."""
        exprs = self.facts.caught_types(handler)
        if exprs is None:
            return True
        return any(self.facts.qualified_name(e, handler) in _BROAD for e in exprs)

    # ------------------------------------------------------------------ fix
    def _fix(self, handler, kind: str, paths):
        """Re-raise only when this task itself is being cancelled (``Task.cancelling()``, 3.11+):
        a ``CancelledError`` that comes out of awaiting *another* task or future that someone
        else cancelled (the current task was not) takes the handler's own way as before. A
        ``CancelledError`` handler gets the check before its last way out (replacing a
        trailing ``pass``); a broad handler gets it as its first statement."""
        if not self.settings.target_at_least("py311") or self._is_star(handler):
            return None
        if kind == "cancelled":
            if self._returns_value_last(handler) or not self._raise_skips_nothing(
                    handler, {self._terminal_way_of(handler)}, False):
                return None
            message = "Re-raise the cancellation when this task is being cancelled"
        else:
            if not self._raise_skips_nothing(handler, paths.ways):
                return None
            message = "Re-raise first in the handler when this task is being cancelled"
        return self._make_fix(handler, kind, message)

    def _narrow_fix(self, handler):
        """``except BaseException: pass`` -> ``except (asyncio.CancelledError, Exception):`` that
        re-raises when this task itself is being cancelled: the awaited task's own cancellation
        and failure are still ignored; KeyboardInterrupt, SystemExit and the caller's
        cancellation pass. ``Task.cancelling()`` needs Python 3.11."""
        if self._is_star(handler) or self._is_tuple(handler):
            return None
        if not self.settings.target_at_least("py311"):
            return None
        return self._make_narrow_fix(handler, _NARROW_MESSAGE)

    # ------------------------------------------------------------------ where control goes next
    def _raise_skips_nothing(self, handler, ways, values_ok: bool = True) -> bool:
        """Turning each of ``ways`` out of ``handler`` (falling through, ``return``, ``break``,
        ``continue``) into a ``raise`` is exact: on that path the original ran no more
        statements of the function, apart from the rest of a loop that the swallowed
        cancellation kept going (the hazard itself), and no handler of the function would
        catch the raise. Unless ``values_ok``, a ``return`` of a value is not exact either: a
        ``CancelledError`` handler that returns one chose it for the cancellation."""
        fn = self.facts.enclosing_function(handler)
        tr = self._try_of(handler)
        if fn is None or tr is None:
            return False
        for way in set(ways) & SWALLOWING:
            if way == RETURN:
                if not (values_ok or self._returns_only_none_of(handler)) or not self._climb(tr, fn.node, siblings=False):
                    return False
            elif way == FALL_THROUGH:
                if not self._climb(tr, fn.node, siblings=True):
                    return False
            else:
                loop = self._loop_of(handler, fn.node)
                if loop is None:
                    return False
                if way == BREAK:
                    if not self._climb(loop, fn.node, siblings=True):
                        return False
                elif not self._climb_from_loop(loop, fn.node):  # CONTINUE: the loop goes round again
                    return False
        return True

    def _climb_from_loop(self, loop, stop) -> bool:
        """A loop that went round again finishes: its ``else`` and what follows run (nothing
        follows an endless ``while True`` without a ``break``)."""
        if self._is_true_loop(loop):
            return self._climb(loop, stop, siblings=False)
        if self._has_else(loop) and not self._in_loop(loop, stop):
            return False
        return self._climb(loop, stop, siblings=True)


_NARROW_MESSAGE = "Catch `(asyncio.CancelledError, Exception)` and re-raise when this task itself is cancelled"


# ------------------------------------------------------------------ detection on ast
class _Ast(_Decide, AstCheck):
    """SHD104 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers
    read from ``ast``: the exit paths of ``ast_engine.exit_paths``, blocks as statement lists
    (no ``Else``/``Finally`` nodes: which list of its statement holds a node; an ``elif`` is an
    ``If`` alone in an ``orelse``), an ``except*`` handler by its ``TryStar``, a starred type
    of a tuple by its value, the types' text as libcst's (``code_for_node``)."""

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._check(node)

    @property
    def _exits(self):
        return exit_paths_of(self.facts)

    @staticmethod
    def _is_tuple(handler: ast.ExceptHandler) -> bool:
        return type(handler.type) is ast.Tuple

    def _is_star(self, handler: ast.ExceptHandler) -> bool:
        return type(self.facts.parent(handler)) is not ast.Try

    def _try_of(self, handler: ast.ExceptHandler):
        tr = self.facts.parent(handler)
        return tr if type(tr) in _AST_TRYS else None

    @staticmethod
    def _try_awaits(tr) -> bool:
        return _suspends(tr.body)

    def _paths(self, handler: ast.ExceptHandler):
        return self._exits.exit_paths(handler)

    def _describe(self, handler: ast.ExceptHandler) -> str:
        exprs = self.facts.caught_types(handler)
        star = "*" if self._is_star(handler) else ""
        if exprs is None:
            return "bare `except:`"
        code = self.facts.code_for_node
        if self._is_tuple(handler):
            text = "(" + ", ".join(code(e) for e in exprs) + ")"
        else:
            text = code(handler.type)
        return f"`except{star} {text}`"

    def _names_cancellation_of(self, handler: ast.ExceptHandler) -> bool:
        exprs = self.facts.caught_types(handler)
        return exprs is not None and any(_cancel_word(self.facts.code_for_node(e)) for e in exprs)

    @staticmethod
    def _raises_a_cancellation(node) -> bool:
        if type(node) is not ast.Raise or node.exc is None:
            return False
        exc = node.exc.func if type(node.exc) is ast.Call else node.exc
        if type(exc) is ast.Attribute:
            return _cancel_word(exc.attr)
        return type(exc) is ast.Name and _cancel_word(exc.id)

    @staticmethod
    def _books(handler: ast.ExceptHandler) -> bool:
        return _books(handler)

    def _cancel_then_await(self, fn, tr) -> bool:
        if not any(type(c.func) is ast.Attribute and c.func.attr == "cancel" for c in fn.calls):
            return False
        for n in walk_within(tr.body, _SKIP):
            if type(n) is not ast.Await:
                continue
            expr = n.value
            if type(expr) is ast.Call and self.facts.call_name(expr) in _AWAIT_WRAPPERS:
                if any(_is_ast_ref(v) for v in unnamed_arguments(expr)):
                    return True
            elif _is_ast_ref(expr):
                return True
        return False

    @staticmethod
    def _returns_value_last(handler: ast.ExceptHandler) -> bool:
        last = handler.body[-1]
        return type(last) is ast.Return and last.value is not None

    @staticmethod
    def _terminal_way_of(handler: ast.ExceptHandler) -> str:
        return {ast.Return: RETURN, ast.Break: BREAK, ast.Continue: CONTINUE}.get(type(handler.body[-1]), FALL_THROUGH)

    @staticmethod
    def _returns_only_none_of(handler: ast.ExceptHandler) -> bool:
        return returns_only_none(handler.body)

    @staticmethod
    def _make_fix(handler, kind: str, message: str) -> FixPlan:
        return FixPlan.unsafe(message)

    @staticmethod
    def _make_narrow_fix(handler, message: str) -> FixPlan:
        return FixPlan.unsafe(message)

    # ------------------------------------------------------------------ where control goes next (ast)
    def _holder(self, cur: ast.AST):
        """(the statement whose block holds ``cur``, that block's field name, the block), or
        (the parent, None, None) when ``cur`` is no statement of a block (a handler of its try)."""
        owner = self.facts.parent(cur)
        if owner is not None:
            for field in ("body", "orelse", "finalbody"):
                block = getattr(owner, field, None)
                if type(block) is list and any(s is cur for s in block):
                    return owner, field, block
        return owner, None, None

    def _falls_into_raise(self, handler: ast.ExceptHandler, tr, paths) -> bool:
        if paths.ways != {FALL_THROUGH} or paths.swallowing_finally is not None:
            return False
        walker = AstWalker(self._exits, None)
        if tr.finalbody:
            ways, falls = walker.block(tr.finalbody, 0)
            if ways - PROPAGATING:
                return False
            if not falls:
                return bool(ways)
        fn = self.facts.enclosing_function(handler)
        stop = fn.node if fn is not None else None
        cur = tr
        while True:
            owner, field, body = self._holder(cur)
            if body is None or type(owner) is ast.Module:
                return False
            idx = next(i for i, st in enumerate(body) if st is cur)
            ways, falls = walker.statements(body[idx + 1:], 0)
            if ways - PROPAGATING:
                return False
            if not falls:
                return bool(ways)  # (an endless loop with no raise would keep the task running)
            if owner is stop:
                return False
            # an ``elif`` is an ``If`` alone in the ``orelse`` of the ``if`` above: no statement after
            # it there, so going on from it is going on from the top ``if`` (libcst's ``_top_if``)
            if type(owner) is not ast.If and (type(owner) not in (ast.With, ast.AsyncWith) or field != "body"):
                return False
            cur = owner

    def _loop_of(self, node: ast.AST, stop: ast.AST):
        for anc in self.facts.ancestors(node):
            if anc is stop or type(anc) in _AST_SCOPES:
                return None
            if type(anc) in _AST_LOOPS:
                return anc
        return None

    def _in_loop(self, node: ast.AST, stop: ast.AST) -> bool:
        return self._loop_of(node, stop) is not None

    def _in_loop_from(self, owner: ast.AST, stop: ast.AST) -> bool:
        """libcst's ``_in_loop(block)`` of a block of ``owner``: ``owner`` and its ancestors."""
        if owner is stop or type(owner) in _AST_SCOPES:
            return False
        return type(owner) in _AST_LOOPS or self._in_loop(owner, stop)

    @staticmethod
    def _is_true_loop(loop) -> bool:
        return type(loop) is ast.While and is_true(loop.test) and not breaks(loop.body)

    @staticmethod
    def _has_else(statement) -> bool:
        return bool(statement.orelse)

    def _climb(self, cur: ast.AST, stop: ast.AST, siblings: bool) -> bool:
        """``SwallowedCancellation._climb`` on ``ast``: the block holding ``cur`` is a field of its
        statement (libcst's ``Else``: an ``orelse``; ``Finally``: a ``finalbody``)."""
        while True:
            owner, field, body = self._holder(cur)
            if body is None or type(owner) is ast.Module:
                return False
            if siblings and body[-1] is not cur and not self._in_loop_from(owner, stop):
                return False
            if owner is stop:
                return True
            t = type(owner)
            if field == "orelse" and t is not ast.If:
                cur = owner  # a loop's or a try's else finished: after that statement
                continue
            if t is ast.If:
                cur = owner  # (an ``elif``: going on from it is going on from the ``if`` above)
            elif t in (ast.With, ast.AsyncWith):
                cur = owner  # its exit runs either way
            elif t in _AST_LOOPS:
                if self._is_true_loop(owner):
                    siblings = False  # the body goes round forever: nothing after it runs
                elif siblings and owner.orelse and not self._in_loop(owner, stop):
                    return False
                cur = owner
            elif t in _AST_TRYS and field == "body":
                # in the try's body: a raise there meets its handlers; a normal end runs its else
                if any(self._catch_kind(h) is not None for h in owner.handlers):
                    return False
                if siblings and owner.orelse and not self._in_loop(owner, stop):
                    return False
                cur = owner
            elif t is ast.ExceptHandler:
                cur = self.facts.parent(owner)  # from a handler: on after the try, raises leave it
            else:
                return False  # a finally, a match case, a class body: not followed


_AST_TRYS = frozenset({ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ())})
_AST_LOOPS = frozenset({ast.For, ast.AsyncFor, ast.While})
_AST_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda})


def _is_ast_ref(expr) -> bool:
    return type(expr) in (ast.Name, ast.Attribute, ast.Subscript)



class SwallowedCancellation(_Decide, Rule):
    """
    ## What it does
    Flags, in an `async def`, an `except asyncio.CancelledError:`, a bare `except:` or an
    `except BaseException:` handler (also inside a tuple) that does not propagate the
    cancellation on *every* way out, when the `try` body awaits something (only an `await`
    can deliver a cancellation). The message names the types the handler catches as written
    (`except (asyncio.CancelledError, KeyboardInterrupt)`).

    Every way out of the handler (from the shared exit-path facts) must re-raise what it
    caught or end the process: a `raise` on some branches only, only inside a loop that may
    run no time (a `for` over anything but a non-empty literal, a `while` with a test), in
    some `match` cases only, or after a `break`/`continue` leaves the other ways swallowing
    ("swallows cancellation on some paths"). When the handler has several ways out, each
    `return`/`break`/`continue` that loses the cancellation gets a finding of its own
    ("`return` leaves the ... handler"); a handler whose one way out is one `return` gets
    one finding. A handler that never leaves (an endless loop) is flagged too. Two more
    shapes have their own message:
    - a *different* exception raised in place of the cancellation (`raise
      StageFailed() from e`, or a nested handler's `raise g` of its own `ValueError`): the
      canceller, `wait_for` and a TaskGroup see an error, not a cancelled task. A new
      exception whose class name says "cancel" (`raise asyncio.CancelledError("...")`,
      `concurrent.futures.CancelledError`, a project's `RequestCancelledError`) propagates the
      cancellation and is not flagged;
    - a `yield` in a handler that otherwise re-raises (an async generator hands a value out
      and waits for its consumer instead of stopping).

    A handler whose `raise` sits in a `try` whose `finally` does `return` (or
    `break`/`continue`) is flagged, since that `return` swallows the cancellation.

    The "cancel a task, then await it" idiom (the function calls `.cancel()` and the `try`
    awaits an existing task or future, not a fresh coroutine call) is fine with
    `except CancelledError: pass`; with `except BaseException:` or a bare `except:` that
    swallows, it is flagged: that handler also stops the caller's own cancellation,
    `KeyboardInterrupt` and `SystemExit`.

    Not flagged: `except Exception:` (CancelledError is a BaseException); a handler that
    never runs for a cancellation, because an earlier handler of the same `try` catches it
    (`except BaseException:` before a bare `except:`, `except CancelledError:` before
    `except BaseException:`, anyio's `get_cancelled_exc_class()` or any type named "...Cancel...");
    deliberate cancellation bookkeeping (`uncancel()`, `cancelling()`); a handler whose
    only way out is falling off its end into code that raises on every path (a nested
    handler followed by the outer handler's bare `raise`); a nested `try` in the handler
    whose every way re-raises (flake8-async's ASYNC103/104 flag `try: raise e except
    ValueError: raise e except: raise e`, which re-raises on every path); a handler that
    records the exception and raises it later (`saved = e` ... `raise saved`), or a broad
    handler that hands it on (`except BaseException as e: errors.append(e)`, `convert(e)`),
    which is how frameworks collect and re-raise errors; code outside coroutines.

    Measured (`bench/compare_cancel_fixtures.py` on flake8-async's ASYNC103/104 fixtures
    rewritten as coroutines): 44 of 50 expected lines (88%), 46 of 50 counting a line whose
    handler is reported; the misses are the two deliberate differences above, so the issue's
    90% is not reached on purpose:
    - the nested all-paths re-raise (`except BaseException as e: try: raise e except
      ValueError: raise e except: raise e`), 4 lines (async103.py 135/141, async104.py
      30/36): every way out re-raises the caught cancellation; flake8-async's own fixture
      comment calls the shape safe in theory and unhandled by it;
    - the second line of a handler whose one way out is one `return` (`except BaseException:`
      / `return`), 2 lines (async104.py 96/187): flake8-async reports the `except` line
      (ASYNC103) and the `return` (ASYNC104), one hazard twice. Read on the ten code bases
      (issue 28 re-check at 3a3f17b): 19 of the 25 handlers SHD104 reports as swallowing have
      exactly this shape (one `return`/`break`/`continue`, always the handler's last
      statement, on a line of its own), so a second finding there would be a duplicate on
      19 of 25 real findings (the first measurement, with site-packages, counted 28). Moving
      the one finding to the `return` line instead gains no line (it loses the `except`
      line) and is less useful: the `except` line names what is caught, is where the fix
      edits and where `# noqa` goes. A handler with several ways out already gets a
      finding on each `return`/`break`/`continue` that loses the cancellation.
    On ten RL/agent code bases and this repository's venv site-packages (5178 + site-packages
    files) the every-path semantics added 5 findings and dropped 2 false alarms (filelock's
    saved-and-re-raised cancellation): 2 right (ray dashboard's uncancellable loop; autogen's
    `raise ValueError("Pip install was cancelled")`), 2 arguable (grpc turns the awaited
    interceptor task's cancellation, and with it the caller's own, into `InvalidStateError`),
    1 false alarm (anyio raises `ClosedResourceError` when the socket was closed under the
    cancelled read, by contract).

    ## Why is this bad?
    `task.cancel()` asks the task to stop by raising `CancelledError` at its current
    `await`. A handler that swallows it turns the request into a normal return: whoever
    cancelled sees the task finish as if nothing happened, `asyncio.timeout()` and
    `wait_for` no longer raise `TimeoutError` (the timeout is silently ignored), a
    `TaskGroup` or `asyncio.run` shutdown keeps waiting on a task that goes on running,
    and the caller's bookkeeping (releasing a lease or a sandbox slot "on cancellation")
    is skipped. In SkyRL's Harbor generator this is how cancelled trajectories kept
    their sandboxes.

    ## Example
    ```python
    import asyncio

    async def run_trial(sandbox):
        try:
            await sandbox.exec("pytest")
        except asyncio.CancelledError:
            log.info("trial cancelled")  # the cancellation stops here
    ```

    ## Use instead
    ```python
    import asyncio

    async def run_trial(sandbox):
        try:
            await sandbox.exec("pytest")
        except asyncio.CancelledError:
            log.info("trial cancelled")
            raise
    ```

    ## Fix safety
    Unsafe (a fix is safe only if the program does exactly what it did on every path where
    the hazard does not occur). Every fix re-raises only when the current task itself is
    being cancelled, `if asyncio.current_task().cancelling(): raise`, so it needs
    `--target-version py311` or later (`Task.cancelling()` is new in 3.11; below that no fix
    is offered). A `CancelledError` that comes out of awaiting *another* task or future that
    someone else cancelled (a job task, a future tied to a cancellation token), while the
    current task was not cancelled, takes the handler's own way as before; so does every
    path without a cancellation. When the current task is being cancelled, the task now ends
    with what the handler caught instead of returning or going on, which its awaiters see
    (`TimeoutError` from `wait_for`, a `TaskGroup` unwinding, a caller's `except
    CancelledError`); this includes an exception other than `CancelledError` that a broad
    handler catches while a cancellation of the task is pending, and a task whose earlier
    cancellation was swallowed without `uncancel()` (its count stays above zero).

    Shapes:
    - a `CancelledError` handler gets the check before its last way out (a trailing bare
      `return`, `break` or `continue` stays after it, a trailing `pass` is replaced, a
      handler that falls off its end gets it last); no fix when it ends in `return <value>`
      (a value chosen for the cancellation);
    - a bare `except:`, an `except BaseException:` or a tuple with `CancelledError` gets the
      check as its first statement, so other exceptions are handled as before (it reuses an
      `import asyncio as x` alias, or adds `import asyncio`); on the task's own cancellation
      the broad handler's body no longer runs;
    - in the cancel-then-await idiom a broad handler becomes `except
      (asyncio.CancelledError, Exception):` whose first statement is the check (the awaited
      task's own cancellation and failure are still ignored; `KeyboardInterrupt`,
      `SystemExit` and the caller's cancellation pass).

    Each is offered only where the `raise` skips nothing the cancelled run would have done:
    from each way out of the handler that the check's `raise` takes over on the task's own
    cancellation (falling off its end, a bare `return`, `break`, `continue`), no further statement of the function runs before it
    ends, except the rest of a loop that the swallowed cancellation kept going (the hazard
    itself; nothing after a `while True` without `break` ever runs), and no enclosing `try`
    of the function catches the `raise` (a handler for `CancelledError`/`BaseException`, or
    a `finally` around it). So `except CancelledError: break` followed by `await
    self.flush()` after the loop, or `except CancelledError: pass` followed by `await
    sandbox.release()`, gets no fix: the cancelled run flushed and released, a `raise` would
    skip it. Write the re-raise yourself after that code, or move it into a `finally`.
    No fix for `except*` handlers, nor when a `return` in a `finally` swallows the
    handler's `raise` (appending another `raise` would never run; remove the `return`).
    Each shape is run before and after in `tests/behaviour/test_shd104_swallowed_cancellation.py`.

    ## References
    - Python docs: `asyncio.Task.cancel`, "Task Cancellation" (`uncancel`, `cancelling`)
    - SkyRL #1160: TaskGroup for correct cancellation, sandbox leak on Ctrl+C
    """

    code = "SHD104"
    name = "swallowed-cancellation"
    summary = "A coroutine's handler swallows `CancelledError`, so cancelling the task does not stop it"
    triggers = ("CancelledError", "except:", "BaseException")
    # tier 1: except CancelledError / BaseException / bare except: in a coroutine, all in code.
    # Implied by tier 2 (``_may_swallow``): it reads only ``async def``s (the tokens ``async`` and
    # ``def``, in code: ``words.ASYNC_DEF``), and a handler that is bare (``except`` then ``:``) or whose
    # type's words (``Tree.words``: the name or attribute spelled there, or the words of its
    # aliases, which are import names and heads of bound values, all spelled in code, or factory
    # result types, none of them these two) meet CancelledError/BaseException
    candidate = C.InCode(C.All(C.ASYNC_DEF, C.AnyOf(C.Word("CancelledError", "BaseException"),
                                                   C.WordThen("except", C.gap() + ":"))))
    # tier 2: in a coroutine, a try whose body suspends and that catches cancellation
    candidate_tree = staticmethod(lambda tree: _may_swallow(tree))
    facts_needed = ("parents", "imports", "functions")

    valid = [
        # re-raised
        """
        import asyncio
        async def worker():
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                cleanup()
                raise
        """,
        # except Exception does not catch CancelledError
        """
        import asyncio
        async def worker():
            try:
                await asyncio.sleep(1)
            except Exception:
                pass
        """,
        # cancel-then-await idiom: the task we cancelled ourselves
        """
        from asyncio import CancelledError
        class Server:
            async def stop(self):
                self._task.cancel()
                try:
                    await self._task
                except CancelledError:
                    pass
        """,
        # deliberate bookkeeping with uncancel()
        """
        import asyncio as aio
        async def step():
            try:
                await aio.sleep(1)
            except aio.CancelledError:
                if aio.current_task().uncancel() == 0:
                    return "retry"
        """,
        # nothing awaited in the try body: no cancellation can arrive there
        """
        async def parse(data):
            try:
                return decode(data)
            except BaseException:
                return None
        """,
        # synchronous code
        """
        import asyncio
        def run():
            try:
                asyncio.run(main())
            except asyncio.CancelledError:
                pass
        """,
        # an earlier handler re-raises cancellation
        """
        import asyncio
        async def pump():
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except BaseException:
                log.exception("step failed")
        """,
        # cancel-then-await with a broad handler that records the error and re-raises it later
        """
        import asyncio
        class Runner:
            async def stop(self):
                self._task.cancel()
                error = None
                try:
                    await self._task
                except BaseException as e:
                    error = e
                if error is not None and not isinstance(error, asyncio.CancelledError):
                    raise error
        """,
        # a finally that returns only when nothing was raised is not on the handler's way out
        """
        import asyncio
        async def pump(q):
            try:
                await q.get()
            except asyncio.CancelledError:
                try:
                    await q.close()
                finally:
                    log.info("closed")
                raise
        """,
        # a nested handler whose only way out runs into the outer handler's bare `raise`
        """
        import asyncio
        async def get(refs):
            try:
                await asyncio.sleep(1)
            except asyncio.CancelledError:
                cancel(refs)
                try:
                    await asyncio.sleep(1)
                except asyncio.CancelledError:
                    force_cancel(refs)
                raise
        """,
        # a re-raise on every branch
        """
        import asyncio
        async def pump(fast):
            try:
                await step()
            except asyncio.CancelledError:
                if fast:
                    raise
                log.info("slow stop")
                raise
        """,
        # the cancellation recorded and re-raised later
        """
        import asyncio
        async def pump(job):
            saved = None
            try:
                await job.run()
            except asyncio.CancelledError as e:
                saved = e
            await job.close()
            if saved is not None:
                raise saved
        """,
        # a new CancelledError still says "cancelled"
        """
        import asyncio
        async def pump(job):
            try:
                await job.run()
            except asyncio.CancelledError as e:
                raise asyncio.CancelledError(f"{job} cancelled") from e
        """,
        # a bare except after `except BaseException:` never runs
        """
        import asyncio
        async def pump(job):
            try:
                await job.run()
            except BaseException:
                raise
            except:
                pass
        """,
    ]
    invalid = [
        # a raise on one branch only: the other swallows
        Invalid(
            """
            import asyncio
            async def pump(fast):
                try:
                    await step()
                except asyncio.CancelledError:
                    if fast:
                        raise
                    log.info("slow stop")
            """,
            fixed=None,
            message_contains="on some paths",
        ),
        # a raise only inside a loop that may not run
        Invalid(
            """
            import asyncio
            async def pump(job):
                try:
                    await job.run()
                except BaseException:
                    while job.retry():
                        raise
            """,
            fixed=None,
        ),
        # a different exception in place of the cancellation
        Invalid(
            """
            import asyncio
            async def stage(job):
                try:
                    await job.run()
                except asyncio.CancelledError as e:
                    raise RuntimeError("stage stopped") from e
            """,
            fixed=None,
            message_contains="different exception",
        ),
        # the message names what the handler catches
        Invalid(
            """
            import asyncio
            async def stage(job):
                try:
                    await job.run()
                except (asyncio.CancelledError, KeyboardInterrupt):
                    job.log("stopped")
            """,
            fixed="""
            import asyncio
            async def stage(job):
                try:
                    await job.run()
                except (asyncio.CancelledError, KeyboardInterrupt):
                    if asyncio.current_task().cancelling():
                        raise
                    job.log("stopped")
            """,
            message_contains="`except (asyncio.CancelledError, KeyboardInterrupt)`",
        ),
        # `continue` before the raise: the handler and the `continue` are pointed at
        Invalid(
            """
            import asyncio
            async def loop(jobs):
                for job in jobs:
                    try:
                        await job.run()
                    except BaseException:
                        if job.optional:
                            continue
                        raise
            """,
            fixed=None,
            count=2,
        ),
        # a yield in a handler that re-raises
        Invalid(
            """
            import asyncio
            async def chunks(reader):
                while True:
                    try:
                        yield await reader.read(1024)
                    except asyncio.CancelledError:
                        yield b""
                        raise
            """,
            fixed=None,
            message_contains="`yield`",
        ),
        Invalid(
            """
            import asyncio

            async def run_trial(sandbox):
                try:
                    await sandbox.exec("pytest")
                except asyncio.CancelledError:
                    # keep the sandbox for debugging
                    log.info("trial cancelled")  # noted
            """,
            fixed="""
            import asyncio

            async def run_trial(sandbox):
                try:
                    await sandbox.exec("pytest")
                except asyncio.CancelledError:
                    # keep the sandbox for debugging
                    log.info("trial cancelled")  # noted
                    if asyncio.current_task().cancelling():
                        raise
            """,
            message_contains="cancel",
        ),
        Invalid(
            """
            from asyncio import CancelledError

            class Leases:
                async def hold(self, lease):
                    while True:
                        try:
                            await self.renew(lease)
                        except CancelledError:
                            break
            """,
            fixed="""
            from asyncio import CancelledError
            import asyncio

            class Leases:
                async def hold(self, lease):
                    while True:
                        try:
                            await self.renew(lease)
                        except CancelledError:
                            if asyncio.current_task().cancelling():
                                raise
                            break
            """,
        ),
        Invalid(
            """
            import asyncio as aio

            async def serve(queue):
                try:
                    item = await queue.get()
                except (aio.CancelledError, ValueError):
                    return None
            """,
            fixed="""
            import asyncio as aio

            async def serve(queue):
                try:
                    item = await queue.get()
                except (aio.CancelledError, ValueError):
                    if aio.current_task().cancelling():
                        raise
                    return None
            """,
        ),
        Invalid(
            """
            import asyncio

            async def heartbeat(client):
                while True:
                    try:
                        await client.ping()
                    except:  # never let the heartbeat die
                        pass
                    await asyncio.sleep(5)
            """,
            fixed="""
            import asyncio

            async def heartbeat(client):
                while True:
                    try:
                        await client.ping()
                    except:  # never let the heartbeat die
                        if asyncio.current_task().cancelling():
                            raise
                        pass
                    await asyncio.sleep(5)
            """,
        ),
        Invalid(
            """
            import asyncio
            async def fetch(session, url):
                async with session.get(url) as r:
                    try:
                        return await r.read()
                    except BaseException:
                        log.warning("read failed")
            """,
            fixed="""
            import asyncio
            async def fetch(session, url):
                async with session.get(url) as r:
                    try:
                        return await r.read()
                    except BaseException:
                        if asyncio.current_task().cancelling():
                            raise
                        log.warning("read failed")
            """,
        ),
        Invalid(
            """
            import asyncio
            async def wait_done(job):
                try:
                    await job.done()
                except asyncio.CancelledError: pass
            """,
            fixed="""
            import asyncio
            async def wait_done(job):
                try:
                    await job.done()
                except asyncio.CancelledError:
                    if asyncio.current_task().cancelling():
                        raise
            """,
        ),
        # fix audit N2: `await t` on a job task someone else cancels raises CancelledError in
        # a runner nobody cancelled; the check keeps the runner's `return` for that path
        Invalid(
            """
            import asyncio

            async def run_job(jobs, n):
                t = asyncio.create_task(job(n))
                jobs[n] = t
                try:
                    print("job result:", await t)
                except asyncio.CancelledError:
                    print("job stopped by the user"); return
            """,
            fixed="""
            import asyncio

            async def run_job(jobs, n):
                t = asyncio.create_task(job(n))
                jobs[n] = t
                try:
                    print("job result:", await t)
                except asyncio.CancelledError:
                    print("job stopped by the user")
                    if asyncio.current_task().cancelling():
                        raise
                    return
            """,
        ),
        # below Python 3.11 there is no Task.cancelling(): a plain `raise` would also re-raise
        # another task's cancellation, so no fix
        Invalid(
            """
            import asyncio

            async def run_job(t):
                try:
                    print("job result:", await t)
                except asyncio.CancelledError:
                    return
            """,
            fixed=None,
            target_version="py310",
        ),
        Invalid(
            """
            import asyncio

            async def fetch(session, url):
                try:
                    return await session.get(url)
                except BaseException:
                    return None
            """,
            fixed=None,
            target_version="py310",
        ),
        # `break` -> `raise` would skip the flush after the loop: no fix
        Invalid(
            """
            import asyncio

            class Writer:
                async def pump(self):
                    while True:
                        try:
                            self.buffer.append(await self.source.get())
                        except asyncio.CancelledError:
                            break
                    await self.flush()
            """,
            fixed=None,
        ),
        # `pass` -> `raise` would skip the code after the try that the cancelled run still ran
        Invalid(
            """
            import asyncio
            async def trial(sandbox):
                try:
                    await sandbox.exec("pytest")
                except asyncio.CancelledError:
                    pass
                await sandbox.release()
            """,
            fixed=None,
        ),
        # the raise is swallowed by the `return` in the nested finally: no mechanical fix
        Invalid(
            """
            import asyncio

            async def run_trial(sandbox):
                try:
                    await sandbox.exec("pytest")
                except asyncio.CancelledError:
                    try:
                        await sandbox.stop()
                        raise
                    finally:
                        return None  # always hand back None
            """,
            fixed=None,
            message_contains="finally",
        ),
        # cancel-then-await with `except BaseException: pass`: KeyboardInterrupt, SystemExit and
        # the caller's own cancellation stop here too
        Invalid(
            """
            import asyncio

            class Poller:
                async def stop(self):
                    self._task.cancel()
                    try:
                        await self._task
                    except BaseException:  # stopped
                        pass
            """,
            fixed="""
            import asyncio

            class Poller:
                async def stop(self):
                    self._task.cancel()
                    try:
                        await self._task
                    except (asyncio.CancelledError, Exception):  # stopped
                        if asyncio.current_task().cancelling():
                            raise
                        pass
            """,
            message_contains="KeyboardInterrupt",
        ),
        Invalid(
            """
            import asyncio as aio
            async def shutdown(worker):
                worker.cancel()
                try:
                    await worker
                except:
                    log.debug("worker gone")
            """,
            fixed="""
            import asyncio as aio
            async def shutdown(worker):
                worker.cancel()
                try:
                    await worker
                except (aio.CancelledError, Exception):
                    if aio.current_task().cancelling():
                        raise
                    log.debug("worker gone")
            """,
        ),
        Invalid(
            """
            import asyncio
            async def result(job):
                try:
                    return await job.wait()
                except asyncio.CancelledError:
                    return job.partial()
            """,
            fixed=None,
        ),
    ]

    ast_check = _Ast

    # ------------------------------------------------------------------ visitors
    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._check(node)

    def visit_ExceptStarHandler(self, node: cst.ExceptStarHandler) -> None:
        self._check(node)

    # ------------------------------------------------------------------ the tree's answers (libcst)
    @staticmethod
    def _is_tuple(handler: _Handler) -> bool:
        return isinstance(handler.type, cst.Tuple)

    @staticmethod
    def _is_star(handler: _Handler) -> bool:
        return isinstance(handler, cst.ExceptStarHandler)

    def _try_of(self, handler: _Handler) -> Optional[Union[cst.Try, cst.TryStar]]:
        tr = self.facts.parent(handler)
        return tr if isinstance(tr, (cst.Try, cst.TryStar)) else None

    @staticmethod
    def _try_awaits(tr: Union[cst.Try, cst.TryStar]) -> bool:
        return _awaits(tr.body)

    def _paths(self, handler: _Handler):
        return self.facts.exit_paths(handler)

    def _describe(self, handler: _Handler) -> str:
        """The handler as written: bare `except:`, `except BaseException`, `except (CancelledError,
        KeyboardInterrupt)`."""
        exprs = self.facts.caught_types(handler)
        star = "*" if isinstance(handler, cst.ExceptStarHandler) else ""
        if exprs is None:
            return "bare `except:`"
        code = cst.Module([]).code_for_node
        if isinstance(handler.type, cst.Tuple):
            text = "(" + ", ".join(code(e) for e in exprs) + ")"
        else:
            text = code(handler.type)
        return f"`except{star} {text}`"

    def _names_cancellation_of(self, handler: _Handler) -> bool:
        """A handler type that names a cancellation class this module cannot resolve:
        ``get_cancelled_exc_class()`` (anyio), ``trio.Cancelled``, a project's own
        ``RequestCancelledError``."""
        exprs = self.facts.caught_types(handler)
        return exprs is not None and any(_cancel_word(cst.Module([]).code_for_node(e)) for e in exprs)

    @staticmethod
    def _raises_a_cancellation(node: cst.CSTNode) -> bool:
        return _raises_a_cancellation(node)

    def _books(self, handler: _Handler) -> bool:
        """Deliberate cancellation bookkeeping in the handler (``uncancel()``, ``cancelling()``)."""
        found = False

        class _Scan(cst.CSTVisitor):
            def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
                return False

            def visit_Lambda(self, node: cst.Lambda) -> bool:
                return False

            def visit_ClassDef(self, node: cst.ClassDef) -> bool:
                return False

            def visit_Call(self, node: cst.Call) -> None:
                nonlocal found
                if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("uncancel", "cancelling"):
                    found = True

        walk(handler.body, _Scan())
        return found

    def _cancel_then_await(self, fn, tr: Union[cst.Try, cst.TryStar]) -> bool:
        """The function cancels something and the try awaits an existing task/future."""
        cancels = any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "cancel" for c in fn.calls)
        if not cancels:
            return False
        for aw in _awaited(tr.body):
            expr = aw.expression
            if isinstance(expr, cst.Call) and self.facts.call_name(expr) in _AWAIT_WRAPPERS:
                if any(_is_ref(a.value) for a in expr.args if a.keyword is None):
                    return True
            elif _is_ref(expr):
                return True
        return False

    @staticmethod
    def _returns_value_last(handler: _Handler) -> bool:
        """The handler's last statement is ``return <value>`` (``_check_before_end`` gives None)."""
        body = handler.body
        if isinstance(body, cst.SimpleStatementSuite):
            last = body.body[-1]
        else:
            line = body.body[-1]
            if not isinstance(line, cst.SimpleStatementLine):
                return False
            last = line.body[-1]
        return isinstance(last, cst.Return) and last.value is not None

    @staticmethod
    def _terminal_way_of(handler: _Handler) -> str:
        return _terminal_way(handler.body)

    @staticmethod
    def _returns_only_none_of(handler: _Handler) -> bool:
        return _returns_only_none(handler.body)

    def _make_fix(self, handler: _Handler, kind: str, message: str) -> Fix:
        alias = self.facts.module_alias("asyncio")  # reuse `import asyncio as aio`
        check = _cancelling_check(alias or "asyncio")
        if kind == "cancelled":
            new_body = _check_before_end(handler.body, check)
        else:
            new_body = _check_first(handler.body, check)
        edits = [Replace(handler.body, new_body)] + ([] if alias else [AddImport("asyncio")])
        return Fix.unsafe(*edits, message=message)

    def _make_narrow_fix(self, handler: _Handler, message: str) -> Fix:
        alias = self.facts.module_alias("asyncio")
        asyncio_name = alias or "asyncio"
        new_body = _check_first(handler.body, _cancelling_check(asyncio_name))
        new = handler.with_changes(type=_narrow_type(asyncio_name), body=new_body,
                                   whitespace_after_except=cst.SimpleWhitespace(" "))
        edits = [Replace(handler, new)] + ([] if alias else [AddImport("asyncio")])
        return Fix.unsafe(*edits, message=message)

    # ------------------------------------------------------------------ where control goes next
    def _falls_into_raise(self, handler: _Handler, tr: Union[cst.Try, cst.TryStar], paths) -> bool:
        """The handler's only way out is falling off its end, and every way on from the end of
        its ``try`` statement (its ``finally``, then the statements after it in its block and
        in the enclosing ``if``/``with`` blocks of the function) raises: e.g. a nested handler
        followed by the outer handler's bare ``raise``."""
        if paths.ways != {FALL_THROUGH} or paths.swallowing_finally is not None:
            return False
        walker = _Walker(self.facts, None)
        if tr.finalbody is not None:
            ways, falls = walker.block(tr.finalbody.body, 0)
            if ways - PROPAGATING:
                return False
            if not falls:
                return bool(ways)
        fn = self.facts.enclosing_function(handler)
        stop = fn.node if fn is not None else None
        cur: cst.CSTNode = tr
        while True:
            block = self.facts.parent(cur)
            if not isinstance(block, cst.IndentedBlock):
                return False
            body = list(block.body)
            idx = next(i for i, st in enumerate(body) if st is cur)
            ways, falls = walker.statements(body[idx + 1:], 0)
            if ways - PROPAGATING:
                return False
            if not falls:
                return bool(ways)  # (an endless loop with no raise would keep the task running)
            owner = self.facts.parent(block)
            if owner is stop:
                return False
            if isinstance(owner, cst.Else):
                owner = self.facts.parent(owner)
                if not isinstance(owner, cst.If):
                    return False
            if isinstance(owner, cst.If):
                owner = self._top_if(owner)
            elif not isinstance(owner, cst.With):
                return False
            cur = owner

    def _top_if(self, node: cst.If) -> cst.If:
        parent = self.facts.parent(node)
        while isinstance(parent, cst.If):  # an ``elif`` is the ``orelse`` of the ``if`` above
            node, parent = parent, self.facts.parent(parent)
        return node

    def _loop_of(self, node: cst.CSTNode, stop: cst.CSTNode) -> Optional[Union[cst.For, cst.While]]:
        for anc in self.facts.ancestors(node):
            if anc is stop or isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return None
            if isinstance(anc, (cst.For, cst.While)):
                return anc
        return None

    def _in_loop(self, node: cst.CSTNode, stop: cst.CSTNode) -> bool:
        return self._loop_of(node, stop) is not None

    @staticmethod
    def _is_true_loop(loop: Union[cst.For, cst.While]) -> bool:
        return _is_true_loop(loop)

    @staticmethod
    def _has_else(statement: cst.CSTNode) -> bool:
        return statement.orelse is not None

    def _climb(self, cur: cst.CSTNode, stop: cst.CSTNode, siblings: bool) -> bool:
        """From the end of statement ``cur`` to the end of the function: with ``siblings``, no
        statement runs on the way (outside loops that go round again); and a ``raise`` at
        ``cur`` would leave the function: no enclosing ``try`` of the function whose body holds
        ``cur`` has a handler that catches cancellation, and no ``finally`` holds it."""
        while True:
            block = self.facts.parent(cur)
            if not isinstance(block, cst.IndentedBlock):
                return False
            if siblings and block.body[-1] is not cur and not self._in_loop(block, stop):
                return False
            owner = self.facts.parent(block)
            if owner is stop:
                return True
            if isinstance(owner, cst.Else):
                top = self.facts.parent(owner)
                if isinstance(top, cst.If):
                    owner = top
                else:  # a loop's or a try's else finished: after that statement
                    cur = top
                    continue
            if isinstance(owner, cst.If):
                cur = self._top_if(owner)
            elif isinstance(owner, cst.With):
                cur = owner  # its exit runs either way
            elif isinstance(owner, (cst.For, cst.While)):
                if _is_true_loop(owner):
                    siblings = False  # the body goes round forever: nothing after it runs
                elif siblings and owner.orelse is not None and not self._in_loop(owner, stop):
                    return False
                cur = owner
            elif isinstance(owner, (cst.Try, cst.TryStar)):
                # in the try's body: a raise there meets its handlers; a normal end runs its else
                if any(self._catch_kind(h) is not None for h in owner.handlers):
                    return False
                if siblings and owner.orelse is not None and not self._in_loop(owner, stop):
                    return False
                cur = owner
            elif isinstance(owner, (cst.ExceptHandler, cst.ExceptStarHandler)):
                cur = self.facts.parent(owner)  # from a handler: on after the try, raises leave it
            else:
                return False  # a finally, a match case, a class body: not followed


def _cancelling_check(asyncio_name: str) -> cst.If:
    """``if asyncio.current_task().cancelling(): raise``"""
    return cst.If(
        test=cst.parse_expression(f"{asyncio_name}.current_task().cancelling()"),
        body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Raise()])]),
    )


def _check_first(body: cst.BaseSuite, check: cst.If) -> cst.IndentedBlock:
    """``body`` with ``check`` as its first statement."""
    if isinstance(body, cst.IndentedBlock):
        return body.with_changes(body=[check, *body.body])
    return cst.IndentedBlock([check, _suite_line(body)])


def _suite_line(body: cst.SimpleStatementSuite) -> cst.SimpleStatementLine:
    """``except X: a; b  # why`` as a line of its own (a last semicolon dropped)."""
    trailing = body.trailing_whitespace
    if trailing.comment is not None and not trailing.whitespace.value:
        trailing = trailing.with_changes(whitespace=cst.SimpleWhitespace("  "))
    return cst.SimpleStatementLine(_unsemi(list(body.body)), trailing_whitespace=trailing)


def _unsemi(small: list) -> list:
    """A line's small statements without a semicolon after the last one."""
    return [*small[:-1], small[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)] if small else small


def _split_last(line: cst.SimpleStatementLine, check: cst.If) -> Optional[list]:
    """The statements that replace ``line`` (the handler's last): ``check`` before its last
    small statement when that is a bare ``return``/``break``/``continue`` (kept) or ``pass``
    (dropped unless a comment sits on its line), else after the line; None when the line ends
    in ``return <value>``."""
    small = list(line.body)
    last = small[-1]
    if isinstance(last, cst.Return) and last.value is not None:
        return None
    if not isinstance(last, (cst.Pass, cst.Return, cst.Break, cst.Continue)):
        return [line, check]
    head = small[:-1]
    if head:
        out: list = [line.with_changes(body=_unsemi(head), trailing_whitespace=cst.TrailingWhitespace()), check]
    else:
        out = [check.with_changes(leading_lines=line.leading_lines)]
    if not isinstance(last, cst.Pass) or line.trailing_whitespace.comment is not None:
        trailing = line.trailing_whitespace
        if trailing.comment is not None and not trailing.whitespace.value:
            trailing = trailing.with_changes(whitespace=cst.SimpleWhitespace("  "))  # (`return;  # why`)
        out.append(line.with_changes(body=[last.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)],
                                     leading_lines=(), trailing_whitespace=trailing))
    return out


def _check_before_end(body: cst.BaseSuite, check: cst.If) -> Optional[cst.BaseSuite]:
    """``body`` with ``check`` before its last way out (see ``_split_last``), or None when it
    returns a value."""
    if isinstance(body, cst.SimpleStatementSuite):
        stmts = _split_last(_suite_line(body), check)
        return None if stmts is None else cst.IndentedBlock(stmts)
    stmts = list(body.body)
    last = stmts[-1]
    if not isinstance(last, cst.SimpleStatementLine):
        return body.with_changes(body=[*stmts, check])
    tail = _split_last(last, check)
    return None if tail is None else body.with_changes(body=[*stmts[:-1], *tail])


def _narrow_type(alias: str) -> cst.Tuple:
    return cst.Tuple([
        cst.Element(cst.Attribute(cst.Name(alias), cst.Name("CancelledError")),
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
        cst.Element(cst.Name("Exception")),
    ])


def _cancel_word(text: str) -> bool:
    return "cancel" in text.lower()


def _raises_a_cancellation(node: cst.CSTNode) -> bool:
    """``raise asyncio.CancelledError(...)``, ``raise concurrent.futures.CancelledError``,
    ``raise RequestCancelledError(...)``: a new exception that still says "cancelled" to the
    canceller (the class name holds "cancel")."""
    if not isinstance(node, cst.Raise) or node.exc is None:
        return False
    exc = node.exc.func if isinstance(node.exc, cst.Call) else node.exc
    if isinstance(exc, cst.Attribute):
        return _cancel_word(exc.attr.value)
    return isinstance(exc, cst.Name) and _cancel_word(exc.value)


def _terminal_way(body: cst.BaseSuite) -> str:
    """How the handler's last statement leaves, where the fix puts the cancelling() check."""
    if isinstance(body, cst.SimpleStatementSuite):
        last = body.body[-1]
    else:
        line = body.body[-1]
        if not isinstance(line, cst.SimpleStatementLine):
            return FALL_THROUGH
        last = line.body[-1]
    return {cst.Return: RETURN, cst.Break: BREAK, cst.Continue: CONTINUE}.get(type(last), FALL_THROUGH)


def _is_true_loop(loop: Union[cst.For, cst.While]) -> bool:
    """``while True`` (or ``while 1``) with no ``break`` of its own: it never ends normally."""
    return isinstance(loop, cst.While) and _is_true(loop.test) and not _breaks(loop.body)


def _is_ref(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.StarredElement):
        expr = expr.value
    return isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript))


def _awaited(node: cst.CSTNode) -> list[cst.Await]:
    found: list[cst.Await] = []

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_Await(self, n: cst.Await) -> None:
            found.append(n)

    walk(node, _Scan())
    return found


def _awaits(node: cst.CSTNode) -> bool:
    """Any suspension point in ``node``: await, async for, async with."""
    hit = False

    class _Scan(cst.CSTVisitor):
        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            return False

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_Await(self, n: cst.Await) -> None:
            nonlocal hit
            hit = True

        def visit_For(self, n: cst.For) -> None:
            nonlocal hit
            hit = hit or n.asynchronous is not None

        def visit_With(self, n: cst.With) -> None:
            nonlocal hit
            hit = hit or n.asynchronous is not None

        def visit_CompFor(self, n: cst.CompFor) -> None:
            nonlocal hit
            hit = hit or n.asynchronous is not None

    walk(node, _Scan())
    return hit


# ------------------------------------------------------------------ candidate tier 2 (ast)
_CATCHES = {"CancelledError", "BaseException"}


def _may_catch_cancellation(tree, handler: ast.excepthandler) -> bool:
    typ = handler.type
    if typ is None:
        return True
    exprs = typ.elts if isinstance(typ, ast.Tuple) else [typ]
    return any(tree.words(e) & _CATCHES for e in exprs)


_SKIP = (*DEFS, ast.Lambda)


def _suspends(body) -> bool:
    """The rule's ``_awaits``: an ``await``/``async for``/``async with``/async comprehension,
    not in a nested def or lambda."""
    for n in walk_within(body, _SKIP):
        if isinstance(n, (ast.Await, ast.AsyncFor, ast.AsyncWith)) or (
                type(n) is ast.comprehension and n.is_async):
            return True
    return False


def _surely_reraises(handler) -> bool:
    """Every way out re-raises the caught exception and nothing leaves by a way of its own:
    the handler's last statement is a bare ``raise`` or ``raise <its name>`` (any ``from``),
    every ``raise`` in it is one of those, and it holds no ``return``/``break``/``continue``/
    ``yield``, no ``while`` (an endless one never leaves) and no nested ``try`` (nested defs,
    lambdas and classes skipped). Then the facts' ways are
    ``RERAISE`` (and ``EXIT``) only, with no leaving statement, no ``yield`` and no
    swallowing ``finally``: ``_check`` reports nothing."""
    body = handler.body
    name = handler.name

    def reraise(n) -> bool:
        # the facts' ``_raise_way`` reads ``exc`` only: ``raise e from None`` re-raises too
        return type(n) is ast.Raise and (
            n.exc is None or (name is not None and type(n.exc) is ast.Name and n.exc.id == name))

    if not body or not reraise(body[-1]):
        return False
    for n in walk_within(body, (*_SKIP, ast.ClassDef)):
        t = type(n)
        if t in (ast.Return, ast.Break, ast.Continue, ast.Yield, ast.YieldFrom, ast.While) or t in TRYS:
            return False
        if t is ast.Raise and not reraise(n):
            return False
    return True


def _may_swallow_in_finally(handler) -> bool:
    """A nested ``finally`` with a ``return``/``break``/``continue``: may be the facts'
    ``swallowing_finally`` (the report path that ignores the other exceptions)."""
    for n in walk_within(handler.body, (*_SKIP, ast.ClassDef)):
        if type(n) in TRYS and n.finalbody and any(
                type(x) in (ast.Return, ast.Break, ast.Continue) for x in walk_within(n.finalbody, _SKIP)):
            return True
    return False


def _books(handler) -> bool:
    """``_reraises_or_books``' second half: an ``x.uncancel()`` / ``x.cancelling()`` call in the
    handler (nested defs, lambdas and classes skipped)."""
    for n in walk_within(handler.body, (*_SKIP, ast.ClassDef)):
        if type(n) is ast.Call and type(n.func) is ast.Attribute and n.func.attr in ("uncancel", "cancelling"):
            return True
    return False


def _types(handler) -> list:
    # not ``facts.caught_types``: tier 2 has no facts, and a ``*x`` element stays ``Starred`` here
    t = handler.type
    return [] if t is None else list(t.elts) if type(t) is ast.Tuple else [t]


def _surely_not_cancelled_kind(tree, handler) -> bool:
    """``_catch_kind`` cannot be "cancelled" (exactly one type, asyncio's CancelledError)."""
    types = _types(handler)
    return len(types) != 1 or "CancelledError" not in tree.words(types[0])


def _hands_on(handler) -> bool:
    """``ExitPaths.hands_on``: the bound exception is used in the handler outside ``raise``
    statements (an ``ast.Name`` of it is a libcst ``Name`` of it; libcst also counts
    attribute and keyword names)."""
    if handler.name is None:
        return False
    stack = list(handler.body)
    while stack:
        n = stack.pop()
        if type(n) is ast.Raise:
            continue
        if type(n) is ast.Name and n.id == handler.name:
            return True
        stack.extend(ast.iter_child_nodes(n))
    return False


def _surely_cancel_then_await(fn, tr) -> bool:
    """``_cancel_then_await``: the function calls ``.cancel()`` and the try awaits a name, an
    attribute or a subscript (the wrapper case, ``await asyncio.gather(task)``, needs a
    qualified name: not used)."""
    if not any(type(c.func) is ast.Attribute and c.func.attr == "cancel" for c, _, _ in fn.calls):
        return False
    return any(type(n) is ast.Await and type(n.value) in (ast.Name, ast.Attribute, ast.Subscript)
               for n in walk_within(tr.body, _SKIP))


def _surely_not_catching_everything(tree, handler) -> bool:
    """``not _catches_everything``: a typed handler none of whose types may be BaseException."""
    types = _types(handler)
    return bool(types) and not any("BaseException" in tree.words(e) for e in types)


def _may_report(tree, fn, tr, handler) -> bool:
    """The ways ``_check`` can reach ``self.report`` for ``handler``:

    - a handler whose every way out surely re-raises, with nothing that leaves by a way of its
      own (``_surely_reraises``), is never reported;
    - the first report (a ``finally`` that swallows) needs a nested ``finally`` with a
      ``return``/``break``/``continue``: then keep;
    - the others need, in order: no ``uncancel()``/``cancelling()`` call; for a handler that
      is not only ``CancelledError``, no use of the bound exception outside ``raise``
      statements (``hands_on``); and, when the function cancels something and the try awaits
      an existing task, a handler that catches everything (bare / ``BaseException``).
    """
    if _surely_reraises(handler):
        return False
    if _may_swallow_in_finally(handler):
        return True
    if _books(handler):
        return False
    if _surely_not_cancelled_kind(tree, handler) and _hands_on(handler):
        return False
    if _surely_cancel_then_await(fn, tr) and _surely_not_catching_everything(tree, handler):
        return False
    return True


def _may_swallow(tree) -> bool:
    """In a coroutine, a ``try`` whose body suspends (not counting nested defs and lambdas)
    with a handler that may catch cancellation (bare, or a type that may be CancelledError /
    BaseException) and that ``_may_report`` keeps."""
    for fn in tree.functions:
        if fn.is_async:
            for tr in fn.trys:
                handlers = [h for h in tr.handlers if _may_catch_cancellation(tree, h)]
                if handlers and _suspends(tr.body) and any(_may_report(tree, fn, tr, h) for h in handlers):
                    return True
    return False
