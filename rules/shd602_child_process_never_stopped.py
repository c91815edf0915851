from __future__ import annotations

import ast
import weakref
from typing import Optional, Union

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.ast_tree import TRYS, nested_statements
from shutdown_lint.prefilter.ast_tree import children as ast_children, walk as ast_walk
from shutdown_lint import facts as F
from shutdown_lint.ast_engine.check import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import arguments
from shutdown_lint.ast_engine.facts import same_logical_line
from shutdown_lint.ast_engine.types import typer as ast_typer
from shutdown_lint.ast_engine.walk import children, source_order
from shutdown_lint.facts.types import MP_CONTEXT
from shutdown_lint.rule import Fix, Invalid, Replace, Rule
from shutdown_lint.traversal import walk

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._vocabulary import identifier_words

#: Calls that start a child process, by kind (qualified names as the facts spell them).
POPEN_FACTORIES = ("subprocess.Popen",)
ASYNC_FACTORIES = ("asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
                   "asyncio.subprocess.create_subprocess_exec", "asyncio.subprocess.create_subprocess_shell")
MP_FACTORIES = ("multiprocessing.Process", "multiprocessing.context.Process", "torch.multiprocessing.Process")
_KIND = {**{n: "popen" for n in POPEN_FACTORIES}, **{n: "asyncio" for n in ASYNC_FACTORIES},
         **{n: "mp" for n in MP_FACTORIES}}
FACTORIES = tuple(_KIND)
#: Calls that give a ``multiprocessing`` context, whose ``Process`` attribute is a factory
#: (``ctx = mp.get_context("spawn"); ctx.Process(...)``; the typing fact types the context).
CONTEXT_FACTORIES = ("multiprocessing.get_context", "torch.multiprocessing.get_context")
#: Types of a context whose ``Process`` attribute is a factory: ``get_context``'s value (the
#: facts' ``MP_CONTEXT``) and the classes a declaration names (``ctx: mp.context.SpawnContext``,
#: a parameter's, a variable's, ``self.ctx``'s, a function's return annotation). Not
#: ``torch.multiprocessing.SpawnContext``: that is ``torch.multiprocessing.spawn``'s process
#: handle (the facts spell it ``multiprocessing.SpawnContext``), which has no ``Process``.
CONTEXT_TYPES = frozenset({MP_CONTEXT, *(f"multiprocessing.context.{c}" for c in (
    "BaseContext", "DefaultContext", "SpawnContext", "ForkContext", "ForkServerContext"))})

#: Methods of the child that wait for it or end it.
_STOP_METHODS = frozenset({"wait", "communicate", "terminate", "kill", "join", "send_signal"})
#: Of those, the ones that return only once the child has exited (and, for a Popen, reaped it).
_WAIT_METHODS = frozenset({"wait", "communicate"})
#: Words of a callee's name that take the child (or its pid) and stop it or wait for it:
#: ``os.kill(p.pid, ...)``, ``runtime_guard.terminate_process_groups([p])``, ``self._reap(p)``.
_STOP_WORDS = frozenset({"terminate", "kill", "killpg", "stop", "reap", "wait", "cleanup", "shutdown", "close", "join",
                         "teardown", "finish", "halt"})
#: Callees that only look at the child (its pid in a log line): not a hand-over.
_OBSERVERS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "critical", "log", "str",
                        "repr", "format", "isinstance", "len", "id", "type", "bool", "int", "write"})
#: Exception types whose handler also runs on Ctrl+C (or, in a coroutine, on cancellation).
_BROAD = frozenset({"builtins.BaseException", "builtins.KeyboardInterrupt", "asyncio.CancelledError",
                    "asyncio.exceptions.CancelledError", "builtins.SystemExit", "builtins.GeneratorExit"})
#: Attributes of the child that name the process itself (handing them over hands it over).
_IDENTITY_ATTRS = frozenset({"pid", "sentinel"})

_HANDOFF, _PLAIN, _WITH, _REGISTER, _DAEMON, _START, _STOP, _POLL, _STORED = (
    "handoff", "plain", "with", "register", "daemon", "start", "stop", "poll", "stored")
_FULL, _ERRORS, _NORMAL = "full", "errors", "normal"



class _Decide:
    """SHD602's decisions, shared by the libcst rule and its ``ast`` check (``_Ast``): which
    call starts a child, where it is kept, which uses stop it and on which paths, and what is
    reported. The tree reads they call are written once per tree: ``_kind``, ``_placement``
    (dropped, kept in a target, or neither), ``_name_of``/``_self_attr`` (the target),
    ``_names`` (libcst's ``Name`` nodes spelled like the child in the region, in source
    order), ``_starts_another``, ``_in_loop``, ``_classify``, ``_declared_shared``,
    ``_protection``, ``_code_between``, ``_new_session``, ``_piped``, ``_daemon_kw``,
    ``_is_wait``, ``_timed``, ``_timeout_handled``, ``_code``, ``_fix`` (edits or a plan),
    and for a child kept on ``self``: ``_attribute_refs``, ``_receiver_is_self``,
    ``_base_words``, ``_type_of``, ``_attr_use``."""

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node) -> None:
        kind = self._kind(node)
        if kind is not None:
            self._check(node, kind)

    # ------------------------------------------------------------------ logic
    def _check(self, call, kind: str) -> None:
        f = self.facts
        awaited, place = self._placement(call)
        if kind == "asyncio" and not awaited:
            return  # the coroutine is not awaited here: whoever awaits it gets the child
        session = self._new_session(call)
        piped = self._piped(call)
        if place == "expr":
            if kind != "mp" and not session and piped:
                self.report(call, f"the child process started here is dropped with a pipe to this process "
                                  f"(`{piped}=PIPE`): it is never waited for, terminated or killed, so an exception "
                                  f"or Ctrl+C in the code that follows (and the parent's exit) leaves it running; "
                                  f"{_advice()}")
            return
        if place is None:
            return
        target = place
        fn = f.enclosing_function(call)
        var = self._name_of(target)
        if var is None:
            attr = self._self_attr(target)
            if attr is not None and fn is not None and fn.cls is not None:
                self._check_attr(call, kind, attr, fn.cls, session, piped)
            return
        region = fn.node if fn is not None else f.module
        names = self._names(region, var)
        at = next((i for i, n in enumerate(names) if n is target), 0)
        rebound = [i for i, n in enumerate(names) if i != at and self._starts_another(n)]
        # the uses after the start up to the next child started under the same name (source
        # order), then, in a loop, the ones before it back to the previous one (a later
        # iteration's)
        end = next((i for i in rebound if i > at), len(names))
        begin = max((i + 1 for i in rebound if i < at), default=0) if self._in_loop(call, fn) else at
        uses = [(n, self._classify(n, fn)) for n in names[at + 1:end] + names[begin:at]]
        kinds = {k for _, (k, _) in uses}
        if kinds & {_HANDOFF, _WITH, _REGISTER} or (fn is not None and self._declared_shared(fn.node, var)):
            return
        stops = [(site, self._protection(site, fn, kind)) for _, (k, site) in uses if k in (_STOP, _POLL)]
        if _STORED in kinds:
            # ``self.proc = p``: the object holds the child; stopped here or in the class, or not at all
            if not stops and fn is not None and fn.cls is not None:
                for attr in {site for _, (k, site) in uses if k == _STORED}:
                    self._check_attr(call, kind, attr, fn.cls, session, piped)
            return
        protections = {p for _, p in stops}
        if _FULL in protections:
            return
        normal = [s for s, p in stops if p == _NORMAL]
        stmt = f.enclosing_statement(call)
        if kind == "mp":
            starts = [s for _, (k, s) in uses if k == _START]
            if not starts or _DAEMON in kinds or self._daemon_kw(call) or _ERRORS in protections or not normal:
                return
            first = normal[0]
            if not self._code_between(f.enclosing_statement(starts[0]), first, var, fn):
                return
            self.report(call, f"an exception between `{var}.start()` and `{self._code(first)}` leaves the child "
                              f"running, and at exit `multiprocessing` joins every non-daemon child: the process "
                              f"stays alive until `{var}`'s work ends by itself (on SIGTERM the child is orphaned); "
                              f"stop it in a `finally` (`{var}.terminate()` then `{var}.join()`), or make it a daemon")
            return
        interrupt = "a cancellation" if kind == "asyncio" else "Ctrl+C"
        if _ERRORS in protections:
            if session:
                self.report(call, f"`{var}` runs in its own session (`{session}`), so the terminal's Ctrl+C does "
                                  f"not reach it, and only error paths (an `except` that does not catch "
                                  f"`KeyboardInterrupt`, a kill before a `raise`) stop it: after Ctrl+C the child "
                                  f"keeps running; stop it in a `finally`")
            return
        if not normal:
            if not session and piped:
                self.report(call, f"`{var}` (a child process) is never waited for, terminated or killed: an "
                                  f"exception or {interrupt} in the code that follows (and the parent's exit) "
                                  f"leaves it running; {_advice(var)}")
            return
        first = normal[0]
        fix = self._fix(stmt, var, kind)
        if self._code_between(stmt, first, var, fn):
            self.report(call, f"`{var}` is stopped only on the normal path (`{self._code(first)}`): an exception or "
                              f"{interrupt} between its start and that call leaves the child running after the "
                              f"parent is gone; {_advice(var)}", fix=fix)
        elif session and any(not self._is_wait(s) for s in normal):
            self.report(call, f"`{var}` runs in its own session (`{session}`), so the terminal's Ctrl+C does not "
                              f"reach it, and when Ctrl+C interrupts `{self._code(first)}` nothing stops it; "
                              f"{_advice(var)}", fix=fix)
        elif self._timed(first) and kind == "popen" and not self._timeout_handled(first):
            self.report(call, f"`{self._code(first)}` raises `TimeoutExpired` with the child still running, and "
                              f"nothing kills it (the child is not killed when the timeout expires); {_advice(var)}",
                        fix=fix)

    # ------------------------------------------------------------------ a child held on ``self``
    def _check_attr(self, call, kind: str, attr: str, cls, session: Optional[str], piped: Optional[str]) -> None:
        """``self.<attr> = <child>`` (or ``p = <child>`` ... ``self.<attr> = p``): reported when
        nothing in the class, its bases and subclasses in this module, any ``<obj>.<attr>`` of
        this module, or a module that imports this one (the project index) waits for, stops or
        hands on ``<attr>``. Not a ``multiprocessing`` child (its exit handler joins or terminates
        it) nor one in its own session (detached on purpose). Unlike a local name, a child with
        no pipe is reported: the object keeps it as its own (a launched router or server), where
        a local one with no pipe is usually launched to live on (an editor, a browser)."""
        if kind == "mp" or session:
            return
        if self._attr_released(attr, cls):
            return
        found, looked = self._attr_released_elsewhere(attr)
        if found:
            return
        self.report(call, f"`self.{attr}` (a child process) is never waited for, terminated or killed in "
                          f"`{cls.name}` (nor handed on): an exception or Ctrl+C, and the parent's exit, leave it "
                          f"running; add a `close()` (or `__exit__`) that calls "
                          f"`runtime_guard.terminate_process_groups([self.{attr}])` and call it from a `finally`"
                    + F.looked_in(looked, "stop"))

    def _attr_released(self, attr: str, cls) -> bool:
        """Some ``<x>.<attr>`` of this module is stopped, waited for or handed on: ``self.<attr>``
        in ``cls``, a class it derives from or one deriving from it; any other receiver anywhere
        (the first such use in source order decides; the typing fact is asked in that order)."""
        f = self.facts
        related = {cls.name} | set(self._base_words(cls))
        for n, value in self._attribute_refs(attr):
            if self._receiver_is_self(value):
                owner = f.enclosing_class(n)
                if owner is None or not (owner.name in related or cls.name in self._base_words(owner)):
                    continue
            else:
                # another object's ``.<attr>``: counts unless the typing fact says it is of
                # an unrelated class of this module (``holder: Other``)
                typed = self._type_of(value, n)
                if typed is not None and typed.rsplit(".", 1)[-1] not in related | {
                        o.name for o in f.classes if cls.name in self._base_words(o)}:
                    continue
            if self._attr_use(n) in (_STOP, _HANDOFF, _WITH, _REGISTER):
                return True
        return False

    def _attr_released_elsewhere(self, attr: str) -> tuple[Optional[str], Optional[list[str]]]:
        """A module that imports this one (the project index) stops ``<obj>.<attr>`` in any
        function (a subclass's ``close()``, the owner's ``server.proc.kill()``), or hands it to
        a callee whose name says it stops it."""
        view = self.facts.project
        if view is None:
            return None, None

        def matches(written: str, args: list[str]) -> bool:
            parts = written.split(".")
            if len(parts) >= 3 and parts[-2] == attr and parts[-1] in _STOP_METHODS:
                return True
            return bool(set(identifier_words(parts[-1])) & _STOP_WORDS) and any(
                a.split(".")[-1] == attr and "." in a for a in args)

        found, looked = F.teardown_elsewhere(view, matches, lambda name: True, words=(attr,))
        return found, [F.display_path(p) for p in looked]


