from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import same_module_bases
from shutdown_lint.ast_engine.facts import body_holding, first_argument, same_logical_line
from shutdown_lint.prefilter import words as C
from shutdown_lint.facts import FunctionInfo, Scope, names_in
from shutdown_lint.facts.classes import _ABSTRACT, is_stub, overrides
from shutdown_lint.index.classes import overrides as class_overrides
from shutdown_lint.rule import AddImport, Fix, Invalid, Option, Replace, Rule, Valid
from shutdown_lint.traversal import walk
from shutdown_lint.facts.vocabulary import FACTORY_TYPES, _canonical
from shutdown_lint.prefilter.ast_tree import TRYS, nested_statements

from ._vocabulary import RESOURCE_WORDS, identifier_words, mentions

_ASYNCIO_GATHER = "asyncio.gather"
_TQDM_GATHERS = frozenset({
    "tqdm.asyncio.tqdm.gather",
    "tqdm.asyncio.tqdm_asyncio.gather",
    "tqdm.auto.tqdm.gather",
})
_TASK_MAKERS = frozenset({
    "asyncio.create_task", "asyncio.ensure_future", "asyncio.AbstractEventLoop.create_task",
})
#: Exceptions that are not the children's failures: catching them around the gather does
#: not depend on the exception type the gather raises.
_NOT_CHILD_ERRORS = frozenset({
    "asyncio.CancelledError", "asyncio.exceptions.CancelledError", "concurrent.futures.CancelledError",
    "builtins.KeyboardInterrupt", "builtins.SystemExit", "builtins.GeneratorExit",
})
_BROAD = frozenset({"builtins.Exception", "builtins.BaseException"})
#: ``async with`` items that guard concurrency or time, not a resource to tear down.
_NOT_RESOURCE_CONTEXTS = ("lock", "semaphore", "sem", "limiter", "condition", "mutex", "timeout",
                          "throttle", "rate", "fail", "move", "span", "trace", "tracer")
_FOLLOW_DEPTH = 2
#: ``async with`` callees that make one HTTP exchange (aiohttp/httpx), not a resource to tear down.
_REQUEST_VERBS = frozenset({"request", "get", "post", "put", "patch", "head", "options", "stream", "ws_connect"})
#: Verbs that make or end a resource: ``self.sandbox.delete()`` owns one, ``self.client.get()``
#: only uses one.
_LIFECYCLE_VERBS = frozenset({
    "create", "open", "start", "launch", "spawn", "connect", "acquire", "allocate", "provision",
    "close", "delete", "stop", "release", "terminate", "kill", "shutdown", "cleanup", "destroy",
    "disconnect", "remove", "teardown", "aclose", "dispose", "reset",
})


@dataclass
class _Child:
    """One gathered child, as far as we can see it."""

    label: str  # for the message: ``run_trial(...)``
    owns: Optional[str]  # why it owns a resource, or None
    resolved: bool  # we saw the body of the coroutine function
    coroutine_call: bool  # a call expression that makes a coroutine (tg.create_task accepts it)
    certain: bool = False  # the call resolves to a same-module ``async def``


@dataclass
class _Children:
    items: list[_Child] = field(default_factory=list)
    #: the rewrite cannot be faithful (pre-made tasks, opaque iterables, ...)
    opaque: bool = False


