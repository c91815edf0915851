from __future__ import annotations

import ast
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.prefilter import words as C
from shutdown_lint import facts as F
from shutdown_lint.ast_engine import AstCheck, FixPlan
from shutdown_lint.ast_engine.execution import execution_of
from shutdown_lint.ast_engine.facts import first_argument, same_logical_line
from shutdown_lint.prefilter import ast_tree as T
from shutdown_lint.facts import FunctionInfo, reachable
from shutdown_lint.facts.elsewhere import resolve_elsewhere
from shutdown_lint.facts.vocabulary import _BUILTINS
from shutdown_lint.rule import Applicability, Fix, InsertAfter, Invalid, Option, Rule

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._vocabulary import CLEANUP_WORDS, mentions

_DESTROY = "destroy_process_group"
_GUARD_WORDS = ("install_distributed_teardown",)
#: a call ``_destroys`` accepts spells one of these
_TEARDOWN_WORDS = (_DESTROY, *_GUARD_WORDS)
_MESSAGE = ("process group created with no teardown path (`destroy_process_group` in a finally, cleanup "
            "method or SIGTERM handler): when this rank is stopped the other ranks block in their next "
            "collective until the timeout")
_FIX_MESSAGE = "Install the SIGTERM teardown right after the init"


class _Teardown:
    """What SHD502 decides, on either tree (``ProcessGroupWithoutTeardown``: libcst; ``_Ast``:
    ``ast``). The tree answers ``_first_arg_text``, ``_module_text_has``, ``_function_text_has``,
    ``_calls_destroy``, ``_elsewhere``; ``_where`` gives ``contexts``/``callers``."""

    def _finding(self, node) -> Optional[str]:
        """The message for init call ``node``, or None (not an init call, or a teardown path)."""
        if self.facts.call_name(node) not in set(self.config["init_calls"]):
            return None
        if self._has_teardown(node):
            return None
        found, looked = self._teardown_in_project()
        if found:
            return None
        return _MESSAGE + F.looked_in(looked, "teardown")

    def _installs_sigterm_handler(self) -> bool:
        """The module installs a SIGTERM handler of its own (``signal.signal(SIGTERM, ...)`` or a
        loop's ``add_signal_handler(SIGTERM, ...)``): the file's own handler is chained, but the
        teardown then ends the process, so a handler that only asks the program to stop
        gracefully loses that stop (docs/fix-safety.md) and the fix is unsafe there."""
        for call in self.facts.calls:
            name = self.facts.call_name(call) or ""
            if name == "signal.signal" or name.endswith("add_signal_handler"):
                text = self._first_arg_text(call)
                if text is not None and "SIGTERM" in text:
                    return True
        return False

    # ------------------------------------------------------------------ teardown paths
    def _has_teardown(self, call) -> bool:
        f = self.facts
        if self._module_level_teardown():
            return True
        fn = f.enclosing_function(call)
        if fn is None:
            return False
        where = self._where
        area = reachable([fn], where.callers)
        area |= reachable(area, lambda g: {c for _, c in f.callees(g)})
        cls = fn.cls
        if cls is not None:
            area |= set(cls.methods.values())
        sites = self._teardown_sites()
        if any(F.CALLBACK in where.contexts(g) or mentions(g.name, CLEANUP_WORDS) for g in sites):
            # a signal/atexit handler that tears down is process-wide; a module that ships a
            # `shutdown_*()` teardown leaves calling it to its framework (Ray Train's backend)
            return True
        if any(g in sites for g in area):
            return True
        # a guard word the source lacks is in no function's code: no render needed
        guards = [w for w in _GUARD_WORDS if f.spells(w)]
        return bool(guards) and any(self._function_text_has(g, guards) for g in area)

    def _teardown_in_project(self) -> tuple[Optional[str], Optional[list[str]]]:
        """A teardown in another module of the project (the project index): a cleanup path of
        this module that calls a function elsewhere that destroys the group, or a module
        importing this one that destroys it on its shutdown path (``train.py``'s ``finally``)."""
        f = self.facts
        if f.project is None:
            return None, None
        if "_project_td" in self.__dict__:
            return self._project_td
        found: Optional[str] = None
        for c in f.calls:
            g = f.scope_of(c)
            if not (f.in_cleanup_block(c) or (g is not None and self._on_teardown_path(c, g))):
                continue
            # only a function whose calls spell the teardown matters: the index need not read a
            # module whose text shows it is not one
            other = self._elsewhere(c)
            if other is not None and any(_destroys(call[0]) and len(call) <= 3 for call in other.info["calls"]):
                found = other.where()
                break
        looked: list[str] = []
        if found is None:
            # `destroy_process_group(self.sub_group)` elsewhere releases a subgroup, not this one
            found, looked = F.teardown_elsewhere(f.project, lambda written, args: _destroys(written) and not args,
                                                 lambda name: mentions(name, CLEANUP_WORDS), words=_TEARDOWN_WORDS)
        self._project_td = (found, [F.display_path(p) for p in looked])
        return self._project_td

    def _module_level_teardown(self) -> bool:
        if "_module_td" not in self.__dict__:
            self._module_td = self._module_text_has(_TEARDOWN_WORDS)
        return self._module_td

    def _teardown_sites(self) -> set[FunctionInfo]:
        """Functions that tear the group down on a teardown path."""
        if "_sites" in self.__dict__:
            return self._sites
        f = self.facts
        where = self._where
        # functions that call destroy_process_group anywhere, and same-module wrappers of them
        destroyers: set[FunctionInfo] = set()
        direct: set[int] = set()
        for c in f.calls:
            if self._calls_destroy(c):
                direct.add(id(c))
                g = f.scope_of(c)
                if g is not None:
                    destroyers.add(g)
        destroyers = reachable(destroyers, where.callers)
        sites: set[FunctionInfo] = set()
        for c in f.calls:
            g = f.scope_of(c)
            if g is None:
                continue
            target = f.resolve_call(c)
            if id(c) in direct or (target is not None and target in destroyers):
                if self._on_teardown_path(c, g):
                    sites.add(g)
        # a destroyer reached from a signal/atexit callback or a cleanup-named function
        for g in destroyers:
            if mentions(g.name, CLEANUP_WORDS) or F.CALLBACK in where.contexts(g):
                sites.add(g)
        self._sites = sites
        return sites

    def _on_teardown_path(self, call, fn: FunctionInfo) -> bool:
        if mentions(fn.name, CLEANUP_WORDS) or F.CALLBACK in self._where.contexts(fn):
            return True
        return self.facts.in_cleanup_block(call)


