from __future__ import annotations

import ast
from typing import Optional

import libcst as cst

from shutdown_lint import candidates as C
from shutdown_lint import facts as F
from shutdown_lint.facts import FunctionInfo, names_in
from shutdown_lint.rule import AddImport, Fix, Invalid, Option, Replace, Rule, Valid
from shutdown_lint.tree_tier import callee_name

from ._fixes import strip_trailing_comma

# ------------------------------------------------------------------ vocabulary
#: Qualified names of calls that block the calling thread (defaults of the rule; extend
#: with ``extra-blocking-calls``, silence with ``allowed-calls``). An entry ending in
#: ``.*`` matches every name under that prefix.
BLOCKING_CALLS = (
    # sleeps and waits
    "time.sleep",
    "threading.Thread.join", "threading.Event.wait",
    "concurrent.futures.Future.result", "concurrent.futures.wait",
    "queue.Queue.get", "queue.Queue.join",
    "builtins.input",
    # saves, loads and exports
    "torch.save", "torch.load", "torch.serialization.save", "torch.serialization.load",
    "safetensors.torch.save_file", "safetensors.torch.load_file", "safetensors.torch.save_model",
    "safetensors.numpy.save_file",
    "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt", "numpy.load", "numpy.loadtxt",
    "pickle.dump", "pickle.load", "json.dump", "json.load",
    "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.rmtree",
    "shutil.make_archive", "shutil.unpack_archive",
    # files
    "builtins.open", "io.open",
    "pathlib.Path.read_text", "pathlib.Path.read_bytes", "pathlib.Path.write_text", "pathlib.Path.write_bytes",
    # processes
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.getoutput", "subprocess.getstatusoutput",
    "subprocess.Popen.wait", "subprocess.Popen.communicate",
    "os.system", "os.wait", "os.waitpid",
    # HTTP
    "requests.get", "requests.post", "requests.put", "requests.patch", "requests.delete",
    "requests.head", "requests.options", "requests.request",
    "requests.Session.*", "requests.sessions.Session.*",
    "httpx.get", "httpx.post", "httpx.put", "httpx.patch", "httpx.delete", "httpx.head",
    "httpx.request", "httpx.Client.*",
    "urllib.request.urlopen",
    # Ray
    "ray.get", "ray.wait",
)
#: Method or function names that save/export synchronously whatever the receiver (used
#: when the callee cannot be resolved in this module).
BLOCKING_METHOD_NAMES = (
    "save_pretrained", "save_checkpoint", "save_checkpoints", "save_model", "save_models",
)
#: Calls a fix must not rewrite: their result is used in a ``with`` statement or a
#: following ``.read()``, so running only the call in a thread would not help.
_FILE_OPENERS = frozenset({"builtins.open", "io.open"})
#: Calls that are not blocking when they carry ``timeout=0``.
_POLL_WITH_ZERO_TIMEOUT = frozenset({"ray.get", "ray.wait"})
#: Session objects typed by ``requests.Session()`` methods that are not network calls.
_NON_IO_METHODS = frozenset({"mount", "close", "__enter__", "__exit__", "headers", "auth"})

_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


