from __future__ import annotations

import ast
import functools
import io
import operator
import re
import tokenize
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.prefilter import words as C
from shutdown_lint import facts as F
from shutdown_lint.facts import FunctionInfo, names_in
from shutdown_lint.traversal import walk
from shutdown_lint.facts.types import Typer, normalise
from shutdown_lint.rule import AddImport, Fix, Invalid, Option, Replace, Rule, Valid
from shutdown_lint.prefilter.ast_tree import STATEMENT_BLOCKS, statement_blocks, subtree_fields
from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.facts import first_argument
from shutdown_lint.ast_engine.types import AstTyper, typer as ast_typer

from ._blocking_vocabulary import (
    ASYNC_CODES, ATTRIBUTE_TYPES, CONSUMERS, CONSUMING, FAMILIES, FAMILY_NAMES, FILE, LAZY_CALLS, LAZY_WRAPPERS,
    MP_CONTEXT, NON_IO_METHODS, RESULT_TYPES, SAVE_METHOD_NAMES, TYPE_ALIASES, family_of,
)
from ._fixes import strip_trailing_comma


#: Calls whose result is a file object: a fix must not rewrite them (the object is used
#: in a ``with`` statement or by later calls), and calls in their ``with`` block get none.
_FILE_OPENERS = frozenset(name for name, t in RESULT_TYPES.items() if t == FILE)
#: Every type some family has methods for (``subprocess.Popen``, ``io.<file>``, ...):
#: annotations and base classes count only when they name one of these.
_KNOWN_TYPES = frozenset(c.rsplit(".", 1)[0] for fam in FAMILIES for c in fam.calls) - {
    "os", "os.path", "subprocess", "requests", "httpx", "httpx2", "urllib.request", "urllib3", "time", "glob", "io",
    "builtins", "codecs", "gzip", "bz2", "lzma", "torch", "numpy", "pickle", "json", "shutil", "ray",
    "concurrent.futures", "safetensors.torch", "safetensors.numpy", "torch.serialization"}
_WAIT_FLAGS = frozenset({"WNOHANG"})
#: Queue types whose ``put`` waits only when a ``maxsize`` was given.
_QUEUE_TYPES = ("queue.", "multiprocessing.Queue.", "multiprocessing.JoinableQueue.", "multiprocessing.queues.",
                "multiprocessing.SimpleQueue.")
_THREAD_RUNNERS = {"asyncio": "asyncio.to_thread", "anyio": "anyio.to_thread.run_sync",
                   "trio": "trio.to_thread.run_sync"}


class _Detection:
    """SHD301's detection, shared by the libcst rule and its check on ``ast`` (``_Ast``): both
    ask the same questions of their facts (``ModuleFacts``/``AstFacts``: same method names) and
    read the tree through a few hooks each implements (``_text``: a node's code as libcst's
    ``code_for_node`` gives it; ``_method``; ``_is_call``; ``_names_in``; ``_spelled_name``;
    ``_self_attribute``; ``_first_positional_name``; ``_statement_names``; ``_imported_tops``;
    ``_typer``; ``_is_coroutine_use``; ``_polls_only``; ``_consumed_here``; ``_unbounded_queue``;
    ``_checked_not_empty``; ``_left_to_shd403``; the fix's ``_in_comprehension``,
    ``_in_with_item``, ``_in_open_block``; ``_fix``: the libcst rule's ``Fix``, the check's
    ``FixPlan``)."""

    def _setup(self) -> None:
        allowed = tuple(self.config["allowed-calls"])
        extra = tuple(self.config["extra-blocking-calls"])
        chosen = set(self.config["blocking-families"])
        families = [f for f in FAMILIES if f.name in chosen]
        self._allowed_names = {a for a in allowed if not a.startswith(".")}
        self._allowed_methods = {a[1:] for a in allowed if a.startswith(".")}
        names = [*(c for f in families for c in f.calls), *(e for e in extra if not e.startswith("."))]
        self._exact = {n for n in names if not n.endswith(".*")}
        # ``TYPE.*`` as ``TYPE.``: a name is a method of the type itself when the part up to its last
        # dot is one of them (``_in_vocabulary``)
        self._prefixes = frozenset(n[:-1] for n in names if n.endswith(".*"))
        self._polls = {k: v for f in families for k, v in f.polls.items()}
        self._no_fix = {n for f in families for n in f.no_fix} | _FILE_OPENERS
        self._methods = {*(SAVE_METHOD_NAMES if "saves" in chosen else ()),
                         *(e[1:] for e in extra if e.startswith("."))}
        self._iterate_files = "files" in chosen
        self._depth = max(0, int(self.config["max-depth"]))
        self._body_cache: dict[tuple[int, int], Optional[list]] = {}
        self._markers: Optional[dict[int, set[str]]] = None
        self._skip_results = frozenset(n for n in self._allowed_names if n in RESULT_TYPES)

    # ------------------------------------------------------------------ visitor
    def _check_call(self, node) -> None:
        fn = self.facts.enclosing_function(node)
        if fn is None or not fn.is_async or self.facts.in_lambda(node):
            return
        if self._is_coroutine_use(node):
            return
        direct = self._blocking(node)
        if direct is not None and direct[1] in ("ray.get", "ray.wait") and self._left_to_shd403(node):
            return
        if direct is not None:
            shown, key = direct
            if self._meant(node, key):
                return
            lost = CONSUMING.get(key)
            self.report(node, f"`{shown}()` blocks the event loop: every other task on it stalls until "
                              "it returns" + _no_thread(lost), fix=None if lost else self._fix(node, key))
            return
        target = self.facts.resolve_call(node)
        if target is None or target.is_async or self._depth == 0:
            return
        inner = self._blocking_inside(target, self._depth, set())
        if inner is None:
            return
        found = self._blocking(inner[-1][1])
        key = found[1] if found else None
        if key is not None and self._meant(node, key):
            return
        lost = CONSUMING.get(key)
        via = ", which calls ".join(f"`{name}()` (line {self.facts.line_of(call)})" for name, call in inner)
        self.report(
            node,
            f"`{self._text(node.func)}()` blocks the event loop: it calls {via}; every other task on the loop "
            "stalls until it returns" + _no_thread(lost),
            fix=None if lost else self._fix(node, None),
        )

    def _meant(self, node, key: str) -> bool:
        """A flake8-async/ruff marker for this family on the call's line (``# noqa: ASYNC251``,
        ``# type: ignore[ASYNC101]``): the author says the call blocks on purpose."""
        codes = ASYNC_CODES.get(family_of(key) or "")
        if not codes:
            return False
        if self._markers is None:
            self._markers = _async_markers(self.facts.code())
        if not self._markers:
            return False
        return bool(self._markers.get(self.facts.line_of(node), set()) & codes)

    def _check_iteration(self, node, it) -> None:
        """``for line in f`` over a file object reads it on the loop, one line at a time."""
        if not self._iterate_files:
            return
        fn = self.facts.enclosing_function(node)
        if fn is None or not fn.is_async or self.facts.in_lambda(node):
            return
        if self._is_call(it) and self._blocking(it) is not None:
            return  # ``for line in open(p)``: one finding, on the ``open()``
        if self._type_of(it, node) == FILE:
            self.report(it, f"iterating over the file object `{self._text(it)}` reads it on the event loop: every "
                            "other task on it stalls during each read")

    # ------------------------------------------------------------------ classification
    def _blocking_name(self, call) -> Optional[str]:
        found = self._blocking(call)
        return found[0] if found else None

    def _blocking(self, call) -> Optional[tuple[str, str]]:
        """``(as shown, vocabulary name)`` when ``call`` blocks, else None. The receiver
        of a method call is typed first (``f.read`` -> ``io.<file>.read``), then the
        facts' qualified name is tried."""
        attr, receiver = self._method(call)
        if attr is not None and attr in self._allowed_methods:
            return None
        names = []  # (vocabulary name, as shown): a typed receiver shows as written (None: rendered if reported)
        if attr is not None and self._is_call(receiver) and self._blocking(receiver):
            return None  # ``open(p).read()``: one finding, on the ``open()``
        if attr is not None:
            t = self._type_of(receiver, call)
            if t is not None:
                names.append((f"{t}.{attr}", None))
        q = self.facts.call_name(call)
        if q is not None:
            names.append((_norm(q), _short(_norm(q))))
        for q, shown in names:
            if q in self._allowed_names:
                return None
            if not self._in_vocabulary(q):
                continue
            if self._polls_only(q, call):
                return None
            if q in LAZY_CALLS and not self._consumed_here(call):
                return None
            if q.startswith("os.wait") and self._names_in(call) & _WAIT_FLAGS:
                return None
            if q.endswith(".put") and q.startswith(_QUEUE_TYPES) and self._unbounded_queue(call.func):
                return None
            if q.endswith(".get") and q.startswith(_QUEUE_TYPES) and self._checked_not_empty(call):
                return None
            if q == "ray.get" and self._known_ready_refs(call):
                return None
            if q == "concurrent.futures.Future.result" and self._known_done_future(call):
                return None
            return (shown if shown is not None else self._text(call.func)), q
        # save/export methods by name, only when the callee is not a same-module function
        last = attr if attr is not None else (q.rsplit(".", 1)[-1] if q else None)
        if last in self._methods and last not in self._allowed_methods and self.facts.resolve_call(call) is None:
            return self._text(call.func), f".{last}"
        return None

    def _in_vocabulary(self, q: str) -> bool:
        if q in self._exact:
            return True
        # ``TYPE.*``: a method of the type itself (``session.get``), not of one of its
        # attributes (``session.headers.update``), and not one that does no I/O
        return q[:q.rfind(".") + 1] in self._prefixes and q.rsplit(".", 1)[-1] not in NON_IO_METHODS

    def _bound_value(self, expr, at):
        """The expression last bound to name ``expr`` (or ``self.attr``), if any."""
        name = self._spelled_name(expr)
        if name is not None:
            cur = self.facts.scope_of(at)
            while cur is not None:
                bindings = cur.bindings.get(name)
                if bindings:
                    return bindings[-1].target if bindings[-1].kind == "value" else None
                if name in cur.params:
                    return None
                cur = cur.scope
            b = self.facts.lookup(name, None)
            return b.target if b is not None and b.kind == "value" else None
        attr = self._self_attribute(expr)
        if attr is not None:
            cls = self._class_at(at)
            values = cls.attr_values.get(attr) if cls is not None else None
            return values[-1][0] if values else None
        return None

    # ------------------------------------------------------------------ value types
    def _type_of(self, expr, at) -> Optional[str]:
        """The type of the value ``expr`` refers to: the shared facts' types from declarations
        (``shutdown_lint.facts.types``), seen with this rule's known types (a class of the module
        stands for the known type it derives from) and its allowed openers (a file from an
        allowed opener is allowed too: ``allowed-calls = ["builtins.open"]``)."""
        return self._typer.type_of(expr, at)

    def _value_type(self, value, depth: int = 0) -> Optional[str]:
        return self._typer.value_type(value, depth)

    def _class_at(self, at):
        cur = self.facts.scope_of(at)
        while cur is not None:
            if cur.cls is not None:
                return cur.cls
            cur = cur.scope
        return None

    # ------------------------------------------------------------------ known-done values
    def _known_ready_refs(self, call) -> bool:
        """``ray.get(x)`` where ``x`` went through a ``ray.wait`` in the same function
        (``ready, _ = ray.wait([ref], timeout=0)`` ... ``ray.get(ref)``): refs that
        ``ray.wait`` reported ready return at once."""
        name = self._first_positional_name(call)
        if name is None:
            return False
        fn = self.facts.enclosing_function(call)
        for other in fn.calls if fn is not None else ():
            if other is not call and self.facts.call_name(other) == "ray.wait":
                names = self._statement_names(other)
                if names is not None and name in names:
                    return True
        return False

    def _known_done_future(self, call) -> bool:
        """``fut.result()`` where the function also awaits ``fut``, checks
        ``fut.done()``/``fut.cancelled()`` or waits for a done callback on it: the result
        is read after completion."""
        attr, receiver = self._method(call)
        name = self._spelled_name(receiver) if attr is not None else None
        if name is None:
            return False
        fn = self.facts.enclosing_function(call)
        for other in fn.calls if fn is not None else ():
            other_attr, other_receiver = self._method(other)
            if (other_attr in ("done", "cancelled", "add_done_callback", "exception")
                    and self._spelled_name(other_receiver) == name):
                return True
            if self.facts.call_name(other) in ("asyncio.wrap_future", "asyncio.wait", "concurrent.futures.wait") \
                    and name in self._names_in(other):
                return True
        return False

    def _blocking_inside(self, fn: FunctionInfo, depth: int, seen: set) -> Optional[list]:
        """The chain of calls from the body of sync ``fn`` down to a blocking call
        (``[("_run", call), ("subprocess.run", call)]``), following same-module sync
        callees down to ``depth`` levels; None when none is found."""
        key = (id(fn), depth)
        if key in self._body_cache:
            return self._body_cache[key]
        seen.add(fn)
        found: Optional[list] = None
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
                        found = [(self._text(call.func), call), *deeper]
                        break
        self._body_cache[key] = found
        return found

    # ------------------------------------------------------------------ fix
    def _fix_refused(self, node, key: Optional[str]) -> bool:
        """No fix for this call (the class docstring's "No fix is offered where...")."""
        return key in self._no_fix or self._in_comprehension(node) or self._in_with_item(node) \
            or self._in_open_block(node)

    def _async_library(self) -> tuple[str, Optional[str]]:
        """The library the fix writes for: asyncio unless the module imports anyio or
        trio and not asyncio; with its module-level alias (None: to be imported)."""
        alias = self.facts.module_alias("asyncio")
        if alias is not None:
            return "asyncio", alias
        for lib in ("anyio", "trio"):
            alias = self.facts.module_alias(lib)
            if alias is not None:
                return lib, alias
        imported = self._imported_tops()
        for lib in ("anyio", "trio"):
            if lib in imported:  # ``from anyio import to_thread``: add ``import anyio``
                return lib, None
        return "asyncio", None