# ------------------------------------------------------------------ detection on ast
class _Ast(_Teardown, AstCheck):
    """SHD502 on ``ast`` (``ast_engine``): the same decisions (``_Teardown``), the tree's answers
    read from ``ast`` and the source text (libcst's ``code_for_node`` of statements:
    ``_owned_lines``)."""

    def visit_Call(self, node: ast.Call) -> None:
        message = self._finding(node)
        if message is None:
            return
        fix = None
        # libcst's fix needs a ``SimpleStatementLine``: a simple statement on its own line(s)
        if self.facts.simple_statement_line(node):
            fix = FixPlan(Applicability.UNSAFE if self._installs_sigterm_handler() else Applicability.SAFE,
                          _FIX_MESSAGE)
        self.report(node, message, fix=fix)

    def _first_arg_text(self, call: ast.Call) -> Optional[str]:
        value = first_argument(call)
        return None if value is None else _owned_paren_text(self.facts, call, value)

    def _module_text_has(self, words: tuple[str, ...]) -> bool:
        f = self.facts
        if not any(f.spells(w) for w in words):
            return False  # a word the source lacks is in no statement's code
        lines = f.lines
        body = f.module.body
        i = 0
        prev_last = None  # the last line of the previous statement line (its footer included)
        while i < len(body):
            j = i
            while j + 1 < len(body) and same_logical_line(f, body[j], body[j + 1]):
                j += 1
            group = body[i:j + 1]
            hi = _last_line(f, group[-1])
            if not (isinstance(group[0], (*_DEFS, ast.ClassDef))
                    or all(isinstance(s, (ast.Import, ast.ImportFrom)) for s in group)):
                lo = _first_line(lines, group[0])
                if prev_last is not None:  # the module's first statement owns no lines above it
                    lo = _leading(lines, lo, prev_last)
                text = "".join(lines[lo - 1:hi])
                if any(w in text for w in words):
                    return True
            prev_last = hi
            i = j + 1
        return False

    def _function_text_has(self, fn: FunctionInfo, words: list[str]) -> bool:
        lo, hi = _owned_lines(self.facts, fn.node)
        text = "".join(self.facts.lines[lo - 1:hi])
        return any(w in text for w in words)

    def _calls_destroy(self, call: ast.Call) -> bool:
        return _written(call.func) == _DESTROY

    def _elsewhere(self, call: ast.Call):
        return self.facts.resolve_elsewhere(call.func, call, _TEARDOWN_WORDS)

    @property
    def _where(self):
        return execution_of(self.facts)