class _Decide:
    """SHD101's decisions, shared by the libcst rule (``GatherWithoutTaskGroup``) and its check on
    ``ast`` (``_Ast``): which gathers, which children, who owns a resource, reaping, whether a fix
    is offered and its message. Each tree answers the reads below (``_positional``, ``_code``, ...)."""

    facts: object
    config: dict

    def _check(self, node) -> None:
        qn = self.facts.call_name(node)
        if qn != _ASYNCIO_GATHER and qn not in _TQDM_GATHERS:
            return
        is_tqdm = qn in _TQDM_GATHERS
        if self._returns_exceptions(node):
            return
        positional = self._positional(node)
        if not positional or (len(positional) == 1 and not self._starred(positional[0]) and not is_tqdm):
            return
        scope = self.facts.scope_of(node)
        if self._is_reap(node, positional, scope):
            return
        children = self._children(positional, scope)
        owners = [c for c in children.items if c.owns]
        if not owners:
            return
        first = owners[0]
        what = f"`{first.label}` ({first.owns})"
        if is_tqdm:
            message = (f"tqdm's `gather` over {what}: when one child fails, or the caller is cancelled, "
                       "the other children keep running unawaited and their cleanup may never run; "
                       "use `asyncio.TaskGroup`")
        else:
            message = (f"`gather()` over {what}: when one child fails, the other children keep running "
                       "unawaited and their cleanup may never run; use `asyncio.TaskGroup`")
        self.report(node, message, fix=self._fix(node, positional, children, is_tqdm))

    # ------------------------------------------------------------------ children
    def _words(self) -> tuple[str, ...]:
        return tuple(self.config["resource-words"]) + tuple(self.config["extra-resource-words"])

    def _children(self, positional: Sequence, scope: Scope) -> _Children:
        out = _Children()
        for arg in positional:
            if self._starred(arg):
                self._iterable(self._arg_value(arg), scope, out)
            else:
                out.items.append(self._element(self._arg_value(arg), scope, out))
        return out

    def _iterable(self, expr, scope: Scope, out: _Children) -> None:
        elt = self._comp_elt(expr)
        if elt is not None:
            out.items.append(self._element(elt, scope, out))
            return
        elements = self._sequence(expr)
        if elements is not None:
            for starred, value in elements:
                if starred:
                    self._iterable(value, scope, out)
                else:
                    out.items.append(self._element(value, scope, out))
            return
        out.opaque = True  # the rewrite needs to know what the iterable holds
        name = self._identifier(expr)
        if name is not None:
            found = self._bound_elements(name, scope, out)
            if found:
                return
        label = self._code(expr)
        owns = self._mentions(expr)
        out.items.append(_Child(f"*{label}", owns, resolved=False, coroutine_call=False))

    def _bound_elements(self, name: str, scope: Scope, out: _Children) -> bool:
        """Elements of a list named ``name`` in this scope: its comprehension / literal
        value, and what is ``.append``-ed or ``.add``-ed to it."""
        found = False
        b = self.facts.lookup(name, scope)
        if b is not None and b.kind == "value" and (
                self._comp_elt(b.target) is not None or self._sequence(b.target)):
            self._iterable(b.target, scope, out)
            found = True
        calls = scope.calls if scope is not None else self.facts.module_calls
        for call in calls:
            if self._appended_to(call) == name:
                out.items.append(self._element(self._first_arg(call), scope, out))
                found = True
        return found

    def _element(self, expr, scope: Scope, out: _Children) -> _Child:
        name = self._identifier(expr)
        if name is not None:
            b = self.facts.lookup(name, scope)
            if b is not None and b.kind == "value" and self._is_call(b.target):
                child = self._element(b.target, scope, out)
                # `c = f(); gather(c, ...)`: handing `c` to tg.create_task is fine for a coroutine
                return _Child(child.label, child.owns, child.resolved, child.coroutine_call, child.certain)
            return _Child(name, self._mentions(expr), resolved=False, coroutine_call=False)
        if not self._is_call(expr):
            return _Child(self._code(expr)[:40], self._mentions(expr), resolved=False, coroutine_call=False)
        qn = self.facts.call_name(expr)
        first = self._first_arg(expr)
        if qn in _TASK_MAKERS and first is not None:
            out.opaque = True  # a pre-made task: tg.create_task cannot adopt it
            inner = self._element(first, scope, out)
            return _Child(inner.label, inner.owns, inner.resolved, coroutine_call=False)
        label = f"{self._code(expr.func)}(...)"
        fn = self.facts.resolve_call(expr)
        if fn is not None and fn.is_async:
            return _Child(label, self._owns(fn, _FOLLOW_DEPTH), resolved=True, coroutine_call=True, certain=True)
        if fn is None:
            # the callee lives in another module of the project (the project index)
            other = self.facts.resolve_elsewhere(expr.func, expr)
            if other is not None and other.info["async"]:
                return _Child(label, self._owns_elsewhere(other, _FOLLOW_DEPTH), resolved=True, coroutine_call=True)
        return _Child(label, self._mentions(expr.func), resolved=False, coroutine_call=True)

    def _mentions(self, expr) -> Optional[str]:
        """A callee that names a resource: the function's own name (``run_trial``,
        ``self.open_sandbox``), or a resource receiver with a lifecycle verb
        (``self.env.reset``). Calls that merely go through a client (``self.gcs_client.get``)
        do not count."""
        words = self._words()
        parts = [p for p in self._parts_of(expr) if p not in ("self", "cls")]
        if not parts:
            return None
        last = parts[-1]
        if mentions(last, words):
            return f"its name mentions `{next(w for w in identifier_words(last) if w in words)}`"
        if any(w in _LIFECYCLE_VERBS for w in identifier_words(last)):
            for part in parts[:-1]:
                if mentions(part, words):
                    return f"`{self._code(expr)}` manages a resource"
        return None

    def _owns(self, fn: FunctionInfo, depth: int, seen: Optional[set] = None) -> Optional[str]:
        seen = seen if seen is not None else set()
        if fn in seen:
            return None
        seen.add(fn)
        if fn.cls is not None and self._is_stub(fn):
            return self._owned_by_override(fn, depth, seen)
        words = self._words()
        kind = self._cleanup_kind(fn)
        if kind is not None:
            return f"`{fn.name}` has {kind}"
        if mentions(fn.name, words):
            return f"`{fn.name}` names a resource"
        for call in fn.calls:
            if self._mentions(call.func):
                return f"`{fn.name}` calls `{self._code(call.func)}`"
        if depth > 0:
            for call in fn.calls:
                target = self.facts.resolve_call(call)
                if target is not None and target is not fn:
                    why = self._owns(target, depth - 1, seen)
                    if why:
                        return why
                elif target is None:
                    other = self.facts.resolve_elsewhere(call.func, call)
                    if other is not None and not _not_resource(other.name):
                        why = self._owns_elsewhere(other, depth - 1, seen)
                        if why:
                            return why
        return None

    def _owned_by_override(self, fn: FunctionInfo, depth: int, seen: set) -> Optional[str]:
        """A call to an abstract or stub method runs one of its overrides: the reason one of
        them (in this module, or elsewhere through the project index) owns a resource."""
        for other in self._overrides(fn):
            if isinstance(other, FunctionInfo):
                why = self._owns(other, depth, seen) if other.is_async else None
            else:
                why = self._owns_elsewhere(other, depth, seen)
            if why:
                return f"`{fn.cls.name}.{fn.name}` is abstract here; its override {why}"  # type: ignore[union-attr]
        return None

    def _owns_elsewhere(self, fn, depth: int, seen: Optional[set] = None) -> Optional[str]:
        """``_owns`` for a function in another module (``project.ProjectFunction``): the reason
        names the file and line, since the reader cannot see it from here."""
        seen = seen if seen is not None else set()
        key = (fn.path, fn.qualname)
        if key in seen:
            return None
        seen.add(key)
        words = self._words()
        info = fn.info
        if not info["async"]:
            return None  # a plain function's finally runs before it returns: no orphan can skip it
        if info.get("stub") and fn.cls is not None and self.facts.project is not None:
            # abstract there: what runs is an override in a module that imports that one
            for other in class_overrides(self.facts.project, fn.path, fn.cls.name, fn.name):
                why = self._owns_elsewhere(other, depth, seen)
                if why:
                    return f"`{fn.qualname}` is abstract; its override {why}"
            return None
        if info["finally"]:
            return f"`{fn.qualname}` has a `finally` block at {fn.where(info['finally'][0])}"
        for text, line in info["async_with"]:
            parts = [w for p in text.split(".") for w in identifier_words(p)]
            if text.rsplit(".", 1)[-1] in _REQUEST_VERBS:
                continue  # `async with session.request(...)`: one HTTP exchange, not an owned resource
            if text.endswith("?"):  # `async with ctx:` (not a call): only its name can tell
                text = text[:-1]
                if not mentions(text.rsplit(".", 1)[-1], words):
                    continue
            if not any(w in _NOT_RESOURCE_CONTEXTS for w in parts):
                return f"`{fn.qualname}` has `async with {text}(...)` at {fn.where(line)}"
        # the gathered function's own name may say it owns a resource; a helper it calls must
        # also say it makes or ends one (``_get_session`` returns a shared session)
        if (mentions(fn.name, words) if depth == _FOLLOW_DEPTH else _written_mentions(fn.name, words)):
            return f"`{fn.qualname}` ({fn.where()}) names a resource"
        # Unlike a same-module callee, the calls it makes are not evidence by their names:
        # measured on public code, `session.close()` / `self._get_session()` in a helper
        # elsewhere mostly concern a session the caller passed in or shares. What a finally or
        # an `async with` releases is what an orphaned child fails to release.
        if depth > 0 and self.facts.project is not None:
            for written, *_ in info["calls"]:
                target = self.facts.project.callee(fn, written)
                if target is not None and not _not_resource(target.name):
                    why = self._owns_elsewhere(target, depth - 1, seen)
                    if why:
                        return why
        return None

    # ------------------------------------------------------------------ reaping
    def _is_reap(self, node, positional: Sequence, scope: Scope) -> bool:
        """Every child was ``.cancel()``-ed earlier in this function."""
        if scope is None:
            return False
        cancelled: set[str] = set()
        for call in scope.calls:
            if call is node:
                break
            value = self._cancel_receiver(call)
            if value is None:
                continue
            receiver = self._code(value)
            cancelled.add(receiver)
            # `for t in tasks: t.cancel()` / `[t.cancel() for t in tasks]` cancels `tasks`
            for target, iterated in self._loops(call):
                if self._code(target) == receiver:
                    cancelled.add(self._code(iterated))
                    break
        if not cancelled:
            return False
        for arg in positional:
            text = self._code(self._arg_value(arg))
            if text in cancelled:
                continue
            # `*tasks.values()` / `*list(tasks)` after cancelling `tasks`
            if any(text.startswith(c + ".") or text == f"list({c})" for c in cancelled):
                continue
            return False
        return True

    # ------------------------------------------------------------------ fix
    def _may_fix(self, node, children: _Children) -> bool:
        """The fix's conditions that do not depend on the tree: children that are all coroutine
        calls, in an ``async def`` (not in a lambda)."""
        if children.opaque or not all(c.coroutine_call for c in children.items):
            return False
        if self.facts.in_lambda(node):
            return False
        fn = self.facts.enclosing_function(node)
        return fn is not None and fn.is_async

    def _fix_message(self, node) -> str:
        # Always unsafe (docs/fix-safety.md): on the failure path the exception that reaches the
        # callers becomes an ExceptionGroup, which their handlers (even in other modules) and the
        # traceback see; the promise is only "siblings cancelled and awaited".
        if self._catching_try(node):
            return ("Rewrite into `asyncio.TaskGroup` (failures arrive as ExceptionGroup: "
                    "the handler around it needs `except*`)")
        return "Rewrite into `asyncio.TaskGroup` (failures arrive as ExceptionGroup)"

    def _catching_try(self, node) -> bool:
        """A ``try`` around ``node`` whose handlers depend on the children's exception type."""
        for t in self.facts.enclosing_trys(node):
            handlers = self._try_handlers(t)
            if handlers is None:
                continue  # ``try/except*``: already written for an ExceptionGroup
            for h in handlers:
                if not self._handler_is_neutral(h):
                    return True
        return False

    def _handler_is_neutral(self, h) -> bool:
        types = self.facts.caught_types(h) or []  # a bare ``except:``: no types
        names = [self.facts.qualified_name(t, h) for t in types]
        if names and all(n in _NOT_CHILD_ERRORS for n in names):
            return True
        broad = not types or all(n in _BROAD for n in names)
        return broad and self._ends_with_bare_raise(h)