def _fix_message(lib: str, key: Optional[str]) -> str:
    if key == "time.sleep":
        return f"Use `await {lib}.sleep()`"
    return f"Run it in a thread with `await {_THREAD_RUNNERS[lib]}()`"


class BlockingCallInCoroutine(_Detection, Rule):
    """
    ## What it does
    Flags a blocking call made directly in a coroutine function (`async def`, whatever
    runs it: asyncio, uvloop, trio, anyio, a Ray async actor). The vocabulary comes in
    families, each of which can be switched off (`blocking-families`):

    | family | what is flagged |
    | --- | --- |
    | `http` | `requests.*`, `httpx.get/post/...` and the same of `httpx2` (httpx's maintained continuation), methods of `httpx.Client`/`httpx2.Client`, `requests.Session` and every urllib3 class that sends requests (`PoolManager`, `ProxyManager`, `HTTPConnectionPool`, `HTTPSConnectionPool`, `ConnectionPool`, `RequestMethods`, also spelled `urllib3.poolmanager.*`/`urllib3.connectionpool.*`/`urllib3.request.*`), `urllib3.request`, `urllib.request.urlopen/urlretrieve`, `http.client.HTTPConnection.request/getresponse` |
    | `processes` | `subprocess.run/call/check_*/getoutput/getstatusoutput`, `subprocess.Popen(...)` and its `wait()`/`communicate()`, `os.system`, `os.popen`, `os.spawn*`, `os.posix_spawn[p]`, `os.wait*` (not with `WNOHANG`) |
    | `files` | `open()`, `io.open`, `os.fdopen`, `gzip/bz2/lzma/codecs.open`, `input()`; `read*`/`write*`/`flush`/`truncate` on a file object from one of those (or a `Popen`'s `stdout`/`stderr`/`stdin`), and iterating over one (`for line in f`) |
    | `paths` | `os.path.exists/isfile/isdir/getsize/getmtime/realpath/...`, `os.stat/listdir/scandir/walk/makedirs/remove/rename/...`, `glob.glob`, and the `pathlib.Path` methods that touch the file system (`exists`, `is_dir`, `read_text`, `write_bytes`, `mkdir`, `iterdir`, `glob`, `resolve`, ...; not `joinpath`, `name`, `with_suffix`) |
    | `sleeps` | `time.sleep` |
    | `waits` | `get`/`put`/`join` of `queue.Queue` and `multiprocessing.Queue` (not with `block=False` or `timeout=0`, not `get_nowait`; `put` only on a bounded queue), `threading.Event.wait`, `Condition.wait`, `Barrier.wait`, `Lock`/`RLock`/`Semaphore.acquire` (not with `blocking=False` or `timeout=0`), `Thread.join`, `Process.join`, `concurrent.futures.wait/as_completed`, `Future.result()` of an executor future, `Pool.map/apply/join`, `AsyncResult.get/wait` |
    | `saves` | `torch.save`/`torch.load`, `safetensors.torch.save_file`, `np.save*`/`np.load`, `pickle.dump/load`, `json.dump/load` (not `dumps`), `shutil.copy*/move/rmtree/...`, and any `*.save_pretrained()`, `*.save_checkpoint(s)()`, `*.save_model(s)()` whose callee is not defined here |
    | `ray` | `ray.get(...)`, `ray.wait(...)` (not with `timeout=0`), `ray.util.queue.Queue.get/put` |

    Values are followed within a function (and on `self` across methods): a name bound
    to `open(...)`, `httpx.Client(...)`, `requests.Session()`, `urllib3.PoolManager()`,
    `subprocess.Popen(...)`, `queue.Queue()`, `threading.Event()`/`Lock()`/`Thread(...)`,
    `multiprocessing.Queue()`/`Process(...)` (also from `get_context()`),
    `Path(...)` (and `p / "x"`, `p.parent`), by assignment, `with ... as` or tuple
    unpacking (`src, dst = Path(a), Path(b)`), has its later method calls judged
    (`f.read()`, `client.get()`, `p.wait()`, `q.get()`, `ev.wait()`, `t.join()`); so does
    a name *declared* with one of these types, whatever it is bound to: a parameter of
    any kind (`f: io.BufferedReader`, `f: TextIOWrapper | None`, `Optional[...]`,
    `typing.IO[str]`/`TextIO`/`BinaryIO`, a string annotation, a union whose non-None
    members are all the same type), a closure over such a parameter, an annotated
    variable or module global (`client: httpx.Client = make()`), and `self.x` assigned
    or annotated in any method or the class body. Instances of a class of this module
    that derives from one of these types (`class Worker(threading.Thread)`) count too.
    The types come from the shared facts (`shutdown_lint/facts/types.py`), not from
    this rule. In-memory files (`io.StringIO`, `BytesIO`) and a union of a file with
    something else are not files here.
    Names are resolved through imports and aliases (`import torch as th`,
    `from time import sleep`, `import torch.multiprocessing as mp`).

    A call of a synchronous function or method defined in the same module or class
    (`self.flush()`, `save(state)`) whose body makes one of the calls above is flagged
    too, followed through at most `max-depth` levels of such calls, for every family.
    The finding is at the call site in the coroutine and names the chain down to the
    blocking call.

    Not flagged: the same calls in synchronous code; async clients and primitives
    (`httpx.AsyncClient`, `aiohttp`, `asyncio.Queue`/`Event`/`Lock`, `aiofiles.open`,
    `anyio.Path`, `trio.Path`, whose methods are awaited); calls in a nested `def`
    inside the coroutine (flagged where the coroutine calls it, not where it is run
    with `asyncio.to_thread`/`run_in_executor`/`anyio.to_thread.run_sync`/
    `trio.to_thread.run_sync`); in a `lambda`; callables passed *uncalled* to those
    thread runners or wrapped in `functools.partial` for them; awaited calls; calls
    handed to `create_task`/`gather`; `task.result()` on an asyncio task (it never
    blocks); polls (`q.get(block=False)`, `q.get(timeout=0)`, `q.get_nowait()`,
    `lock.acquire(blocking=False)`, `ev.wait(0)`, `os.waitpid(pid, os.WNOHANG)`,
    `ray.get(refs, timeout=0)`); string-only path functions (`os.path.join`,
    `basename`, `Path.name`, `joinpath`); the driver's own `ray.get`/`ray.wait` in a
    coroutine while SHD403 is selected (SHD403 reports it once, with a fix that awaits).

    A call marked with a flake8-async/ruff code of its family on its line says it blocks on
    purpose and is not flagged: `# noqa: ASYNC251` or `# type: ignore[ASYNC101]` on
    `time.sleep(...)` (a chaos endpoint that must stall the loop), `ASYNC100`/`210`-`212` on
    an HTTP call, `ASYNC101`/`102`/`220`-`222` on a process call, `ASYNC101`/`230`-`232`/`250`
    on a file call or `input()`, `ASYNC240` on a path call (old and new numbering; the
    `waits`, `saves` and `ray` families have no such code). A code of another family does not
    count. `# noqa: SHD301` works as for every rule.

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
    other call queued on the actor. Per family:

    - **http**: a sync client waits for the server's whole response (seconds for an
      LLM call, forever for a server that never answers and no timeout) on the loop
      thread. Use an async client: `httpx.AsyncClient`, `aiohttp.ClientSession`
      (`await client.get(...)`), or `await asyncio.to_thread(requests.get, url)`.
    - **processes**: `subprocess.run` and `Popen.wait()` block until the child exits;
      `Popen(...)` itself forks and waits for the child's `exec`. Use
      `await asyncio.create_subprocess_exec(...)` (then `await proc.wait()`,
      `await proc.communicate()`), `anyio.run_process`, `trio.run_process`.
    - **files**: each `read`/`write` is a system call that waits for the disk (or an
      NFS server, a pipe, a FIFO); `open()` itself can block (network file systems,
      FIFOs). Use `anyio.open_file`/`aiofiles.open` (`async with`, `await f.read()`),
      or move the whole `with open(...)` block into a function run with
      `asyncio.to_thread`. `input()` waits for a person.
    - **paths**: `os.path.exists`, `stat`, `listdir` and `pathlib.Path` I/O methods
      are file-system calls: microseconds on a warm local disk, seconds on a network
      file system or a busy disk. Use `anyio.Path` / `trio.Path` (`await
      path.exists()`), `aiofiles.os`, or `asyncio.to_thread(os.path.exists, p)`.
    - **sleeps**: `time.sleep` stops the loop for the whole delay. Use
      `await asyncio.sleep()` (`trio.sleep`, `anyio.sleep`).
    - **waits**: `queue.Queue.get`, `Event.wait`, `Lock.acquire`, `Thread.join`,
      `Process.join`, `concurrent.futures.wait` wait for *another thread or process*;
      if that one waits for the loop (it puts a result with
      `loop.call_soon_threadsafe`, it awaits a `run_coroutine_threadsafe` future), the
      program deadlocks. Use the asyncio primitives (`asyncio.Queue`, `asyncio.Event`,
      `asyncio.Lock`) when both sides are coroutines, `asyncio.wrap_future` for
      executor futures, `asyncio.to_thread(ev.wait)` for a thread-side event, and for a
      thread-side queue poll (`q.get_nowait()` + `await asyncio.sleep`) or have the
      producer hand items over with `loop.call_soon_threadsafe(aq.put_nowait, item)`
      (`asyncio.to_thread(q.get)` loses the item it takes when the task is cancelled).
    - **saves**: serialising a model or a checkpoint takes seconds to minutes. Run it
      with `asyncio.to_thread` (on a snapshot of the state if the loop keeps
      mutating it).
    - **ray**: `ray.get` waits for remote work. Use `await ref` /
      `await asyncio.wrap_future(ref.future())`, or `ray.wait(..., timeout=0)` to poll.

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
    Unsafe (a fix is safe only if the program does exactly what it did on every path where
    the hazard does not occur; here the call itself moves to another thread or changes). Shapes:
    - `f(*args, **kwargs)` -> `await asyncio.to_thread(f, *args, **kwargs)`, for a function, a
      method (`self.save_checkpoints(step)` -> `to_thread(self.save_checkpoints, step)`) or a
      same-module callee that blocks, keeping the result when it is used (`x = torch.load(p)`
      -> `x = await asyncio.to_thread(torch.load, p)`, parenthesised where needed:
      `(await asyncio.to_thread(th.load, p))["model"]`);
    - `time.sleep(s)` -> `await asyncio.sleep(s)`;
    - in a module that imports `anyio` or `trio` and not `asyncio`:
      `await anyio.to_thread.run_sync(f, *args)` / `trio.to_thread.run_sync(...)` (keyword
      arguments then go through `functools.partial`) and `anyio.sleep` / `trio.sleep`.

    The arguments are still evaluated on the loop, but the call itself now runs on another
    thread while other tasks run: check that it does not touch state the loop mutates
    meanwhile (a dataloader being iterated, a dict of timings being reset, a model being
    updated), and that the callee is thread-safe. A coroutine cancelled while it awaits the
    thread does not stop the thread: the call finishes and its result is dropped. The fix
    adds `import asyncio` when the module does not have it, and uses the module's alias
    when it does (`aio.to_thread`). Each shape is run before and after (the loop's longest
    stall, the call's value and output) in `tests/behaviour/test_shd301_*.py`.

    No fix, with the reason in the message, for calls that *take* something, whose result
    would be lost on that cancellation (`CONSUMING` in `_blocking_vocabulary.py`): `get` of
    `queue.Queue`/`LifoQueue`/`PriorityQueue`/`SimpleQueue`, of `multiprocessing` queues and of
    `ray.util.queue.Queue` (with or without a timeout: the thread still dequeues the next
    item), `read`/`read1`/`readinto`/`readline`/`readlines` of a file object (a pipe's or a
    socket file's bytes are gone), `input()`, `Popen.communicate()` (the child's output),
    `os.wait`/`wait3`/`wait4`/`waitpid`/`waitid` (the child's exit status can be collected
    once), and `acquire()` of a `Lock`, `RLock`, `Condition` or semaphore (taken by a thread
    nobody tells to give it back; an `RLock` cannot even be released by the loop's thread);
    also socket `recv*`/`accept` and `multiprocessing` `Connection.recv*` when added with
    `extra-blocking-calls`. Poll instead (`q.get_nowait()` or `block=False`/`timeout=0`
    between `await asyncio.sleep()`s), or use an asyncio primitive (`asyncio.Queue`,
    `loop.add_reader`, `asyncio.create_subprocess_exec`). Calls that are not lost this way
    keep the fix: `put`, `Event.wait`, `join`, `Future.result()`, `ray.get` (the result stays
    in its future or object store), writes.

    No fix is offered where a thread would not help or would be wrong:
    - `open()` (and `os.fdopen`, `gzip.open`, `Path.open`, ...) and calls inside a
      `with open(...)` block: the file work in the block blocks too. Move the whole
      block into a local function and run that with `asyncio.to_thread`; the fix does
      not do it for you because the block may assign names the coroutine uses
      afterwards;
    - iterating over a file (`for line in f`), and calls returning iterators
      (`os.scandir`, `os.walk`, `Path.iterdir/glob/rglob`, `glob.iglob`,
      `concurrent.futures.as_completed`): the iteration would still run on the loop;
    - `subprocess.Popen(...)` and `os.popen(...)`: the object is used afterwards
      (`p.wait()`, `p.stdout.read()`); switch to `asyncio.create_subprocess_exec`;
    - inside comprehensions (an `await` there changes what the comprehension is), or
      where the call is the target of a `with`.

    ## Options
    - `blocking-families` (list of str, default all: `http`, `processes`, `files`,
      `paths`, `sleeps`, `waits`, `saves`, `ray`): the families checked. An unknown
      name is a configuration error.
    - `extra-blocking-calls` (list of str): more qualified names (`mylib.io.upload`) or
      method names (`.flush_to_disk`, with a leading dot) that block.
    - `allowed-calls` (list of str): qualified or method names never to flag, e.g.
      `builtins.open`.
    - `max-depth` (int, default 2): how many levels of same-module synchronous calls
      to look through; 0 turns the look-through off.

    ## Known limits
    - Values are followed by name within a function and through `self.x` attributes;
      a file or client passed in as an unannotated parameter, returned by another
      function or stored in a container is not typed.
    - A `with lock:` block on a `threading.Lock` is not flagged (it is the common,
      short critical section shared with threads); only explicit `acquire()` is.
    - Iterating over a file is flagged in the coroutine itself, not inside a
      same-module callee.
    - `q.put()` is flagged only on a queue built with a `maxsize` (or one whose
      construction is not visible, e.g. an annotated parameter): an unbounded queue's
      `put` never waits. `q.get()` under `if not q.empty():` is not flagged.
    - `Path.iterdir/glob/rglob/walk`, `os.walk` and `glob.iglob` are generator functions:
      they are flagged only where the coroutine iterates the result itself (`for`,
      `list(...)`, `next(...)`, directly or through a name), not when a thread does.
    - The `paths` family is most of what a large code base shows (134 of the 162 new
      findings of the precision sweep): each is a real file-system call on the loop, but
      most are one metadata call (`exists`, `mkdir(exist_ok=True)`, `unlink`) that takes
      microseconds on a warm local disk; they matter on network file systems and busy
      disks. Switch the family off (`blocking-families`) where that is not a concern.
    - Comparison with ruff's and flake8-async's ASYNC rules on this repository's own
      fixtures per family: `python bench/compare_blocking.py` (table in the README);
      on the peers' own fixtures: `python bench/compare_fixtures.py --flake8-async DIR
      --ruff DIR` (checkouts of theirs; nothing vendored). Measured on their fixtures
      (imports added where they leave them out): flake8-async's blocking-call and task
      fixtures 184 of 199 lines with SHD102/106, 184 of the 185 outside the deliberate
      differences below (ruff 108); ruff's ASYNC2xx fixtures 105 of 107, all 105
      outside them (flake8-async 92).
    - Where SHD301 differs by design: `os.waitpid(pid, os.WNOHANG)` is a poll (not
      flagged here, flagged by both); `os.path.normpath`/`relpath`/`abspath` (and
      private helpers like `_joinrealpath`) are string functions that do no disk I/O
      (flagged by both); an HTTP client's `close()` releases its sockets without waiting
      on the peer (flagged by both); on a file object only the methods that read or write
      block (`read*`, `write*`, `flush`, `truncate`), not any method
      (`f.anything()`, flagged by flake8-async); an awaited call (`await
      os.path.isfile(p)`) is taken as asynchronous; a module global rebound later in the
      module (`glob_client: int = 4` after `glob_client = httpx.Client()`) has the later
      type when a function runs (flake8-async reads the binding above the function).
      SHD106 (not this rule) leaves a task made in a generator nobody iterates or in a
      `with` item (the line raises: a Task is no context manager).

    ## References
    - SkyRL #1446: event-loop blocking in one-step-off async save/export paths
    - Python docs: "Developing with asyncio", running blocking code; `asyncio.to_thread`;
      `asyncio.create_subprocess_exec`
    - anyio docs: "Working with threads", "Asynchronous file I/O" (`anyio.Path`)
    - Ray docs: async actors, "do not call blocking ray.get in async actor methods"
    """

    code = "SHD301"
    name = "blocking-call-in-coroutine"
    summary = "A blocking call in a coroutine stalls the event loop and every other task on it"
    triggers = ("async def",)
    # tier 1: a coroutine, an ``async def`` statement (``words.ASYNC_DEF``): tier 2
    # (``_may_block_in_coroutine``) reads nothing in a module without one (``fn.is_async``).
    # Words cannot narrow it further: the vocabulary has `get`, `run`, `open`, `join`,
    # `result`; a value typed by another module's return annotation (the project index) or a
    # question over its budget needs no word of it
    candidate = C.ASYNC_DEF
    # tier 2: an async def makes a call (not awaited, not in a lambda) that may be in the
    # vocabulary, or may reach one through same-module sync functions (max-depth's default);
    # a receiver typed by another module's return annotation is asked of the project index
    candidate_tree = staticmethod(lambda tree, project=None: _may_block_in_coroutine(tree, project))
    candidate_tree_project = True
    facts_needed = ("functions", "calls", "execution", "types")
    options = {
        "extra-blocking-calls": Option((), (list, tuple), "Qualified names, or `.method` names, that block",
                                       item_kind=str),
        "allowed-calls": Option((), (list, tuple), "Qualified names, or `.method` names, never flagged",
                                item_kind=str),
        "max-depth": Option(2, int, "Levels of same-module synchronous calls to look through"),
        "blocking-families": Option(FAMILY_NAMES, (list, tuple), "Families of blocking calls to check",
                                    item_kind=str, choices=FAMILY_NAMES),
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
        # blocking on purpose, said with a flake8-async/ruff marker of the same family
        """
        import time
        async def block_event_loop(duration: float):
            \"\"\"Deliberately blocks the event loop (a chaos endpoint).\"\"\"
            time.sleep(duration)  # noqa: ASYNC251
            time.sleep(0.1)  # type: ignore[ASYNC101]
        """,
        # lambdas are not run here
        """
        import asyncio, time
        async def main(loop):
            await loop.run_in_executor(None, lambda: time.sleep(1))
        """,
        # async clients and primitives, polls, async paths, thread runners of every library
        """
        import asyncio, queue, threading
        import anyio, httpx, trio

        async def serve(url, q: queue.Queue, lock: threading.Lock, ev: threading.Event):
            async with httpx.AsyncClient() as client:
                await client.get(url)
            item = q.get(block=False)
            more = q.get_nowait()
            if lock.acquire(blocking=False):
                lock.release()
            ev.wait(0)
            aq = asyncio.Queue()
            await aq.get()
            await anyio.Path(url).exists()
            await anyio.to_thread.run_sync(q.get)
            await trio.to_thread.run_sync(ev.wait)
        """,
        # a family switched off
        Valid(
            """
            import os
            async def ready(path):
                return os.path.exists(path)
            """,
            options={"blocking-families": ["http", "processes", "files", "sleeps", "waits", "saves", "ray"]},
        ),
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
        # SHD403's sync fix blocks as ray.get did: reached from a coroutine it still stalls the loop
        Invalid(
            """
            import runtime_guard

            def fetch(ref):
                return runtime_guard.ray.interruptible_get(ref)

            async def step(ref):
                return fetch(ref)
            """,
            fixed="""
            import runtime_guard
            import asyncio

            def fetch(ref):
                return runtime_guard.ray.interruptible_get(ref)

            async def step(ref):
                return await asyncio.to_thread(fetch, ref)
            """,
        ),
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
        # a queue read moved to a thread would lose the item it takes after a cancel: no fix
        # (OpenHands' event stream); a marker of another family does not silence a finding
        Invalid(
            """
            import queue
            import requests

            class EventStream:
                def __init__(self):
                    self._queue = queue.Queue()

                async def _process_queue(self):
                    while True:
                        try:
                            event = self._queue.get(timeout=0.1)
                        except queue.Empty:
                            continue
                        requests.post(self.url, json=event)  # noqa: ASYNC251
            """,
            fixed="""
            import queue
            import requests
            import asyncio

            class EventStream:
                def __init__(self):
                    self._queue = queue.Queue()

                async def _process_queue(self):
                    while True:
                        try:
                            event = self._queue.get(timeout=0.1)
                        except queue.Empty:
                            continue
                        await asyncio.to_thread(requests.post, self.url, json=event)  # noqa: ASYNC251
            """,
            count=2,
            message_contains="lost",
        ),
        # waits: a thread-side event is fixed; a queue's get (in a thread it still takes an item
        # after a cancel, and the item is lost) and an acquire (the lock is never given back) are not
        Invalid(
            """
            import queue, threading

            class Pipeline:
                def __init__(self):
                    self.results = queue.Queue()
                    self.done = threading.Event()
                    self.lock = threading.Lock()

                async def drain(self):
                    item = self.results.get()
                    self.done.wait()
                    self.lock.acquire()
                    self.lock.release()
                    return item
            """,
            fixed="""
            import queue, threading
            import asyncio

            class Pipeline:
                def __init__(self):
                    self.results = queue.Queue()
                    self.done = threading.Event()
                    self.lock = threading.Lock()

                async def drain(self):
                    item = self.results.get()
                    await asyncio.to_thread(self.done.wait)
                    self.lock.acquire()
                    self.lock.release()
                    return item
            """,
            count=3,
        ),
        # values followed: a sync HTTP client, a Popen (no fix: the object is used after), a Path
        Invalid(
            """
            import asyncio, subprocess
            from pathlib import Path
            import httpx

            async def job(url, cmd, out: Path):
                client = httpx.Client(timeout=10)
                resp = client.get(url)
                proc = subprocess.Popen(cmd)
                code = proc.wait()
                if not (out / "done").exists():
                    out.write_text(resp.text)
                return code
            """,
            fixed="""
            import asyncio, subprocess
            from pathlib import Path
            import httpx

            async def job(url, cmd, out: Path):
                client = httpx.Client(timeout=10)
                resp = await asyncio.to_thread(client.get, url)
                proc = subprocess.Popen(cmd)
                code = await asyncio.to_thread(proc.wait)
                if not await asyncio.to_thread((out / "done").exists):
                    await asyncio.to_thread(out.write_text, resp.text)
                return code
            """,
            count=5,
        ),
        # iterating over a file: flagged, no fix
        Invalid(
            """
            async def tail(path):
                with open(path) as fh:
                    for line in fh:
                        print(line)
            """,
            count=2,
            message_contains="iterating over the file object `fh`",
        ),
        # trio: the fix writes trio's sleep and thread runner (partial for keywords)
        Invalid(
            """
            import time
            import requests
            import trio

            async def poll(url):
                while True:
                    requests.get(url, timeout=5)
                    time.sleep(1)
            """,
            fixed="""
            import time
            import requests
            import trio
            import functools

            async def poll(url):
                while True:
                    await trio.to_thread.run_sync(functools.partial(requests.get, url, timeout=5))
                    await trio.sleep(1)
            """,
            count=2,
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
        self._setup()

    # ------------------------------------------------------------------ visitor
    def visit_Call(self, node: cst.Call) -> None:
        self._check_call(node)

    def _left_to_shd403(self, node: cst.Call) -> bool:
        """The driver's own ``ray.get``/``ray.wait`` in a coroutine: SHD403 reports it (one finding
        per call), with a fix that also stops blocking the loop (``await interruptible_*_async``)."""
        if "SHD403" not in self.settings.selected:
            return False
        from .shd403_ray_get_orphans_on_interrupt import RayGetOrphansOnInterrupt, reports
        return reports(self.facts, node, tuple(self.settings.rule_option(RayGetOrphansOnInterrupt, "cleanup_calls")))

    def visit_For(self, node: cst.For) -> None:
        if node.asynchronous is None:
            self._check_iteration(node, node.iter)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        if node.asynchronous is None:
            self._check_iteration(node, node.iter)

    # ------------------------------------------------------------------ the tree's shapes (libcst)
    def _text(self, node: cst.CSTNode) -> str:
        return _code(node)

    def _method(self, call: cst.Call) -> tuple[Optional[str], Optional[cst.BaseExpression]]:
        func = call.func
        return (func.attr.value, func.value) if isinstance(func, cst.Attribute) else (None, None)

    def _is_call(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call)

    def _names_in(self, node: cst.CSTNode) -> set[str]:
        return names_in(node)

    def _spelled_name(self, expr: cst.BaseExpression) -> Optional[str]:
        return expr.value if isinstance(expr, cst.Name) else None

    def _self_attribute(self, expr: cst.BaseExpression) -> Optional[str]:
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return expr.attr.value
        return None

    def _first_positional_name(self, call: cst.Call) -> Optional[str]:
        args = [a.value for a in call.args if a.keyword is None]
        return args[0].value if args and isinstance(args[0], cst.Name) else None

    def _statement_names(self, call: cst.Call) -> Optional[set[str]]:
        stmt = self.facts.enclosing_statement(call)
        return names_in(stmt) if stmt is not None else None

    def _imported_tops(self) -> set[str]:
        return _imported_top_modules(self.facts.module)

    @property
    def _typer(self) -> Typer:
        return self.facts.typer(_KNOWN_TYPES, self._skip_results)

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

    def _polls_only(self, name: str, call: cst.Call) -> bool:
        """A call in its non-blocking form: ``block=False``/``blocking=False`` or
        ``timeout=0``, by keyword or at the position the family records."""
        spec = self._polls.get(name)
        if spec is None:
            return False
        block_pos, timeout_pos = spec
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        for arg in call.args:
            if arg.keyword is None:
                continue
            if arg.keyword.value in ("block", "blocking") and _is_false(arg.value):
                return True
            if arg.keyword.value == "timeout" and _is_zero(arg.value):
                return True
        if block_pos is not None and len(positional) > block_pos and _is_false(positional[block_pos]):
            return True
        return timeout_pos is not None and len(positional) > timeout_pos and _is_zero(positional[timeout_pos])

    def _consumed_here(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """The generator ``expr`` makes is iterated in this function: ``for x in expr``,
        ``list(expr)``, ``next(enumerate(expr))``, or ``gen = expr`` and then one of those
        on ``gen``. Handed to a thread (``to_thread.run_sync(next, gen)``) it is not."""
        parent = self.facts.parent(expr)
        if isinstance(parent, (cst.For, cst.CompFor)) and parent.iter is expr:
            return True
        if isinstance(parent, cst.Arg):
            outer = self.facts.parent(parent)
            if isinstance(outer, cst.Call) and parent in outer.args[:1]:
                name = self.facts.call_name(outer)
                if name in CONSUMERS:
                    return True
                if name in LAZY_WRAPPERS and depth < 4:
                    return self._consumed_here(outer, depth + 1)
            return False
        if isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name):
            var = parent.targets[0].target.value
            fn = self.facts.enclosing_function(expr)
            if fn is None or depth >= 4:
                return False
            # uses in a nested def or lambda run elsewhere (often in a thread)
            uses = [u for u in _names_named(fn.node.body, var)
                    if self.facts.enclosing_function(u) is fn and not self.facts.in_lambda(u)]
            return any(self._consumed_here(use, depth + 1) for use in uses)
        return False

    def _unbounded_queue(self, func: cst.BaseExpression) -> bool:
        """``q.put(x)`` where ``q`` was built here without a ``maxsize``: it never waits."""
        if not isinstance(func, cst.Attribute):
            return False
        built = self._bound_value(func.value, func)
        if not isinstance(built, cst.Call):
            return False  # an annotated parameter: the size is not known here
        for i, arg in enumerate(a for a in built.args if not a.star):
            if arg.keyword is not None and arg.keyword.value == "maxsize" or arg.keyword is None and i == 0:
                return _is_zero(arg.value)
        return True

    def _checked_not_empty(self, call: cst.Call) -> bool:
        """``if not q.empty(): q.get()`` / ``if q.qsize(): ...``: the get finds an item."""
        if not isinstance(call.func, cst.Attribute):
            return False
        receiver = _code(call.func.value)
        for anc in self.facts.ancestors(call):
            if isinstance(anc, cst.FunctionDef):
                return False
            if isinstance(anc, (cst.If, cst.While)):
                tests = [c for c in _calls_in(anc.test) if isinstance(c.func, cst.Attribute)]
                if any(c.func.attr.value in ("empty", "qsize", "full") and _code(c.func.value) == receiver
                       for c in tests):
                    return True
        return False

    # ------------------------------------------------------------------ fix
    def _fix(self, node: cst.Call, key: Optional[str]) -> Optional[Fix]:
        if self._fix_refused(node, key):
            return None
        lib, alias = self._async_library()
        edits = []
        if alias is None:
            alias = lib
            edits.append(AddImport(lib))
        args = strip_trailing_comma(node.args)
        if key == "time.sleep":
            inner = cst.Call(func=cst.Attribute(cst.Name(alias), cst.Name("sleep")), args=args)
        else:
            func = node.func.with_changes(lpar=(), rpar=()) if isinstance(
                node.func, (cst.Name, cst.Attribute)) else node.func
            runner = _dotted_from(alias, _THREAD_RUNNERS[lib].split(".", 1)[1])
            if lib != "asyncio" and any(a.keyword is not None or a.star == "**" for a in args):
                # anyio/trio's run_sync takes no keyword arguments: bind them with partial
                partial_alias = self.facts.module_alias("functools")
                if partial_alias is None:
                    partial_alias = "functools"
                    edits.append(AddImport("functools"))
                bound = cst.Call(func=cst.Attribute(cst.Name(partial_alias), cst.Name("partial")),
                                 args=[cst.Arg(value=func), *args])
                inner = cst.Call(func=runner, args=[cst.Arg(value=bound)])
            else:
                inner = cst.Call(func=runner, args=[cst.Arg(value=func), *args])
        new: cst.BaseExpression = cst.Await(expression=inner, lpar=node.lpar, rpar=node.rpar)
        if not node.lpar and self._needs_parens(node):
            new = new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        edits.insert(0, Replace(node, new))
        return Fix.unsafe(*edits, message=_fix_message(lib, key))

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
            if isinstance(anc, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
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
                isinstance(item.item, cst.Call) and self._value_type(item.item, 0) == FILE
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


def _no_thread(lost: Optional[str]) -> str:
    if not lost:
        return ""
    return (f"; no fix: run in a thread (`asyncio.to_thread`), the call goes on when the awaiting task is "
            f"cancelled and takes {lost}, which is then lost with the result; poll instead (`get_nowait()`, "
            "`block=False`/`timeout=0` between `await asyncio.sleep()`s) or use an async primitive")


_MARKER = re.compile(r"#\s*(?:noqa\s*:|type\s*:\s*ignore\s*\[)\s*(?P<codes>ASYNC\d+(?:\s*,\s*ASYNC\d+)*)", re.I)


def _async_markers(text: str) -> dict[int, set[str]]:
    """Line -> the ``ASYNC`` codes a ``# noqa:`` or ``# type: ignore[...]`` comment names there."""
    # A marker found in a comment token is also a match in the whole text (the pattern has no
    # anchor): no match anywhere means no marker, and the tokenizer need not run (it cost more
    # than the rest of the rule on large files).
    if _MARKER.search(text) is None:
        return {}
    out: dict[int, set[str]] = {}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT and "ASYNC" in tok.string.upper():
                for m in _MARKER.finditer(tok.string):
                    out.setdefault(tok.start[0], set()).update(
                        c.strip().upper() for c in m.group("codes").split(","))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    return out


def _names_named(node: cst.CSTNode, name: str) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                found.append(n)

    walk(node, _V())  # read-only: libcst's visit would rebuild every node
    return found


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            found.append(n)

    walk(node, _V())  # read-only: libcst's visit would rebuild every node
    return found


def _imported_top_modules(module: cst.Module) -> set[str]:
    """Top-level packages imported at module level (``from anyio import Path`` -> anyio)."""
    out = set()
    for stmt in module.body:
        for small in getattr(stmt, "body", ()) if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Import):
                out.update(_code(a.name).split(".")[0] for a in small.names)
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                out.add(_code(small.module).split(".")[0])
    return out


_norm = normalise


def _is_false(v: cst.BaseExpression) -> bool:
    return isinstance(v, cst.Name) and v.value == "False" or isinstance(v, cst.Integer) and v.value == "0"


def _is_zero(v: cst.BaseExpression) -> bool:
    try:
        return isinstance(v, (cst.Integer, cst.Float)) and float(v.value.replace("_", "")) == 0.0
    except ValueError:
        return False


def _dotted_from(alias: str, rest: str) -> cst.BaseExpression:
    expr: cst.BaseExpression = cst.Name(alias)
    for part in rest.split("."):
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


def _short(qualified: str) -> str:
    """``builtins.open`` -> ``open`` for messages."""
    return qualified[len("builtins."):] if qualified.startswith("builtins.") else qualified


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


# ------------------------------------------------------------------ candidate tier 2 (ast)
# Built from every family (the option's default); a run that chooses families or adds
# calls sets the options explicitly, which bypasses the candidate stage.
_ALL_CALLS = [c for f in FAMILIES for c in f.calls]
_VOCAB = frozenset(n for n in _ALL_CALLS if not n.endswith(".*"))
#: ``TYPE.`` of the ``TYPE.*`` entries: any method of these types (but ``NON_IO_METHODS``)
_PREFIXES = tuple(n[:-1] for n in _ALL_CALLS if n.endswith(".*"))
#: last words of every call the vocabulary names: a method ``x.m()`` can only be in it when ``m``
#: is one of them, or when a ``TYPE.*`` type has it (``m`` not in ``NON_IO_METHODS``)
_VOCAB_METHODS = frozenset(n.rsplit(".", 1)[-1] for n in {*_VOCAB, *LAZY_CALLS})


@functools.lru_cache(maxsize=4096)
def _normalised(q: str) -> str:
    return normalise(q)


@functools.lru_cache(maxsize=4096)
def _in_vocabulary(q: str) -> bool:
    """The rule's ``_in_vocabulary`` with every family and no extra call (the defaults)."""
    q = _normalised(q)
    if q in _VOCAB:
        return True
    return any(q.startswith(p) and "." not in q[len(p):] for p in _PREFIXES) \
        and q.rsplit(".", 1)[-1] not in NON_IO_METHODS


def _may_be_blocking(values: "_Values", call: ast.Call) -> bool:
    """``call`` may be one the rule's ``_blocking`` reports: its callee's qualified name may be in
    the vocabulary, or its receiver's type may have the method there (``Typer.type_of``), or it is
    a save method matched by name. ``values`` answers for the module (``_Values``)."""
    func = call.func
    t = type(func)
    if t is ast.Attribute:
        if func.attr in SAVE_METHOD_NAMES:
            return True
        if isinstance(func.value, _LITERALS):
            return False  # ``" ".join(cmd)``: the facts give a literal neither a type nor a name
        if func.attr not in _VOCAB_METHODS:
            if func.attr in NON_IO_METHODS:
                return False  # no type blocks in this method, whatever the receiver is
            if _spells_none(values.tree, _PREFIX_HINTS):
                # only a ``TYPE.*`` type (``requests.Session``, ``httpx.Client``) may block in this
                # method, and neither a qualified name nor a type here can name one in a module that
                # spells no word of one (``_attr_hints``, below): no need to ask ``qualified``, which
                # ran out of budget on long rebinding chains (``query = query.where(...)``)
                return False
        names = values.ask(values.qualified, func)
        if names is None or any(_in_vocabulary(q) for q in names):
            return True
        if _spells_none(values.tree, _attr_hints(func.attr)):
            return False  # no type that blocks in this method can be given here
        types = values.ask(values.types, func.value)
        return types is None or any(_in_vocabulary(f"{typ}.{func.attr}") for typ in types)
    if t is ast.Name and func.id in SAVE_METHOD_NAMES:
        return True
    names = values.ask(values.qualified, func)
    return names is None or any(_in_vocabulary(q) or q.rsplit(".", 1)[-1] in SAVE_METHOD_NAMES for q in names)


def _type_hint_table() -> dict[str, set[str]]:
    """Type -> words one of which a module must spell for the facts to give a value that type
    without the project index: the type's last word (a constructor, an annotation, a base class),
    the last words of its other spellings (``TYPE_ALIASES``), of the calls that return it
    (``RESULT_TYPES``, ``FACTORY_TYPES``: ``open`` for a file), of the types it is an attribute of
    (``Popen`` for ``stdout``) or a method result of (``Path`` for ``open()``). A prefix spelled
    otherwise (``torch.multiprocessing``) keeps the last word."""
    out: dict[str, set[str]] = {}
    for table in (TYPE_ALIASES, RESULT_TYPES, F.FACTORY_TYPES):
        for k, v in table.items():
            out.setdefault(v, set()).add(k.rsplit(".", 1)[-1])
    for k, v in RESULT_TYPES.items():
        if k.count(".") > 1:  # ``pathlib.Path.open``: a path's method
            out.setdefault(v, set()).add(k.rsplit(".", 2)[-2])
    for (o, _a), v in ATTRIBUTE_TYPES.items():
        out.setdefault(v, set()).add(o.rsplit(".", 1)[-1])
    return out


def _owner_hints() -> tuple[dict[str, frozenset], frozenset]:
    """(method -> hint words of every type whose method it is in the vocabulary, hint words of
    the ``TYPE.*`` types)."""
    table = _type_hint_table()

    def hints(t: str) -> set[str]:
        return ({t.rsplit(".", 1)[-1]} if not t.endswith(">") else set()) | table.get(t, set())

    by_method: dict[str, set[str]] = {}
    for n in {*_VOCAB, *LAZY_CALLS}:
        owner, _, method = n.rpartition(".")
        by_method.setdefault(method, set()).update(hints(owner) if owner else ())
    prefix: set[str] = set()
    for p in _PREFIXES:
        prefix |= hints(p[:-1])
    return {k: frozenset(v) for k, v in by_method.items()}, frozenset(prefix)


_METHOD_HINTS, _PREFIX_HINTS = _owner_hints()


def _attr_hints(attr: str) -> frozenset:
    """Words one of which a module must spell for the facts to give a value a type that blocks in
    method ``attr``, without the project index: those of the vocabulary's owners of ``attr``, and
    of the ``TYPE.*`` types unless ``attr`` does no I/O."""
    words = _METHOD_HINTS.get(attr, frozenset())
    return words if attr in NON_IO_METHODS else words | _PREFIX_HINTS


def _spells_none(tree, words: frozenset) -> bool:
    """``_spelled(tree).isdisjoint(words)``; the string return annotations are read only when
    the module's identifiers spell none of ``words``."""
    return tree.mentioned.isdisjoint(words) and _spelled(tree).isdisjoint(words)


def _spelled(tree) -> set[str]:
    """The identifiers the module spells (``Tree.mentioned``) and the words of the string return
    annotations (``def make() -> "queue.Queue"``: the facts read those, ``Tree`` does not)."""
    found = tree.__dict__.get("_shd301_spelled")
    if found is None:
        found = tree.mentioned
        extra = {w for fn in tree.functions if _may_hold_a_string(fn.node.returns) for n in ast.walk(fn.node.returns)
                 if type(n) is ast.Constant and type(n.value) is str for w in _WORDS.findall(n.value)}
        if not extra <= found:
            found = found | extra
        tree.__dict__["_shd301_spelled"] = found
    return found


_WORDS = re.compile(r"[A-Za-z_]\w*")


def _may_hold_a_string(annotation) -> bool:
    """An annotation (or None) that may hold a string constant: not None, and not a name or a
    chain of attributes over a name (``int``, ``torch.Tensor``: most return annotations)."""
    node = annotation
    while type(node) is ast.Attribute:
        node = node.value
    return node is not None and type(node) is not ast.Name


#: receivers that are literals and displays (``_type_of`` and ``qualified_name`` know none)
_LITERALS = (ast.Constant, ast.JoinedStr, ast.List, ast.Tuple, ast.Dict, ast.Set, ast.ListComp, ast.SetComp,
             ast.DictComp)


#: words one of which the module must spell for the facts to type a value a file (``open``,
#: ``TextIOWrapper``, ``IO``, ``Popen`` for its ``stdout``...) without the project index
_FILE_HINTS = frozenset({
    *(k.rsplit(".", 1)[-1] for k, v in {**TYPE_ALIASES, **RESULT_TYPES}.items() if v == FILE),
    *(o.rsplit(".", 1)[-1] for (o, _a), v in ATTRIBUTE_TYPES.items() if v == FILE)})


def _coroutine_iterables(tree) -> list:
    """What the plain ``for`` loops and comprehensions in coroutines iterate over (the rule's
    ``visit_For`` and ``visit_CompFor``; nested defs included: a superset)."""
    out = []
    todo = [fn.node for fn in tree.functions if fn.is_async]
    seen = set()
    For, comprehension, AsyncFunctionDef = ast.For, ast.comprehension, ast.AsyncFunctionDef
    Name, Constant = ast.Name, ast.Constant  # leaves: no loop below them, not pushed
    getters = _CHILDREN
    pop, push = todo.pop, todo.append
    while todo:
        node = pop()
        t = type(node)
        if t is AsyncFunctionDef:
            if id(node) in seen:
                continue  # a coroutine nested in another one: walked once
            seen.add(id(node))
        elif t is For or t is comprehension and not node.is_async:
            out.append(node.iter)
        get = getters.get(t, _UNKNOWN)
        if get is _UNKNOWN:
            get = getters[t] = _children_getter(t)
        if get is None:
            continue
        for value in ((getattr(node, get),) if type(get) is str else get(node)):
            if type(value) is list:
                for v in value:
                    tv = type(v)
                    if tv is not Name and tv is not Constant and v is not None:
                        push(v)
            elif value is not None:
                tv = type(value)
                if tv is not Name and tv is not Constant:
                    push(value)
    return out


def _children_getter(t: type):
    """How ``_coroutine_iterables`` reads a node's children: the fields that may hold a node
    (``ast_tree.subtree_fields``: no ``ctx``, no operator, which hold no loop), in ``_fields``
    order, all at once (None: no field; a field's name: one)."""
    fields = subtree_fields(t)
    if not fields:
        return None
    return fields[0] if len(fields) == 1 else operator.attrgetter(*fields)


#: node type -> ``_children_getter(t)``
_CHILDREN: dict = {}
_UNKNOWN = object()


def _may_be_file(values: "_Values", expr: ast.AST) -> bool:
    types = values.ask(values.types, expr)
    return types is None or FILE in types
def _resolved_names(call: ast.Call) -> tuple[Optional[str], bool]:
    """(name, method): the same-module function the facts' ``resolve_call`` could give for
    ``call``, by name: ``f()`` any function so named, ``self.m()``/``cls.m()``/``C.m()`` a method
    so named (``method``), ``functools.partial(f, ...)()`` its first argument; another receiver's
    method (``obj.get()``) is no same-module function. ``(None, False)``: none."""
    func = call.func
    if type(func) is ast.Call:  # ``functools.partial(f, x)()``: libcst's first argument
        first = func.args[0] if func.args else (func.keywords[0].value if func.keywords else None)
        if type(first) is ast.Starred:
            first = first.value
        if type(first) is ast.Name:
            return first.id, False
        if type(first) is ast.Attribute and type(first.value) is ast.Name:
            return first.attr, True
        return None, False
    if type(func) is ast.Name:
        return func.id, False
    if type(func) is ast.Attribute and type(func.value) is ast.Name:
        return func.attr, True  # ``self.m``, ``cls.m``, ``C.m`` (a class name: checked by the caller)
    return None, False


def _may_resolve_to(tree, call: ast.Call, names: set[str], methods: set[str], classes: set[str]) -> bool:
    """``call`` may resolve (``facts.resolve_call``) to a sync function named in ``names`` (any
    function) or ``methods`` (a method)."""
    name, method = _resolved_names(call)
    if name is None:
        return False
    if not method:
        return name in names
    func = call.func
    if type(func) is ast.Call:
        return name in methods
    receiver = func.value.id
    return name in methods and (receiver in ("self", "cls") or receiver in classes)


def _reaching(tree, direct: list, depth: int, among: Optional[list] = None) -> tuple[set[str], set[str]]:
    """(names, method names) of the sync functions that make a ``direct`` call or, up to
    ``depth`` levels, call one that does (``_blocking_inside``, resolved as ``resolve_call``).
    ``among``: the functions to look at for those callers (default: every function)."""
    classes = {c.name for c in tree.classes}
    found = {id(fn) for fn in direct}
    names = {fn.name for fn in direct}
    methods = {fn.name for fn in direct if fn.cls is not None}
    pool = tree.functions if among is None else among
    for _ in range(depth - 1):
        more = [fn for fn in pool if not fn.is_async and id(fn) not in found and any(
            not lam and _may_resolve_to(tree, c, names, methods, classes) for c, _, lam in fn.calls)]
        if not more:
            break
        for fn in more:
            found.add(id(fn))
            names.add(fn.name)
            if fn.cls is not None:
                methods.add(fn.name)
    return names, methods


def _reachable(sync: list, calling: list, classes: set[str]) -> list:
    """The sync functions whose direct calls can decide ``_may_block_in_coroutine``'s look-through:
    those a call of ``calling`` may resolve to (``_may_resolve_to``: level 1) and those a call
    (not in a lambda) of a level-1 function may resolve to (level 2), in ``sync``'s order.

    ``_reaching(tree, direct, 2)`` names the functions of ``direct`` and those calling one; a call
    of ``calling`` matches a name there only through a function of level 1, whose own membership
    in ``direct`` or in its callers' set depends only on functions of level 2. Matching is by
    name (a method, or any function), so a function outside both levels never changes which
    calls match: ``direct`` is judged on these alone, with the same answer."""
    def keys(calls) -> tuple[set[str], set[str]]:
        names: set[str] = set()  # any function so named
        methods: set[str] = set()  # a method so named
        for c in calls:
            name, method = _resolved_names(c)
            if name is None:
                continue
            if not method:
                names.add(name)
            elif type(c.func) is ast.Call or c.func.value.id in ("self", "cls") or c.func.value.id in classes:
                methods.add(name)
        return names, methods

    def matching(names: set[str], methods: set[str]) -> set[int]:
        return {id(fn) for fn in sync if fn.name in names or fn.cls is not None and fn.name in methods}

    level1 = matching(*keys(calling))
    if not level1:
        return []
    level2 = matching(*keys(c for fn in sync if id(fn) in level1 for c, _, lam in fn.calls if not lam))
    return [fn for fn in sync if id(fn) in level1 or id(fn) in level2]


def _may_block_in_coroutine(tree, project=None) -> bool:
    """Tier 2 (``candidate_tree``): a coroutine makes a call that may block (``_may_be_blocking``),
    directly or through same-module sync functions (two levels: ``max-depth``'s default), or
    iterates over what may be a file. ``project``: the project index seen from the file
    (``ProjectView``), None when the run has none: only through it can another module's return
    annotation type a value here (``Typer._returns_elsewhere``); it is asked last, and only about
    receivers of a method some type of the vocabulary blocks in (``_elsewhere_may_block``)."""
    if not any(fn.is_async for fn in tree.functions):
        return False
    calls = [call for fn in tree.functions if fn.is_async for call, awaited, in_lambda in fn.calls
             if not awaited and not in_lambda]
    classes = {c.name for c in tree.classes}
    sync = [fn for fn in tree.functions if not fn.is_async]
    sync_names = {fn.name for fn in sync}
    sync_methods = {fn.name for fn in sync if fn.cls is not None}
    calling = [c for c in calls if _may_resolve_to(tree, c, sync_names, sync_methods, classes)]
    iterables = reachable = None
    for values, blocks in ((_Values(tree, None), _may_be_blocking),
                           (_Values(tree, project) if project is not None else None, _elsewhere_may_block)):
        if values is None:
            break
        if any(blocks(values, call) for call in calls):
            return True
        # ``for line in f`` over a file object (without the index, only a module that spells a
        # word of a file type has one)
        if values.view is not None or tree.mentions(_FILE_HINTS):
            iterables = _coroutine_iterables(tree) if iterables is None else iterables
            if any(_may_be_file(values, it) for it in iterables):
                return True
        # a coroutine's call of a same-module sync function that may block (at most two levels
        # down); the sync functions are judged only when a coroutine may call one
        if calling:
            if reachable is None:
                reachable = _reachable(sync, calling, classes)
            direct = [fn for fn in reachable if any(not lam and blocks(values, c) for c, _, lam in fn.calls)]
            if direct:  # (none: no name for a call of ``calling`` to match)
                # callers of ``direct`` outside ``reachable`` name no function a call of
                # ``calling`` may resolve to (``_reachable``): not looked at
                names, methods = _reaching(tree, direct, depth=2, among=reachable)
                if any(_may_resolve_to(tree, c, names, methods, classes) for c in calling):
                    return True
    return False


def _elsewhere_may_block(values: "_Values", call: ast.Call) -> bool:
    """``_may_be_blocking`` where the index adds to the local answer (which was no): the receiver
    of a method that some type of the vocabulary blocks in (``_VOCAB_METHODS``), typed by another
    module's return annotation. A method only a ``TYPE.*`` type has (``client.send``) is not asked
    about: it would summarise most modules a file calls into (on ray+torch, 370 of 417 questions),
    and the tier rules it out as before the index was asked (a known limit, in tier2_cases.py)."""
    func = call.func
    if type(func) is not ast.Attribute or func.attr not in _VOCAB_METHODS or isinstance(func.value, _LITERALS):
        return False
    types = values.ask(values.types, func.value)
    return types is None or any(_in_vocabulary(f"{typ}.{func.attr}") for typ in types)


class _TooMuch(Exception):
    """A question about a value grew past its budget: assume the worst."""


class _Values:
    """A superset of what the facts' ``qualified_name`` and ``Typer.type_of`` can say of an
    expression of one module, on Python's ``ast``: every binding of a name or of ``x.attr`` in the
    module counts, scopes and order ignored (the facts read the last binding in scope), a value
    met again on the way gives nothing (the facts' typing stack), and a question that grows past
    ``_BUDGET`` steps answers "anything". A call's return annotation is read in this module, and,
    with ``view`` (the project index seen from the file), in another module of the project
    (``Typer._returns_elsewhere``); without it, like the walk without an index, it is not.

    Names stand for qualified names as the facts spell them; a function or class of this module
    is ``<module>.<its name>`` (the facts' qualname's last part: matched by name)."""

    #: steps (expressions followed) one question may take
    _BUDGET = 3000

    def __init__(self, tree, view) -> None:
        self.tree = tree
        self.view = view
        self._steps = 0
        self._cuts = 0
        self._asked: dict[str, Optional[str]] = {}
        self._t_memo: dict[int, frozenset] = {}  # types: the view's (the index answers)
        # the module's tables, built once per tree and shared by the views (and SHD101's tier);
        # qualified names never ask the index, so their memo is shared too
        shared = tree.__dict__.get("_shd301_values")
        if shared is None:
            shared = tree.__dict__["_shd301_values"] = _Values._tables(tree)
        (self.names, self.attrs, self.imported, self.declared, self.attr_declared, self.defs, self.classes,
         self._q_memo, self._parsed) = shared

    @staticmethod
    def _tables(tree) -> tuple:
        names: dict[str, list] = {}  # name -> values bound to it
        for name, value in tree.value_bindings:
            names.setdefault(name, []).append(value)
        attrs: dict[str, list] = {}  # attribute -> values bound to ``x.attr``
        for target, value, _fn in tree.assigns:
            t = type(target)
            if t is ast.Attribute:
                attrs.setdefault(target.attr, []).append(value)
            elif (t is ast.Tuple or t is ast.List) and type(value) in (ast.Tuple, ast.List):
                # ``a, b = f(), g()``: each name with its element (the facts' ``unpacked``)
                if len(target.elts) == len(value.elts):
                    for el, v in zip(target.elts, value.elts):
                        if type(el) is ast.Name:
                            names.setdefault(el.id, []).append(v)
        declared: dict[str, list] = {}  # name -> annotations (parameters, ``n: T``)
        attr_declared: dict[str, list] = {}  # attribute -> annotations (``self.a: T``, class-body ``a: T``)
        imported: dict[str, set[str]] = {}
        # ``nested_statements(tree.module.body)``, inline (no generator, no ``enter`` per block):
        # the same statements in the same order
        todo = list(tree.module.body)
        pop, extend = todo.pop, todo.extend
        blocks_of = STATEMENT_BLOCKS
        read = _TABLE_STATEMENTS
        while todo:
            st = pop()
            t = type(st)
            blocks = blocks_of.get(t)
            if blocks is None:
                blocks = statement_blocks(t)
            if blocks:
                for field in blocks:
                    if field == "handlers" or field == "cases":
                        for h in getattr(st, field, ()):
                            extend(h.body)
                    else:
                        block = getattr(st, field, None)
                        if type(block) is list:
                            extend(block)
            if t not in read:
                continue
            if t is ast.Import:
                for a in st.names:
                    if a.asname:
                        imported.setdefault(a.asname, set()).add(a.name)
                    else:
                        top = a.name.split(".", 1)[0]
                        imported.setdefault(top, set()).add(top)
            elif t is ast.ImportFrom:
                base = "." * (st.level or 0) + (st.module or "")
                for a in st.names:
                    if a.name != "*":
                        q = f"{base}.{a.name}" if base and not base.endswith(".") else f"{base}{a.name}"
                        imported.setdefault(a.asname or a.name, set()).add(q)
            elif t is ast.AnnAssign:
                if type(st.target) is ast.Name:
                    declared.setdefault(st.target.id, []).append(st.annotation)
                    attr_declared.setdefault(st.target.id, []).append(st.annotation)
                elif type(st.target) is ast.Attribute:
                    attr_declared.setdefault(st.target.attr, []).append(st.annotation)
            elif t is ast.With or t is ast.AsyncWith:
                for item in st.items:  # ``with make() as self.c``
                    if type(item.optional_vars) is ast.Attribute:
                        attrs.setdefault(item.optional_vars.attr, []).append(item.context_expr)
        for fn in tree.functions:
            a = fn.node.args
            for arg in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None:
                    declared.setdefault(arg.arg, []).append(arg.annotation)
        defs: dict[str, list] = {}
        for fn in tree.functions:
            defs.setdefault(fn.name, []).append(fn)
        classes: dict[str, list] = {}
        for c in tree.classes:
            classes.setdefault(c.name, []).append(c)
        #: string annotations parsed, kept alive: the memos are keyed by node identity
        parsed: dict[int, ast.AST] = {}
        return names, attrs, imported, declared, attr_declared, defs, classes, {}, parsed

    # ------------------------------------------------------------------ questions
    def ask(self, question, *args):
        """``question(*args)`` with a fresh budget; None when it ran out (anything may be)."""
        self._steps = 0
        try:
            return question(*args)
        except (_TooMuch, RecursionError):
            return None

    def _step(self) -> None:
        self._steps += 1
        if self._steps > self._BUDGET:
            raise _TooMuch()

    # ------------------------------------------------------------------ qualified names
    def qualified(self, expr: ast.AST, stack: Optional[set] = None) -> frozenset:
        """Every name the facts' ``qualified_name(expr)`` could give (canonical spellings too)."""
        memo = self._q_memo.get(id(expr))
        if memo is not None:
            return memo
        stack = set() if stack is None else stack
        cuts = self._cuts
        out = frozenset(self._qualified(expr, stack))
        if self._cuts == cuts:
            self._q_memo[id(expr)] = out
        return out

    def _qualified(self, expr: ast.AST, stack: set) -> set[str]:
        self._step()
        t = type(expr)
        if t is ast.Name:
            name = expr.id
            out = set(self.imported.get(name, ()))
            if name in self.defs or name in self.classes:
                out.add(f"<module>.{name}")
            if name in _BUILTIN_NAMES:
                out.add(f"builtins.{name}")
            for v in self.names.get(name, ()):
                out |= self._instance(v, stack)
            return out
        if t is ast.Attribute:
            out = set()
            if type(expr.value) is ast.Name and expr.value.id == "self":
                if expr.attr in self.defs:
                    out.add(f"<module>.{expr.attr}")
                for v in self.attrs.get(expr.attr, ()):
                    out |= self._instance(v, stack)
            for q in self.qualified(expr.value, stack):
                out.add(f"{q}.{expr.attr}")
                out.add(f"{F._canonical(q)}.{expr.attr}")
            return out
        if t is ast.Call:
            return self._result(expr, stack)
        return set()

    def _instance(self, value: ast.AST, stack: set) -> set[str]:
        """The facts' ``_instance_type`` of a bound value (a value met again gives nothing)."""
        key = ("instance", id(value))
        if key in stack:
            self._cuts += 1
            return set()
        stack.add(key)
        try:
            if type(value) is ast.Await:
                value = value.value
            if type(value) is ast.Call:
                return self._result(value, stack)
            if type(value) is ast.Name or type(value) is ast.Attribute:
                return set(self.qualified(value, stack))
            return set()
        finally:
            stack.discard(key)

    def _result(self, call: ast.Call, stack: set) -> set[str]:
        """The facts' ``_call_result_type``: a factory's type, or an instance of a class."""
        key = ("result", id(call))
        if key in stack:
            self._cuts += 1
            return set()
        stack.add(key)
        try:
            callees = self.qualified(call.func, stack)
        finally:
            stack.discard(key)
        out = set()
        for callee in callees:
            callee = F._canonical(callee)
            if callee in F.FACTORY_TYPES:
                out.add(F.FACTORY_TYPES[callee])
            elif callee.rsplit(".", 1)[-1][:1].isupper() and not callee.startswith("<module>."):
                out.add(callee)
        return out

    # ------------------------------------------------------------------ types
    def types(self, expr: ast.AST, stack: Optional[set] = None) -> frozenset:
        """Every type ``Typer.type_of(expr)`` could give (normalised, as the Typer's)."""
        memo = self._t_memo.get(id(expr))
        if memo is not None:
            return memo
        stack = set() if stack is None else stack
        key = ("type", id(expr))
        if key in stack:
            self._cuts += 1
            return frozenset()
        stack.add(key)
        cuts = self._cuts
        try:
            out = frozenset(self._type_of(expr, stack))
        finally:
            stack.discard(key)
        if self._cuts == cuts:
            self._t_memo[id(expr)] = out
        return out

    def _type_of(self, expr: ast.AST, stack: set) -> set[str]:
        self._step()
        t = type(expr)
        if t is ast.Name:
            out = set()
            for ann in self.declared.get(expr.id, ()):
                out |= self._annotation(ann, stack)
            for v in self.names.get(expr.id, ()):
                out |= self.types(v, stack)
            return out
        if t is ast.Attribute:
            # the receiver's types give one only for an attribute ``ATTRIBUTE_TYPES`` knows
            # (``stdout``, ``parent``): else they are not asked (nor the index for them)
            out = {ATTRIBUTE_TYPES[(b, expr.attr)] for b in self.types(expr.value, stack)
                   if (b, expr.attr) in ATTRIBUTE_TYPES} if expr.attr in _TYPED_ATTRIBUTES else set()
            if type(expr.value) is ast.Name and expr.value.id == "self":
                for ann in self.attr_declared.get(expr.attr, ()):
                    out |= self._annotation(ann, stack)
                for v in self.attrs.get(expr.attr, ()):
                    out |= self.types(v, stack)
            return out
        if t is ast.BinOp:
            return {"pathlib.Path"} & self.types(expr.left, stack) if type(expr.op) is ast.Div else set()
        if t is ast.Call:
            return self._call_type(expr, stack, awaited=False)
        if t is ast.Await:
            return self._call_type(expr.value, stack, awaited=True) if type(expr.value) is ast.Call else set()
        if t is ast.IfExp:
            return set(self.types(expr.body, stack)) | self.types(expr.orelse, stack)
        return set()

    def _call_type(self, call: ast.Call, stack: set, awaited: bool) -> set[str]:
        """``Typer.value_type`` of a call (``awaited``: of ``await call``)."""
        out: set[str] = set()
        callees = {F._canonical(c) for c in self.qualified(call.func, stack)}
        for callee in callees:
            out |= self._returns(callee, stack)
        if awaited:
            return out
        func = call.func
        if type(func) is ast.Attribute and (func.attr in _RESULT_METHODS or func.attr[:1].isupper()):
            # (the receiver's types give one only for a method ``RESULT_TYPES`` knows, or a class
            # of a multiprocessing context: else they are not asked, nor the index for them)
            for recv in self.types(func.value, stack):
                method = f"{recv}.{func.attr}"
                if method in RESULT_TYPES:
                    out.add(RESULT_TYPES[method])
                if recv == MP_CONTEXT and func.attr[:1].isupper():
                    out |= self._known(f"multiprocessing.{func.attr}", stack)
        for callee in callees:
            if _normalised(callee) in RESULT_TYPES:
                out.add(RESULT_TYPES[_normalised(callee)])
            if callee.startswith("<module>."):
                out |= self._known(callee, stack)
            elif callee in F.FACTORY_TYPES:
                out |= self._known(F.FACTORY_TYPES[callee], stack)
            elif callee.rsplit(".", 1)[-1][:1].isupper():
                out |= self._known(callee, stack)
        return out

    def _returns(self, callee: str, stack: set) -> set[str]:
        """``Typer._returns``: what a return annotation declares, here or (the index) elsewhere."""
        if callee.startswith("<module>."):
            out: set[str] = set()
            for fn in self.defs.get(callee.rsplit(".", 1)[-1], ()):
                if fn.node.returns is not None:
                    out |= self._annotation(fn.node.returns, stack)
            return out
        if callee.startswith("builtins.") or self.view is None:
            return set()
        if callee not in self._asked:
            self._asked[callee] = _declared_return(self.view, callee)
        found = self._asked[callee]
        return {found} if found else set()

    def _annotation(self, ann: ast.AST, stack: set, depth: int = 0) -> set[str]:
        """``Typer.annotation_type``: the types its members may name (strings parsed,
        ``Optional``/``Union``/``|``/``Annotated``/generics looked through)."""
        self._step()
        t = type(ann)
        if depth > 8:
            return set()
        if t is ast.Constant:
            if type(ann.value) is not str or len(ann.value) >= 200:
                return set()
            parsed = self._parsed.get(id(ann))
            if parsed is None:
                try:
                    parsed = ast.parse(ann.value.strip(), mode="eval").body
                except (SyntaxError, ValueError):
                    parsed = ast.Constant(None)
                self._parsed[id(ann)] = parsed
            return self._annotation(parsed, stack, depth + 1)
        if t is ast.BinOp:
            return self._annotation(ann.left, stack, depth + 1) | self._annotation(ann.right, stack, depth + 1)
        if t is ast.Subscript:
            out = self._annotation(ann.value, stack, depth + 1)
            args = ann.slice.elts if type(ann.slice) is ast.Tuple else [ann.slice]
            for a in args:
                out |= self._annotation(a, stack, depth + 1)
            return out
        if t is ast.Name or t is ast.Attribute:
            out = set()
            for q in self.qualified(ann, stack):
                out |= self._known(q, stack)
            return out
        return set()

    def _known(self, t: str, stack: set) -> set[str]:
        """``Typer._known``: a class of this module stands for a known type among its bases."""
        t = _normalised(t)
        out = {t}
        if t.startswith("<module>."):
            for cls in self.classes.get(t.rsplit(".", 1)[-1], ()):
                for base in cls.bases:
                    out |= {_normalised(b) for b in self.qualified(base, stack) if _normalised(b) in _KNOWN_TYPES}
        return out


_BUILTIN_NAMES = frozenset(dir(__import__("builtins")))
#: the statements ``_Values._tables`` reads
_TABLE_STATEMENTS = frozenset({ast.Import, ast.ImportFrom, ast.AnnAssign, ast.With, ast.AsyncWith})
#: the attributes ``ATTRIBUTE_TYPES`` gives a type for (whatever the receiver's type)
_TYPED_ATTRIBUTES = frozenset(a for _o, a in ATTRIBUTE_TYPES)
#: the methods ``RESULT_TYPES`` gives a result type for (whatever the receiver's type)
_RESULT_METHODS = frozenset(k.rsplit(".", 1)[-1] for k in RESULT_TYPES)


def _declared_return(view, callee: str) -> Optional[str]:
    """The type ``Typer._returns_elsewhere`` reads from the return annotation of ``callee``, a
    function of another module of the project (None when it is none or declares nothing)."""
    try:
        fn = view.function(callee)
    except (RecursionError, OSError):  # the walk finds nothing then either
        return None
    if fn is None:
        return None
    written = fn.info.get("returns")
    if not written:
        return None
    index = view.index
    s = index.summary(fn.path) or {}
    first, _, rest = written.partition(".")
    imports = {**s.get("imports", {}), **fn.info.get("imports", {})}
    if first in imports:
        full = index.absolute(imports[first], fn.module, fn.path.endswith("__init__.py")) + ("." + rest if rest else "")
    elif first in s.get("classes", {}):
        full = f"{fn.module}.{written}"
    else:
        return None
    return normalise(full)


# ------------------------------------------------------------------ detection on ast (issue 30)
_AST_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_AST_LOOPS = (ast.For, ast.AsyncFor, ast.comprehension)
_AST_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_AST_WITHS = (ast.With, ast.AsyncWith)
_AST_BODIES = ("body", "orelse", "finalbody")
_IN = re.compile(r"\bin\b")


class _Ast(_Detection, AstCheck):
    """SHD301 on the candidate tier's ``ast`` (``ast_engine``): the same findings, messages and
    fix plans as the libcst rule, whose ``_Detection`` it shares; the hooks read ``ast``."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._setup()

    def visit_Call(self, node: ast.Call) -> None:
        self._check_call(node)

    def visit_For(self, node: ast.For) -> None:  # ``async for`` is an ``AsyncFor``
        self._check_iteration(node, node.iter)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        if not node.is_async:
            self._check_iteration(node, node.iter)

    def _left_to_shd403(self, node: ast.Call) -> bool:
        """As the libcst rule's, where SHD403 reads ``ast`` (its ``reports`` takes an ``ast`` call
        with ``AstFacts`` when SHD403 has an ``ast_check``). Where it has none, False: a file is
        linted on ``ast`` only when every rule that may report in it is ported, so SHD403 selected
        here was ruled out for the file by its candidate tiers (with its default options: set
        options make a rule a candidate), which never rule out a file it reports in."""
        if "SHD403" not in self.settings.selected:
            return False
        from .shd403_ray_get_orphans_on_interrupt import RayGetOrphansOnInterrupt, reports
        if getattr(RayGetOrphansOnInterrupt, "ast_check", None) is None:
            return False
        return reports(self.facts, node, tuple(self.settings.rule_option(RayGetOrphansOnInterrupt, "cleanup_calls")))

    # ------------------------------------------------------------------ the tree's shapes (ast)
    def _text(self, node: ast.AST) -> str:
        """``node``'s code as libcst's ``code_for_node`` gives it: with the parentheses it owns,
        for the nodes SHD301 shows (a callee, a receiver, what a loop iterates)."""
        facts = self.facts
        parent = facts.parent(node)
        t = type(parent)
        if t is ast.Call and parent.func is node or t is ast.Attribute and parent.value is node:
            # ``ast`` starts a call (an attribute) at its callee's (value's) first parenthesis
            text = _owning_parens(facts, node, parent.lineno, parent.col_offset, False)
        elif t in _AST_LOOPS and parent.iter is node:
            target = parent.target
            text = _owning_parens(facts, node, target.end_lineno, target.end_col_offset, True)
        else:
            text = facts.segment(node)
        if "\n" in text or "\r" in text:
            return _without_block_indent(facts, node, text)
        return text

    def _method(self, call: ast.Call) -> tuple[Optional[str], Optional[ast.expr]]:
        func = call.func
        return (func.attr, func.value) if type(func) is ast.Attribute else (None, None)

    def _is_call(self, node: ast.AST) -> bool:
        return type(node) is ast.Call

    def _names_in(self, node: ast.AST) -> set[str]:
        return _identifiers(node)

    def _spelled_name(self, expr: ast.AST) -> Optional[str]:
        return expr.id if type(expr) is ast.Name else None

    def _self_attribute(self, expr: ast.AST) -> Optional[str]:
        if type(expr) is ast.Attribute and type(expr.value) is ast.Name and expr.value.id == "self":
            return expr.attr
        return None

    def _first_positional_name(self, call: ast.Call) -> Optional[str]:
        args = [value for keyword, value, _star in _arguments(call) if keyword is None]
        return args[0].id if args and type(args[0]) is ast.Name else None

    def _statement_names(self, call: ast.Call) -> Optional[set[str]]:
        """The names of libcst's statement of ``call``: ``a; b`` is one (a ``SimpleStatementLine``)."""
        stmt = self.facts.enclosing_statement(call)
        if stmt is None:
            return None
        names: set[str] = set()
        for s in _statement_line(self.facts, stmt):
            names |= _identifiers(s)
        return names

    def _imported_tops(self) -> set[str]:
        out = set()
        for stmt in self.facts.module.body:
            if type(stmt) is ast.Import:
                out.update(a.name.split(".")[0] for a in stmt.names)
            elif type(stmt) is ast.ImportFrom and stmt.module is not None and not stmt.level:
                out.add(stmt.module.split(".")[0])
        return out

    @property
    def _typer(self) -> AstTyper:
        return ast_typer(self.facts, _KNOWN_TYPES, self._skip_results)

    def _argument_of(self, expr: ast.AST) -> tuple[bool, Optional[ast.Call]]:
        """(``expr`` is an argument as libcst's ``Arg`` holds one, the call it is an argument of):
        a positional, ``*``, keyword or ``**`` argument of a call, or a base of a class (no call)."""
        facts = self.facts
        parent = facts.parent(expr)
        t = type(parent)
        if t is ast.Call:
            return (True, parent) if parent.func is not expr else (False, None)
        if t is ast.keyword:
            outer = facts.parent(parent)
            return True, outer if type(outer) is ast.Call else None
        if t is ast.Starred:
            outer = facts.parent(parent)
            if type(outer) is ast.Call and any(a is parent for a in outer.args):
                return True, outer
            return type(outer) is ast.ClassDef and any(b is parent for b in outer.bases), None
        if t is ast.ClassDef:
            return any(b is expr for b in parent.bases), None
        return False, None

    def _is_coroutine_use(self, node: ast.Call) -> bool:
        if self.facts.is_awaited(node):
            return True
        _, outer = self._argument_of(node)
        if outer is not None:
            name = self.facts.call_name(outer)
            if name in F.TASK_SPAWNERS or name in F.MAIN_RUNNERS:
                return True
        return False

    def _polls_only(self, name: str, call: ast.Call) -> bool:
        spec = self._polls.get(name)
        if spec is None:
            return False
        block_pos, timeout_pos = spec
        args = _arguments(call)
        positional = [value for keyword, value, star in args if keyword is None and not star]
        for keyword, value, _star in args:
            if keyword is None:
                continue
            if keyword in ("block", "blocking") and self._is_false(value):
                return True
            if keyword == "timeout" and self._is_zero(value):
                return True
        if block_pos is not None and len(positional) > block_pos and self._is_false(positional[block_pos]):
            return True
        return timeout_pos is not None and len(positional) > timeout_pos and self._is_zero(positional[timeout_pos])

    def _is_false(self, v: ast.AST) -> bool:
        """libcst's ``_is_false``: ``False``, or an integer written ``0``."""
        if type(v) is not ast.Constant:
            return False
        if v.value is False:
            return True
        return type(v.value) is int and self.facts.segment(v) == "0"

    def _is_zero(self, v: ast.AST) -> bool:
        """libcst's ``_is_zero``: an integer or float literal whose text reads as 0.0."""
        if type(v) is not ast.Constant or type(v.value) not in (int, float):
            return False
        try:
            return float(self.facts.segment(v).replace("_", "")) == 0.0
        except ValueError:
            return False

    def _consumed_here(self, expr: ast.AST, depth: int = 0) -> bool:
        """``expr`` may be an ``ast.keyword`` (``f(gen=...)``: libcst's keyword ``Name``)."""
        facts = self.facts
        if type(expr) is ast.keyword:
            outer = facts.parent(expr)
            return type(outer) is ast.Call and self._consumed_as_argument(outer, expr.value, depth)
        parent = facts.parent(expr)
        if type(parent) in _AST_LOOPS and parent.iter is expr:
            return True
        is_argument, outer = self._argument_of(expr)
        if is_argument:
            return outer is not None and self._consumed_as_argument(outer, expr, depth)
        if (type(parent) is ast.Assign and parent.value is expr and len(parent.targets) == 1
                and type(parent.targets[0]) is ast.Name):
            var = parent.targets[0].id
            fn = facts.enclosing_function(expr)
            if fn is None or depth >= 4:
                return False
            uses = [u for u in _uses_named(fn.node.body, var)
                    if facts.enclosing_function(u) is fn and not facts.in_lambda(u)]
            return any(self._consumed_here(use, depth + 1) for use in uses)
        return False

    def _consumed_as_argument(self, outer: ast.Call, value: ast.AST, depth: int) -> bool:
        if first_argument(outer) is not value:
            return False
        name = self.facts.call_name(outer)
        if name in CONSUMERS:
            return True
        if name in LAZY_WRAPPERS and depth < 4:
            return self._consumed_here(outer, depth + 1)
        return False

    def _unbounded_queue(self, func: ast.AST) -> bool:
        if type(func) is not ast.Attribute:
            return False
        built = self._bound_value(func.value, func)
        if type(built) is not ast.Call:
            return False  # an annotated parameter: the size is not known here
        for i, (keyword, value, _star) in enumerate(a for a in _arguments(built) if not a[2]):
            if keyword == "maxsize" or keyword is None and i == 0:
                return self._is_zero(value)
        return True

    def _checked_not_empty(self, call: ast.Call) -> bool:
        func = call.func
        if type(func) is not ast.Attribute:
            return False
        receiver = self._text(func.value)
        for anc in self.facts.ancestors(call):
            t = type(anc)
            if t in _AST_DEFS:
                return False
            if t is ast.If or t is ast.While:
                tests = [c for c in ast.walk(anc.test) if type(c) is ast.Call and type(c.func) is ast.Attribute]
                if any(c.func.attr in ("empty", "qsize", "full") and self._text(c.func.value) == receiver
                       for c in tests):
                    return True
        return False

    # ------------------------------------------------------------------ fix plan
    def _fix(self, node: ast.Call, key: Optional[str]) -> Optional[FixPlan]:
        """What the libcst rule's ``_fix`` gives, without its edits."""
        if self._fix_refused(node, key):
            return None
        lib, _alias = self._async_library()
        return FixPlan.unsafe(_fix_message(lib, key))

    def _in_comprehension(self, node: ast.AST) -> bool:
        for anc in self.facts.ancestors(node):
            if isinstance(anc, _AST_COMPREHENSIONS):
                return True
            if isinstance(anc, ast.stmt):
                return False
        return False

    def _in_open_block(self, node: ast.AST) -> bool:
        for anc in self.facts.ancestors(node):
            if isinstance(anc, _AST_DEFS):
                return False
            if isinstance(anc, _AST_WITHS) and any(
                type(item.context_expr) is ast.Call and self._value_type(item.context_expr, 0) == FILE
                for item in anc.items
            ):
                return True
        return False

    def _in_with_item(self, node: ast.AST) -> bool:
        for anc in self.facts.ancestors(node):
            if type(anc) is ast.withitem:
                return True
            if isinstance(anc, ast.stmt):
                return False
        return False


def _arguments(call: ast.Call) -> list[tuple[Optional[str], ast.AST, str]]:
    """libcst's ``call.args`` as (keyword, value, star) in source order: ``f(a, *b, k=c, **d)`` is
    ``(None, a, "")``, ``(None, b, "*")``, ``("k", c, "")``, ``(None, d, "**")``."""
    items = [((None, a.value, "*") if type(a) is ast.Starred else (None, a, ""), a) for a in call.args]
    items += [((k.arg, k.value, "**" if k.arg is None else ""), k) for k in call.keywords]
    if call.args and call.keywords:
        items.sort(key=lambda item: (item[1].lineno, item[1].col_offset))
    return [item for item, _node in items]


def _uses_named(body: list, name: str) -> list:
    """The ``Name`` nodes spelled ``name`` in ``body``, and the keyword arguments so named (libcst's
    ``Name`` nodes there that ``_consumed_here`` can tell from others)."""
    found = []
    for stmt in body:
        for n in ast.walk(stmt):
            t = type(n)
            if t is ast.Name and n.id == name or t is ast.keyword and n.arg == name:
                found.append(n)
    return found


def _identifiers(node: ast.AST) -> set[str]:
    """libcst's ``names_in``: every ``Name`` under ``node``, which in libcst is also an attribute's
    name, a def's, a class's, a parameter's, a keyword argument's, an imported module's parts and
    alias, an ``except``'s ``as`` name, a ``global``'s, a pattern's capture, ``None``/``True``/``False``."""
    out: set[str] = set()
    add = out.add
    for n in ast.walk(node):
        t = type(n)
        if t is ast.Name:
            add(n.id)
        elif t is ast.Attribute:
            add(n.attr)
        elif t is ast.Constant:
            if n.value is None or n.value is True or n.value is False:
                add(str(n.value))
        elif t is ast.keyword or t is ast.arg:
            if t is ast.arg or n.arg is not None:
                add(n.arg)
        elif t in _AST_DEFS or t is ast.ClassDef:
            add(n.name)
        elif t is ast.alias:
            if n.name != "*":
                out.update(n.name.split("."))
            if n.asname:
                add(n.asname)
        elif t is ast.ImportFrom:
            if n.module:
                out.update(n.module.split("."))
        elif t is ast.ExceptHandler:
            if n.name:
                add(n.name)
        elif t is ast.Global or t is ast.Nonlocal:
            out.update(n.names)
        else:
            for attr in _PATTERN_NAMES.get(t, ()):
                value = getattr(n, attr, None)
                if isinstance(value, str):
                    add(value)
                elif isinstance(value, list):
                    out.update(value)
            name = getattr(n, "name", None) if t.__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple") else None
            if name:
                add(name)
    return out


_PATTERN_NAMES = {getattr(ast, k): v for k, v in (
    ("MatchAs", ("name",)), ("MatchStar", ("name",)), ("MatchMapping", ("rest",)), ("MatchClass", ("kwd_attrs",)))
    if hasattr(ast, k)}


def _statement_line(facts, stmt: ast.stmt) -> list:
    """``stmt`` and the statements written with it on its line (``a; b``), as libcst's
    ``SimpleStatementLine`` holds them; a compound statement alone."""
    parent = facts.parent(stmt)
    for field in _AST_BODIES:
        body = getattr(parent, field, None)
        if type(body) is not list:
            continue
        for i, s in enumerate(body):
            if s is stmt:
                first = last = i
                while first > 0 and body[first - 1].end_lineno == body[first].lineno:
                    first -= 1
                while last + 1 < len(body) and body[last].end_lineno == body[last + 1].lineno:
                    last += 1
                return body[first:last + 1]
    return [stmt]


def _owning_parens(facts, node: ast.AST, line: int, byte_col: int, after_in: bool) -> str:
    """``node``'s code with the parentheses it owns: those opened between (``line``, ``byte_col``)
    (after the ``in`` keyword when ``after_in``) and ``node``, each closed after it. The text in
    between holds no string: a ``#`` there starts a comment."""
    text = facts.code()
    start = _offset(facts, line, byte_col)
    begin = _offset(facts, node.lineno, node.col_offset)
    i, opened, first = start, 0, -1
    if after_in:
        code = re.sub(r"#[^\r\n]*", lambda m: " " * len(m.group()), text[start:begin])
        found = list(_IN.finditer(code))
        i = start + (found[-1].end() if found else 0)
    while i < begin:
        c = text[i]
        if c == "#":
            while i < begin and text[i] not in "\r\n":
                i += 1
            continue
        if c == "(":
            opened += 1
            if first < 0:
                first = i
        i += 1
    if not opened:
        return facts.segment(node)
    j = _offset(facts, node.end_lineno, node.end_col_offset)
    n = len(text)
    while opened and j < n:
        c = text[j]
        if c == "#":
            while j < n and text[j] not in "\r\n":
                j += 1
            continue
        if c == ")":
            opened -= 1
        j += 1
    return text[first:j]


def _without_block_indent(facts, node: ast.AST, text: str) -> str:
    """libcst's code of a node written over several lines: a line that continues inside brackets
    (the node's own or around it) loses the indentation of the block the node's statement is in
    (libcst keeps it as a flag, which ``code_for_node`` of the node alone does not render), and
    its line ending, when it is the module's default one, is written ``\\n``; a string's lines
    and a line after a backslash keep theirs."""
    stmt = facts.enclosing_statement(node)
    if stmt is None:
        return text
    first = _statement_line(facts, stmt)[0]
    line = facts.lines[first.lineno - 1]
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    if not indent:
        return text
    try:
        # in brackets, as the node's newlines are (in its own or around it): each is an ``NL``
        tokens = list(tokenize.generate_tokens(io.StringIO(f"({text})").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return text
    ends = {tok.start[0] for tok in tokens if tok.type == tokenize.NL}  # lines ending in whitespace
    lines = re.split(r"(?<=\n)", text)  # as ``io.StringIO`` gives them to the tokenizer
    default = _default_newline(facts)
    out = []
    for i, ln in enumerate(lines, 1):
        if i - 1 in ends and ln.startswith(indent):
            ln = ln[len(indent):]
        if i in ends and default != "\n" and ln.endswith(default):
            ln = ln[:-len(default)] + "\n"  # libcst's module default newline, rendered without the module
        out.append(ln)
    return "".join(out)


def _default_newline(facts) -> str:
    """libcst's ``default_newline`` of the module: its first line ending."""
    found = facts.__dict__.get("_shd301_newline")
    if found is None:
        m = re.search(r"\r\n?|\n", facts.code())
        found = facts.__dict__["_shd301_newline"] = m.group(0) if m else "\n"
    return found


def _offset(facts, line: int, byte_col: int) -> int:
    """The character offset in the module's text of ``ast``'s (line, byte column)."""
    starts = facts.__dict__.get("_shd301_line_starts")
    if starts is None:
        starts, at = [], 0
        for ln in facts.lines:
            starts.append(at)
            at += len(ln)
        facts.__dict__["_shd301_line_starts"] = starts
    return starts[line - 1] + facts.column(line, byte_col)


BlockingCallInCoroutine.ast_check = _Ast