class ProcessGroupWithoutTeardown(_Teardown, Rule):
    """
    ## What it does
    Flags `torch.distributed.init_process_group(...)` (through `import torch.distributed as
    dist`, `from torch.distributed import init_process_group`, ...) in a function or class
    that gives the process group no teardown path: no `destroy_process_group()` in a
    `finally` or `except` block, in a cleanup function or method (`close`, `cleanup`,
    `shutdown`, `__exit__`, `__del__`, ...), in a signal or `atexit` handler, or in a
    same-module helper called from one of those; and no
    `runtime_guard.torch.install_distributed_teardown()`.

    The teardown may live in the function itself, in any method of its class, in its
    callers or what they call, in module-level code (`atexit.register(dist.destroy_process_group)`),
    or in any cleanup-named function of the module that destroys the group (a framework
    that ships `_shutdown_torch()` for its backend to call).

    Across modules (the project index): a cleanup path of this module that calls a function
    in another module that destroys the group counts, and so does a teardown on the
    shutdown path of a module that imports this one, up to two imports away (a `finally`,
    an `except`, a cleanup-named function or method, an `atexit`/signal handler) - the
    trainer in `train.py` tearing down the group that `distributed/utils.py` created.
    Test files do not count for non-test code. When nothing is found, the message says
    where the index looked. The search is bounded: the second hop starts from the 32
    nearest importers, and only importers that mention `destroy_process_group` (or import a
    module that does) are read, at most 160; past that the finding stays.

    Not flagged: a `destroy_process_group()` on one of those paths; a plain
    `destroy_process_group()` at the end of the happy path is *not* a teardown path (an
    exception or a signal never reaches it).

    ## Why is this bad?
    When a rank is stopped - pod eviction (SIGTERM with a 25 s grace period), Ctrl+C in
    `torchrun`, an exception - without releasing its process group, the group stays
    half-open: the other ranks block in their next collective until the collective
    timeout (NCCL's watchdog: 10 minutes by default) and the job dies slowly, holding
    every GPU. Measured here with gloo on CPU: when the stopped rank lingers (a graceful
    handler that finishes the step and saves, a worker process that stays up), rank 0
    sat in `all_reduce` for the full process-group timeout; with the teardown it failed
    within 10 ms. (When the process dies outright, gloo's TCP transport notices the
    closed socket at once; NCCL does not.)

    ## Example
    ```python
    import torch.distributed as dist

    def init_worker_process_group(self, rank, world_size):
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
    ```

    ## Use instead
    ```python
    import torch.distributed as dist
    import runtime_guard

    def init_worker_process_group(self, rank, world_size):
        dist.init_process_group("nccl", rank=rank, world_size=world_size)
        runtime_guard.torch.install_distributed_teardown()
    ```

    ## Fix safety
    The fix inserts `runtime_guard.torch.install_distributed_teardown()` right after the
    statement that initialises the group (and `import runtime_guard`, which the project must
    then depend on). No fix when the call is part of a one-line compound statement.

    Safe. A run that gets no SIGTERM is unchanged: the helper only installs a SIGTERM
    handler (and a faulthandler hook on SIGTERM read by one idle daemon thread); it
    registers nothing with `atexit`, and a child forked afterwards (DataLoader workers,
    `multiprocessing` with `fork`) gets the previous SIGTERM handler back, so its fate
    under SIGTERM is unchanged (measured in
    tests/behaviour/test_shd502_process_group_without_teardown.py). On SIGTERM (the
    hazard's path) it runs `torch.cuda.synchronize()` when CUDA is initialised and
    `destroy_process_group()` when the group is initialised, each step guarded, inside a
    25 s grace period, calls the previous Python handler if there was one (Ray's,
    torchrun's), then exits with status 143.

    Unsafe when the file installs a SIGTERM handler itself: that handler is still called,
    but the process ends right after it, so a handler that only asks the program to stop
    gracefully (finish the step, save a checkpoint) loses that stop. A Python handler
    installed by other code is chained the same way (it runs, then the process ends, as
    promised above); one installed outside Python (`signal.getsignal` gives None) is not
    called. A `faulthandler.register(SIGTERM)` made earlier by the program is replaced.
    See docs/fix-safety.md.

    ## Options
    - `init_calls` (list of qualified names): calls that create a process group.

    ## References
    - SkyRL #1688: clean teardown on SIGTERM (drain CUDA + destroy process group)
    - PyTorch docs: `torch.distributed.destroy_process_group`, `init_process_group(timeout=...)`
    """

    code = "SHD502"
    name = "process-group-without-teardown"
    summary = "`init_process_group` with no teardown path: a stopped rank leaves the others blocked"
    triggers = ("init_process_group",)
    facts_needed = ("functions", "calls", "execution")
    options = {
        "init_calls": Option(["torch.distributed.init_process_group"], list,
                             "qualified names of calls that create a process group", item_kind=str),
    }
    ast_check = _Ast
    # tier 1: the init calls (the option's default; a rule with options set always runs), their
    # last word an identifier in code. Necessary for tier 2 (``_may_init_without_teardown``): it
    # keeps a file only for a call whose callee's words (``Tree.may_call_any``; ``_spelled_inits``
    # reads a subset) hold that word: the callee's own identifier or the alias tables' (an
    # import's or a binding's value's identifier); the factory results never give it (checked in
    # tests/perf/test_s14_t1_shd502_503.py). All are identifiers in code; a docstring or a
    # comment that names the call gives nothing. (A formatted string's field is code:
    # ``words._in_comment``.)
    candidate = C.All(C.qualified(*options["init_calls"].default),
                      C.InCode(C.Word(*sorted({n.rsplit(".", 1)[-1] for n in options["init_calls"].default}))))
    # tier 2: an init call (the option's default; set options bypass) the file does not cover itself
    candidate_tree = staticmethod(lambda tree: _may_init_without_teardown(tree))

    valid = [
        # destroy in a finally
        """
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            try:
                train()
            finally:
                dist.destroy_process_group()
        """,
        # destroy in a cleanup method of the same class
        """
        from torch.distributed import init_process_group, destroy_process_group
        class Worker:
            def setup(self):
                init_process_group("nccl")
            def shutdown(self):
                destroy_process_group()
        """,
        # runtime_guard teardown installed
        """
        import torch.distributed as dist
        import runtime_guard
        def init(rank):
            dist.init_process_group("nccl", rank=rank)
            runtime_guard.torch.install_distributed_teardown()
        """,
        # SIGTERM handler that destroys, through a same-module helper
        """
        import signal
        import torch.distributed as dist
        def _teardown():
            dist.destroy_process_group()
        def _on_term(signum, frame):
            _teardown()
        def main():
            signal.signal(signal.SIGTERM, _on_term)
            dist.init_process_group("gloo")
        """,
        # atexit at module level
        """
        import atexit
        import torch.distributed as dist
        atexit.register(dist.destroy_process_group)
        def main():
            dist.init_process_group("gloo")
        """,
        # a method named init_process_group of another object
        """
        class Mesh:
            def build(self, backend):
                self.backend.init_process_group(backend)
        """,
    ]
    invalid = [
        Invalid(
            """
            import torch.distributed as dist

            class DistributedTorchRayActor:
                def init_worker_process_group(self, rank, world_size):
                    # join the group
                    dist.init_process_group("nccl", rank=rank, world_size=world_size)  # blocking
                    self.ready = True
            """,
            fixed="""
            import torch.distributed as dist
            import runtime_guard

            class DistributedTorchRayActor:
                def init_worker_process_group(self, rank, world_size):
                    # join the group
                    dist.init_process_group("nccl", rank=rank, world_size=world_size)  # blocking
                    runtime_guard.torch.install_distributed_teardown()
                    self.ready = True
            """,
            message_contains="teardown",
        ),
        Invalid(
            """
            from torch.distributed import init_process_group, destroy_process_group

            def main():
                init_process_group(backend="gloo")
                train()
                destroy_process_group()  # happy path only
            """,
            fixed="""
            from torch.distributed import init_process_group, destroy_process_group
            import runtime_guard

            def main():
                init_process_group(backend="gloo")
                runtime_guard.torch.install_distributed_teardown()
                train()
                destroy_process_group()  # happy path only
            """,
        ),
        Invalid(
            """
            import torch
            import torch.distributed as dist

            def setup(rank):
                if not dist.is_initialized():
                    torch.distributed.init_process_group("nccl", rank=rank)
                return rank
            """,
            fixed="""
            import torch
            import torch.distributed as dist
            import runtime_guard

            def setup(rank):
                if not dist.is_initialized():
                    torch.distributed.init_process_group("nccl", rank=rank)
                    runtime_guard.torch.install_distributed_teardown()
                return rank
            """,
        ),
        Invalid(
            """
            from torch.distributed import distributed_c10d as c10d

            def worker(rank):
                if rank >= 0: c10d.init_process_group("gloo", rank=rank)
            """,
            fixed=None,
        ),
        Invalid(
            """
            import torch.distributed as dist

            class Trainer:
                def __init__(self, cfg):
                    dist.init_process_group(cfg.backend)

                def reset(self):
                    dist.destroy_process_group()
            """,
            fixed="""
            import torch.distributed as dist
            import runtime_guard

            class Trainer:
                def __init__(self, cfg):
                    dist.init_process_group(cfg.backend)
                    runtime_guard.torch.install_distributed_teardown()

                def reset(self):
                    dist.destroy_process_group()
            """,
        ),
    ]

    # ------------------------------------------------------------------ visitors
    def visit_Call(self, node: cst.Call) -> None:
        message = self._finding(node)
        if message is None:
            return
        stmt = self.facts.enclosing_statement(node)
        fix = None
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(
                self.facts.parent(stmt), (cst.IndentedBlock, cst.Module)):
            line = cst.SimpleStatementLine([cst.Expr(guard_call("torch.install_distributed_teardown"))])
            make = Fix.unsafe if self._installs_sigterm_handler() else Fix.safe
            fix = make(InsertAfter(stmt, (line,)), IMPORT_RUNTIME_GUARD, message=_FIX_MESSAGE)
        self.report(node, message, fix=fix)

    # ------------------------------------------------------------------ what the tree answers
    def _first_arg_text(self, call: cst.Call) -> Optional[str]:
        return cst.Module([]).code_for_node(call.args[0].value) if call.args else None

    def _module_text_has(self, words: tuple[str, ...]) -> bool:
        m = self.facts.module
        text = "".join(m.code_for_node(s) for s in m.body if not _is_def_or_import(s))
        return any(w in text for w in words)

    def _function_text_has(self, fn: FunctionInfo, words: list[str]) -> bool:
        code = self.facts.module.code_for_node(fn.node)
        return any(w in code for w in words)

    def _calls_destroy(self, call: cst.Call) -> bool:
        return isinstance(call.func, (cst.Attribute, cst.Name)) and _last_name(call.func) == _DESTROY

    def _elsewhere(self, call: cst.Call):
        return resolve_elsewhere(self.facts, call.func, call, _TEARDOWN_WORDS)

    @property
    def _where(self):
        return self.facts