class GatherWithoutTaskGroup(_Decide, Rule):
    """
    ## What it does
    Flags `await asyncio.gather(...)` (and tqdm's `tqdm.asyncio.tqdm.gather` /
    `tqdm_asyncio.gather`) without `return_exceptions=True` over coroutines that own a
    resource: the coroutine function (same module or class, followed two calls deep) has a
    `finally:` block or an `async with` (locks, semaphores and timeouts do not count), or
    its name or the names it calls contain a word of the resource vocabulary (`sandbox`,
    `trial`, `session`, `container`, `env`, `pod`, `connection`, `client`, `lease`, `slot`,
    ...). When a child cannot be resolved, the words of its callee (`self.run_trial`,
    `*sandbox_coros`) decide.

    Across modules (the project index): a child whose coroutine function lives in another
    module of the project - imported, re-exported through `__init__.py`, a method of a
    `env = SandboxEnv(...)` / `self.env = ...` / `env: SandboxEnv` object, or inherited from
    a base class in another file - is judged by that function: a `finally` block, an
    `async with` that is not an HTTP request, a lock or a timeout, or its own name (the names
    of what it calls do not count there: in public code they mostly concern a session the
    caller passed in), followed two calls deep. The message
    names the file and line (`BaseEnv.rollout` has a `finally` block at
    `sandbox/env.py:41`); a callee elsewhere that owns nothing is not flagged. A child that
    calls an abstract or stub method (`@abstractmethod`, a body of `...`/`pass`/`raise
    NotImplementedError`) is judged by its overrides: in subclasses of this module and of the
    modules that import it (`BaseEnv.rollout` is abstract here; its override
    `DockerEnv.rollout` has `async with Sandbox.create(...)` at `envs/docker.py:7`). The fix is
    in this file, and unsafe (resolution by name).

    Not flagged: `return_exceptions=True`; a gather of one explicit child; gathers over pure
    computations (resolved children that own nothing); gathers whose children cannot be
    resolved and whose names say nothing about resources; "reap" gathers over tasks that
    the same function has just cancelled (`for t in tasks: t.cancel()` then
    `await asyncio.gather(*tasks, ...)`).

    Options (`[tool.shutdown-lint.rules.SHD101]`):
    - `resource-words`: identifier words that mean "owns a resource"
      (default: `rules/_vocabulary.RESOURCE_WORDS`).
    - `extra-resource-words`: words added to the default list.

    ## Why is this bad?
    When one child of `asyncio.gather` fails, gather hands the error to the caller at once
    and leaves the other children running. Nobody awaits them any more: when the caller
    then exits (the driver stops, the worker is killed, the loop is closed, the process
    calls `os._exit`), their `finally` blocks - the sandbox or container teardown - never
    run. `tqdm.asyncio.tqdm.gather` is worse: it awaits children one by one through
    `as_completed`, so cancelling the caller (Ctrl+C, `ray.cancel`) does not cancel the
    children at all. In SkyRL, every Ctrl+C leaked 27 to 50 Daytona sandboxes this way.

    Cancelling the gather itself (Ctrl+C under `asyncio.run`, `ray.cancel` of the Ray task
    running the loop) loses teardowns too: gather cancels every child, but it is done as soon
    as the first child has finished its `finally`, and `asyncio.run` then cancels the children
    still awaiting their own teardown a second time. Measured: with teardowns of different
    lengths, 7 of 8 sandboxes are left; with equal ones, 1 to 3 of 5 in about one run of 20.
    `return_exceptions=True` makes a cancelled gather wait for every child, which is why it is
    not flagged.

    `asyncio.TaskGroup` cancels the siblings as soon as one child fails or the group is
    cancelled, and waits for their cleanup before it raises.

    ## Example
    ```python
    import asyncio

    async def run_trial(cfg):
        sandbox = await create_sandbox(cfg)
        try:
            return await sandbox.run()
        finally:
            await sandbox.delete()

    async def generate(cfgs):
        results = await asyncio.gather(*[run_trial(c) for c in cfgs])
    ```

    ## Use instead
    ```python
    async def generate(cfgs):
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(run_trial(c)) for c in cfgs]
        results = [t.result() for t in tasks]
    ```
    With tqdm, the fix keeps a progress bar: `with tqdm(desc=...) as pbar:` around the
    group, and `task.add_done_callback(lambda _: pbar.update())` for each task.

    ## Fix safety
    Offered for targets >= py311 (`TaskGroup`), when the awaited gather is a whole
    expression statement, assignment or `return`, and every child is a call that makes a
    coroutine (or a starred comprehension or list of such calls). No fix for pre-made
    tasks, opaque iterables, gathers in lambdas or inside larger expressions, or tqdm's
    `timeout=`.

    Unsafe. When every child succeeds nothing changes: the results keep their order and
    type (`[t.result() for t in tasks]`, a list). When a child fails (the hazard's path)
    the siblings are cancelled and awaited, which is the point, but the failure reaches the
    callers as an `ExceptionGroup` instead of the bare exception: a handler for the
    child's exception type, here or in any caller (other modules included), no longer
    catches it, and the traceback changes. A gather whose callee could not be seen is also
    a risk (`tg.create_task` needs a real coroutine, not any awaitable). Review the
    handlers around the gather and its callers (`except*`). See docs/fix-safety.md.

    ## References
    - SkyRL #1160: asyncio.gather to TaskGroup to stop leaking sandboxes on Ctrl+C
    - Python docs: `asyncio.gather`, `asyncio.TaskGroup`, `except*`
    - tqdm source: `tqdm.asyncio.tqdm_asyncio.gather` awaits `as_completed` one by one
    """

    code = "SHD101"
    name = "gather-without-taskgroup"
    summary = "`asyncio.gather` over resource-owning coroutines orphans the siblings of a failed child"
    triggers = ("gather",)
    # tier 1: asyncio.gather / tqdm's gather (the children may be defined in another module,
    # the gather may sit in a lambda: no `async` needed)
    # ``gather`` in code too: tier 2 (``_may_gather``) reads only calls for which
    # ``Tree.may_call_word(call, {"gather"}, ...)`` holds: the callee is a name or an attribute
    # spelled ``gather`` (code), or its words (aliases: import names and heads of bound values,
    # spelled in code, or factory result types, none of them ``gather``) hold it
    candidate = C.All(C.qualified("asyncio.gather", "tqdm.asyncio.tqdm.gather", "tqdm.asyncio.tqdm_asyncio.gather",
                                  "tqdm.auto.tqdm.gather"), C.InCode(C.Word("gather")))
    # tier 2: a gather over two or more awaitables (or a starred / tqdm one) that does not
    # return exceptions, one child of which may own a resource (a child elsewhere: the index)
    candidate_tree = staticmethod(lambda tree, project=None: _may_gather(tree, project))
    candidate_tree_project = True
    facts_needed = ("functions", "calls")
    fix_min_target = "py311"
    options = {
        "resource-words": Option(
            default=list(RESOURCE_WORDS), kind=list, item_kind=str,
            doc="Identifier words that mean a coroutine owns a resource whose cleanup must run.",
        ),
        "extra-resource-words": Option(
            default=[], kind=list, item_kind=str, doc="Words added to `resource-words`.",
        ),
    }

    valid = [
        # return_exceptions=True: every child runs to completion
        """
        import asyncio
        async def run_trial(c):
            try:
                await c.run()
            finally:
                await c.close()
        async def main(cfgs):
            await asyncio.gather(*[run_trial(c) for c in cfgs], return_exceptions=True)
        """,
        # pure computations: nothing to clean up
        """
        import asyncio as aio
        async def square(x):
            await aio.sleep(0)
            return x * x
        async def main(xs):
            return await aio.gather(*(square(x) for x in xs))
        """,
        # reaping tasks that were just cancelled
        """
        import asyncio
        async def stop(self):
            for t in self._sandbox_tasks:
                t.cancel()
            await asyncio.gather(*self._sandbox_tasks)
        """,
        # unresolved children whose names say nothing about resources
        """
        from asyncio import gather
        async def fetch_all(urls, fetch):
            return await gather(*[fetch(u) for u in urls])
        """,
        # a single explicit child has no siblings to orphan
        """
        import asyncio
        async def one(sandbox):
            return await asyncio.gather(sandbox.start())
        """,
        # a method that only computes; awaited through self
        """
        import asyncio
        class Scorer:
            async def score(self, x):
                return len(x)
            async def score_all(self, xs):
                return await asyncio.gather(*[self.score(x) for x in xs])
        """,
        # `gather` that is not asyncio's
        """
        from dask import gather
        async def main(env_futures):
            return gather(env_futures)
        """,
        # a lock is not a resource to tear down
        Valid(
            """
            import asyncio
            async def step(lock, x):
                async with lock:
                    return x + 1
            async def main(lock, xs):
                return await asyncio.gather(*[step(lock, x) for x in xs])
            """
        ),
    ]
    invalid = [
        Invalid(
            """
            import asyncio

            async def run_trial(cfg):
                sandbox = await start(cfg)
                try:
                    return await sandbox.run()
                finally:
                    await sandbox.delete()

            async def generate(cfgs):
                # one rollout per config
                results = await asyncio.gather(*[run_trial(c) for c in cfgs])  # keep order
                return results
            """,
            fixed="""
            import asyncio

            async def run_trial(cfg):
                sandbox = await start(cfg)
                try:
                    return await sandbox.run()
                finally:
                    await sandbox.delete()

            async def generate(cfgs):
                # one rollout per config
                async with asyncio.TaskGroup() as tg:
                    tasks = [tg.create_task(run_trial(c)) for c in cfgs]
                results = [t.result() for t in tasks]  # keep order
                return results
            """,
            message_contains="finally",
        ),
        Invalid(
            """
            import asyncio as aio

            class Rollout:
                async def open_session(self):
                    async with self.pool.acquire() as conn:
                        await conn.run()

                async def warm_cache(self):
                    self.cache = {}

                async def start(self):
                    await aio.gather(self.open_session(), self.warm_cache())
            """,
            fixed="""
            import asyncio as aio

            class Rollout:
                async def open_session(self):
                    async with self.pool.acquire() as conn:
                        await conn.run()

                async def warm_cache(self):
                    self.cache = {}

                async def start(self):
                    async with aio.TaskGroup() as tg:
                        tg.create_task(self.open_session())
                        tg.create_task(self.warm_cache())
            """,
        ),
        Invalid(
            """
            from asyncio import gather

            async def make_env(i):
                env = Env(i)
                await env.reset()
                return env

            async def setup():
                train_env, eval_env = await gather(make_env(0), make_env(1))
                return train_env, eval_env
            """,
            fixed="""
            from asyncio import gather
            import asyncio

            async def make_env(i):
                env = Env(i)
                await env.reset()
                return env

            async def setup():
                async with asyncio.TaskGroup() as tg:
                    tasks = [tg.create_task(make_env(0)), tg.create_task(make_env(1))]
                train_env, eval_env = [t.result() for t in tasks]
                return train_env, eval_env
            """,
        ),
        Invalid(
            """
            import asyncio
            from tqdm.asyncio import tqdm

            async def generate(self, trials):
                return await tqdm.gather(
                    *[self.run_trial(t) for t in trials],
                    desc="rollouts",
                )
            """,
            fixed="""
            import asyncio
            from tqdm.asyncio import tqdm

            async def generate(self, trials):
                with tqdm(desc="rollouts") as pbar:
                    async with asyncio.TaskGroup() as tg:
                        tasks = [tg.create_task(self.run_trial(t)) for t in trials]
                        pbar.reset(total=len(tasks))
                        for task in tasks:
                            task.add_done_callback(lambda _: pbar.update())
                return [t.result() for t in tasks]
            """,
            message_contains="tqdm",
        ),
        Invalid(
            """
            import asyncio

            async def run_all(self, trials):
                try:
                    await asyncio.gather(*[self.run_trial(t) for t in trials])
                except ValueError:
                    log("bad trial")
            """,
            fixed="""
            import asyncio

            async def run_all(self, trials):
                try:
                    async with asyncio.TaskGroup() as tg:
                        for t in trials:
                            tg.create_task(self.run_trial(t))
                except ValueError:
                    log("bad trial")
            """,
        ),
        # py310: reported, but no TaskGroup to rewrite into
        Invalid(
            """
            import asyncio
            async def start_pods(names):
                await asyncio.gather(*[launch_pod(n) for n in names])
            """,
            fixed=None,
            target_version="py310",
        ),
        # pre-made tasks over an opaque iterable: reported, no fix
        Invalid(
            """
            import asyncio
            async def main(trials):
                sandbox_tasks = [asyncio.create_task(open_sandbox(t)) for t in trials]
                await asyncio.gather(*sandbox_tasks)
            """,
            fixed=None,
        ),
        # in a lambda: reported, no fix
        Invalid(
            """
            import asyncio
            run = lambda cs: asyncio.gather(*[close_client(c) for c in cs])
            """,
            fixed=None,
        ),
        # the resource vocabulary is configurable
        Invalid(
            """
            import asyncio
            async def main(gpus):
                await asyncio.gather(*[reserve_gpu(g) for g in gpus])
            """,
            fixed="""
            import asyncio
            async def main(gpus):
                async with asyncio.TaskGroup() as tg:
                    for g in gpus:
                        tg.create_task(reserve_gpu(g))
            """,
            options={"extra-resource-words": ["gpu"]},
        ),
    ]

    # ------------------------------------------------------------------ visitor (libcst)
    def visit_Call(self, node: cst.Call) -> None:
        self._check(node)

    # the tree's reads (``_Decide``)
    @staticmethod
    def _returns_exceptions(call: cst.Call) -> bool:
        return _returns_exceptions(call)

    @staticmethod
    def _positional(call: cst.Call) -> list[cst.Arg]:
        return [a for a in call.args if a.keyword is None and a.star != "**"]

    @staticmethod
    def _starred(arg: cst.Arg) -> bool:
        return arg.star == "*"

    @staticmethod
    def _arg_value(arg: cst.Arg) -> cst.BaseExpression:
        return arg.value

    @staticmethod
    def _comp_elt(expr) -> Optional[cst.BaseExpression]:
        return expr.elt if isinstance(expr, (cst.ListComp, cst.GeneratorExp, cst.SetComp)) else None

    @staticmethod
    def _sequence(expr) -> Optional[list]:
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [(isinstance(el, cst.StarredElement), el.value) for el in expr.elements]
        return None

    @staticmethod
    def _identifier(expr) -> Optional[str]:
        return expr.value if isinstance(expr, cst.Name) else None

    @staticmethod
    def _is_call(expr) -> bool:
        return isinstance(expr, cst.Call)

    @staticmethod
    def _first_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
        return call.args[0].value if call.args else None

    @staticmethod
    def _appended_to(call: cst.Call) -> Optional[str]:
        f = call.func
        if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name)
                and f.attr.value in ("append", "add") and len(call.args) == 1):
            return f.value.value
        return None

    @staticmethod
    def _parts_of(expr: cst.BaseExpression) -> list[str]:
        return _name_parts(expr)

    @staticmethod
    def _code(node: cst.CSTNode) -> str:
        return _code(node)

    @staticmethod
    def _cleanup_kind(fn: FunctionInfo) -> Optional[str]:
        for kind in _cleanup_blocks(fn.node):
            return kind
        return None

    def _is_stub(self, fn: FunctionInfo) -> bool:
        return is_stub(self.facts, fn)

    def _overrides(self, fn: FunctionInfo) -> list:
        return overrides(self.facts, fn)

    @staticmethod
    def _cancel_receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
        f = call.func
        return f.value if isinstance(f, cst.Attribute) and f.attr.value == "cancel" else None

    def _loops(self, call: cst.Call) -> Iterator[tuple]:
        """(target, iterable) of the ``for`` loops and comprehension ``for``s around ``call``, in
        its function."""
        for anc in self.facts.ancestors(call):
            if isinstance(anc, (cst.For, cst.CompFor)):
                yield anc.target, anc.iter
            if isinstance(anc, cst.FunctionDef):
                return

    @staticmethod
    def _try_handlers(t) -> Optional[Sequence[cst.ExceptHandler]]:
        return None if isinstance(t, cst.TryStar) else t.handlers

    @staticmethod
    def _ends_with_bare_raise(h: cst.ExceptHandler) -> bool:
        return _ends_with_bare_raise(h.body)

    # ------------------------------------------------------------------ fix
    def _fix(self, node: cst.Call, positional: Sequence[cst.Arg], children: _Children, is_tqdm: bool) -> Optional[Fix]:
        if not self._may_fix(node, children):
            return None
        fn = self.facts.enclosing_function(node)
        await_ = self.facts.parent(node)
        if not isinstance(await_, cst.Await):
            return None
        small = self.facts.parent(await_)
        if isinstance(small, cst.Expr):
            result_stmt = None
        elif isinstance(small, (cst.Assign, cst.AnnAssign, cst.Return)) and small.value is await_:
            result_stmt = small
        else:
            return None
        line = self.facts.parent(small)
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        if not isinstance(self.facts.parent(line), (cst.IndentedBlock, cst.Module)):
            return None
        kwargs = [a for a in node.args if a.keyword is not None]
        tqdm_kwargs: list[cst.Arg] = []
        for a in kwargs:
            key = a.keyword.value  # type: ignore[union-attr]
            if key == "return_exceptions":
                continue  # it is False here (True is not flagged)
            if not is_tqdm or key in ("timeout", "loop"):
                return None
            tqdm_kwargs.append(a)

        used = names_in(fn.node)
        tg = _fresh("tg", used)
        tasks = _fresh("tasks", used)
        alias = self.facts.module_import_name("asyncio")
        edits: list = []
        if alias is None:
            alias = "asyncio"
            edits.append(AddImport("asyncio"))
        make = _TaskMaker(tg)

        inner: list[cst.BaseStatement]
        if result_stmt is None and not is_tqdm:
            inner = _spawn_statements(positional, make, tasks)
        else:
            inner = [_assign(tasks, _tasks_expr(positional, make))]
        body: list[cst.BaseStatement] = inner
        header = line.trailing_whitespace if result_stmt is None else cst.TrailingWhitespace()
        group = _with(cst.parse_expression(f"{alias}.TaskGroup()"), tg, body, True, header)
        outer: cst.BaseStatement = group
        if is_tqdm:
            pbar = _fresh("pbar", used)
            task = _fresh("task", used)
            has_total = any(a.keyword.value == "total" for a in tqdm_kwargs)  # type: ignore[union-attr]
            extra = [] if has_total else [cst.parse_statement(f"{pbar}.reset(total=len({tasks}))\n")]
            extra.append(cst.parse_statement(
                f"for {task} in {tasks}:\n    {task}.add_done_callback(lambda _: {pbar}.update())\n"))
            group = group.with_changes(body=group.body.with_changes(body=[*inner, *extra]))
            bar_call = cst.Call(func=node.func.value, args=_strip_comma(tqdm_kwargs))  # type: ignore[attr-defined]
            outer = _with(bar_call, pbar, [group], False, header)
        # comments between the gather's arguments (after commas) would vanish with the call:
        # keep them above the new block
        kept = {id(c) for a in node.args for c in _comments(a.value)}
        moved = [cst.EmptyLine(comment=c) for c in _comments(node) if id(c) not in kept]
        outer = outer.with_changes(leading_lines=[*line.leading_lines, *moved])
        new: list[cst.BaseStatement] = [outer]
        if result_stmt is not None:
            results = cst.parse_expression(f"[t.result() for t in {tasks}]")
            new.append(cst.SimpleStatementLine(
                body=[result_stmt.with_changes(value=results)],
                trailing_whitespace=line.trailing_whitespace,
            ))
        edits.insert(0, Replace(line, cst.FlattenSentinel(new)))
        return Fix.unsafe(*edits, message=self._fix_message(node))