class ChildProcessNeverStopped(_Decide, Rule):
    """
    ## What it does
    Flags a child process started in a function (or a script's module code) and kept in a
    local name that no exit path stops: a `subprocess.Popen`, an
    `asyncio.create_subprocess_exec/shell` or a non-daemon `multiprocessing.Process` (any
    import alias) with no `wait()`, `communicate()`, `terminate()`, `kill()` or `join()`
    (nor `os.kill(p.pid, ...)`, `runtime_guard.terminate_process_groups([p])`, a helper
    whose name says it stops or reaps) on the paths an exception or Ctrl+C takes:

    - **never stopped**: a `Popen` or asyncio child with a pipe to this process
      (`stdin`/`stdout`/`stderr=PIPE`) that nothing waits for, terminates or kills on any
      path (a `subprocess.Popen(...)` statement whose result is dropped too);
    - **stopped on the normal path only**: the `wait()` is there, but code runs between the
      start and the wait and no `finally` (nor `except BaseException`/`KeyboardInterrupt`,
      nor `except CancelledError` in a coroutine) stops the child: an exception or Ctrl+C
      in that code leaves it running;
    - **a timed wait**: `p.communicate(timeout=...)` / `p.wait(timeout)` right after the
      start with nothing that kills the child on `TimeoutExpired`;
    - **its own session**: a child started with `start_new_session=True` (or
      `process_group=0`, `preexec_fn=os.setsid`) is stopped only on the normal path or in
      an `except Exception`: the terminal's Ctrl+C does not reach it, and nothing on the
      `KeyboardInterrupt` path does;
    - **kept on the object, never stopped**: `self.proc = subprocess.Popen(...)` (or `p = ...`
      then `self.proc = p`) with nothing that waits for, stops or hands on `<x>.proc`
      anywhere: not in the class (its `close()`, `stop()`, `__exit__`, `__del__`, any
      method), not in a class it derives from or that derives from it, not as another
      object's `.proc` in the module (`holder.proc.kill()`, unless the typing fact says the
      holder is of an unrelated class), not in any function of a module that imports this
      one (the project index: a subclass's `shutdown()`, the owner's
      `finally: server.proc.kill()`). Here a child with no pipe is reported too (an object
      keeps a router or server as its own); one in its own session is not.

    `multiprocessing` context objects are factories too: `ctx = mp.get_context("spawn")`,
    `ctx.Process(...)`, `mp.get_context("fork").Process(...)` (the typing fact types the
    context), and a context known by its declared type: `ctx: mp.context.SpawnContext` (a
    parameter's, a variable's, `self.ctx`'s or a function's return annotation; any of
    `multiprocessing.context`'s context classes).

    Not flagged (the child is someone else's to stop, or is stopped): a `Popen` used as a
    `with` block; a child returned, yielded, stored (`self.proc = p`, `procs.append(p)`,
    `d[k] = p`), handed to a call (`manager.track(p)`), used in a nested function or
    lambda, registered (`atexit.register(p.kill)`, `stack.callback(p.terminate)`); a
    stop in a `finally` or an `except BaseException`/`KeyboardInterrupt` handler; a wait
    right after the start (`p = Popen(...)` then `out, err = p.communicate()`, also after a
    `try: p = Popen(...) except OSError: ...` or in its `else:`, in an `if` test, or behind
    `if wait:`): the only window is the wait, and a terminal's Ctrl+C reaches a child of the
    same process group. The same when the parent only reads the child's output between the
    start and the wait (`for line in p.stdout: log(line)`: calls that log, format, collect,
    read or write pipes, or start a reader thread are not work of its own), when the code
    kills the child before its own `raise` (`p.kill(); raise RuntimeError(...)`, also
    `pytest.fail`: its error path is handled; only a child in its own session is then
    reported, for Ctrl+C), and in a pytest fixture, whose code after `yield` pytest runs
    after a failed test too;
    `subprocess.run/call/check_call/check_output` (they kill the child on any exception,
    Ctrl+C included); a child with no pipe to this process that nothing ever waits for or
    stops, or one started with `start_new_session=True` that is only waited for, never
    terminated (a launched editor, browser or GUI, a detached daemon: it is meant to outlive
    the code; a lone `p.poll()` is a look, not a wait); `multiprocessing` children that are daemons
    (`daemon=True`, `p.daemon = True`) or never joined: `multiprocessing`'s exit handler
    terminates daemon children and joins the others on every exit that runs `atexit`
    (normal, exception, `KeyboardInterrupt`). A SIGTERM or SIGKILL of the parent runs no
    exit handler at all: no local code can stop the child then (SHD402 and SHD404 make
    SIGTERM unwind), so those children are not reported for it.

    ## Why is this bad?
    A child is a separate process: when the code that started it unwinds with an exception,
    or the parent exits, nothing ends it. `Popen` does not kill its child when the object
    is dropped or the parent dies; the child is re-parented to init and keeps running,
    holding its GPU memory, ports and files, and the next run finds them taken. A
    terminal's Ctrl+C is sent to the whole foreground process group, so a child in the
    same group often dies with its parent, but not when it handles SIGINT (a Python
    server), runs in its own session, or when only the parent is signalled (`kill -INT`,
    a scheduler, a supervisor). Measured here (tests/behaviour/test_shd602_child_process.py):
    a parent that starts a Python child writing a heartbeat file and then raises, gets
    SIGINT alone, or gets SIGINT with its group while the child runs in its own session,
    exits with the child still alive (not a zombie, heartbeat still changing); with the fix
    the child is gone when the parent has exited, and a run to the end prints the same and
    exits 0 as before.

    For a non-daemon `multiprocessing.Process` the exit handler joins the child: an
    exception between `start()` and `join()` keeps the parent alive until the child's work
    ends by itself (the Flow-Factory "zombie GPU processes after Ctrl+C" shape). Measured
    (same test file): a parent whose 6-second child is running raises, and exits only
    after about 6 s (status 1); SIGINT to the parent alone gives the same wait (status -2).

    ## Example
    ```python
    import subprocess

    def serve_and_eval(model):
        server = subprocess.Popen(["python", "-m", "vllm.entrypoints.api_server", model])
        wait_for_port(8000)
        scores = run_eval()          # raises, or Ctrl+C here: the server keeps running
        server.terminate()
        server.wait()
        return scores
    ```

    ## Use instead
    ```python
    import subprocess
    import runtime_guard

    def serve_and_eval(model):
        server = subprocess.Popen(["python", "-m", "vllm.entrypoints.api_server", model],
                                  start_new_session=True)
        try:
            wait_for_port(8000)
            return run_eval()
        finally:
            runtime_guard.terminate_process_groups([server])  # SIGTERM, grace, SIGKILL
    ```

    ## Fix safety
    Only for a `subprocess.Popen` kept in a local name whose every use follows its start in
    the same block: the fix puts the statements from the one after the start to the last
    one using the child in a `try` whose `finally` calls
    `runtime_guard.terminate_process_groups([p])`. The hazard's path is every run that
    leaves that region (an exception, Ctrl+C) while the child may still be running: there
    the child (and its process group, when it leads one) gets SIGTERM, up to 10 s of grace,
    then SIGKILL, and the exception goes on unchanged.

    Safe when the region has a top-level `p.wait(...)` or `p.communicate(...)` and no
    `return`, `yield`, `break` or `continue` that leaves the region before it: a normal run
    then reaches the `finally` with the child already reaped, and
    `terminate_process_groups` does nothing to a reaped child (no signal, no wait, no
    output; it never raises), so values, output, exit status and every other process's
    fate are what they were.

    Unsafe otherwise (the child is stopped on the normal path only by `terminate()`,
    `kill()`, a conditional or a helper, or the region can return before the wait): a
    normal run can reach the `finally` with the child still running or not yet reaped,
    which it now signals (its process group included) and waits up to 10 s for, where
    the original left it alone.

    No `with` rewrite, although a `with` block is not reported: `Popen.__exit__` does not
    stop the child. On `KeyboardInterrupt` it waits at most 0.25 s and leaves it running
    (CPython assumes the terminal's SIGINT reached the child too); on any other exception it
    waits for the child to end by itself, so the parent hangs where it used to exit.

    No fix for asyncio or `multiprocessing` children (`terminate_process_groups` takes
    `Popen` objects), for a child nothing ever waits for (ending it would change the
    normal path: it may be meant to outlive the function), or when the child is used
    before its start or outside the block.

    ## Known limits
    - Measured on real code (SHD602 alone over the test venv's site-packages without test
      directories: ray, torch, pip, click, ... 9,857 files; the 12 code bases under
      `/work/.mirror`: OpenHands, SkyRL, OpenRLHF, prime-rl, slime, ruff, trl, AReaL, autogen,
      flake8-async, rllm, verl, 8,289 files; CPython 3.11's standard library without tests,
      734 files; every finding read): 11 findings, 8 true (a `communicate(timeout=...)`
      whose `TimeoutExpired` an `except Exception` turns into another error with the shell
      command still running; a `start_new_session=True` torchrun tree and a `bash -c`
      stopped only by `except Exception`; sglang servers left running when a fixture raises
      on a startup timeout; two asyncio example runs left when the coroutine is cancelled; a
      dropped `docker buildx use` whose piped output nobody reads) and 3 false (pre-commit
      reads a pty and re-raises a rare read error; torch's gprof2dot-to-dot pipeline and
      `http.server`'s CGI child, which end on a closed pipe). The first version reported 46
      (and 45 synthetic `Popen(...)` lines of ruff's lint fixtures); the 35 it no longer
      reports are the shapes listed under "Not flagged": the wait after a `try`/`except
      OSError` around the start or in its `else`, behind `if wait:`, in an `if` test, after
      a bare annotation; loops that only read and log the output (pip, nodeenv, ray, SkyRL,
      slime); a kill before the code's own `raise` (AReaL fixtures); launches with no pipe
      and `start_new_session=True` browsers (`webbrowser`, idlelib); a lone `poll()`; a
      `TimeoutExpired` the code handles; earlier and later children of the same name.
    - A child kept on `self` is followed by its attribute name, not path by path: one stop
      anywhere (a `close()` nobody calls, a normal-path `wait()` in a method) lets it off, and
      a `self.proc` stopped in a subclass of another module is found only within the index's
      search bound (importers that spell the attribute, two imports away). Measured (issue 28,
      SHD602 over the ten RL/agent code bases OpenHands, SkyRL, OpenRLHF, prime-rl, slime,
      trl, AReaL, autogen, verl, rllm, 5,178 files, every new finding read): 4 new findings,
      all true: OpenHands' Jupyter kernel gateway (two launch branches) and VS Code server
      plugins keep `self.gateway_process` with a pipe and never stop it; rllm's
      `InferenceManager` launches an sglang router (`self.router_process`, no pipe) that
      nothing stops. Without the project index's search, none was withdrawn; requiring a
      pipe (as for a local name) would have dropped the rllm router only. `ctx.Process`
      added no finding there: of its four uses, one is a daemon, one is joined right after
      its start, two are kept on `self` (a `multiprocessing` child on an object is left to
      its exit handler, as an unjoined local one is).
    - A child kept in a container on `self` (`self.procs.append(p)`) is handed on, not followed.
    - Where the normal path stops the child is not checked path by path: any stop outside a
      cleanup block counts as the normal-path stop (`if done: p.wait()` included).
    - An asyncio child is not killed for the coroutine: measured here, `asyncio.run(main())`
      whose `main` starts `sleep 30` with `create_subprocess_exec` and then raises (or gets
      SIGINT) exits with status 1 (-2) and the child is still alive 0.5 s later.
    - A `with Popen(...)` block is trusted (see "Fix safety" for what its exit does on
      Ctrl+C), as is `subprocess.run`.

    ## References
    - Flow-Factory #149: graceful shutdown on Ctrl+C to prevent zombie GPU processes
    - Python docs: `subprocess.Popen.communicate` ("The child process is not killed if the
      timeout expires"), `Popen.__exit__`, `start_new_session`; `multiprocessing`'s
      `daemon` flag and its exit handler
    - `runtime_guard.terminate_process_groups`: SIGTERM to the child's group, grace, SIGKILL
    """

    code = "SHD602"
    name = "child-process-never-stopped"
    summary = "A child process with no wait, terminate or kill on its exception and Ctrl+C paths outlives its parent"
    triggers = ("Popen", "create_subprocess", "Process")
    facts_needed = ("parents", "imports", "functions", "calls")
    # tier 1: a factory is named in the file's code (``C.InCode``: ``_kind`` reads call names, which
    # are code); the one name the facts read from a string is a type annotation (``ctx:
    # "multiprocessing"``, ``-> "multiprocessing"``) that types ``ctx.Process(...)``'s receiver as a
    # context: for that, ``Process`` in code and ``multiprocessing`` anywhere in the text
    candidate = C.AnyOf(C.InCode(C.qualified(*FACTORIES, *CONTEXT_FACTORIES)),
                        C.All(C.InCode(C.Word("Process")), C.Word("multiprocessing")))
    # tier 2: a call that may be a factory, kept in a plain name (``p = ...`` / ``p: T = ...``,
    # through ``await``) or dropped as an expression statement
    candidate_tree = staticmethod(lambda tree: _may_start_child(tree))

    valid = [
        # a with block: Popen.__exit__ waits
        """
        import subprocess
        def run(cmd):
            with subprocess.Popen(cmd, stdout=subprocess.PIPE) as p:
                for line in p.stdout:
                    print(line)
        """,
        # stopped in a finally
        """
        import subprocess
        import runtime_guard
        def serve(cmd):
            server = subprocess.Popen(cmd, start_new_session=True)
            try:
                evaluate(server)
            finally:
                runtime_guard.terminate_process_groups([server])
        """,
        # killed on every exception, Ctrl+C included, and waited on the normal path
        """
        from subprocess import Popen
        def run(cmd):
            p = Popen(cmd)
            try:
                follow(p)
            except BaseException:
                p.kill()
                raise
            return p.wait()
        """,
        # the wait right after the start (and a kill on its timeout)
        """
        import subprocess
        def version():
            p = subprocess.Popen(["git", "--version"], stdout=subprocess.PIPE)
            try:
                out, _ = p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                out, _ = p.communicate()
            return out
        """,
        # handed over: returned, stored, registered
        """
        import atexit, subprocess
        def start(cmd):
            return subprocess.Popen(cmd)
        def start_server(self, cmd):
            proc = subprocess.Popen(cmd)
            self.servers.append(proc)
        def start_logged(cmd):
            proc = subprocess.Popen(cmd)
            atexit.register(proc.kill)
        def start_shared(cmd):
            global SERVER
            SERVER = subprocess.Popen(cmd)
            warm_up()
            SERVER.wait()
        """,
        # a deliberately detached daemon, a launched editor, a browser polled once
        """
        import subprocess
        def daemonize(cmd):
            subprocess.Popen(cmd, start_new_session=True)
        def open_editor(path):
            subprocess.Popen(["code", path])
        def open_browser(url):
            p = subprocess.Popen(["firefox", url], start_new_session=True)
            return p.poll() is None
        """,
        # multiprocessing: a daemon child, and one only joined at exit by multiprocessing
        """
        import multiprocessing as mp
        def start_logger():
            p = mp.Process(target=log_loop, daemon=True)
            p.start()
            work()
            p.join()
        def start_worker():
            p = mp.Process(target=work)
            p.start()
        """,
        # real code's shapes: the wait after a try around the start, behind `if wait:`,
        # after a loop that only reads and logs the output; a kill before the code's own raise
        """
        import logging, subprocess
        log = logging.getLogger(__name__)
        def pkg_config(args):
            try:
                pc = subprocess.Popen(args, stdout=subprocess.PIPE)
            except OSError:
                return None
            else:
                out, _ = pc.communicate()
            return out
        def open_url(url, wait):
            c = subprocess.Popen(["xdg-open", url])
            if wait:
                return c.wait()
            return 0
        def stream(cmd):
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
            lines = []
            for line in proc.stdout:
                lines.append(line.rstrip())
                log.info(line.rstrip())
            return proc.wait(), lines
        def server(cmd):
            proc = subprocess.Popen(cmd)
            if not wait_healthy():
                proc.kill()
                raise RuntimeError("server did not start")
            use_server()
            proc.terminate()
        """,
        # subprocess.run waits, and kills the child on any exception
        """
        import subprocess
        def build():
            subprocess.run(["make"], check=True)
        """,
        # a child kept on self: stopped in close(), in __exit__ through a helper, in a subclass,
        # handed on; one in its own session (detached on purpose)
        """
        import subprocess
        class Scorer:
            def __init__(self, cmd):
                self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            def close(self):
                self.proc.terminate()
                self.proc.wait()
        class Judge:
            def __enter__(self):
                self._child = subprocess.Popen(["judge"])
                return self
            def __exit__(self, *exc):
                reap_child(self._child)
        class Engine:
            def launch(self, cmd):
                self.engine = subprocess.Popen(cmd)
        class ManagedEngine(Engine):
            def shutdown(self):
                self.engine.kill()
        class Pool:
            def __init__(self, manager, cmd):
                self.proc = subprocess.Popen(cmd)
                manager.track(self.proc)
        class Daemon:
            def __init__(self, cmd):
                self.proc = subprocess.Popen(cmd, start_new_session=True)
        """,
        # an annotated context's daemon child; torch.multiprocessing.SpawnContext is the handle
        # torch.multiprocessing.spawn returns, not a context
        """
        import torch.multiprocessing as tmp
        from multiprocessing.context import SpawnContext

        def train(cfg, ctx: SpawnContext, handle: tmp.SpawnContext):
            logger = ctx.Process(target=log_loop, daemon=True)
            logger.start()
            worker = handle.Process(target=produce)
            worker.start()
            fit(cfg)
            worker.join()
        """,
        # a multiprocessing context's Process: a daemon, and one stopped in a finally
        """
        import multiprocessing as mp
        def train(cfg):
            ctx = mp.get_context("spawn")
            logger = ctx.Process(target=log_loop, daemon=True)
            logger.start()
            loader = ctx.Process(target=produce, args=(cfg,))
            loader.start()
            try:
                fit(cfg)
            finally:
                loader.terminate()
                loader.join()
        """,
    ]
    invalid = [
        Invalid(
            """
            import subprocess

            def serve_and_eval(model):
                server = subprocess.Popen(["serve", model])
                scores = run_eval(model)
                server.terminate()
                server.wait()
                return scores
            """,
            fixed="""
            import subprocess
            import runtime_guard

            def serve_and_eval(model):
                server = subprocess.Popen(["serve", model])
                try:
                    scores = run_eval(model)
                    server.terminate()
                    server.wait()
                finally:
                    runtime_guard.terminate_process_groups([server])
                return scores
            """,
            message_contains="exception or Ctrl+C",
        ),
        # the normal path ends with a wait, nothing returns before it: a safe fix
        Invalid(
            """
            import subprocess as sp

            def tail(cmd):
                proc = sp.Popen(cmd, stdout=sp.PIPE, text=True)
                for line in proc.stdout:
                    handle(line)
                rc = proc.wait()
                print("exit", rc)
            """,
            fixed="""
            import subprocess as sp
            import runtime_guard

            def tail(cmd):
                proc = sp.Popen(cmd, stdout=sp.PIPE, text=True)
                try:
                    for line in proc.stdout:
                        handle(line)
                    rc = proc.wait()
                finally:
                    runtime_guard.terminate_process_groups([proc])
                print("exit", rc)
            """,
        ),
        # never waited for
        Invalid(
            """
            import subprocess

            def warm_cache(path):
                subprocess.Popen(["docker", "buildx", "use", "default"], stdout=subprocess.PIPE)
                helper = subprocess.Popen(["prefetch", path], stdout=subprocess.PIPE, text=True)
                print("started", helper.pid)
            """,
            count=2,
            message_contains="never waited",
        ),
        # its own session: Ctrl+C does not reach it, and only `except Exception` kills it
        Invalid(
            """
            import subprocess

            def run_job(cmd):
                job = subprocess.Popen(cmd, start_new_session=True)
                try:
                    monitor(cmd)
                except Exception:
                    job.kill()
                    raise
                job.wait()
            """,
            message_contains="start_new_session",
        ),
        # a timed wait with nothing killing the child on TimeoutExpired
        Invalid(
            """
            import subprocess

            def probe(cmd):
                p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
                out, _ = p.communicate(timeout=10)
                return out
            """,
            fixed="""
            import subprocess
            import runtime_guard

            def probe(cmd):
                p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
                try:
                    out, _ = p.communicate(timeout=10)
                finally:
                    runtime_guard.terminate_process_groups([p])
                return out
            """,
            message_contains="TimeoutExpired",
        ),
        # asyncio: a cancellation between the start and the wait
        Invalid(
            """
            import asyncio

            async def render(cmd):
                proc = await asyncio.create_subprocess_exec(*cmd)
                await upload_progress()
                await proc.wait()
            """,
            message_contains="cancel",
        ),
        # multiprocessing: an exception before join() and the exit handler joins the child
        Invalid(
            """
            import multiprocessing

            def train(cfg):
                loader = multiprocessing.Process(target=produce, args=(cfg,))
                loader.start()
                fit(cfg)
                loader.join()
            """,
            message_contains="join",
        ),
        # the same through a multiprocessing context object
        Invalid(
            """
            import multiprocessing as mp

            def train(cfg):
                ctx = mp.get_context("spawn")
                loader = ctx.Process(target=produce, args=(cfg,))
                loader.start()
                fit(cfg)
                loader.join()
            """,
            message_contains="join",
        ),
        # the same with a context known only by its declared type (a parameter's annotation)
        Invalid(
            """
            import multiprocessing as mp

            def train(cfg, ctx: mp.context.SpawnContext):
                loader = ctx.Process(target=produce, args=(cfg,))
                loader.start()
                fit(cfg)
                loader.join()
            """,
            message_contains="join",
        ),
        # a child kept on self that nothing in the class (or anywhere) stops
        Invalid(
            """
            import subprocess

            class InferenceManager:
                def launch_router(self, urls):
                    self.router_process = subprocess.Popen(["python3", "-m", "router", *urls])
                    return "http://127.0.0.1:30000"

                def log_state(self):
                    print("router pid", self.router_process.pid, self.router_process.poll())
            """,
            message_contains="in `InferenceManager`",
        ),
    ]

    # ------------------------------------------------------------------ libcst's reads (``_Decide``'s)
    def _kind(self, call: cst.Call) -> Optional[str]:
        """The kind of child ``call`` starts, or None: a factory of ``_KIND``, or ``Process`` of
        a ``multiprocessing`` context (``ctx.Process(...)``, ``mp.get_context("spawn").Process(...)``)."""
        kind = _KIND.get(self.facts.call_name(call) or "")
        if kind is None and isinstance(call.func, cst.Attribute) and call.func.attr.value == "Process" and \
                self.facts.type_of(call.func.value, call) in CONTEXT_TYPES:
            return "mp"
        return kind

    def _placement(self, call: cst.Call) -> tuple[bool, object]:
        """(awaited, place): ``"expr"`` for the whole value of an expression statement, the target
        of a one-target assignment (``p = ...``, ``p: T = ...``) whose whole value it is, or None."""
        f = self.facts
        expr: cst.BaseExpression = call
        holder = f.parent(call)
        if isinstance(holder, cst.Await):
            expr, holder = holder, f.parent(holder)
        if isinstance(holder, cst.Expr):
            return expr is not call, "expr"
        if isinstance(holder, cst.Assign) and len(holder.targets) == 1 and holder.value is expr:
            return expr is not call, holder.targets[0].target
        if isinstance(holder, cst.AnnAssign) and holder.value is expr:
            return expr is not call, holder.target
        return expr is not call, None

    @staticmethod
    def _name_of(target: cst.BaseExpression) -> Optional[str]:
        return target.value if isinstance(target, cst.Name) else None

    _self_attr = staticmethod(lambda target: _self_attr(target))
    _code = staticmethod(lambda node: _code(node))
    _piped = staticmethod(lambda call: _piped(call))
    _daemon_kw = staticmethod(lambda call: _daemon_kw(call))
    _is_wait = staticmethod(lambda site: _is_wait(site))
    _timed = staticmethod(lambda call: _timed(call))
    _declared_shared = staticmethod(lambda fn_node, var: _declared_shared(fn_node, var))

    def _new_session(self, call: cst.Call) -> Optional[str]:
        return _new_session(self.facts, call)

    def _names(self, region: cst.CSTNode, var: str) -> list:
        return self.facts.name_nodes(region, var)

    def _attribute_refs(self, attr: str) -> list:
        """(``<x>.<attr>``, ``<x>``) for every attribute spelled ``attr`` in the module, in source order."""
        found: list = []

        class _Scan(cst.CSTVisitor):
            def visit_Attribute(self, n: cst.Attribute) -> None:
                if n.attr.value == attr:
                    found.append((n, n.value))

        walk(self.facts.module, _Scan())
        return found

    @staticmethod
    def _receiver_is_self(value: cst.BaseExpression) -> bool:
        return isinstance(value, cst.Name) and value.value in ("self", "cls")

    @staticmethod
    def _base_words(cls) -> list[str]:
        """The last dotted word of each base class's code (``_code``: cut at 50 characters)."""
        return [_code(b.value).rsplit(".", 1)[-1] for b in cls.node.bases]

    def _type_of(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[str]:
        return self.facts.type_of(expr, at)

    def _attr_use(self, ref: cst.Attribute) -> str:
        """What a use of ``<x>.<attr>`` does with the child (``_classify``'s kinds)."""
        f = self.facts
        parent = f.parent(ref)
        if isinstance(parent, cst.Attribute) and parent.value is ref:
            name = parent.attr.value
            up = f.parent(parent)
            if isinstance(up, cst.Call) and up.func is parent:
                if name in _STOP_METHODS:
                    return _STOP
                if name == "poll" and any(isinstance(a, cst.While) and f.is_ancestor(a.test, up)
                                          for a in f.ancestors(up)):
                    return _STOP  # ``while self.proc.poll() is None:`` waits
                return _PLAIN
            if name in _STOP_METHODS and isinstance(up, cst.Arg):
                return _REGISTER
            if name in _IDENTITY_ATTRS:
                return self._handed(parent)[0]
            return _PLAIN
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
                isinstance(parent, cst.AnnAssign) and parent.target is ref):
            return _PLAIN
        if isinstance(parent, cst.WithItem) and parent.item is ref:
            return _WITH
        kind = self._handed(ref)[0]
        return _HANDOFF if kind == _STORED else kind


    def _starts_another(self, n: cst.Name) -> bool:
        """``n`` is bound to another child here (``p = subprocess.Popen(...)`` again)."""
        target = self.facts.parent(n)
        assign = self.facts.parent(target) if isinstance(target, cst.AssignTarget) else None
        if not isinstance(assign, cst.Assign):
            return False
        value = assign.value.expression if isinstance(assign.value, cst.Await) else assign.value
        return isinstance(value, cst.Call) and self._kind(value) is not None

    def _in_loop(self, node: cst.CSTNode, fn) -> bool:
        stop = fn.node if fn is not None else None
        for anc in self.facts.ancestors(node):
            if anc is stop or isinstance(anc, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                return False
            if isinstance(anc, (cst.For, cst.While)):
                return True
        return False

    def _timeout_handled(self, site: cst.CSTNode) -> bool:
        """An enclosing ``try`` names ``TimeoutExpired`` in a handler: the code chose what to
        do with a child that outlives the timeout (``webbrowser`` leaves a browser running)."""
        for tr in self.facts.enclosing_trys(site):
            for h in tr.handlers:
                if h.type is not None and "TimeoutExpired" in _code(h.type):
                    return True
        return False

    # ------------------------------------------------------------------ uses of the child's name
    def _classify(self, n: cst.Name, fn) -> tuple[str, Optional[cst.CSTNode]]:
        f = self.facts
        if f.enclosing_function(n) is not fn or f.in_lambda(n):
            return _HANDOFF, None  # a closure (or a global read in a function) may stop it later
        parent = f.parent(n)
        if isinstance(parent, cst.Attribute) and parent.value is n:
            attr = parent.attr.value
            up = f.parent(parent)
            if isinstance(up, cst.Call) and up.func is parent:
                if attr in _STOP_METHODS:
                    return _STOP, up
                if attr == "poll":
                    # ``while p.poll() is None:`` waits; a lone poll only looks
                    return (_POLL, up) if any(isinstance(a, cst.While) and f.is_ancestor(a.test, up)
                                              for a in f.ancestors(up)) else (_PLAIN, None)
                if attr == "start":
                    return _START, up
                return _PLAIN, None
            if attr == "daemon" and isinstance(up, cst.AssignTarget):
                return _DAEMON, None
            if attr in _STOP_METHODS and isinstance(up, cst.Arg):
                return _REGISTER, None  # atexit.register(p.kill), stack.callback(p.terminate)
            if attr in _IDENTITY_ATTRS:
                return self._handed(parent)
            return _PLAIN, None  # p.stdout, p.returncode, p.args
        if isinstance(parent, (cst.AssignTarget, cst.Del)) or (
                isinstance(parent, cst.AnnAssign) and parent.target is n):
            return _PLAIN, None
        if isinstance(parent, cst.WithItem) and parent.item is n:
            return _WITH, None
        if isinstance(parent, cst.NameItem):  # global / nonlocal
            return _HANDOFF, None
        return self._handed(n)

    def _handed(self, expr: cst.CSTNode) -> tuple[str, Optional[cst.CSTNode]]:
        """What happens to the child (``p`` or ``p.pid``) where ``expr`` stands: handed to a
        call, stored, returned (a hand-over), or only looked at."""
        f = self.facts
        cur = expr
        parent = f.parent(cur)
        while isinstance(parent, (cst.List, cst.Tuple, cst.Set, cst.Element, cst.StarredElement, cst.Dict,
                                  cst.DictElement, cst.StarredDictElement)):
            cur, parent = parent, f.parent(parent)
        if isinstance(parent, cst.Arg):
            call = f.parent(parent)
            if isinstance(call, cst.Call):
                words = set(identifier_words(_callee_word(call)))
                if words & _STOP_WORDS:
                    return _STOP, call
                if words and _callee_word(call) in _OBSERVERS:
                    return _PLAIN, None
            return _HANDOFF, None
        if isinstance(parent, (cst.Assign, cst.AnnAssign)) and parent.value is cur and cur is expr:
            targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else [parent.target]
            attr = _self_attr(targets[0]) if len(targets) == 1 else None
            scope = f.enclosing_function(expr)
            if attr is not None and scope is not None and scope.cls is not None:
                return _STORED, attr  # type: ignore[return-value]  (``self.proc = p``: followed in the class)
        if isinstance(parent, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Return, cst.Yield, cst.NamedExpr,
                               cst.Lambda)):
            return _HANDOFF, None
        if isinstance(parent, (cst.Subscript, cst.SubscriptElement, cst.Index)):
            return _PLAIN, None
        if isinstance(parent, cst.Await):
            return _HANDOFF, None
        return _PLAIN, None

    def _protection(self, site: cst.CSTNode, fn, kind: str) -> str:
        """Which paths a stop at ``site`` is on: ``full`` (a ``finally``, or a handler that also
        catches ``KeyboardInterrupt``/``CancelledError``), ``errors`` (another handler),
        ``normal`` (no cleanup block)."""
        f = self.facts
        child: cst.CSTNode = site
        stop = fn.node if fn is not None else None
        for anc in f.ancestors(site):
            if anc is stop or isinstance(anc, (cst.FunctionDef, cst.Lambda)):
                break
            if isinstance(anc, cst.Finally):
                return _FULL
            if isinstance(anc, (cst.ExceptHandler, cst.ExceptStarHandler)) and child is anc.body:
                return _FULL if self._broad(anc, kind) else _ERRORS
            child = anc
        return _ERRORS if self._before_failing(site) else _NORMAL

    def _before_failing(self, site: cst.CSTNode) -> bool:
        """The stop is followed, in its block, by a ``raise`` (``pytest.fail``, ``sys.exit``):
        ``p.kill(); raise RuntimeError("server did not start")``, the code's own error path."""
        f = self.facts
        stmt = f.enclosing_statement(site)
        block = f.parent(stmt) if stmt is not None else None
        body = list(getattr(block, "body", ())) if isinstance(block, (cst.IndentedBlock, cst.Module)) else []
        idx = next((i for i, st in enumerate(body) if st is stmt), None)
        if idx is None:
            return False
        for st in body[idx + 1:]:
            if not isinstance(st, cst.SimpleStatementLine):
                continue
            for small in st.body:
                if isinstance(small, cst.Raise):
                    return True
                if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and (
                        f.call_name(small.value) in ("pytest.fail", "sys.exit", "pytest.skip", "pytest.exit")):
                    return True
        return False

    def _broad(self, handler: Union[cst.ExceptHandler, cst.ExceptStarHandler], kind: str) -> bool:
        types = self.facts.caught_types(handler)
        if types is None:
            return True
        for t in types:
            q = self.facts.qualified_name(t, handler) or ""
            if q in _BROAD or (kind == "asyncio" and q.endswith("CancelledError")):
                return True
        return False

    def _code_between(self, start: Optional[cst.BaseStatement], stop_site: cst.CSTNode, var: str, fn) -> bool:
        """Work that can raise (or wait on something else) runs between ``start`` and the stop at
        ``stop_site``. The window is the statements that run after ``start`` until the one that
        holds the stop, climbing out of the blocks ``start`` ends (a ``try`` body goes on in its
        ``else``, then after the ``try``); the stop's own statement counts for what runs before
        the stop in it. Only calls count as work, and not those that just look at values, read
        or write the child's pipes, or start a reader thread (``_harmless``); a ``raise``
        counts; a ``yield`` counts unless the function is a pytest fixture (pytest resumes it
        after the test, failed or not)."""
        f = self.facts
        if start is None:
            return True
        if start is stop_site or f.is_ancestor(start, stop_site):
            return False
        window: list[cst.CSTNode] = []
        cur: cst.CSTNode = start
        holder = None
        while holder is None:
            block = f.parent(cur)
            while block is not None and not isinstance(block, (cst.IndentedBlock, cst.Module)):
                if isinstance(block, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                    return True
                cur, block = block, f.parent(block)
            if block is None:
                return True
            body = list(block.body)
            idx = next((i for i, st in enumerate(body) if st is cur), None)
            if idx is None:
                return True
            rest = body[idx + 1:]
            holder = next((st for st in rest if f.is_ancestor(st, stop_site)), None)
            if holder is not None:
                window += rest[:rest.index(holder)]
                break
            window += rest
            owner = f.parent(block)
            if isinstance(owner, (cst.FunctionDef, cst.ClassDef)) or owner is None:
                return True  # the stop is not after the start (a loop's earlier iteration)
            if isinstance(owner, cst.Try) and owner.body is block:
                if owner.orelse is not None:
                    later = list(owner.orelse.body.body) if isinstance(owner.orelse.body, cst.IndentedBlock) else []
                    holder = next((st for st in later if f.is_ancestor(st, stop_site)), None)
                    if holder is not None:
                        window += later[:later.index(holder)]
                        break
                    window += later
                if owner.finalbody is not None:
                    window.append(owner.finalbody)
            cur = owner
        if not self._heads(holder, stop_site):
            window.append(holder)
        fixture = fn is not None and any(d.rsplit(".", 1)[-1] == "fixture" for d in fn.decorators)
        return any(self._work(node, var, fixture) for node in window)

    def _heads(self, stmt: cst.BaseStatement, site: cst.CSTNode) -> bool:
        """The stop is the first thing ``stmt`` does: its value, an ``if``/``while`` test, the
        first statement of a ``try``/``with`` body."""
        f = self.facts
        while True:
            if isinstance(stmt, cst.SimpleStatementLine):
                return len(stmt.body) == 1 and f.is_ancestor(stmt.body[0], site)
            if isinstance(stmt, (cst.While, cst.If)) and f.is_ancestor(stmt.test, site):
                return True
            if isinstance(stmt, (cst.Try, cst.With)) and isinstance(stmt.body, cst.IndentedBlock) and stmt.body.body:
                if isinstance(stmt, cst.With) and any(f.is_ancestor(i, site) for i in stmt.items):
                    return True
                stmt = stmt.body.body[0]
                continue
            return False

    def _work(self, root: cst.CSTNode, var: str, fixture: bool) -> bool:
        found = [False]

        class _Scan(cst.CSTVisitor):
            def visit_FunctionDef(self, n) -> bool:
                return False

            def visit_ClassDef(self, n) -> bool:
                return False

            def visit_Lambda(self, n) -> bool:
                return False

            def visit_Raise(self, n) -> None:
                found[0] = True

            def visit_Yield(self, n) -> None:
                found[0] = found[0] or not fixture

            def visit_Call(self, n: cst.Call) -> None:
                if not _harmless(n, var):
                    found[0] = True

        walk(root, _Scan())
        return found[0]

    # ------------------------------------------------------------------ fix
    def _fix(self, start: Optional[cst.BaseStatement], var: str, kind: str) -> Optional[Fix]:
        f = self.facts
        if kind != "popen" or not isinstance(start, cst.SimpleStatementLine) or len(start.body) != 1:
            return None
        block = f.parent(start)
        if not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return None
        body = list(block.body)
        i = next(k for k, s in enumerate(body) if s is start)
        fn = f.enclosing_function(start)
        region = fn.node if fn is not None else f.module
        target = start.body[0].targets[0].target if isinstance(start.body[0], cst.Assign) else start.body[0].target
        uses = [n for n in f.name_nodes(region, var) if n is not target]
        holders = []
        for n in uses:
            k = next((k for k, s in enumerate(body) if k > i and f.is_ancestor(s, n)), None)
            if k is None:
                return None  # used before the start or outside the block
            if isinstance(f.parent(n), cst.AssignTarget):
                return None  # rebound in the region
            holders.append(k)
        if not holders:
            return None
        j = max(holders)
        window = body[i + 1:j + 1]
        if any(isinstance(s, (cst.FunctionDef, cst.ClassDef)) for s in window) or _has(window, (cst.Global,
                                                                                               cst.Nonlocal)):
            return None
        wait_at = next((k for k, s in enumerate(window) if _is_wait_statement(s, var)), None)
        safe = wait_at is not None and not _leaves_early(window[:wait_at])
        terminate = cst.SimpleStatementLine([cst.Expr(guard_call(
            "terminate_process_groups", [cst.Arg(cst.List([cst.Element(cst.Name(var))]))]))])
        first = window[0]
        inner = [first.with_changes(leading_lines=())] + list(window[1:])
        guarded = cst.Try(body=cst.IndentedBlock(body=inner),
                          finalbody=cst.Finally(body=cst.IndentedBlock(body=[terminate])),
                          leading_lines=getattr(first, "leading_lines", ()))
        edits: list = [Replace(first, guarded)] + [Replace(s, cst.RemovalSentinel.REMOVE) for s in window[1:]]
        message = f"End `{var}` in a `finally` (`runtime_guard.terminate_process_groups`)"
        return (Fix.safe if safe else Fix.unsafe)(*edits, IMPORT_RUNTIME_GUARD, message=message)


def _self_attr(target: cst.BaseExpression) -> Optional[str]:
    """``self.<attr>`` as an assignment target: the attribute's name."""
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        return target.attr.value
    return None


def _advice(var: str = "p") -> str:
    return (f"stop it in a `finally` (`runtime_guard.terminate_process_groups([{var}])`: SIGTERM to its process "
            f"group, a grace period, then SIGKILL) or use the `Popen` as a `with` block")


def _code(node: cst.CSTNode) -> str:
    text = cst.Module([]).code_for_node(node)
    return text if len(text) <= 50 else text[:47] + "..."


#: Callees (last word) that only compute, look, log or do I/O on what the child writes: the
#: parent is not doing other work there (an exception from them is not a plausible way out).
_HARMLESS = _OBSERVERS | frozenset({
    "decode", "encode", "strip", "rstrip", "lstrip", "split", "splitlines", "startswith", "endswith", "join",
    "replace", "lower", "upper", "append", "extend", "add", "update", "pop", "get", "items", "keys", "values",
    "readline", "readlines", "read", "close", "write", "flush", "fileno", "start", "time", "monotonic",
    "perf_counter", "iter", "next", "enumerate", "range", "list", "dict", "set", "tuple", "sorted", "min", "max",
    "sum", "any", "all", "abs", "round", "float", "Thread", "getvalue", "copy", "search", "match", "group",
    "poll", "verbose", "spin",
})
_PIPES = frozenset({"stdout", "stdin", "stderr"})


def _harmless(call: cst.Call, var: str) -> bool:
    """A call that is no work of the parent's own: see ``_HARMLESS``; any call on the child
    (``p.poll()``) or on a child's pipes (``p.stdout.readline()``)."""
    word = _callee_word(call)
    if word in _HARMLESS or {"log", "logs", "logger", "logging", "print"} & set(identifier_words(word)):
        return True
    cur = call.func
    while isinstance(cur, (cst.Attribute, cst.Call, cst.Subscript)):
        if isinstance(cur, cst.Attribute) and cur.attr.value in _PIPES:
            return True
        cur = cur.func if isinstance(cur, cst.Call) else cur.value
    return isinstance(cur, cst.Name) and cur.value == var and cur is not call.func


def _callee_word(call: cst.Call) -> str:
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


def _new_session(facts, call: cst.Call) -> Optional[str]:
    """``start_new_session=True``, ``process_group=<n>`` or ``preexec_fn=os.setsid/setpgrp``:
    the child leads its own process group, out of the terminal's Ctrl+C."""
    for a in call.args:
        if a.keyword is None:
            continue
        key, value = a.keyword.value, a.value
        if key == "start_new_session" and not (isinstance(value, cst.Name) and value.value in ("False", "None")):
            return "start_new_session=True"
        if key == "process_group" and not (isinstance(value, cst.Name) and value.value == "None"):
            return "process_group=" + _code(value)
        if key == "preexec_fn" and isinstance(value, (cst.Attribute, cst.Name)) and \
                _code(value).rsplit(".", 1)[-1] in ("setsid", "setpgrp"):
            return "preexec_fn=" + _code(value)
    return None


def _declared_shared(fn_node: cst.FunctionDef, var: str) -> bool:
    """``global var`` / ``nonlocal var`` in the function: other code holds the child too."""
    found = [False]

    class _Scan(cst.CSTVisitor):
        def visit_Global(self, n: cst.Global) -> None:
            found[0] = found[0] or any(item.name.value == var for item in n.names)

        def visit_Nonlocal(self, n: cst.Nonlocal) -> None:
            found[0] = found[0] or any(item.name.value == var for item in n.names)

    walk(fn_node.body, _Scan())
    return found[0]


def _piped(call: cst.Call) -> Optional[str]:
    """A ``stdin``/``stdout``/``stderr`` pipe to this process (``subprocess.PIPE``,
    ``asyncio.subprocess.PIPE``): the child is tied to the parent, not launched to live on."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value in ("stdin", "stdout", "stderr") and \
                _code(a.value).rsplit(".", 1)[-1] == "PIPE":
            return a.keyword.value
    return None


def _is_wait(site: cst.CSTNode) -> bool:
    """A stop that only waits (``wait``, ``communicate``, ``join``, a ``poll`` loop)."""
    return isinstance(site, cst.Call) and isinstance(site.func, cst.Attribute) and \
        site.func.attr.value in ("wait", "communicate", "join", "poll")


def _daemon_kw(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "daemon" and not (
        isinstance(a.value, cst.Name) and a.value.value in ("False", "None")) for a in call.args)


def _timed(call: cst.CSTNode) -> bool:
    """``p.wait(5)`` / ``p.communicate(timeout=5)``: may raise with the child running."""
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return False
    if call.func.attr.value not in _WAIT_METHODS:
        return False
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "timeout":
            return not (isinstance(a.value, cst.Name) and a.value.value == "None")
        if a.keyword is None and call.func.attr.value == "wait":
            return True
    return False


def _is_wait_statement(stmt: cst.BaseStatement, var: str) -> bool:
    """``p.wait(...)``, ``rc = p.wait()``, ``out, err = p.communicate(...)`` as a whole statement."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        return False
    small = stmt.body[0]
    value = small.value if isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)) else None
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in _WAIT_METHODS and isinstance(value.func.value, cst.Name)
            and value.func.value.value == var)