def _destroys(written: str) -> bool:
    return written.rsplit(".", 1)[-1] == _DESTROY or any(w in written for w in _GUARD_WORDS)


def _is_def_or_import(stmt: cst.CSTNode) -> bool:
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
        return True
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _last_name(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_COMPOUND = (*_DEFS, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, *T.TRYS,
             *((ast.Match,) if hasattr(ast, "Match") else ()))
_INDENT = " \t\x0c"


def _blank_or_comment(line: str) -> bool:
    rest = line.lstrip(_INDENT)
    return not rest.strip() or rest[0] == "#"


def _block_of(parent: ast.AST, stmt: ast.stmt) -> list:
    """The statement list of ``parent`` that holds ``stmt``."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if type(block) is list and any(s is stmt for s in block):
            return block
    return [stmt]


def _last_block(lines: list[str], stmt: ast.stmt) -> Optional[list]:
    """The statements of the last clause of compound ``stmt`` (an ``elif``'s, an ``else``'s,
    a ``finally``'s...); None for a simple statement."""
    t = type(stmt)
    if t is ast.If:
        o = stmt.orelse
        if len(o) == 1 and type(o[0]) is ast.If and lines[o[0].lineno - 1].lstrip(_INDENT).startswith("elif"):
            return _last_block(lines, o[0])
        return o or stmt.body
    if t in (ast.For, ast.AsyncFor, ast.While):
        return stmt.orelse or stmt.body
    if t in T.TRYS:
        return stmt.finalbody or stmt.orelse or (stmt.handlers[-1].body if stmt.handlers else stmt.body)
    if t.__name__ == "Match":
        return stmt.cases[-1].body
    if isinstance(stmt, _COMPOUND):
        return stmt.body
    return None


def _first_line(lines: list[str], stmt: ast.stmt) -> int:
    """The first line of ``stmt``: its first decorator's ``@``."""
    decorators = getattr(stmt, "decorator_list", None)
    if not decorators:
        return stmt.lineno
    n = decorators[0].lineno
    while n > 1 and not lines[n - 1].lstrip(_INDENT).startswith("@"):
        n -= 1
    return n


def _last_line(facts, stmt: ast.stmt) -> int:
    """The last line libcst files under ``stmt``: a compound statement's indented last block
    owns the blank and comment lines after it up to the last one that starts with its indent."""
    lines = facts.lines
    last = stmt.end_lineno
    block = _last_block(lines, stmt)
    if not block or facts.body_on_header_line(block):
        return last
    first = lines[block[0].lineno - 1]
    indent = first[:len(first) - len(first.lstrip(_INDENT))]
    j = last
    while j < len(lines) and _blank_or_comment(lines[j]):
        j += 1
        if lines[j - 1].startswith(indent):
            last = j
    return last


def _leading(lines: list[str], first: int, floor: int) -> int:
    """The first of the blank and comment lines right above line ``first`` (not above ``floor``)."""
    while first - 1 > floor and _blank_or_comment(lines[first - 2]):
        first -= 1
    return first


def _owned_lines(facts, stmt: ast.stmt) -> tuple[int, int]:
    """The lines of libcst's ``code_for_node(stmt)`` (a def, a class, a compound statement): the
    blank and comment lines above it that its block does not give the statement before (the
    module's first statement has none: they are the module's header), to its last line and,
    for an indented last block, the lines ``_last_line`` adds."""
    lines = facts.lines
    first = _first_line(lines, stmt)
    parent = facts.parent(stmt)
    block = _block_of(parent, stmt) if parent is not None else [stmt]
    i = next(k for k, s in enumerate(block) if s is stmt)
    if i == 0 and (parent is None or type(parent) is ast.Module):
        return first, _last_line(facts, stmt)
    floor = _last_line(facts, block[i - 1]) if i > 0 else 0
    return _leading(lines, first, floor), _last_line(facts, stmt)


def _owned_paren_text(facts, call: ast.Call, value: ast.AST) -> str:
    """libcst's ``code_for_node`` of argument ``value`` of ``call``: its source with the
    parentheses it owns (``f((x  # c\\n))``: the comment is the value's)."""
    text = facts.segment(value)
    before = _between(facts, call.func.end_lineno, call.func.end_col_offset, value.lineno, value.col_offset)
    opens = _open_parens(before)
    if len(opens) < 2:  # only the call's own parenthesis
        return text
    after = _between(facts, value.end_lineno, value.end_col_offset, call.end_lineno, call.end_col_offset)
    close = _close_parens(after, len(opens) - 1)
    return before[opens[1]:] + text + after[:close]


def _between(facts, line: int, col: int, end_line: int, end_col: int) -> str:
    """The source from (``line``, byte ``col``) to (``end_line``, byte ``end_col``)."""
    lines = facts.lines
    a = facts.column(line, col)
    b = facts.column(end_line, end_col)
    if line == end_line:
        return lines[line - 1][a:b]
    return "".join([lines[line - 1][a:], *lines[line:end_line - 1], lines[end_line - 1][:b]])


def _open_parens(text: str) -> list[int]:
    """Where ``(`` stands in ``text`` (the source between a callee and its first argument's
    value: parentheses, ``*``, ``name =``, whitespace and comments), comments skipped."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == "#":
            while i < len(text) and text[i] not in "\r\n":
                i += 1
            continue
        if c == "(":
            out.append(i)
        i += 1
    return out


def _close_parens(text: str, count: int) -> int:
    """The end of the ``count``-th ``)`` in ``text``, comments skipped."""
    i = 0
    while i < len(text) and count:
        c = text[i]
        if c == "#":
            while i < len(text) and text[i] not in "\r\n":
                i += 1
            continue
        if c == ")":
            count -= 1
        i += 1
    return i


# ------------------------------------------------------------------ candidate tier 2 (ast)
_INIT_CALLS = tuple(ProcessGroupWithoutTeardown.options["init_calls"].default)


#: the last words of the init calls (``may_call_any`` reads the last word first)
_INIT_LASTS = frozenset(n.rsplit(".", 1)[-1] for n in _INIT_CALLS)


def _written(node: ast.AST) -> str:
    """The identifier of a ``Name`` or the attribute of an ``Attribute``, else ''."""
    t = type(node)
    return node.id if t is ast.Name else node.attr if t is ast.Attribute else ""


def _mentions_word(root: ast.AST, words) -> bool:
    """An identifier with one of ``words`` in it anywhere under ``root``:
    then the rule's ``code_for_node`` text of ``root`` holds ``word``."""
    for n in T.walk(root):  # ``ast.walk``'s nodes, without its generators
        written = _written(n)
        if written and any(w in written for w in words):
            return True
    return False


def _module_level_teardown(tree) -> bool:
    """The rule's ``_module_level_teardown``: its text of the top-level statements that are
    not a def, a class or an import line holds ``destroy_process_group`` or
    ``install_distributed_teardown`` (here: an identifier in one of the ast statements that is
    not a def/class/import, a subset of that text)."""
    for stmt in tree.module.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)):
            continue
        if _mentions_word(stmt, (_DESTROY, *_GUARD_WORDS)):
            return True
    return False