# ---------------------------------------------------------------------- helpers
class _TaskMaker:
    def __init__(self, tg: str) -> None:
        self.tg = tg

    def __call__(self, coro: cst.BaseExpression) -> cst.Call:
        return cst.Call(func=cst.Attribute(cst.Name(self.tg), cst.Name("create_task")), args=[cst.Arg(coro)])


def _comp_to_list(comp: cst.BaseComp, make: _TaskMaker) -> cst.ListComp:
    return cst.ListComp(elt=make(comp.elt), for_in=comp.for_in)  # type: ignore[attr-defined]


def _tasks_expr(positional: Sequence[cst.Arg], make: _TaskMaker) -> cst.BaseExpression:
    if len(positional) == 1 and positional[0].star == "*" and isinstance(
        positional[0].value, (cst.ListComp, cst.GeneratorExp, cst.SetComp)
    ):
        return _comp_to_list(positional[0].value, make)
    elements: list[cst.BaseElement] = []
    for arg in positional:
        if arg.star == "*":
            v = arg.value
            if isinstance(v, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
                elements.append(cst.StarredElement(_comp_to_list(v, make)))
            else:  # a literal list/tuple of coroutine calls
                elements.extend(cst.Element(make(el.value)) for el in v.elements)  # type: ignore[attr-defined]
        else:
            elements.append(cst.Element(make(arg.value)))
    return cst.List(elements)


def _spawn_statements(positional: Sequence[cst.Arg], make: _TaskMaker, tasks: str) -> list[cst.BaseStatement]:
    """Result unused: one ``tg.create_task(...)`` per child, a ``for`` loop for a simple
    comprehension."""
    out: list[cst.BaseStatement] = []
    for arg in positional:
        v = arg.value
        if arg.star != "*":
            out.append(cst.SimpleStatementLine([cst.Expr(make(v))]))
        elif isinstance(v, (cst.ListComp, cst.GeneratorExp, cst.SetComp)):
            comp = v.for_in
            if comp.inner_for_in is None and not comp.ifs and comp.asynchronous is None:
                out.append(cst.For(
                    target=comp.target, iter=comp.iter,
                    body=cst.IndentedBlock([cst.SimpleStatementLine([cst.Expr(make(v.elt))])]),
                ))
            else:
                out.append(cst.SimpleStatementLine([cst.Expr(_comp_to_list(v, make))]))
        else:
            out.extend(cst.SimpleStatementLine([cst.Expr(make(el.value))]) for el in v.elements)  # type: ignore[attr-defined]
    return out


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])