def _has(stmts, types) -> bool:
    found = [False]

    class _Scan(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            if isinstance(node, types):
                found[0] = True
            return not found[0]

    for s in stmts:
        walk(s, _Scan())
    return found[0]


def _leaves_early(stmts) -> bool:
    """A ``return``, ``yield`` or ``await``-free exit of the region: ``return``, ``yield``, or a
    ``break``/``continue`` that is not inside a loop of the region (nested defs skipped)."""
    found = [False]

    class _Scan(cst.CSTVisitor):
        def __init__(self) -> None:
            self.loops = 0

        def visit_FunctionDef(self, n) -> bool:
            return False

        def visit_Lambda(self, n) -> bool:
            return False

        def visit_ClassDef(self, n) -> bool:
            return False

        def visit_For(self, n) -> None:
            self.loops += 1

        def leave_For(self, n) -> None:
            self.loops -= 1

        def visit_While(self, n) -> None:
            self.loops += 1

        def leave_While(self, n) -> None:
            self.loops -= 1

        def visit_Return(self, n) -> None:
            found[0] = True

        def visit_Yield(self, n) -> None:
            found[0] = True

        def visit_Break(self, n) -> None:
            found[0] = found[0] or self.loops == 0

        def visit_Continue(self, n) -> None:
            found[0] = found[0] or self.loops == 0

    for s in stmts:
        walk(s, _Scan())
    return found[0]


# ------------------------------------------------------------------ candidate tier 2 (ast)
def _may_start_child(tree) -> bool:
    """True unless no call the rule can report exists. ``_check`` reports only a factory call
    (``may_call_any`` over ``FACTORIES``, through aliases; or any ``<x>.Process(...)``: a
    ``multiprocessing`` context's factory, the receiver typed by ``get_context`` or by an annotation) that is

    - the whole value of an expression statement, not an ``asyncio`` factory left unawaited
      (``expr is call``: whoever awaits it gets the child), with a ``stdin``/``stdout``/``stderr``
      keyword spelled ``PIPE`` or ``<x>.PIPE`` (``_piped``);
    - the whole value of a one-target assignment to ``self.<attr>`` (``_check_attr``, the same
      ``asyncio`` exception): reported only for a child that is not ``multiprocessing``'s and not
      in its own session (the project index can only release it, never add a finding);
    - the whole value of a one-target assignment to a plain name ``p`` (same ``asyncio``
      exception). Every report there needs a use of ``p`` that ``_classify`` calls a stop
      (``p.<_STOP_METHODS>()``, ``p.poll()``, ``p``/``p.pid`` in the arguments of a callee whose
      words say stop) or ``self.<attr> = p`` (``_STORED``: then as above), except "never waited
      for", which needs a non-``multiprocessing`` child with a pipe and no session of its own.
      The stop's Name is in this file: ``_classify`` makes a use in another function a hand-over.
      A ``multiprocessing`` child also needs ``p.start()`` and no ``daemon=`` keyword; any other
      is not reported when the next statement only waits for it (``_tree_waited_next``), nor when
      ``_tree_handed_after`` finds what ends ``_check`` before any report (a hand-over after the
      start, a stop in a cleanup block, the first stop after harmless code only)."""
    aliased = tree.may_alias(_FACTORY_WORDS)

    def kinds(value) -> set:
        """The kinds the call may start (``_KIND``; ``mp`` for a context's ``Process``)."""
        process = type(value.func) is ast.Attribute and value.func.attr == "Process"
        if not process and not _may_be_factory(tree, value, aliased):
            return set()
        out = {k for k, names in _KIND_NAMES if tree.may_call_any(value, names)}
        if process:
            # any receiver: besides ``get_context``'s value, the typing fact types one by an
            # annotation (``ctx: multiprocessing``, a parameter's, a variable's, or a function's
            # return annotation, in this module or another one), which this tree cannot rule out
            out.add("mp")
        return out

    stopped: Optional[set] = None
    started: set = set()
    for target, value, fn in tree.assigns:
        awaited = type(value) is ast.Await
        if awaited:
            value = value.value
        if type(value) is not ast.Call:
            continue
        if type(target) is ast.Name:
            attr = None
        elif type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
            attr = target.attr
        else:
            continue
        if not aliased:  # ``kinds`` without a call: a name or attribute not spelled as a factory is none
            func = value.func
            tf = type(func)
            if (tf is ast.Attribute and func.attr not in _FACTORY_WORDS) or (tf is ast.Name and func.id not in _FACTORY_WORDS):
                continue
        ks = kinds(value)
        if not awaited:
            ks.discard("asyncio")
        if not ks:
            continue
        detached = ks == {"mp"} or _tree_session(value)  # no ``_check_attr`` report
        if attr is not None:
            if not detached and not _tree_attr_stopped_in_class(tree, fn, attr):
                return True
            continue
        if "mp" not in ks and _tree_waited_next(tree, value, target.id):
            continue  # waited for right after the start
        if _tree_handed_after(tree, fn, target, value, ks):
            continue  # handed on, stopped in a cleanup block, or waited for after harmless code
        if ks != {"mp"} and not _tree_session(value) and _tree_piped(value):
            return True  # may be "never waited for"
        if stopped is None:
            stopped, started = _tree_stopped_names(tree)
        if ks == {"mp"} and (target.id not in started or _tree_daemon(value)):
            continue  # ``_check``'s ``mp`` reports need ``p.start()`` and no ``daemon=`` keyword
        if target.id in stopped:
            return True
        if not detached and any(type(t) is ast.Attribute and type(t.value) is ast.Name and t.value.id == "self"
                                and type(v) is ast.Name and v.id == target.id for t, v, _ in tree.assigns):
            return True  # ``self.proc = p``
    statements = None
    if not tree.mentions(_PIPE):
        return False  # no call is ``_tree_piped``: its keyword's value spells ``PIPE``
    for c in tree.all_calls():
        if not c.keywords or not _tree_piped(c) or not _may_be_factory(tree, c, aliased):
            continue
        if statements is None:
            statements = _expression_statements(tree)
        awaited = statements.get(id(c))
        if awaited is None:
            continue
        if awaited or tree.may_call_any(c, POPEN_FACTORIES):
            return True  # not an asyncio factory left unawaited; never ``mp`` (``kind != "mp"``)
    return False


#: the factories' last words
_FACTORY_WORDS = frozenset(name.rsplit(".", 1)[-1] for name in FACTORIES)


_PIPE = ("PIPE",)


def _may_be_factory(tree, call: ast.Call, aliased: bool = True) -> bool:
    """``tree.may_call_any(call, FACTORIES)``, its callee's last word checked first (``may_call``
    needs ``<r>.<last>`` or an alias of ``<x>.<attr>`` / a name with a factory's last word:
    ``may_call_word``; ``aliased``: some alias may hold a factory's last word, ``may_alias``)."""
    return tree.may_call_word(call, _FACTORY_WORDS, aliased) and tree.may_call_any(call, FACTORIES)


_KIND_NAMES = (("popen", POPEN_FACTORIES), ("asyncio", ASYNC_FACTORIES), ("mp", MP_FACTORIES))


def _tree_piped(call: ast.Call) -> bool:
    """``_piped`` on the ``ast`` (``PIPE`` or ``<x>.PIPE``: ``_code(...)``'s last word)."""
    return any(k.arg in ("stdin", "stdout", "stderr") and (
        (type(k.value) is ast.Name and k.value.id == "PIPE")
        or (type(k.value) is ast.Attribute and k.value.attr == "PIPE")) for k in call.keywords)


def _tree_session(call: ast.Call) -> bool:
    """Only where ``_new_session`` surely says so (``start_new_session=True``, a literal); any
    other spelling counts as no session (a superset of the rule's reports)."""
    return any(k.arg == "start_new_session" and type(k.value) is ast.Constant and k.value.value is True
               for k in call.keywords)


def _tree_daemon(call: ast.Call) -> bool:
    """``_daemon_kw``: a ``daemon=`` keyword not spelled ``False`` or ``None``."""
    return any(k.arg == "daemon" and not (type(k.value) is ast.Constant and (k.value.value is False or k.value.value
                                                                            is None)) for k in call.keywords)


def _tree_stopped_names(tree) -> tuple[set, set]:
    """(names ``p`` with a use ``_classify`` may call a stop: ``p.<stop or poll>(...)`` and every
    identifier in the arguments of a call whose callee's words say stop (``os.kill(p.pid)``,
    ``reap([p])``), a superset; names with a ``p.start()`` call)."""
    out: set = set()
    started: set = set()
    methods = _STOP_METHODS | {"poll"}
    for call in tree.all_calls():
        func = call.func
        word = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
        if type(func) is ast.Attribute and type(func.value) is ast.Name:
            if word in methods:
                out.add(func.value.id)
            elif word == "start":
                started.add(func.value.id)
        if word and (call.args or call.keywords) and not _STOP_WORDS.isdisjoint(identifier_words(word)):
            for a in [*call.args, *(k.value for k in call.keywords)]:
                for n in ast_walk(a):
                    if type(n) is ast.Name:
                        out.add(n.id)
    return out, started


_SESSION_KEYWORDS = frozenset({"start_new_session", "process_group", "preexec_fn"})


def _tree_waited_next(tree, call: ast.Call, var: str) -> bool:
    """``p = <factory>(...)`` is a statement whose next statement in its block only waits for
    ``p``: the child has no session keyword (``_new_session`` reads only those), ``p`` is
    not named in the start's value, and the next statement is a simple one alone on its
    line(s) in which ``p`` is named exactly once, as ``p.<_STOP_METHODS>(...)``, not timed
    (``_timed``) and not in a lambda. Then ``_check`` does not report it: that stop is
    ``_classify``'s first use after the start and a ``_STOP``; if its ``_protection`` is
    ``full`` or ``errors`` (no session) ``_check`` returns, else it is ``normal[0]``, which
    ``_heads`` its statement right after the start (``_code_between`` is False), no session,
    not ``_timed``."""
    if any(k.arg in _SESSION_KEYWORDS for k in call.keywords):
        return False
    where = _assignments(tree).get(id(call))
    if where is None:
        return False
    stmt, owner, block, i = where
    if i + 1 < len(block):
        after = block[i + 1:]
    elif type(owner) is ast.Try and block is owner.body and owner.orelse and not any(
            type(n) is ast.Name and n.id == var for h in owner.handlers for n in ast_walk(h)) and \
            owner.orelse[0].col_offset < owner.col_offset + len("else:"):
        # ``try: p = <factory>(...)`` / ``except OSError: ...`` / ``else: p.communicate()``: the
        # window goes on in the ``else`` (``_code_between``); no use of ``p`` in a handler,
        # which would come first in source order (``_code_between`` goes on in the ``else`` of a
        # ``cst.Try`` only: not of an ``except*`` one), and an indented ``else`` block:
        # ``_code_between`` reads no block on the ``else:`` line (libcst's
        # ``SimpleStatementSuite``), whose first statement starts at least ``len("else:")``
        # bytes right of the ``try`` (the ``else`` is in the ``try``'s column); an indented
        # block that deep is left to the rule too
        after = owner.orelse
    else:
        return False
    nxt = after[0]
    if type(nxt) not in (ast.Expr, ast.Assign, ast.AnnAssign, ast.Return, ast.AugAssign):
        return False
    if nxt.lineno <= stmt.end_lineno or (len(after) > 1 and after[1].lineno <= nxt.end_lineno):
        return False  # ``;``: libcst's line holds more than the stop
    if any(type(n) is ast.Name and n.id == var for n in ast_walk(call)):
        return False
    uses = [n for n in ast_walk(nxt) if type(n) is ast.Name and n.id == var]
    if len(uses) != 1 or any(type(n) is ast.Lambda for n in ast_walk(nxt)):
        return False
    parents = {id(child): node for node in ast_walk(nxt) for child in ast_children(node)}
    attr = parents.get(id(uses[0]))
    if type(attr) is ast.keyword:
        attr = parents.get(id(attr))
    elif not (type(attr) is ast.Call and any(a is uses[0] for a in attr.args)):
        attr = None
    if attr is not None:
        # ``wait_for_process(p, timeout=t)``: ``_handed`` makes it a ``_STOP`` (a stop word in the
        # callee) or a hand-over (no report), never a look unless the callee is an observer; a
        # ``<x>.wait(p)``/``<x>.communicate(p)`` may be ``_timed``
        func = attr.func
        word = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
        return word not in _OBSERVERS and not (type(func) is ast.Attribute and word in _WAIT_METHODS)
    attr = parents.get(id(uses[0]))
    up = parents.get(id(attr)) if type(attr) is ast.Attribute else None
    if type(up) is not ast.Call or up.func is not attr or attr.attr not in _STOP_METHODS:
        return False
    if attr.attr in _WAIT_METHODS:
        for k in up.keywords:
            if k.arg == "timeout" and not (type(k.value) is ast.Constant and k.value.value is None):
                return False
        if attr.attr == "wait" and up.args:
            return False
    return True


_ASSIGNMENTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _assignments(tree) -> dict:
    """``id(call)`` -> (statement, owner, block, index) for every ``x = <call>`` /
    ``x = await <call>`` / ``x: T = <call>`` statement in a body, ``else`` or ``finally``
    block (a handler's or a ``case``'s body: owner None), built once per tree from the
    statements alone (no expression is walked)."""
    return _statements(tree)[0]


def _expression_statements(tree) -> dict:
    """``id(call)`` -> awaited, for every expression statement ``<call>`` / ``await <call>``."""
    return _statements(tree)[1]


def _statements(tree) -> tuple[dict, dict]:
    got = _ASSIGNMENTS.get(tree)
    if got is None:
        found: dict = {}
        exprs: dict = {}
        got = _ASSIGNMENTS[tree] = (found, exprs)
        todo: list = [tree.module]
        shapes = _OWNER_BLOCKS
        while todo:
            owner = todo.pop()
            t = type(owner)
            shape = shapes.get(t)
            if shape is None:
                shape = shapes[t] = (tuple(f for f in ("body", "orelse", "finalbody") if f in t._fields),
                                     "handlers" in t._fields, "cases" in t._fields)
            fields, handlers, cases = shape
            blocks = [(owner, getattr(owner, f, None)) for f in fields]
            if handlers:
                blocks += [(None, h.body) for h in owner.handlers]
            if cases:
                blocks += [(None, c.body) for c in owner.cases]
            for holder, block in blocks:
                if type(block) is not list:
                    continue
                for i, st in enumerate(block):
                    t = type(st)
                    if t is ast.Assign or t is ast.AnnAssign:
                        value = st.value
                        if type(value) is ast.Await:
                            value = value.value
                        if type(value) is ast.Call:
                            found[id(value)] = (st, holder, block, i)
                    elif t is ast.Expr:
                        value = st.value
                        awaited = type(value) is ast.Await
                        if awaited:
                            value = value.value
                        if type(value) is ast.Call:
                            exprs[id(value)] = awaited
                    elif isinstance(st, _COMPOUND):
                        todo.append(st)
    return got


#: statement type -> (its fields of ``body``/``orelse``/``finalbody``, has ``handlers``, has ``cases``)
_OWNER_BLOCKS: dict = {}
_COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
             ast.With, ast.AsyncWith, *TRYS, getattr(ast, "Match", ast.If))