def _cleanup_named_destroyer(tree) -> bool:
    """A function whose name has a cleanup word (``CLEANUP_WORDS``) and that calls
    ``<x>.destroy_process_group(...)`` / ``destroy_process_group(...)`` itself: the rule's ``_teardown_sites`` holds it (a ``destroyer`` with a cleanup name),
    and ``_has_teardown`` then accepts every init call inside a function."""
    for fn in tree.functions:
        if not mentions(fn.name, CLEANUP_WORDS):
            continue
        if any(_written(c.func) == _DESTROY for c, _, _ in fn.calls):
            return True
    return False


def _destroys_in_cleanup_block(fn) -> bool:
    """``fn`` calls ``destroy_process_group`` itself in a ``finally`` or an ``except`` body
    (not in a nested def or lambda): the rule's ``in_cleanup_block`` makes ``fn`` a teardown
    site, and ``fn`` is in its own area."""
    stack = [(s, False) for s in fn.node.body]
    while stack:
        node, cleanup = stack.pop()
        t = type(node)
        if t in (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda):
            continue
        if cleanup and t is ast.Call and _written(node.func) == _DESTROY:
            return True
        if t in T.TRYS:
            stack.extend((s, cleanup) for s in node.body)
            stack.extend((s, cleanup) for s in node.orelse)
            stack.extend((s, True) for s in node.finalbody)
            for h in node.handlers:
                if h.type is not None:
                    stack.append((h.type, cleanup))
                stack.extend((s, True) for s in h.body)
            continue
        stack.extend((c, cleanup) for c in ast.iter_child_nodes(node))
    return False