class BlockingCallInCoroutine(Rule):
    """
    ## What it does
    Flags a blocking call made directly in a coroutine function (`async def`):

    - saves and exports: `torch.save`/`torch.load`, `safetensors.torch.save_file`,
      `np.save*`, `pickle.dump`, `json.dump` (to a file; `json.dumps` is fine),
      `shutil.copy*`/`move`/`rmtree`, and any `*.save_pretrained()`,
      `*.save_checkpoint(s)()`, `*.save_model(s)()` whose callee is not defined here;
    - files: `open(...)` and `Path.read_text/write_text/...`;
    - sleeps and waits: `time.sleep`, `thread.join()` on a `threading.Thread`,
      `Future.result()` on a `concurrent.futures.Future` (from `executor.submit` or
      `asyncio.run_coroutine_threadsafe`), `threading.Event.wait`, `queue.Queue.get`;
    - processes: `subprocess.run/call/check_*`, `Popen.wait/communicate`, `os.system`;
    - HTTP: `requests.*`, `httpx.*` (sync), `urllib.request.urlopen`;
    - Ray: `ray.get(...)` and `ray.wait(...)` unless they pass `timeout=0`;
    - a call of a synchronous function or method defined in the same module or class
      (`self.export_hf()`, `save(state)`) whose body makes one of the calls above,
      followed through at most `max-depth` levels of such calls. The finding is at the
      call site in the coroutine and names the blocking call inside.

    Names are resolved through imports and aliases (`import torch as th`,
    `from time import sleep`).

    Not flagged: the same calls in synchronous code; in a nested `def` inside the
    coroutine (it is flagged where the coroutine calls it, not where it is run with
    `asyncio.to_thread`/`run_in_executor`); in a `lambda`; callables passed *uncalled*
    to `asyncio.to_thread(...)`, `loop.run_in_executor(...)` or wrapped in
    `functools.partial` for them; awaited calls; calls handed to `create_task`/`gather`;
    `task.result()` on an asyncio task (it never blocks); `ray.get(refs, timeout=0)`.

    `open()` is flagged in every coroutine, startup ones included: on the installed
    sources of ray, anyio, aiohttp and pre-commit every `open()` in an `async def`
    was on a path that other tasks share the loop with (request handlers, agents), so
    an exception for "startup" code would have hidden real findings. Silence a known
    small read with `allowed-calls = ["builtins.open"]` or a suppression comment.

    ## Why is this bad?
    A coroutine that calls a blocking function stops the whole event loop until it
    returns: sibling tasks (generation loops, heartbeats, health checks, RPC handlers)
    do not run, timeouts do not fire, and cancellation and Ctrl+C handling wait. In the
    SkyRL one-step-off trainer, periodic `save_checkpoints()`/`save_models()` calls in
    `async def train()` stalled the background generation coroutine for the whole save
    window (SkyRL #1446). Inside a Ray async actor, a blocking call also stops every
    other call queued on the actor.

    ## Example
    ```python
    import asyncio
    import torch

    class Trainer:
        async def train(self):
            gen = asyncio.create_task(self.generate_loop())
            for step in range(self.steps):
                await self.train_step()
                torch.save(self.model.state_dict(), self.ckpt_path)  # loop stalls
    ```

    ## Use instead
    ```python
    import asyncio
    import torch

    class Trainer:
        async def train(self):
            gen = asyncio.create_task(self.generate_loop())
            for step in range(self.steps):
                await self.train_step()
                await asyncio.to_thread(torch.save, self.model.state_dict(), self.ckpt_path)
    ```

    ## Fix safety
    Unsafe. The fix rewrites `f(*args, **kwargs)` to
    `await asyncio.to_thread(f, *args, **kwargs)` (keeping the result when it is used,
    `x = torch.load(p)` -> `x = await asyncio.to_thread(torch.load, p)`), and
    `time.sleep(s)` to `await asyncio.sleep(s)`. The arguments are still evaluated on
    the loop, but the call itself now runs on another thread while other tasks run:
    check that it does not touch state the loop mutates meanwhile (a dataloader being
    iterated, a dict of timings being reset, a model being updated), and that the
    callee is thread-safe. The fix adds `import asyncio` when the module does not have
    it, and uses the module's alias when it does (`aio.to_thread`).

    No fix is offered for `open()` and for calls inside a `with open(...)` block (the
    file work in the block blocks too: move the whole block into a local function and
    run that with `asyncio.to_thread`; the fix does not do it for you because the block
    may assign names the coroutine uses afterwards), inside
    comprehensions (an `await` there changes what the comprehension is), or where the
    call is the target of a `with`.

    ## Options
    - `extra-blocking-calls` (list of str): more qualified names (`mylib.io.upload`) or
      method names (`.flush_to_disk`, with a leading dot) that block.
    - `allowed-calls` (list of str): qualified or method names never to flag, e.g.
      `builtins.open`.
    - `max-depth` (int, default 2): how many levels of same-module synchronous calls
      to look through; 0 turns the look-through off.

    ## References
    - SkyRL #1446: event-loop blocking in one-step-off async save/export paths
    - Python docs: "Developing with asyncio", running blocking code; `asyncio.to_thread`
    - Ray docs: async actors, "do not call blocking ray.get in async actor methods"
    """

    code = "SHD301"
    name = "blocking-call-in-coroutine"
    summary = "A blocking call in a coroutine stalls the event loop and every other task on it"
    triggers = ("async def",)
    # tier 1: a coroutine (the vocabulary has `open`, `get`: words cannot narrow it further)
    candidate = C.Word("async")
    # tier 2: an async def makes a call (not awaited, not in a lambda) that may be in the
    # vocabulary, or may reach one through same-module sync functions (max-depth's default)
    candidate_tree = staticmethod(lambda tree: _may_block_in_coroutine(tree))
    facts_needed = ("functions", "calls", "execution")
    options = {
        "extra-blocking-calls": Option((), (list, tuple), "Qualified names, or `.method` names, that block",
                                       item_kind=str),
        "allowed-calls": Option((), (list, tuple), "Qualified names, or `.method` names, never flagged",
                                item_kind=str),
        "max-depth": Option(2, int, "Levels of same-module synchronous calls to look through"),
    }

    valid = [
        # synchronous code
        "import time\ndef wait():\n    time.sleep(1)\n",
        # offloaded: uncalled callables handed to to_thread / run_in_executor / partial
        """
        import asyncio, functools, torch
        async def save(model, path):
            await asyncio.to_thread(torch.save, model.state_dict(), path)
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(None, functools.partial(torch.save, model, path))
        """,
        # a nested sync function run in a thread is not run on the loop
        """
        import asyncio as aio
        async def export(model, path):
            def work():
                model.save_pretrained(path)
                with open(path + "/done", "w") as fh:
                    fh.write("ok")
            await aio.to_thread(work)
        """,
        # polling with timeout=0 does not block; awaiting an ObjectRef is the async way
        """
        import ray
        async def poll(refs):
            ready, rest = ray.wait(refs, timeout=0)
            done = ray.get(ready, timeout=0)
            return done + [await r for r in rest]
        """,
        # refs that ray.wait reported ready; a concurrent future read after it is done
        """
        import ray
        from concurrent.futures import ThreadPoolExecutor
        async def reap(ref, pool: ThreadPoolExecutor):
            ready, _ = ray.wait([ref], timeout=0)
            if ready:
                ray.get(ref)
            fut = ThreadPoolExecutor().submit(print)
            if fut.done():
                return fut.result()
        """,
        # task.result() after await never blocks; json.dumps is not I/O
        """
        import asyncio, json
        async def main():
            task = asyncio.create_task(work())
            await task
            return json.dumps(task.result())
        """,
        # awaited calls and coroutines handed to create_task are async save methods
        """
        import asyncio
        class Trainer:
            async def train(self):
                await self.engine.save_checkpoint("/ckpt")
                asyncio.create_task(self.engine.save_model("/m"))
        """,
        # a same-module helper that does not block
        """
        class Trainer:
            def bump(self):
                self.step += 1
            async def train(self):
                self.bump()
        """,
        # lambdas are not run here
        """
        import asyncio, time
        async def main(loop):
            await loop.run_in_executor(None, lambda: time.sleep(1))
        """,
        Valid(
            """
            async def main(cfg):
                with open(cfg) as fh:
                    return fh.read()
            """,
            options={"allowed-calls": ["builtins.open"]},
        ),
        Valid(
            """
            import torch
            class Trainer:
                def save_checkpoints(self):
                    torch.save(self.state, self.path)
                async def train(self):
                    self.save_checkpoints()
            """,
            options={"max-depth": 0},
        ),
    ]
    invalid = [
        Invalid(
            """
            import asyncio
            import torch

            async def train(model, path):
                for step in range(10):
                    await asyncio.sleep(0)
                    # periodic checkpoint
                    torch.save(model.state_dict(), path)  # every step
            """,
            fixed="""
            import asyncio
            import torch

            async def train(model, path):
                for step in range(10):
                    await asyncio.sleep(0)
                    # periodic checkpoint
                    await asyncio.to_thread(torch.save, model.state_dict(), path)  # every step
            """,
            message_contains="torch.save",
        ),
        # the SkyRL shape: methods of the same class that save, one level down
        Invalid(
            """
            import asyncio as aio
            import torch

            class Trainer:
                def save_checkpoints(self):
                    torch.save(self.state, self.path)

                async def train(self):
                    gen = aio.create_task(self.generate())
                    self.save_checkpoints()
                    await gen
            """,
            fixed="""
            import asyncio as aio
            import torch

            class Trainer:
                def save_checkpoints(self):
                    torch.save(self.state, self.path)

                async def train(self):
                    gen = aio.create_task(self.generate())
                    await aio.to_thread(self.save_checkpoints)
                    await gen
            """,
            message_contains="calls `torch.save()` (line 6)",
        ),
        # unresolved save methods by name; the result is kept; time.sleep -> asyncio.sleep
        Invalid(
            """
            from time import sleep
            import torch as th

            class Exporter(Base):
                async def export(self, path):
                    self.model.save_pretrained(path, safe_serialization=True)
                    state = th.load(path)["model"]
                    sleep(0.5)
                    return state
            """,
            fixed="""
            from time import sleep
            import torch as th
            import asyncio

            class Exporter(Base):
                async def export(self, path):
                    await asyncio.to_thread(self.model.save_pretrained, path, safe_serialization=True)
                    state = (await asyncio.to_thread(th.load, path))["model"]
                    await asyncio.sleep(0.5)
                    return state
            """,
            count=3,
        ),
        # ray.get without timeout=0 inside an async actor method; Future.result(); join()
        Invalid(
            """
            import ray, threading
            from concurrent.futures import ThreadPoolExecutor

            @ray.remote
            class Actor:
                async def step(self, refs):
                    out = ray.get(refs)
                    fut = ThreadPoolExecutor().submit(print, 1)
                    fut.result()
                    t = threading.Thread(target=print)
                    t.start()
                    t.join()
                    return out
            """,
            fixed="""
            import ray, threading
            from concurrent.futures import ThreadPoolExecutor
            import asyncio

            @ray.remote
            class Actor:
                async def step(self, refs):
                    out = await asyncio.to_thread(ray.get, refs)
                    fut = ThreadPoolExecutor().submit(print, 1)
                    await asyncio.to_thread(fut.result)
                    t = threading.Thread(target=print)
                    t.start()
                    await asyncio.to_thread(t.join)
                    return out
            """,
            count=3,
        ),
        # two levels down through a module function, and the same via a nested helper
        Invalid(
            """
            import asyncio, subprocess

            def _run(cmd):
                return subprocess.run(cmd, check=True)

            def build():
                _run(["make"])

            async def handler():
                build()
            """,
            fixed="""
            import asyncio, subprocess

            def _run(cmd):
                return subprocess.run(cmd, check=True)

            def build():
                _run(["make"])

            async def handler():
                await asyncio.to_thread(build)
            """,
            message_contains="subprocess.run",
        ),
        # open() and comprehensions: flagged, no fix
        Invalid(
            """
            import json, torch
            async def load_all(paths, cfg):
                with open(cfg) as fh:
                    conf = json.load(fh)
                return [torch.load(p) for p in paths]
            """,
            count=3,
        ),
        # extra vocabulary by option
        Invalid(
            """
            import mylib
            async def upload(blob):
                mylib.io.upload(blob)
                blob.flush_to_disk()
            """,
            options={"extra-blocking-calls": ["mylib.io.upload", ".flush_to_disk"]},
            fixed="""
            import mylib
            import asyncio

            async def upload(blob):
                await asyncio.to_thread(mylib.io.upload, blob)
                await asyncio.to_thread(blob.flush_to_disk)
            """,
            count=2,
        ),
    ]

    # ------------------------------------------------------------------ setup
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        allowed = tuple(self.config["allowed-calls"])
        extra = tuple(self.config["extra-blocking-calls"])
        self._allowed_names = {a for a in allowed if not a.startswith(".")}
        self._allowed_methods = {a[1:] for a in allowed if a.startswith(".")}
        names = [*BLOCKING_CALLS, *(e for e in extra if not e.startswith("."))]
        self._exact = {n for n in names if not n.endswith(".*")}
        self._prefixes = tuple(n[:-1] for n in names if n.endswith(".*"))
        self._methods = {*BLOCKING_METHOD_NAMES, *(e[1:] for e in extra if e.startswith("."))}
        self._depth = max(0, int(self.config["max-depth"]))
        self._body_cache: dict[tuple[int, int], Optional[list[tuple[str, cst.Call]]]] = {}

    # ------------------------------------------------------------------ visitor
    def visit_Call(self, node: cst.Call) -> None:
        fn = self.facts.enclosing_function(node)
        if fn is None or not fn.is_async or self.facts.in_lambda(node):
            return
        if self._is_coroutine_use(node):
            return
        direct = self._blocking_name(node)
        if direct is not None:
            self.report(node, f"`{direct}()` blocks the event loop: every other task on it stalls until "
                              "it returns", fix=self._fix(node, direct))
            return
        target = self.facts.resolve_call(node)
        if target is None or target.is_async or self._depth == 0:
            return
        inner = self._blocking_inside(target, self._depth, set())
        if inner is None:
            return
        via = ", which calls ".join(f"`{name}()` (line {self.facts.line_of(call)})" for name, call in inner)
        self.report(
            node,
            f"`{_code(node.func)}()` blocks the event loop: it calls {via}; every other task on the loop "
            "stalls until it returns",
            fix=self._fix(node, None),
        )

    # ------------------------------------------------------------------ classification
    def _is_coroutine_use(self, node: cst.Call) -> bool:
        """Awaited, or a coroutine handed to a task spawner: not a synchronous call."""
        if self.facts.is_awaited(node):
            return True
        parent = self.facts.parent(node)
        if isinstance(parent, cst.Arg):
            outer = self.facts.parent(parent)
            if isinstance(outer, cst.Call):
                name = self.facts.call_name(outer)
                if name in F.TASK_SPAWNERS or name in F.MAIN_RUNNERS:
                    return True
        return False

    def _blocking_name(self, call: cst.Call) -> Optional[str]:
        """The vocabulary name that makes ``call`` blocking, or None."""
        q = self.facts.call_name(call)
        attr = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if q is not None:
            if q in self._allowed_names or (attr and attr in self._allowed_methods):
                return None
            if q in self._exact or (q.startswith(self._prefixes) and q.rsplit(".", 1)[-1] not in _NON_IO_METHODS):
                if q in _POLL_WITH_ZERO_TIMEOUT and _zero_timeout(call):
                    return None
                if q == "ray.get" and self._known_ready_refs(call):
                    return None
                if q == "concurrent.futures.Future.result" and self._known_done_future(call):
                    return None
                return _short(q)
        # save/export methods by name, only when the callee is not a same-module function
        last = attr if attr is not None else (q.rsplit(".", 1)[-1] if q else None)
        if last in self._methods and last not in self._allowed_methods and self.facts.resolve_call(call) is None:
            return _code(call.func)
        return None

    def _known_ready_refs(self, call: cst.Call) -> bool:
        """``ray.get(x)`` where ``x`` went through a ``ray.wait`` in the same function
        (``ready, _ = ray.wait([ref], timeout=0)`` ... ``ray.get(ref)``): refs that
        ``ray.wait`` reported ready return at once."""
        args = [a.value for a in call.args if a.keyword is None]
        if not args or not isinstance(args[0], cst.Name):
            return False
        name = args[0].value
        fn = self.facts.enclosing_function(call)
        for other in fn.calls if fn is not None else ():
            if other is not call and self.facts.call_name(other) == "ray.wait":
                stmt = self.facts.enclosing_statement(other)
                if stmt is not None and name in names_in(stmt):
                    return True
        return False

    def _known_done_future(self, call: cst.Call) -> bool:
        """``fut.result()`` where the function also awaits ``fut``, checks
        ``fut.done()``/``fut.cancelled()`` or waits for a done callback on it: the result
        is read after completion."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name)):
            return False
        name = func.value.value
        fn = self.facts.enclosing_function(call)
        for other in fn.calls if fn is not None else ():
            f = other.func
            if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name
                    and f.attr.value in ("done", "cancelled", "add_done_callback", "exception")):
                return True
            if self.facts.call_name(other) in ("asyncio.wrap_future", "asyncio.wait", "concurrent.futures.wait") \
                    and name in names_in(other):
                return True
        return False

    def _blocking_inside(self, fn: FunctionInfo, depth: int, seen: set) -> Optional[list[tuple[str, cst.Call]]]:
        """The chain of calls from the body of sync ``fn`` down to a blocking call
        (``[("_run", call), ("subprocess.run", call)]``), following same-module sync
        callees down to ``depth`` levels; None when none is found."""
        key = (id(fn), depth)
        if key in self._body_cache:
            return self._body_cache[key]
        seen.add(fn)
        found: Optional[list[tuple[str, cst.Call]]] = None
        for call in fn.calls:
            if self.facts.in_lambda(call) or self._is_coroutine_use(call):
                continue
            name = self._blocking_name(call)
            if name is not None:
                found = [(name, call)]
                break
            if depth > 1:
                target = self.facts.resolve_call(call)
                if target is not None and not target.is_async and target not in seen:
                    deeper = self._blocking_inside(target, depth - 1, seen)
                    if deeper is not None:
                        found = [(_code(call.func), call), *deeper]
                        break
        self._body_cache[key] = found
        return found

    # ------------------------------------------------------------------ fix
    def _fix(self, node: cst.Call, name: Optional[str]) -> Optional[Fix]:
        q = self.facts.call_name(node)
        if q in _FILE_OPENERS or self._in_comprehension(node) or self._in_with_item(node) or self._in_open_block(node):
            return None
        alias = self.facts.module_alias("asyncio")
        edits = []
        if alias is None:
            alias = "asyncio"
            edits.append(AddImport("asyncio"))
        args = strip_trailing_comma(node.args)
        if q == "time.sleep":
            inner = cst.Call(func=cst.Attribute(cst.Name(alias), cst.Name("sleep")), args=args)
            message = "Use `await asyncio.sleep()`"
        else:
            func_arg = cst.Arg(value=node.func.with_changes(lpar=(), rpar=()) if isinstance(
                node.func, (cst.Name, cst.Attribute)) else node.func)
            inner = cst.Call(func=cst.Attribute(cst.Name(alias), cst.Name("to_thread")), args=[func_arg, *args])
            message = "Run it in a thread with `await asyncio.to_thread()`"
        new: cst.BaseExpression = cst.Await(expression=inner, lpar=node.lpar, rpar=node.rpar)
        if not node.lpar and self._needs_parens(node):
            new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        edits.insert(0, Replace(node, new))
        return Fix.unsafe(*edits, message=message)

    def _needs_parens(self, node: cst.Call) -> bool:
        # ``await`` binds looser than attribute access, subscription and calls
        parent = self.facts.parent(node)
        return (
            isinstance(parent, cst.Attribute) and parent.value is node
            or isinstance(parent, cst.Subscript) and parent.value is node
            or isinstance(parent, cst.Call) and parent.func is node
        )

    def _in_comprehension(self, node: cst.CSTNode) -> bool:
        for anc in self.facts.ancestors(node):
            if isinstance(anc, _COMPREHENSIONS):
                return True
            if isinstance(anc, (cst.FunctionDef, cst.BaseStatement)):
                return False
        return False

    def _in_open_block(self, node: cst.CSTNode) -> bool:
        """Inside ``with open(...) as fh:``: the block's file work stays on the loop, so
        moving one call to a thread is a half fix (the docs say to move the block)."""
        for anc in self.facts.ancestors(node):
            if isinstance(anc, cst.FunctionDef):
                return False
            if isinstance(anc, cst.With) and any(
                isinstance(item.item, cst.Call) and self.facts.call_name(item.item) in _FILE_OPENERS
                for item in anc.items
            ):
                return True
        return False

    def _in_with_item(self, node: cst.CSTNode) -> bool:
        for anc in self.facts.ancestors(node):
            if isinstance(anc, cst.WithItem):
                return True
            if isinstance(anc, cst.BaseStatement):
                return False
        return False


def _zero_timeout(call: cst.Call) -> bool:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "timeout":
            v = arg.value
            return isinstance(v, (cst.Integer, cst.Float)) and float(v.value) == 0.0
    return False


def _short(qualified: str) -> str:
    """``builtins.open`` -> ``open`` for messages."""
    return qualified[len("builtins."):] if qualified.startswith("builtins.") else qualified


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


# ------------------------------------------------------------------ candidate tier 2 (ast)
_VOCAB = [n for n in BLOCKING_CALLS if not n.endswith(".*")]
_LAST_WORDS = {n.rsplit(".", 1)[-1] for n in _VOCAB} | set(BLOCKING_METHOD_NAMES)
#: last word -> the words its receiver must end with (``get`` -> ray, requests, Queue, ...)
_RECEIVERS: dict[str, set[str]] = {}
for _name in _VOCAB:
    _parts = _name.split(".")
    if len(_parts) > 1:
        _RECEIVERS.setdefault(_parts[-1], set()).add(_parts[-2])
#: ``requests.Session.*``: any method of these types
_PREFIX_TYPES = {n[:-2].rsplit(".", 1)[-1] for n in BLOCKING_CALLS if n.endswith(".*")}


def _may_be_blocking(tree, call: ast.Call) -> bool:
    """The call's qualified name may be in the vocabulary (or a save method by name)."""
    func = call.func
    if isinstance(func, ast.Attribute):
        aliased = tree.aliases_of_attr(func.attr)  # self.saver = torch.save; self.saver()
        if func.attr in BLOCKING_METHOD_NAMES or aliased & _LAST_WORDS:
            return True
        receiver = tree.words(func.value)
        if receiver & _PREFIX_TYPES or receiver & _RECEIVERS.get(func.attr, set()):
            return True
        return bool(aliased) and tree.bound_to_method_of(func.attr, _PREFIX_TYPES, attribute=True)
    words = tree.words(func)
    if words & _LAST_WORDS:
        return True
    return isinstance(func, ast.Name) and len(words) > 1 and tree.bound_to_method_of(func.id, _PREFIX_TYPES)


def _may_block_in_coroutine(tree) -> bool:
    if not any(fn.is_async for fn in tree.functions):
        return False
    direct = [fn for fn in tree.functions if not fn.is_async
              and any(not lam and _may_be_blocking(tree, c) for c, _, lam in fn.calls)]
    reaching = tree.sync_functions_reaching(direct, depth=2)
    for fn in tree.functions:
        if fn.is_async:
            for call, awaited, in_lambda in fn.calls:
                if awaited or in_lambda:
                    continue
                if _may_be_blocking(tree, call) or callee_name(call) in reaching:
                    return True
    return False