def _tree_handed_after(tree, fn, target: ast.Name, call: ast.Call, ks: set) -> bool:
    """``p = <child>`` (``target`` is ``p``, ``call`` the start) where ``_check`` surely reports
    nothing. Its range is the uses of ``p`` after ``target`` up to the next assignment that binds
    ``p`` to a call (``_starts_another`` may end it there; by source position). It returns before
    any report when one of them is

    - one that ``_classify`` calls ``_HANDOFF``, ``_WITH`` or ``_REGISTER`` (``_surely_handed``;
      any ``p`` in a nested ``def``/``lambda``);
    - with no session keyword (``_new_session`` is None), a stop ``p.<_STOP_METHODS>(...)`` in an
      ``except`` handler's body or a ``finally`` (``_protection``: ``full`` or ``errors``; either
      ends ``_check`` when the child has no session of its own);

    or when, with no session keyword, the first stop after the start is not timed and only harmless
    code runs before it (``_tree_only_harmless_before_stop``); a ``multiprocessing`` child only when
    ``p.start()`` is the next statement (``_started_next``: ``_check`` measures from there).
    Names in f-strings are not looked at here (their positions are not the source's on every
    Python)."""
    var = target.id
    region = fn.node if fn is not None else tree.module
    start = (target.lineno, target.col_offset)
    end = None
    uses = []
    parents: dict = {}
    todo: list = [(region, False)]
    while todo:
        node, nested = todo.pop()
        t = type(node)
        if t is ast.Name:
            if node.id == var and node is not target:
                uses.append((node, nested))
            continue
        if t is ast.JoinedStr:
            continue
        if t is ast.Assign:
            value = node.value.value if type(node.value) is ast.Await else node.value
            if type(value) is ast.Call:
                for tg in node.targets:
                    if type(tg) is ast.Name and tg.id == var and tg is not target:
                        pos = (tg.lineno, tg.col_offset)
                        if pos > start and (end is None or pos < end):
                            end = pos
        inner = nested or (node is not region and t in _SCOPES)
        for child in ast_children(node):
            parents[id(child)] = node
            todo.append((child, inner))
    session = any(k.arg in _SESSION_KEYWORDS for k in call.keywords)
    for n, nested in uses:
        pos = (n.lineno, n.col_offset)
        if not (pos > start and (end is None or pos < end)):
            continue
        if nested or _surely_handed(n, parents):
            return True
        if not session and _stop_call(n, parents) is not None and _in_cleanup(n, parents, region):
            return True
    if session:
        return False
    first = None
    if "mp" in ks:
        first = _start_statement(tree, call, var) if ks == {"mp"} else None
        if first is None:
            return False
    return _tree_only_harmless_before_stop(tree, call, var, end, first)