def _guarded_area(tree, fn) -> bool:
    """``install_distributed_teardown`` written in ``fn`` (its code, decorators and nested
    defs included) or in a method of ``fn``'s class that the facts know (the first def of
    each name in the class body): both are in the rule's ``area``."""
    if _mentions_word(fn.node, _GUARD_WORDS):
        return True
    if fn.in_class:
        seen: set[str] = set()
        for m in tree.methods.get(id(fn.cls), ()):
            if m.name not in seen:
                seen.add(m.name)
                if _mentions_word(m.node, _GUARD_WORDS):
                    return True
    return False


def _spelled_inits(tree) -> list:
    """The ``(call, function or None)`` pairs of the calls that may be an init call (functions'
    calls first, then the module's), where no alias may hold one of ``_INIT_LASTS`` (``may_alias``):
    a name callee is one when spelled so, an attribute callee only when it ends so (then
    ``may_call_any`` reads its receiver)."""
    lasts, names = _INIT_LASTS, _INIT_CALLS
    Name, Attribute = ast.Name, ast.Attribute
    out = []
    for calls, fn in [*((f.calls, f) for f in tree.functions), (tree.module_calls, None)]:
        for c, _, _ in calls:
            func = c.func
            t = type(func)
            if t is Name:
                if func.id in lasts:
                    out.append((c, fn))
            elif (t is not Attribute or func.attr in lasts) and tree.may_call_any(c, names):
                out.append((c, fn))
    return out