def _with(item: cst.BaseExpression, asname: str, body: list[cst.BaseStatement], is_async: bool,
          header: cst.TrailingWhitespace) -> cst.With:
    return cst.With(
        items=[cst.WithItem(item=item, asname=cst.AsName(name=cst.Name(asname)))],
        body=cst.IndentedBlock(body=body, header=header),
        asynchronous=cst.Asynchronous() if is_async else None,
    )


def _strip_comma(args: Sequence[cst.Arg]) -> list[cst.Arg]:
    """Keyword arguments for a one-line call: no trailing comma, no line breaks."""
    out = []
    for i, a in enumerate(args):
        comma = cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if i < len(args) - 1 else cst.MaybeSentinel.DEFAULT
        out.append(a.with_changes(comma=comma))
    return out


def _returns_exceptions(call: cst.Call) -> bool:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "return_exceptions":
            return not (isinstance(a.value, cst.Name) and a.value.value == "False")
        if a.star == "**":
            return True  # could carry return_exceptions=True
    return False


def _ends_with_bare_raise(body: cst.BaseSuite) -> bool:
    stmts = body.body if isinstance(body, cst.IndentedBlock) else [body]
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return any(isinstance(s, cst.Raise) and s.exc is None for s in last.body)
    return False


def _cleanup_blocks(fn: cst.FunctionDef) -> Iterator[str]:
    """``a `finally` block`` / ``an `async with` `` in ``fn``'s own body."""
    found: list[str] = []

    class V(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
            return node is fn

        def visit_ClassDef(self, node: cst.ClassDef) -> bool:
            return False

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

        def visit_Try(self, node: cst.Try) -> None:
            if node.finalbody is not None:
                found.append("a `finally` block")

        def visit_TryStar(self, node: cst.TryStar) -> None:
            if node.finalbody is not None:
                found.append("a `finally` block")

        def visit_With(self, node: cst.With) -> None:
            if node.asynchronous is None:
                return
            for item in node.items:
                parts = [w for p in _name_parts(item.item) for w in identifier_words(p)]
                if not any(w in _NOT_RESOURCE_CONTEXTS for w in parts):
                    found.append(f"`async with {_code(item.item)[:40]}`")
                    return

    walk(fn, V())
    return iter(found)


def _name_parts(expr: cst.BaseExpression) -> list[str]:
    """Identifiers in a callee expression: ``self.env.reset`` -> ['self', 'env', 'reset']."""
    if isinstance(expr, cst.Name):
        return [expr.value]
    if isinstance(expr, cst.Attribute):
        return _name_parts(expr.value) + [expr.attr.value]
    if isinstance(expr, cst.Call):
        return _name_parts(expr.func)
    if isinstance(expr, cst.Subscript):
        return _name_parts(expr.value)
    if isinstance(expr, cst.Await):
        return _name_parts(expr.expression)
    return []


def _not_resource(name: str) -> bool:
    """A helper whose name says it guards concurrency or time or traces (``rollout_trace_attr``):
    its ``finally`` resets bookkeeping, it does not release a resource."""
    return any(w in _NOT_RESOURCE_CONTEXTS for w in identifier_words(name))


def _written_mentions(written: str, words: Sequence[str]) -> bool:
    """A call recorded in another module's summary that makes or ends a resource: a lifecycle
    verb on a resource (``create_sandbox``, ``self.sandbox.delete``, ``client.close``).

    Stricter than ``_mentions``: measured on public code, a bare resource word in a callee
    elsewhere (``self._get_session()``, ``aiohttp.ClientTimeout``) mostly means the function
    uses a shared resource, not that it owns one."""
    parts = [p for p in written.split(".") if p not in ("self", "cls")]
    if not parts:
        return False
    last = identifier_words(parts[-1])
    if not any(w in _LIFECYCLE_VERBS for w in last):
        return False
    return any(w in words for w in last) or any(mentions(p, words) for p in parts[:-1])


def _comments(node: cst.CSTNode) -> list[cst.Comment]:
    found: list[cst.Comment] = []

    class V(cst.CSTVisitor):
        def visit_Comment(self, c: cst.Comment) -> None:
            found.append(c)

    walk(node, V())
    return found


def _fresh(base: str, used: set[str]) -> str:
    name, i = base, 1
    while name in used:
        i += 1
        name = f"{base}{i}"
    used.add(name)
    return name


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _may_gather(tree, project=None) -> bool:
    """Tier 2 (``candidate_tree``): a gather over two or more awaitables (or a starred / tqdm one)
    that does not return exceptions, one child of which may own a resource as ``visit_Call``
    judges it (``_Owners``). ``project``: the project index seen from the file, None when the run
    has none (a child whose coroutine function lives in another module is judged through it)."""
    owners = None
    # the callee's spelling first: without an alias that may hold ``gather``, a name or an
    # attribute callee not spelled so is none, and the module's aliases are not built for it
    aliased = tree.may_alias(_GATHER_LASTS)
    for call in tree.all_calls():
        if not tree.may_call_word(call, _GATHER_LASTS, aliased):
            continue
        if not tree.may_call_any(call, _TREE_GATHERS):  # the callee read once for every name
            continue
        is_tqdm = tree.may_call_any(call, _TREE_TQDM_GATHERS)
        if any(k.arg is None or k.arg == "return_exceptions" and not (
                isinstance(k.value, ast.Constant) and k.value.value is False) for k in call.keywords):
            continue  # returns exceptions (or may, through **kwargs)
        if not call.args:
            continue
        if len(call.args) > 1 or isinstance(call.args[0], ast.Starred) or is_tqdm:
            owners = _Owners(tree, project) if owners is None else owners
            if owners.may_own_a_child(call):
                return True
    return False


#: ``_TQDM_GATHERS`` as a tuple (``Tree.may_call_any`` reads a tuple's names once), and with
#: ``asyncio.gather``: any gather
_TREE_TQDM_GATHERS = tuple(sorted(_TQDM_GATHERS))
_TREE_GATHERS = (*_TREE_TQDM_GATHERS, _ASYNCIO_GATHER)
#: the last words of ``_TREE_GATHERS`` (``Tree.may_call_word``)
_GATHER_LASTS = frozenset(n.rsplit(".", 1)[-1] for n in _TREE_GATHERS)


def _ast_name_parts(expr: ast.AST) -> list[str]:
    """``_name_parts`` on the ``ast``: ``self.env.reset`` -> ['self', 'env', 'reset'] (a loop: a
    chain may be deeper than the recursion limit)."""
    parts: list[str] = []
    while True:
        t = type(expr)
        if t is ast.Name:
            parts.append(expr.id)
            break
        if t is ast.Attribute:
            parts.append(expr.attr)
            expr = expr.value
        elif t is ast.Call:
            expr = expr.func
        elif t is ast.Subscript or t is ast.Await:
            expr = expr.value
        else:
            break  # ``(a or b).close``: ['close'], as the recursion gives
    return parts[::-1]


def _ast_mentions(expr: ast.AST) -> bool:
    """``GatherWithoutTaskGroup._mentions`` with the default resource words."""
    parts = [p for p in _ast_name_parts(expr) if p not in ("self", "cls")]
    if not parts:
        return False
    words = RESOURCE_WORDS
    if mentions(parts[-1], words):
        return True
    return any(w in _LIFECYCLE_VERBS for w in identifier_words(parts[-1])) and any(
        mentions(p, words) for p in parts[:-1])


_COMPS = (ast.ListComp, ast.GeneratorExp, ast.SetComp)


class _Owners:
    """A superset of what ``visit_Call`` finds among a gather's children (``_children``): names are
    followed over every binding in the module (scopes and order ignored), a callee resolves to
    every same-module function of its name (``self.m``/``cls.m``/``C.m`` to the methods), and one
    that may live in another module is judged by the project index (``_owns_elsewhere``); a stub
    method (judged by its overrides, here or in the modules importing this one) may own."""

    def __init__(self, tree, view) -> None:
        self.tree = tree
        self.view = view
        self.values = None  # SHD301's qualified names (``_Values``), made when the index is asked
        bound: dict[str, list] = {}
        for name, value in tree.value_bindings:
            bound.setdefault(name, []).append(value)
        self.bound = bound
        self.appended: dict[str, list] = {}  # ``name.append(x)`` / ``name.add(x)``
        for call in tree.all_calls():
            f = call.func
            if (type(f) is ast.Attribute and type(f.value) is ast.Name and f.attr in ("append", "add")
                    and len(call.args) + len(call.keywords) == 1):
                arg = call.args[0] if call.args else call.keywords[0].value
                self.appended.setdefault(f.value.id, []).append(arg.value if type(arg) is ast.Starred else arg)
        self.functions: dict[str, list] = {}
        for fn in tree.functions:
            self.functions.setdefault(fn.name, []).append(fn)
        self.classes = {c.name for c in tree.classes}
        #: class name -> the methods every class of that name defines itself
        self.defined: dict[str, set[str]] = {}
        for c in tree.classes:
            names = {fn.name for fn in tree.methods.get(id(c), ())}
            self.defined[c.name] = names if c.name not in self.defined else self.defined[c.name] & names
        self._owns_memo: dict[tuple[int, int], bool] = {}
        self._parsed: list = []
        self._seen: set[tuple[str, int]] = set()
        self._call_owner: Optional[dict] = None  # ``_owners_of_calls``
        self._top: Optional[set] = None  # ``_top_classes``
        self._imports: Optional[dict] = None  # ``_imported_classes``

    # ------------------------------------------------------------------ the children
    def may_own_a_child(self, gather: ast.Call) -> bool:
        self._seen = set()
        try:
            return self._may_own_a_child(gather)
        except RecursionError:  # bindings chained deeper than the recursion limit: it may
            return True

    def _may_own_a_child(self, gather: ast.Call) -> bool:
        for arg in gather.args:
            if type(arg) is ast.Starred:
                if self._iterable(arg.value):
                    return True
            elif self._element(arg):
                return True
        return False

    def _visit(self, expr: ast.AST, how: str) -> bool:
        """False when ``expr`` was judged already, the same way (``how``), for this gather (it
        said no then; a cycle of bindings ends here)."""
        key = (how, id(expr))
        if key in self._seen:
            return False
        self._seen.add(key)
        return True

    def _iterable(self, expr: ast.AST) -> bool:
        if not self._visit(expr, "iterable"):
            return False
        t = type(expr)
        if t in _COMPS:
            return self._element(expr.elt)
        if t is ast.List or t is ast.Tuple:
            return any(self._iterable(e.value) if type(e) is ast.Starred else self._element(e) for e in expr.elts)
        if t is ast.Name:
            for v in self.bound.get(expr.id, ()):
                if type(v) in _COMPS or type(v) in (ast.List, ast.Tuple):
                    if self._iterable(v):
                        return True
            if any(self._element(e) for e in self.appended.get(expr.id, ())):
                return True
        return _ast_mentions(expr)

    def _element(self, expr: ast.AST) -> bool:
        if type(expr) is ast.Starred:
            expr = expr.value  # libcst's element of ``[*a]`` is a StarredElement: its name's words
        if not self._visit(expr, "element"):
            return False
        t = type(expr)
        if t is ast.Name:
            if any(type(v) is ast.Call and self._element(v) for v in self.bound.get(expr.id, ())):
                return True
            return _ast_mentions(expr)
        if t is not ast.Call:
            return _ast_mentions(expr)
        last = expr.func.attr if type(expr.func) is ast.Attribute else getattr(expr.func, "id", None)
        if last in ("create_task", "ensure_future") and (expr.args or expr.keywords):  # ``_TASK_MAKERS``
            first = expr.args[0] if expr.args else expr.keywords[0].value
            if self._element(first.value if type(first) is ast.Starred else first):
                return True
        if _ast_mentions(expr.func):
            return True
        if any(fn.is_async and self._owns(fn, _FOLLOW_DEPTH) for fn in self._resolved(expr)):
            return True
        return self._async_elsewhere_owns(expr.func, _FOLLOW_DEPTH)

    # ------------------------------------------------------------------ same module
    def _resolved(self, call: ast.Call) -> list:
        """The functions ``facts.resolve_call(call)`` could give, by name."""
        func = call.func
        if type(func) is ast.Call:  # ``functools.partial(f, ...)()``
            func = func.args[0] if func.args else (func.keywords[0].value if func.keywords else None)
            if type(func) is ast.Starred:
                func = func.value
        if type(func) is ast.Name:
            return self.functions.get(func.id, [])
        if type(func) is ast.Attribute and type(func.value) is ast.Name and (
                func.value.id in ("self", "cls") or func.value.id in self.classes):
            return [fn for fn in self.functions.get(func.attr, ()) if fn.cls is not None]
        return []

    def _owns(self, fn, depth: int) -> bool:
        """``GatherWithoutTaskGroup._owns`` of a same-module function (a superset)."""
        key = (id(fn), depth)
        found = self._owns_memo.get(key)
        if found is None:
            self._owns_memo[key] = False  # a cycle ends here (the rule's ``seen``)
            found = self._owns_memo[key] = self._owns_now(fn, depth)
        return found

    def _owns_now(self, fn, depth: int) -> bool:
        if fn.cls is not None and _stub_like(fn.node):
            return True  # judged by its overrides, maybe in a module that imports this one
        if _has_cleanup_block(fn.node) or mentions(fn.name, RESOURCE_WORDS):
            return True
        if any(_ast_mentions(call.func) for call, _, _ in fn.calls):
            return True
        if depth > 0:
            for call, _, _ in fn.calls:
                if any(target is not fn and self._owns(target, depth - 1) for target in self._resolved(call)):
                    return True
                if self._async_elsewhere_owns(call.func, depth - 1, skip_not_resource=True):
                    return True
        return False

    # ------------------------------------------------------------------ elsewhere (the index)
    def _async_elsewhere_owns(self, func: ast.AST, depth: int, skip_not_resource: bool = False) -> bool:
        """``resolve_elsewhere(func)`` may be a coroutine function of another module that owns a
        resource (``_owns_elsewhere``)."""
        if self.view is None:
            return False
        names = self._elsewhere_names(func)
        if names is None:
            return True  # too much to follow: it may
        for q in names:
            if self._here(q):
                continue
            try:
                other = self.view.function(q, _ASYNC_WORDS)
            except (RecursionError, OSError):
                other = None
            if other is None or not other.info.get("async") and not skip_not_resource:
                continue
            if skip_not_resource and _not_resource(other.name):
                continue
            if _owns_elsewhere_may(self.view, other, depth, set()):
                return True
        return False

    def _here(self, q: str) -> bool:
        """``q`` surely names this module's own function, class or method (the index would
        summarise this file to say it is not elsewhere): ``<module>.f``, or ``<module>.C.m`` where
        every class ``C`` of the module defines ``m`` itself (the first in its method order).
        ``view.function`` would answer None for those."""
        if not q.startswith("<module>."):
            return False
        parts = q[len("<module>."):].split(".")
        if len(parts) == 1:
            return True
        if len(parts) == 2:
            defined = self.defined.get(parts[0])
            # (unless a submodule of that name shadows the class for the index: then it resolves there)
            return defined is not None and parts[1] in defined and self.view.index.find(
                f"{self.view.module}.{parts[0]}") is None
        return False

    def _elsewhere_names(self, func: ast.AST) -> set[str]:
        """Every name ``facts.elsewhere._qualified(func)`` could give: the qualified names, a
        ``self.x.m`` chain in each class of the module (a method inherited from another module),
        and ``<annotation>.m`` for a parameter annotated with a class."""
        if type(func) is ast.Call:  # functools.partial(f, ...)
            func = func.args[0] if func.args else (func.keywords[0].value if func.keywords else None)
            if type(func) is ast.Starred:
                func = func.value
            if func is None:
                return set()
        if self.values is None:
            from .shd301_blocking_call_in_coroutine import _Values

            self.values = _Values(self.tree, None)
        own = self._self_attribute_method(func)
        if own is not None:
            return own
        names = self.values.ask(self.values.qualified, func)
        if names is None:
            return None
        out = set(names)
        chain = []
        e = func
        while type(e) is ast.Attribute:
            chain.append(e.attr)
            e = e.value
        if type(e) is ast.Name and chain:
            rest = ".".join(reversed(chain))
            if e.id in ("self", "cls"):
                out |= {f"<module>.{c}.{rest}" for c in self.classes}
            for ann in self.values.declared.get(e.id, ()):
                if type(ann) is ast.Constant and type(ann.value) is str:  # ``env: "SandboxEnv"``
                    try:
                        ann = self._keep(ast.parse(ann.value.strip(), mode="eval").body)
                    except (SyntaxError, ValueError):
                        continue
                got = self.values.ask(self.values.qualified, ann)
                if got is None:
                    return None
                out |= {f"{a}.{rest}" for a in got}
        return out

    def _self_attribute_method(self, func: ast.AST) -> Optional[set[str]]:
        """``self.<x>.<m>`` called directly in a method of a module-level class ``C`` (the facts'
        ``elsewhere._qualified``: ``qualified_name`` types ``self.<x>`` by the last ``self.<x> =``
        value of ``C``'s methods, ``_instance_type``; untyped, ``<module>.C.<x>.<m>``): those
        names, a subset of ``_Values``' (every value of every class). None: not that case, or a
        ``with ... as self.<x>`` also binds it (its value is the context manager's)."""
        if not (type(func) is ast.Attribute and type(func.value) is ast.Attribute
                and type(func.value.value) is ast.Name and func.value.value.id == "self"):
            return None
        owner = self._owners_of_calls().get(id(func))
        if owner is None or owner.cls is None or id(owner.cls) not in self._top_classes():
            return None
        attr, method = func.value.attr, func.attr
        tree = self.tree
        values = [(t, v, g) for t, v, g in tree.assigns if type(t) is ast.Attribute and t.attr == attr]
        if sum(1 for bound, _ in tree._attr_bindings if bound == attr) > len(values):
            return None
        own = [v for t, v, g in values
               if type(t.value) is ast.Name and t.value.id == "self" and g is not None and g.cls is owner.cls]
        out = {f"<module>.{owner.cls.name}.{attr}.{method}"}
        if own and not any(fn.name == attr for fn in tree.methods.get(id(owner.cls), ())):
            # (a method ``<x>`` of ``C`` is what ``qualified_name`` names first: ``<module>.C.<x>``)
            sure = self._surely_typed(own[-1])
            if sure is not None:  # ``qualified_name`` gives a name: ``elsewhere._qualified`` takes it
                return {f"{sure}.{method}", f"{_canonical(sure)}.{method}"}
        if own:
            types = self.values.ask(self.values._instance, own[-1], set())
            if types is None:
                return None
            for q in types:
                out.add(f"{q}.{method}")
                out.add(f"{_canonical(q)}.{method}")
        return out

    def _surely_typed(self, value: ast.AST) -> Optional[str]:
        """The facts' ``_instance_type`` of ``value`` where it surely is a class of another module:
        ``C(...)`` (awaited or not) with ``C`` bound once in the module (``Tree.binding_count``), by
        an absolute ``from <m> import <c> [as C]`` among the module's own statements, ``c``
        capitalised and ``<m>.<c>`` no factory of ``FACTORY_TYPES``: ``<m>.<c>``."""
        if type(value) is ast.Await:
            value = value.value
        if type(value) is not ast.Call or type(value.func) is not ast.Name:
            return None
        local = value.func.id
        q = self._imported_classes().get(local)
        # asked last: ``binding_count`` walks the whole module
        return q if q is not None and self.tree.binding_count(local) == 1 else None

    def _imported_classes(self) -> dict:
        """Local name -> ``<m>.<c>`` of the first absolute ``from <m> import <c> [as name]`` with
        ``c`` capitalised among the module's own statements (None when ``<m>.<c>`` is a factory
        of ``FACTORY_TYPES``): ``_surely_typed``'s reading, made once."""
        if self._imports is None:
            self._imports = {}
            for st in nested_statements(self.tree.module.body,
                                        lambda st: type(st) not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if type(st) is ast.ImportFrom and not st.level and st.module:
                    for a in st.names:
                        if a.name[:1].isupper():
                            q = f"{st.module}.{a.name}"
                            self._imports.setdefault(a.asname or a.name, None if _canonical(q) in FACTORY_TYPES else q)
        return self._imports

    def _owners_of_calls(self) -> dict:
        """``id(call.func)`` -> the ``Function`` the call is directly in (its scope for the facts)."""
        if self._call_owner is None:
            self._call_owner = {id(c.func): fn for fn in self.tree.functions for c, _, _ in fn.calls}
        return self._call_owner

    def _top_classes(self) -> set:
        """The classes in no def nor class (their qualname is their name; ``cls.scope`` is None)."""
        if self._top is None:
            self._top = {id(st) for st in nested_statements(
                self.tree.module.body, lambda st: type(st) not in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                if type(st) is ast.ClassDef}
        return self._top

    def _keep(self, node: ast.AST) -> ast.AST:
        """A parsed string annotation, kept alive (the answers are memoised by node identity)."""
        self._parsed.append(node)
        return node


#: ``words`` for the index's look-ups of another module's function (``ProjectView.function`` and
#: ``callee``): only a coroutine function can own (``_owns_elsewhere_may`` and the callers of
#: ``_async_elsewhere_owns`` ask ``info["async"]`` first), and a module whose text holds none of
#: these has none, so the index need not summarise it to say so (``no_function_in``: the answer
#: is None then, as for a plain function, and depends on that text). ``async def`` is two tokens
#: apart by spaces, tabs, form feeds or a backslash before a line end: after ``async`` comes
#: ``" def"``, a space then another of those, or one of the others.
_ASYNC_WORDS = ("async def", "async  ", "async \t", "async \f", "async \\", "async\t", "async\f", "async\\")


def _owns_elsewhere_may(view, fn, depth: int, seen: set) -> bool:
    """``GatherWithoutTaskGroup._owns_elsewhere`` with the default words; a stub (judged by its
    overrides in the modules importing its own) may own."""
    key = (fn.path, fn.qualname)
    if key in seen:
        return False
    seen.add(key)
    info = fn.info
    if not info["async"]:
        return False
    if info.get("stub") and fn.cls is not None:
        return True
    if info["finally"]:
        return True
    words = RESOURCE_WORDS
    for text, _line in info["async_with"]:
        parts = [w for p in text.split(".") for w in identifier_words(p)]
        if text.rsplit(".", 1)[-1] in _REQUEST_VERBS:
            continue
        if text.endswith("?"):
            text = text[:-1]
            if not mentions(text.rsplit(".", 1)[-1], words):
                continue
        if not any(w in _NOT_RESOURCE_CONTEXTS for w in parts):
            return True
    if mentions(fn.name, words) or _written_mentions(fn.name, words):
        return True
    if depth > 0:
        for written, *_ in info["calls"]:
            try:
                target = view.callee(fn, written, _ASYNC_WORDS)
            except (RecursionError, OSError):
                target = None
            if target is not None and not _not_resource(target.name) and _owns_elsewhere_may(
                    view, target, depth - 1, seen):
                return True
    return False


def _stub_like(node: ast.AST) -> bool:
    """A superset of ``facts.classes.is_stub``: an abstract-looking decorator, or a body of only
    ``pass``, constants (a docstring, ``...``) and ``raise``."""
    for d in node.decorator_list:
        d = d.func if type(d) is ast.Call else d
        name = d.attr if type(d) is ast.Attribute else d.id if type(d) is ast.Name else ""
        if "abstract" in name:
            return True
    return all(type(st) is ast.Pass or type(st) is ast.Raise or type(st) is ast.Expr and type(st.value) is ast.Constant
               for st in node.body)


def _has_cleanup_block(node: ast.AST) -> bool:
    """``_cleanup_blocks`` of a function: a ``finally`` or an ``async with`` (not a lock, a timeout
    or the like) in its own body, nested defs, classes and lambdas left out."""
    todo = list(node.body)
    while todo:
        n = todo.pop()
        t = type(n)
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda):
            continue
        if t in TRYS and n.finalbody:
            return True
        if t is ast.AsyncWith:
            for item in n.items:
                parts = [w for p in _ast_name_parts(item.context_expr) for w in identifier_words(p)]
                if not any(w in _NOT_RESOURCE_CONTEXTS for w in parts):
                    return True
        todo.extend(ast.iter_child_nodes(n))
    return False


# ------------------------------------------------------------------ detection on ast (session 9)
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


class _Ast(_Decide, AstCheck):
    """SHD101 on ``ast`` (``ast_engine``): the same decisions (``_Decide``), the tree's answers read
    from ``ast``: arguments as libcst's ``Call.args`` (``**k`` a keyword with no name, a first
    argument that may be a keyword), ``True``/``False``/``None`` as libcst's names, ``finally``
    blocks as ``Try.finalbody``, comprehension ``for``s as libcst's nested ``CompFor``s, libcst's
    lines of simple statements (``a; b``), code text as libcst's ``code_for_node`` of the node alone.
    The fix's plan, never its edits (comments, which only the edits move, are not read)."""

    def visit_Call(self, node: ast.Call) -> None:
        self._check(node)

    # the tree's reads (``_Decide``)
    @staticmethod
    def _returns_exceptions(call: ast.Call) -> bool:
        for k in call.keywords:  # keywords and ``**k`` in source order, as in libcst's args
            if k.arg is None:
                return True  # could carry return_exceptions=True
            if k.arg == "return_exceptions":
                return not (type(k.value) is ast.Constant and k.value.value is False)
        return False

    @staticmethod
    def _positional(call: ast.Call) -> list[ast.expr]:
        return list(call.args)

    @staticmethod
    def _starred(arg: ast.expr) -> bool:
        return type(arg) is ast.Starred

    @staticmethod
    def _arg_value(arg: ast.expr) -> ast.expr:
        return arg.value if type(arg) is ast.Starred else arg

    @staticmethod
    def _comp_elt(expr) -> Optional[ast.expr]:
        return expr.elt if type(expr) in _COMPS else None

    @staticmethod
    def _sequence(expr) -> Optional[list]:
        if type(expr) is ast.List or type(expr) is ast.Tuple:
            return [(True, e.value) if type(e) is ast.Starred else (False, e) for e in expr.elts]
        return None

    @staticmethod
    def _identifier(expr) -> Optional[str]:
        if type(expr) is ast.Name:
            return expr.id
        if type(expr) is ast.Constant and (expr.value is None or type(expr.value) is bool):
            return str(expr.value)  # a Name in libcst
        return None

    @staticmethod
    def _is_call(expr) -> bool:
        return type(expr) is ast.Call

    @staticmethod
    def _first_arg(call: ast.Call) -> Optional[ast.expr]:
        return first_argument(call)

    @staticmethod
    def _appended_to(call: ast.Call) -> Optional[str]:
        f = call.func
        if (type(f) is ast.Attribute and type(f.value) is ast.Name and f.attr in ("append", "add")
                and len(call.args) + len(call.keywords) == 1):
            return f.value.id
        return None

    @classmethod
    def _parts_of(cls, expr: ast.AST) -> list[str]:
        """``_name_parts`` on ``ast`` (a loop: a chain may be deeper than the recursion limit)."""
        parts: list[str] = []
        while True:
            t = type(expr)
            if t is ast.Attribute:
                parts.append(expr.attr)
                expr = expr.value
            elif t is ast.Call:
                expr = expr.func
            elif t is ast.Subscript or t is ast.Await:
                expr = expr.value
            else:
                name = cls._identifier(expr)
                if name is not None:
                    parts.append(name)
                break
        return parts[::-1]

    def _code(self, node: ast.AST) -> str:
        return self.facts.code_without_module(node)

    def _cleanup_kind(self, fn: FunctionInfo) -> Optional[str]:
        """``_cleanup_blocks``' first: statements in source order, each before its blocks."""
        todo = list(reversed(fn.node.body))
        while todo:
            st = todo.pop()
            t = type(st)
            if t in _DEFS:
                continue
            if t in TRYS and st.finalbody:
                return "a `finally` block"
            if t is ast.AsyncWith:
                for item in st.items:
                    parts = [w for p in self._parts_of(item.context_expr) for w in identifier_words(p)]
                    if not any(w in _NOT_RESOURCE_CONTEXTS for w in parts):
                        return f"`async with {self._code(item.context_expr)[:40]}`"
            todo.extend(reversed(_blocks(st)))
        return None

    def _is_stub(self, fn: FunctionInfo) -> bool:
        """``facts.classes.is_stub`` on ``ast``."""
        if any(d.rsplit(".", 1)[-1] in _ABSTRACT for d in fn.decorators):
            return True
        for st in fn.node.body:
            t = type(st)
            if t is ast.Pass:
                continue
            if t is ast.Expr and self._string_or_ellipsis(st.value):
                continue
            if t is ast.Raise and st.exc is not None:
                exc = st.exc.func if type(st.exc) is ast.Call else st.exc
                if type(exc) is ast.Name and exc.id == "NotImplementedError":
                    continue
            return False
        return True

    def _string_or_ellipsis(self, value: ast.AST) -> bool:
        """libcst's SimpleString, ConcatenatedString or Ellipsis (not an f-string alone)."""
        if type(value) is ast.Constant:
            return type(value.value) in (str, bytes) or value.value is Ellipsis
        if type(value) is ast.JoinedStr:
            return self.facts.string_tokens(value) > 1
        return False

    def _overrides(self, fn: FunctionInfo) -> list:
        """``facts.classes.overrides`` on ``ast``."""
        cls = fn.cls
        if cls is None:
            return []
        facts = self.facts
        out: list = []
        for c in facts.classes:
            if c is cls:
                continue
            seen: list = []
            todo = [c]
            while todo:
                cur = todo.pop()
                for b in same_module_bases(facts, cur):
                    if b not in seen:
                        seen.append(b)
                        todo.append(b)
            if cls in seen:
                m = c.methods.get(fn.name)
                if m is not None and not self._is_stub(m):
                    out.append(m)
        view = facts.project
        if view is not None and cls.scope is None and cls.outer_class is None:
            out += [o for o in class_overrides(view, facts.path, cls.name, fn.name) if o.path != view.path]
        return out

    @staticmethod
    def _cancel_receiver(call: ast.Call) -> Optional[ast.expr]:
        f = call.func
        return f.value if type(f) is ast.Attribute and f.attr == "cancel" else None

    def _loops(self, call: ast.Call) -> Iterator[tuple]:
        """libcst's ``For``/``CompFor`` ancestors: a comprehension's ``for`` holds the ones after
        it in libcst (``inner_for_in``), not the element."""
        facts = self.facts
        for anc in facts.ancestors(call):
            t = type(anc)
            if t is ast.For or t is ast.AsyncFor:
                yield anc.target, anc.iter
            elif t is ast.comprehension:
                generators = facts.parent(anc).generators
                i = next(k for k, g in enumerate(generators) if g is anc)
                for g in reversed(generators[:i + 1]):
                    yield g.target, g.iter
            elif t is ast.FunctionDef or t is ast.AsyncFunctionDef:
                return

    @staticmethod
    def _try_handlers(t) -> Optional[list]:
        return None if type(t) is getattr(ast, "TryStar", None) else t.handlers  # (3.10: no TryStar)

    def _ends_with_bare_raise(self, h: ast.ExceptHandler) -> bool:
        """A bare ``raise`` among the statements of the handler's last line (libcst's last
        ``SimpleStatementLine``, or the body on the ``except`` line)."""
        body = h.body  # (a compound last statement holds no ``raise`` of its own)
        i = len(body) - 1
        while i > 0 and same_logical_line(self.facts, body[i - 1], body[i]):
            i -= 1
        return any(type(s) is ast.Raise and s.exc is None for s in body[i:])

    def _fix(self, node: ast.Call, positional: Sequence, children: _Children, is_tqdm: bool) -> Optional[FixPlan]:
        if not self._may_fix(node, children):
            return None
        facts = self.facts
        await_ = facts.parent(node)
        if type(await_) is not ast.Await:
            return None
        small = facts.parent(await_)
        t = type(small)
        if not (t is ast.Expr or t in (ast.Assign, ast.AnnAssign, ast.Return) and small.value is await_):
            return None
        if not facts.simple_statement_line(small) or self._shares_its_line(small):
            return None
        for k in node.keywords:
            if k.arg is None or k.arg == "return_exceptions":
                continue  # (no ``**k`` here: it may return exceptions)
            if not is_tqdm or k.arg in ("timeout", "loop"):
                return None
        return FixPlan.unsafe(self._fix_message(node))

    def _shares_its_line(self, stmt: ast.stmt) -> bool:
        """``stmt`` is one of several statements of its libcst line (``a; b``)."""
        body, i = body_holding(self.facts.parent(stmt), stmt)
        if body is None:
            return False
        return (i > 0 and same_logical_line(self.facts, body[i - 1], stmt)) or (
            i + 1 < len(body) and same_logical_line(self.facts, stmt, body[i + 1]))


def _blocks(st: ast.stmt) -> list[ast.stmt]:
    """The statements of ``st``'s blocks in source order."""
    t = type(st)
    if t in TRYS:
        return [*st.body, *(s for h in st.handlers for s in h.body), *st.orelse, *st.finalbody]
    if t is ast.Match:
        return [s for case in st.cases for s in case.body]
    return [*getattr(st, "body", ()), *getattr(st, "orelse", ())]


GatherWithoutTaskGroup.ast_check = _Ast