def _start_statement(tree, call: ast.Call, var: str) -> Optional[int]:
    """``p = <mp>.Process(...)``: the index in its block of the first later statement naming
    ``p`` when that statement is ``p.start()``, else None (the scan from it refuses one joined to
    another by ``;``). That use is the first after the assignment, a ``_START``: ``_check``'s
    ``starts[0]``, from whose statement ``_code_between`` looks to the first stop."""
    where = _assignments(tree).get(id(call))
    if where is None:
        return None
    stmt, _, block, i = where
    for k in range(i + 1, len(block)):
        st = block[k]
        if not any(type(n) is ast.Name and n.id == var for n in ast_walk(st)):
            continue
        c = st.value if type(st) is ast.Expr else None
        if (type(c) is ast.Call and not c.args and not c.keywords and type(c.func) is ast.Attribute
                and c.func.attr == "start" and type(c.func.value) is ast.Name and c.func.value.id == var):
            return k
        return None
    return None


def _stop_call(n: ast.Name, parents: dict) -> Optional[ast.Call]:
    """The call ``n.<_STOP_METHODS>(...)`` (``_classify``'s ``_STOP``), or None."""
    attr = parents.get(id(n))
    if type(attr) is not ast.Attribute or attr.value is not n or attr.attr not in _STOP_METHODS:
        return None
    up = parents.get(id(attr))
    return up if type(up) is ast.Call and up.func is attr else None