def _unnamed(tree, call: ast.Call) -> bool:
    """The facts cannot name the callee: ``<N>.a.b(...)`` whose root ``N`` (not ``self``, not a
    builtin) has no binding of kind import/def/class/value anywhere in the module (only
    tuple-unpacking, ``for``, ``except as``, augmented targets, or none: ``torch, _ =
    try_import_torch()``), so the facts' lookup gives None or "other" and ``qualified_name``
    None, whatever the scope."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    while isinstance(func, ast.Attribute):
        func = func.value
    if not isinstance(func, ast.Name) or func.id in ("self",) or func.id in _BUILTINS:
        return False
    return not tree.binds_name(func.id)  # ``func.id not in tree.named_bindings``


def _may_init_without_teardown(tree) -> bool:
    """Tier 2 for SHD502: an init call (the ``init_calls`` default) that the file itself does
    not prove covered.

    The rule reports an init call only when ``_has_teardown`` is False and the project index
    finds nothing (``_teardown_in_project`` can only suppress: a local proof is enough). A file
    is ruled out when every call that may be an init call (``may_call_any``) is one of:
    - not an init call for the facts (``_unnamed``: its root name is never bound to anything
      the facts can name);
    - covered by ``_module_level_teardown`` (first test of ``_has_teardown``, any call);
    - in a function, and the module has a cleanup-named function that calls
      ``destroy_process_group`` itself (``_cleanup_named_destroyer``: the "sites with a cleanup
      name" acceptance, any call in a function);
    - in a function ``fn`` that writes ``install_distributed_teardown`` or whose class's method
      does (``_guarded_area``), or that calls ``destroy_process_group`` in its own ``finally``/
      ``except`` body (``_destroys_in_cleanup_block``): ``fn`` is in its own area.
    A module-level init call not covered by the module-level teardown keeps the file.
    """
    if tree.may_alias(_INIT_LASTS):
        inits = [(c, fn) for fn in tree.functions for c, _, _ in fn.calls if tree.may_call_any(c, _INIT_CALLS)]
        inits += [(c, None) for c, _, _ in tree.module_calls if tree.may_call_any(c, _INIT_CALLS)]
    else:
        inits = _spelled_inits(tree)
    if not inits:
        return False
    # identifiers holding the words at all (``mentioned`` has every Name and attribute)
    destroy_words = any(_DESTROY in w for w in tree.mentioned)
    guard_words = any(g in w for g in _GUARD_WORDS for w in tree.mentioned)
    if (destroy_words or guard_words) and _module_level_teardown(tree):
        return False
    destroyer = None
    covered: dict[int, bool] = {}
    for c, fn in inits:
        if isinstance(c.func, ast.Attribute) and _unnamed(tree, c):
            continue
        if fn is None:
            return True
        if destroyer is None:
            destroyer = destroy_words and _cleanup_named_destroyer(tree)
        if destroyer:
            continue
        if id(fn) not in covered:
            covered[id(fn)] = (guard_words and _guarded_area(tree, fn)) or (
                destroy_words and _destroys_in_cleanup_block(fn))
        if not covered[id(fn)]:
            return True
    return False