def _in_cleanup(node: ast.AST, parents: dict, region: ast.AST) -> bool:
    """``node`` is in an ``except`` handler's body or a ``finally`` block of ``region``'s code
    (``_protection`` meets that block before ``region`` or a nested def: the site is a call of
    ``region`` itself)."""
    child, parent = node, parents.get(id(node))
    while parent is not None and child is not region:
        t = type(parent)
        if t is ast.ExceptHandler and any(st is child for st in parent.body):
            return True
        if t in TRYS and any(st is child for st in parent.finalbody):
            return True
        child, parent = parent, parents.get(id(parent))
    return False


def _tree_only_harmless_before_stop(tree, call: ast.Call, var: str, end, first: Optional[int] = None) -> bool:
    """``p = <child>(...)`` is a statement alone on its line(s) in a block; a later statement of
    that block holds ``p``'s first possible stop ``X`` (a call ``p.<_STOP_METHODS>(...)``, not
    timed, not in an f-string, before ``end``); every other ``p`` in the statements up to that one
    is surely no stop (``_not_a_stop``); none of those statements is joined to another by ``;``;
    and they hold no ``raise``, no ``yield`` and only calls ``_harmless`` lets pass (outside nested
    defs, classes and lambdas, as ``_work`` walks). Then ``X`` is ``_check``'s first stop (a
    ``normal`` one: ``_code_between`` finds no work, even counting the stop's whole statement; or
    an ``errors``/``full`` one: ``_check`` returns), and a child with no session keyword is not
    reported. ``first``: the scan starts at that statement of the block (a ``multiprocessing``
    child's ``p.start()``, ``_start_statement``: no statement before it names ``p``)."""
    where = _assignments(tree).get(id(call))
    if where is None:
        return False
    stmt, _, block, i = where
    if any(type(n) is ast.Name and n.id == var for n in ast_walk(stmt.value)):
        return False
    if i > 0 and block[i - 1].end_lineno >= stmt.lineno:
        return False
    for j in range(i + 1 if first is None else first, len(block)):
        st = block[j]
        if st.lineno <= block[j - 1].end_lineno:
            return False  # ``;``
        parents: dict = {}
        stops = []
        work = False
        todo: list = [(st, False, False)]
        while todo:
            node, skipped, fstring = todo.pop()
            t = type(node)
            if t is ast.Name and node.id == var:
                site = _stop_call(node, parents)
                if site is not None and not skipped and not fstring:
                    stops.append(site)
                elif skipped or not _not_a_stop(node, parents):
                    return False
                continue
            if not skipped:
                if t is ast.Raise or t is ast.Yield or t is ast.YieldFrom:
                    return False
                if t is ast.Call and not _tree_harmless(node, var):
                    work = True
            inner = skipped or (t in _SCOPES or t is ast.ClassDef) and node is not st
            for child in ast_children(node):
                parents[id(child)] = node
                todo.append((child, inner, fstring or t is ast.JoinedStr))
        if work:
            return False
        if stops:
            if j + 1 < len(block) and block[j + 1].lineno <= st.end_lineno:
                return False
            first = min(stops, key=lambda c: (c.lineno, c.col_offset))
            if end is not None and (first.lineno, first.col_offset) > end:
                return False
            return not _tree_timed(first)
    return False


def _not_a_stop(n: ast.Name, parents: dict) -> bool:
    """``_classify`` surely gives ``n`` no ``_STOP``/``_POLL``: a target (``p = ...``, ``del p``),
    or ``p.<attr>`` with an attribute that is no stop method, not ``poll`` in a ``while`` test
    and not ``pid``/``sentinel`` (``_handed`` may find those in a stop's arguments)."""
    if type(n.ctx) is not ast.Load:
        return True
    attr = parents.get(id(n))
    if type(attr) is not ast.Attribute or attr.value is not n:
        return False
    if attr.attr in _STOP_METHODS or attr.attr in _IDENTITY_ATTRS:
        return False
    if attr.attr == "poll":
        child, up = attr, parents.get(id(attr))
        while up is not None:
            if type(up) is ast.While and up.test is child:
                return False
            child, up = up, parents.get(id(up))
    return True


def _tree_harmless(call: ast.Call, var: str) -> bool:
    """``_harmless`` on the ``ast``."""
    func = call.func
    word = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
    if word in _HARMLESS or {"log", "logs", "logger", "logging", "print"} & set(identifier_words(word)):
        return True
    cur = func
    while type(cur) in (ast.Attribute, ast.Call, ast.Subscript):
        if type(cur) is ast.Attribute and cur.attr in _PIPES:
            return True
        cur = cur.func if type(cur) is ast.Call else cur.value
    return type(cur) is ast.Name and cur.id == var and cur is not func


def _tree_timed(call: ast.Call) -> bool:
    """``_timed`` (or more: any ``timeout=`` not spelled ``None``, any positional ``wait`` argument)."""
    if call.func.attr not in _WAIT_METHODS:
        return False
    if call.func.attr == "wait" and call.args:
        return True
    return any(k.arg == "timeout" and not (type(k.value) is ast.Constant and k.value.value is None)
               or k.arg is None for k in call.keywords)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred)


def _surely_handed(n: ast.AST, parents: dict) -> bool:
    """``n`` (the child's name, or ``<x>.<attr>`` holding it), not in a nested function, is
    where ``_classify``/``_attr_use`` surely see a hand-over (``_HANDOFF``, ``_WITH``,
    ``_REGISTER``): ``with n``, ``return n``, ``yield n``, ``await n``; the whole value of an
    assignment other than ``self.<x> = n`` (``_STORED``; through a container, any assignment), of
    ``+=`` or ``:=``; an element of a list, tuple, set or dict (climbed, as ``_handed`` does)
    that is such a value; ``n`` (or such a container) as an argument of a call whose callee's
    words name no stop and that is not an observer (``_handed``: a stop word makes it a
    ``_STOP``); ``n.<_STOP_METHODS>`` as any call's argument (``atexit.register(p.kill)``)."""
    parent = parents.get(id(n))
    t = type(parent)
    if t is ast.Attribute and parent.value is n:
        up = parents.get(id(parent))
        return parent.attr in _STOP_METHODS and _argument_of(parent, up, parents) is not None
    if t is ast.withitem:
        return parent.context_expr is n
    if t is ast.Starred:
        return False  # ``f(*p)``: the tree's shape differs from libcst's
    cur = n
    while type(parent) in _CONTAINERS and type(parent) is not ast.Starred:
        if type(parent) is ast.Dict and not any(v is cur for v in (*parent.keys, *parent.values)):
            return False
        cur, parent = parent, parents.get(id(parent))
    t = type(parent)
    if t in (ast.Return, ast.Yield, ast.Await, ast.AugAssign, ast.NamedExpr):
        return parent.value is cur
    if t is ast.Assign or t is ast.AnnAssign:
        if parent.value is not cur:
            return False
        if cur is not n:
            return True
        targets = parent.targets if t is ast.Assign else [parent.target]
        first = targets[0]
        return not (len(targets) == 1 and type(first) is ast.Attribute and type(first.value) is ast.Name
                    and first.value.id == "self")
    call = _argument_of(cur, parent, parents)
    if call is None:
        return False
    func = call.func
    word = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
    words = set(identifier_words(word))
    return not (words & _STOP_WORDS) and not (words and word in _OBSERVERS)


def _argument_of(node: ast.AST, parent, parents: dict) -> Optional[ast.Call]:
    """The call whose argument ``node`` is (a positional one, not ``*x``; a keyword's value, or
    ``**x``): libcst's ``Arg`` is then ``node``'s parent."""
    if type(parent) is ast.keyword:
        parent = parents.get(id(parent))
        return parent if type(parent) is ast.Call else None
    if type(parent) is ast.Call and any(a is node for a in parent.args):
        return parent
    return None


def _tree_attr_stopped_in_class(tree, fn, attr: str) -> bool:
    """``self.<attr> = <child>`` where ``_check_attr`` cannot report: the assignment is not
    directly in a method (the facts' ``fn.cls`` is None), or a method of the same class calls
    ``self.<attr>.<_STOP_METHODS>(...)`` with that class as its innermost enclosing class
    (``_attr_released`` finds that ``_STOP`` and returns True)."""
    if fn is None or not fn.in_class:
        return True
    cls = fn.cls
    if _tree_attr_handed_in_class(tree, cls, attr):
        return True
    parents = None
    for m in tree.methods.get(id(cls), ()):
        nested = any(type(st) is ast.ClassDef for st in nested_statements(m.node.body))
        for call, _, _ in m.calls:
            func = call.func
            if type(func) is ast.Attribute and func.attr in _STOP_METHODS and type(func.value) is ast.Attribute \
                    and func.value.attr == attr and type(func.value.value) is ast.Name \
                    and func.value.value.id in ("self", "cls"):
                if not nested:
                    return True  # no class in the method: ``cls`` is the call's innermost one
                if parents is None:
                    parents = tree.parents(tree.module)
                up = parents.get(id(call))
                while up is not None and type(up) is not ast.ClassDef:
                    up = parents.get(id(up))
                if up is cls:
                    return True
    return False


def _tree_attr_handed_in_class(tree, cls, attr: str) -> bool:
    """A method of ``cls`` (outside any class nested in it: ``enclosing_class`` is then ``cls``)
    holds a ``self.<attr>``/``cls.<attr>`` that ``_attr_use`` surely calls a release (``_STOP``,
    ``_HANDOFF``, ``_WITH``, ``_REGISTER``): ``_surely_handed``'s shapes, ``x = self.<attr>``
    (``_STORED`` counts as a hand-over there), and an argument of a call that is not an
    observer (a stop word makes it a ``_STOP``, also a release). ``_attr_released`` then
    returns True, and ``_check_attr`` reports nothing."""
    for m in tree.methods.get(id(cls), ()):
        parents: dict = {}
        todo: list = [m.node]
        while todo:
            node = todo.pop()
            for child in ast_children(node):
                if type(child) is ast.ClassDef or type(child) is ast.JoinedStr:
                    continue
                parents[id(child)] = node
                todo.append(child)
                if type(child) is ast.Attribute and child.attr == attr and type(child.value) is ast.Name \
                        and child.value.id in ("self", "cls") and _attr_surely_released(child, node, parents):
                    return True
    return False


def _attr_surely_released(ref: ast.Attribute, parent, parents: dict) -> bool:
    if (type(parent) is ast.Assign or type(parent) is ast.AnnAssign) and parent.value is ref:
        return True
    call = _argument_of(ref, parent, parents)
    if call is not None:
        func = call.func
        word = func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""
        words = set(identifier_words(word))
        return bool(words & _STOP_WORDS) or not (words and word in _OBSERVERS)
    return _surely_handed(ref, parents)


# ------------------------------------------------------------------ the rule on Python's ast
_AST_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_AST_LOOPS = (ast.For, ast.AsyncFor, ast.While)
_AST_COMPOUND = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor,
                           ast.While, ast.With, ast.AsyncWith, *TRYS, getattr(ast, "Match", ast.If)})
_AST_CONTAINERS = (ast.List, ast.Tuple, ast.Set, ast.Dict)
_AST_HANDED = (ast.AugAssign, ast.Return, ast.Yield, ast.NamedExpr, ast.Await)


class _Mark:
    """A libcst ``Name`` that is no ``ast.Name``: a keyword argument's name (``kind``
    ``keyword``, ``node`` the ``ast.keyword``), a parameter (``param``, the ``ast.arg``), a
    ``def``'s or a class's name (``def``/``class``, the statement), a ``global``/``nonlocal``
    name (``shared``), an import's, an ``except ... as``'s or a match pattern's name
    (``plain``; ``node`` the statement, handler or pattern)."""

    __slots__ = ("node", "kind")

    def __init__(self, node: ast.AST, kind: str) -> None:
        self.node = node
        self.kind = kind


def _ast_word(call: ast.Call) -> str:
    """``_callee_word`` on ``ast``."""
    func = call.func
    return func.attr if type(func) is ast.Attribute else func.id if type(func) is ast.Name else ""


def _false_or_none(value: ast.AST) -> bool:
    """libcst's ``Name`` ``False`` or ``None``."""
    return type(value) is ast.Constant and (value.value is False or value.value is None)


class _Ast(_Decide, AstCheck):
    """SHD602 on Python's ``ast`` (``ast_engine``): ``_Decide``'s decisions on the tree's reads,
    each answering as libcst's: libcst's ``Name`` nodes are also keyword arguments', parameters',
    definitions', imports' and patterns' names (``_Mark``); a statement line (``a; b``) is one
    libcst statement (``_lines``); a ``Finally`` is a ``Try``'s ``finalbody``; an ``Arg`` is a
    call's argument (``*a``, ``**k`` and keywords included) or a class's base; a ``try*`` is no
    ``cst.Try`` (``_code_between``, ``_heads``); ``_code`` is libcst's code of the node, cut at
    50 characters."""

    # ------------------------------------------------------------------ reads of the start
    def _kind(self, call: ast.Call) -> Optional[str]:
        kind = _KIND.get(self.facts.call_name(call) or "")
        func = call.func
        if kind is None and type(func) is ast.Attribute and func.attr == "Process" and \
                self._type_of(func.value, call) in CONTEXT_TYPES:
            return "mp"
        return kind

    def _placement(self, call: ast.Call) -> tuple[bool, object]:
        f = self.facts
        expr: ast.AST = call
        holder = f.parent(call)
        if type(holder) is ast.Await:
            expr, holder = holder, f.parent(holder)
        awaited = expr is not call
        t = type(holder)
        if t is ast.Expr:
            return awaited, "expr"
        if t is ast.Assign and len(holder.targets) == 1 and holder.value is expr:
            return awaited, holder.targets[0]
        if t is ast.AnnAssign and holder.value is expr:
            return awaited, holder.target
        return awaited, None

    @staticmethod
    def _name_of(target: ast.AST) -> Optional[str]:
        return target.id if type(target) is ast.Name else None

    @staticmethod
    def _self_attr(target: ast.AST) -> Optional[str]:
        if type(target) is ast.Attribute and type(target.value) is ast.Name and target.value.id == "self":
            return target.attr
        return None

    def _code(self, node: ast.AST) -> str:
        text = self.facts.code_without_module(node)
        return text if len(text) <= 50 else text[:47] + "..."

    def _new_session(self, call: ast.Call) -> Optional[str]:
        for k in call.keywords:
            key, value = k.arg, k.value
            if key == "start_new_session" and not _false_or_none(value):
                return "start_new_session=True"
            if key == "process_group" and not (type(value) is ast.Constant and value.value is None):
                return "process_group=" + self._code(value)
            if key == "preexec_fn" and type(value) in (ast.Attribute, ast.Name) and \
                    self._code(value).rsplit(".", 1)[-1] in ("setsid", "setpgrp"):
                return "preexec_fn=" + self._code(value)
        return None

    def _piped(self, call: ast.Call) -> Optional[str]:
        for k in call.keywords:
            if k.arg in ("stdin", "stdout", "stderr") and self._code(k.value).rsplit(".", 1)[-1] == "PIPE":
                return k.arg
        return None

    @staticmethod
    def _daemon_kw(call: ast.Call) -> bool:
        return any(k.arg == "daemon" and not _false_or_none(k.value) for k in call.keywords)

    @staticmethod
    def _is_wait(site: ast.AST) -> bool:
        return type(site) is ast.Call and type(site.func) is ast.Attribute and \
            site.func.attr in ("wait", "communicate", "join", "poll")

    @staticmethod
    def _timed(call: ast.AST) -> bool:
        if type(call) is not ast.Call or type(call.func) is not ast.Attribute:
            return False
        method = call.func.attr
        if method not in _WAIT_METHODS:
            return False
        for a in arguments(call):
            if a.keyword == "timeout":
                return not (type(a.value) is ast.Constant and a.value.value is None)
            if a.keyword is None and method == "wait":
                return True
        return False

    @staticmethod
    def _declared_shared(fn_node: ast.AST, var: str) -> bool:
        return any(type(n) in (ast.Global, ast.Nonlocal) and var in n.names
                   for st in fn_node.body for n in ast.walk(st))

    def _type_of(self, expr: ast.AST, at: ast.AST) -> Optional[str]:
        return ast_typer(self.facts).type_of(expr, at)

    # ------------------------------------------------------------------ the child's names
    def _names(self, region: ast.AST, var: str) -> list:
        """libcst's ``name_nodes(region, var)``: the ``ast.Name``s and the ``_Mark``s, in libcst's
        walk order (``walk.children``; a definition's name after its decorators)."""
        out: list = []
        stack: list = [region]
        while stack:
            node = stack.pop()
            t = type(node)
            if t is _Mark:
                out.append(node)
                continue
            if t is ast.Name:
                if node.id == var:
                    out.append(node)
                continue
            kids = children(node)
            if t is ast.keyword or t is ast.arg:
                if node.arg == var:
                    out.append(_Mark(node, "keyword" if t is ast.keyword else "param"))
            elif t in _AST_DEFS or t is ast.ClassDef:
                if node.name == var:
                    k = len(node.decorator_list)
                    kids = [*kids[:k], _Mark(node, "class" if t is ast.ClassDef else "def"), *kids[k:]]
            elif t is ast.Global or t is ast.Nonlocal:
                out += [_Mark(node, "shared") for name in node.names if name == var]
            elif t is ast.Import or t is ast.ImportFrom:
                parts = [node.module] if t is ast.ImportFrom and node.module else []
                for alias in node.names:
                    parts += [alias.name, alias.asname or ""]
                out += [_Mark(node, "plain") for p in parts if p.split(".", 1)[0] == var]
            elif t is ast.ExceptHandler:
                if node.name == var:
                    k = 1 if node.type is not None else 0
                    kids = [*kids[:k], _Mark(node, "plain"), *kids[k:]]
            elif t.__name__ in ("MatchAs", "MatchStar"):
                if node.name == var:
                    kids = [*kids, _Mark(node, "plain")]
            elif t.__name__ == "MatchMapping":
                if node.rest == var:
                    kids = [*kids, _Mark(node, "plain")]
            elif t.__name__ == "MatchClass":
                if var in node.kwd_attrs:
                    kids = [node.cls, *node.patterns]
                    for name, pattern in zip(node.kwd_attrs, node.kwd_patterns):
                        if name == var:
                            kids.append(_Mark(node, "plain"))
                        kids.append(pattern)
            stack.extend(reversed(kids))
        return out

    def _starts_another(self, n) -> bool:
        if type(n) is not ast.Name:
            return False
        assign = self.facts.parent(n)
        if type(assign) is not ast.Assign or not any(t is n for t in assign.targets):
            return False
        value = assign.value.value if type(assign.value) is ast.Await else assign.value
        return type(value) is ast.Call and self._kind(value) is not None

    def _in_loop(self, node: ast.AST, fn) -> bool:
        stop = fn.node if fn is not None else None
        for anc in self.facts.ancestors(node):
            t = type(anc)
            if anc is stop or t in _AST_DEFS or t is ast.ClassDef or t is ast.Lambda:
                return False
            if t in _AST_LOOPS:
                return True
        return False

    def _in_while_test(self, node: ast.AST) -> bool:
        f = self.facts
        return any(type(a) is ast.While and f.is_ancestor(a.test, node) for a in f.ancestors(node))

    def _arg_owner(self, node: ast.AST) -> Optional[ast.AST]:
        """The call (or class) of libcst's ``Arg`` whose value ``node`` is: a positional
        argument, ``*node``, a keyword's or ``**``'s value, a class's base; else None."""
        f = self.facts
        parent = f.parent(node)
        t = type(parent)
        if t is ast.Starred:
            up = f.parent(parent)
            if (type(up) is ast.Call and any(a is parent for a in up.args)) or \
                    (type(up) is ast.ClassDef and any(b is parent for b in up.bases)):
                return up
            return None
        if t is ast.keyword:
            return f.parent(parent)
        if t is ast.Call:
            return parent if any(a is node for a in parent.args) else None
        if t is ast.ClassDef:
            return parent if any(b is node for b in parent.bases) else None
        return None

    def _classify(self, n, fn) -> tuple[str, Optional[ast.AST]]:
        f = self.facts
        if type(n) is _Mark:
            return self._classify_mark(n, fn)
        if f.enclosing_function(n) is not fn or f.in_lambda(n):
            return _HANDOFF, None
        parent = f.parent(n)
        t = type(parent)
        if t is ast.Attribute:
            attr = parent.attr
            up = f.parent(parent)
            if type(up) is ast.Call and up.func is parent:
                if attr in _STOP_METHODS:
                    return _STOP, up
                if attr == "poll":
                    return (_POLL, up) if self._in_while_test(up) else (_PLAIN, None)
                if attr == "start":
                    return _START, up
                return _PLAIN, None
            if attr == "daemon" and type(up) is ast.Assign and any(x is parent for x in up.targets):
                return _DAEMON, None
            if attr in _STOP_METHODS and self._arg_owner(parent) is not None:
                return _REGISTER, None
            if attr in _IDENTITY_ATTRS:
                return self._handed(parent)
            return _PLAIN, None
        if self._assign_target(n, parent):
            return _PLAIN, None
        if t is ast.withitem and parent.context_expr is n:
            return _WITH, None
        return self._handed(n)

    def _classify_mark(self, m: _Mark, fn) -> tuple[str, Optional[ast.AST]]:
        f = self.facts
        if m.kind == "shared":
            return _HANDOFF, None  # libcst's ``NameItem``
        if m.kind == "def":  # the name's enclosing function is the definition itself
            return (_PLAIN if fn is not None and m.node is fn.node else _HANDOFF), None
        if f.enclosing_function(m.node) is not fn or f.in_lambda(m.node):
            return _HANDOFF, None
        if m.kind == "keyword":
            call = f.parent(m.node)
            if type(call) is ast.Call:
                return self._argument_use(call)
            return _HANDOFF, None
        return _PLAIN, None

    @staticmethod
    def _assign_target(node: ast.AST, parent: Optional[ast.AST]) -> bool:
        """libcst's ``AssignTarget``/``Del`` parent, or an ``AnnAssign``'s target."""
        t = type(parent)
        return (t is ast.Assign and any(x is node for x in parent.targets)) or t is ast.Delete or (
            t is ast.AnnAssign and parent.target is node)

    @staticmethod
    def _argument_use(call: ast.Call) -> tuple[str, Optional[ast.AST]]:
        word = _ast_word(call)
        words = set(identifier_words(word))
        if words & _STOP_WORDS:
            return _STOP, call
        if words and word in _OBSERVERS:
            return _PLAIN, None
        return _HANDOFF, None

    def _handed(self, expr: ast.AST) -> tuple[str, Optional[ast.AST]]:
        f = self.facts
        cur = expr
        parent = f.parent(cur)
        while type(parent) in _AST_CONTAINERS or (
                type(parent) is ast.Starred and type(f.parent(parent)) not in (ast.Call, ast.ClassDef)):
            cur, parent = parent, f.parent(parent)
        owner = self._arg_owner(cur)
        if owner is not None:
            return self._argument_use(owner) if type(owner) is ast.Call else (_HANDOFF, None)
        t = type(parent)
        if (t is ast.Assign or t is ast.AnnAssign) and parent.value is cur and cur is expr:
            targets = parent.targets if t is ast.Assign else [parent.target]
            attr = self._self_attr(targets[0]) if len(targets) == 1 else None
            scope = f.enclosing_function(expr)
            if attr is not None and scope is not None and scope.cls is not None:
                return _STORED, attr  # type: ignore[return-value]
        if t is ast.Assign:
            return (_HANDOFF if parent.value is cur else _PLAIN), None
        if t is ast.AnnAssign:
            return (_HANDOFF if parent.value is cur or parent.target is cur else _PLAIN), None
        if t in _AST_HANDED:
            return _HANDOFF, None
        if t is ast.Lambda:
            return (_HANDOFF if parent.body is cur else _PLAIN), None
        return _PLAIN, None

    # ------------------------------------------------------------------ a child held on ``self``
    def _attribute_refs(self, attr: str) -> list:
        return [(n, n.value) for n in source_order([self.facts.module])
                if type(n) is ast.Attribute and n.attr == attr]

    @staticmethod
    def _receiver_is_self(value: ast.AST) -> bool:
        return type(value) is ast.Name and value.id in ("self", "cls")

    def _base_words(self, cls) -> list[str]:
        return [self._code(b.value if type(b) is ast.Starred else b).rsplit(".", 1)[-1] for b in cls.node.bases]

    def _attr_use(self, ref: ast.Attribute) -> str:
        f = self.facts
        parent = f.parent(ref)
        if type(parent) is ast.Attribute and parent.value is ref:
            name = parent.attr
            up = f.parent(parent)
            if type(up) is ast.Call and up.func is parent:
                if name in _STOP_METHODS:
                    return _STOP
                if name == "poll" and self._in_while_test(up):
                    return _STOP
                return _PLAIN
            if name in _STOP_METHODS and self._arg_owner(parent) is not None:
                return _REGISTER
            if name in _IDENTITY_ATTRS:
                return self._handed(parent)[0]
            return _PLAIN
        if self._assign_target(ref, parent):
            return _PLAIN
        if type(parent) is ast.withitem and parent.context_expr is ref:
            return _WITH
        kind = self._handed(ref)[0]
        return _HANDOFF if kind == _STORED else kind

    # ------------------------------------------------------------------ paths
    def _block(self, stmt: ast.stmt) -> tuple[Optional[ast.AST], Optional[list]]:
        """(owner, the body list holding ``stmt``): a statement's, a handler's, a case's, the module's."""
        owner = self.facts.parent(stmt)
        for name in ("body", "orelse", "finalbody"):
            body = getattr(owner, name, None)
            if type(body) is list and any(s is stmt for s in body):
                return owner, body
        return owner, None

    def _lines(self, body: list) -> list[list]:
        """``body`` as libcst's statements: a compound statement alone, simple ones joined by ``;``."""
        out: list[list] = []
        for s in body:
            if out and type(s) not in _AST_COMPOUND and type(out[-1][-1]) not in _AST_COMPOUND and \
                    same_logical_line(self.facts, out[-1][-1], s):
                out[-1].append(s)
            else:
                out.append([s])
        return out

    @staticmethod
    def _index(lines: list[list], stmt: ast.AST) -> int:
        return next(i for i, ln in enumerate(lines) if any(s is stmt for s in ln))

    def _holds(self, line: list, node: ast.AST) -> bool:
        f = self.facts
        return any(s is node or f.is_ancestor(s, node) for s in line)

    def _line_of(self, stmt: ast.stmt) -> list:
        _, body = self._block(stmt)
        if body is None or type(stmt) in _AST_COMPOUND:
            return [stmt]
        lines = self._lines(body)
        return lines[self._index(lines, stmt)]

    def _on_header_line(self, body: list) -> bool:
        """The block is written on its header's line (libcst's ``SimpleStatementSuite``)."""
        return self.facts.enclosing_statement(body[0]) is not body[0]

    def _protection(self, site: ast.AST, fn, kind: str) -> str:
        f = self.facts
        child: ast.AST = site
        stop = fn.node if fn is not None else None
        for anc in f.ancestors(site):
            t = type(anc)
            if anc is stop or t in _AST_DEFS or t is ast.Lambda:
                break
            if t in TRYS and any(s is child for s in anc.finalbody):
                return _FULL
            if t is ast.ExceptHandler and any(s is child for s in anc.body):
                return _FULL if self._broad(anc, kind) else _ERRORS
            child = anc
        return _ERRORS if self._before_failing(site) else _NORMAL

    def _before_failing(self, site: ast.AST) -> bool:
        f = self.facts
        stmt = f.enclosing_statement(site)
        if stmt is None:
            return False
        _, body = self._block(stmt)
        if body is None:
            return False
        lines = self._lines(body)
        for line in lines[self._index(lines, stmt) + 1:]:
            for s in line:
                t = type(s)
                if t is ast.Raise:
                    return True
                if t is ast.Expr and type(s.value) is ast.Call and (
                        f.call_name(s.value) in ("pytest.fail", "sys.exit", "pytest.skip", "pytest.exit")):
                    return True
        return False

    def _broad(self, handler: ast.ExceptHandler, kind: str) -> bool:
        types = self.facts.caught_types(handler)
        if types is None:
            return True
        for t in types:
            q = self.facts.qualified_name(t, handler) or ""
            if q in _BROAD or (kind == "asyncio" and q.endswith("CancelledError")):
                return True
        return False

    def _code_between(self, start: Optional[ast.stmt], stop_site: ast.AST, var: str, fn) -> bool:
        """As the libcst rule's, on ``_lines``: the window climbs from the start's line out of the
        blocks it ends (a ``try`` body, not a ``try*`` one, goes on in its ``else`` unless that is
        on its header's line, then takes its ``finally``)."""
        f = self.facts
        if start is None:
            return True
        line = self._line_of(start)
        if self._holds(line, stop_site):
            return False
        window: list = []
        holder = None
        cur = line
        while holder is None:
            owner, body = self._block(cur[0])
            if body is None:
                return True
            lines = self._lines(body)
            rest = lines[self._index(lines, cur[0]) + 1:]
            at = next((k for k, ln in enumerate(rest) if self._holds(ln, stop_site)), None)
            if at is not None:
                holder = rest[at]
                window += [s for ln in rest[:at] for s in ln]
                break
            window += [s for ln in rest for s in ln]
            t = type(owner)
            if owner is None or t is ast.Module or t in _AST_DEFS or t is ast.ClassDef:
                return True  # the stop is not after the start (a loop's earlier iteration)
            if t is ast.Try and body is owner.body:
                if owner.orelse:
                    later = [] if self._on_header_line(owner.orelse) else self._lines(owner.orelse)
                    at = next((k for k, ln in enumerate(later) if self._holds(ln, stop_site)), None)
                    if at is not None:
                        holder = later[at]
                        window += [s for ln in later[:at] for s in ln]
                        break
                    window += [s for ln in later for s in ln]
                window += owner.finalbody
            if t is ast.ExceptHandler or t.__name__ == "match_case":
                owner = f.parent(owner)
            cur = [owner]
        if not self._heads(holder, stop_site):
            window += holder
        fixture = fn is not None and any(d.rsplit(".", 1)[-1] == "fixture" for d in fn.decorators)
        return any(self._work(node, var, fixture) for node in window)

    def _heads(self, line: list, site: ast.AST) -> bool:
        f = self.facts
        while True:
            stmt = line[0]
            t = type(stmt)
            if t not in _AST_COMPOUND:
                return len(line) == 1 and f.is_ancestor(stmt, site)
            if (t is ast.While or t is ast.If) and f.is_ancestor(stmt.test, site):
                return True
            if t in (ast.Try, ast.With, ast.AsyncWith) and not self._on_header_line(stmt.body):
                if t is not ast.Try and any(f.is_ancestor(i, site) for i in stmt.items):
                    return True
                line = self._line_of(stmt.body[0])
                continue
            return False

    @staticmethod
    def _work(root: ast.AST, var: str, fixture: bool) -> bool:
        todo = [root]
        while todo:
            n = todo.pop()
            t = type(n)
            if t in _AST_DEFS or t is ast.ClassDef or t is ast.Lambda:
                continue
            if t is ast.Raise:
                return True
            if (t is ast.Yield or t is ast.YieldFrom) and not fixture:
                return True
            if t is ast.Call and not _tree_harmless(n, var):
                return True
            todo.extend(ast.iter_child_nodes(n))
        return False

    def _timeout_handled(self, site: ast.AST) -> bool:
        for tr in self.facts.enclosing_trys(site):
            for h in tr.handlers:
                if h.type is not None and "TimeoutExpired" in self._code(h.type):
                    return True
        return False

    # ------------------------------------------------------------------ the fix's plan
    def _fix(self, start: Optional[ast.stmt], var: str, kind: str) -> Optional[FixPlan]:
        f = self.facts
        if kind != "popen" or start is None or type(start) in _AST_COMPOUND:
            return None
        _, body = self._block(start)
        if body is None:
            return None
        lines = self._lines(body)
        i = self._index(lines, start)
        if len(lines[i]) != 1 or type(start) not in (ast.Assign, ast.AnnAssign):
            return None
        fn = f.enclosing_function(start)
        region = fn.node if fn is not None else f.module
        target = start.targets[0] if type(start) is ast.Assign else start.target
        holders = []
        for n in self._names(region, var):
            if n is target:
                continue
            anchor = n.node if type(n) is _Mark else n
            k = next((k for k in range(i + 1, len(lines)) if self._holds(lines[k], anchor)), None)
            if k is None:
                return None  # used before the start or outside the block
            if type(n) is ast.Name and type(f.parent(n)) is ast.Assign and any(x is n for x in f.parent(n).targets):
                return None  # rebound in the region
            holders.append(k)
        if not holders:
            return None
        window = lines[i + 1:max(holders) + 1]
        stmts = [s for ln in window for s in ln]
        if any(type(s) in _AST_DEFS or type(s) is ast.ClassDef for s in stmts) or any(
                type(n) in (ast.Global, ast.Nonlocal) for s in stmts for n in ast.walk(s)):
            return None
        wait_at = next((k for k, ln in enumerate(window) if _ast_wait_statement(ln, var)), None)
        safe = wait_at is not None and not _ast_leaves_early([s for ln in window[:wait_at] for s in ln])
        message = f"End `{var}` in a `finally` (`runtime_guard.terminate_process_groups`)"
        return FixPlan.safe(message) if safe else FixPlan.unsafe(message)


def _ast_wait_statement(line: list, var: str) -> bool:
    """``_is_wait_statement`` on a libcst statement line of ``ast`` statements."""
    if len(line) != 1 or type(line[0]) not in (ast.Expr, ast.Assign, ast.AnnAssign):
        return False
    value = line[0].value
    return (type(value) is ast.Call and type(value.func) is ast.Attribute and value.func.attr in _WAIT_METHODS
            and type(value.func.value) is ast.Name and value.func.value.id == var)


def _ast_leaves_early(stmts: list) -> bool:
    """``_leaves_early`` on ``ast``."""
    todo = [(s, 0) for s in stmts]
    while todo:
        n, loops = todo.pop()
        t = type(n)
        if t in _AST_DEFS or t is ast.Lambda or t is ast.ClassDef:
            continue
        if t is ast.Return or t is ast.Yield or t is ast.YieldFrom:
            return True
        if (t is ast.Break or t is ast.Continue) and loops == 0:
            return True
        inner = loops + 1 if t in _AST_LOOPS else loops
        todo.extend((c, inner) for c in ast.iter_child_nodes(n))
    return False


ChildProcessNeverStopped.ast_check = _Ast
