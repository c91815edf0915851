from __future__ import annotations

from typing import Optional

import libcst as cst

from shutdown_lint import candidates as C
from shutdown_lint import facts as F
from shutdown_lint.facts import FunctionInfo, reachable
from shutdown_lint.rule import Fix, InsertAfter, Invalid, Option, Rule

from ._fixes import IMPORT_RUNTIME_GUARD, guard_call
from ._vocabulary import CLEANUP_WORDS, mentions

_DESTROY = "destroy_process_group"
_GUARD_WORDS = ("install_distributed_teardown",)


class ProcessGroupWithoutTeardown(Rule):
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
    Safe: inserts `runtime_guard.torch.install_distributed_teardown()` right after the
    statement that initialises the group (and `import runtime_guard`). It installs a
    SIGTERM handler that runs `torch.cuda.synchronize()` when CUDA is available and
    `destroy_process_group()` when initialised, each step guarded, inside a 25 s grace
    period, then exits; the normal path is unchanged. No fix when the call is part of a
    one-line compound statement.

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
    # tier 1: the init calls (the option's default; a rule with options set always runs)
    candidate = C.qualified(*options["init_calls"].default)
    # tier 2: a call that may be one of the init calls (the option's default; set options bypass)
    candidate_tree = staticmethod(lambda tree: any(
        tree.may_call_any(c, ProcessGroupWithoutTeardown.options["init_calls"].default)
        for c in tree.all_calls()))

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
        if self.facts.call_name(node) not in set(self.config["init_calls"]):
            return
        if self._has_teardown(node):
            return
        found, looked = self._teardown_in_project()
        if found:
            return
        stmt = self.facts.enclosing_statement(node)
        fix = None
        if isinstance(stmt, cst.SimpleStatementLine) and isinstance(
                self.facts.parent(stmt), (cst.IndentedBlock, cst.Module)):
            line = cst.SimpleStatementLine([cst.Expr(guard_call("torch.install_distributed_teardown"))])
            fix = Fix.safe(InsertAfter(stmt, (line,)), IMPORT_RUNTIME_GUARD,
                           message="Install the SIGTERM teardown right after the init")
        self.report(
            node,
            "process group created with no teardown path (`destroy_process_group` in a finally, cleanup "
            "method or SIGTERM handler): when this rank is stopped the other ranks block in their next "
            "collective until the timeout" + F.looked_in(looked, "teardown"),
            fix=fix,
        )

    # ------------------------------------------------------------------ teardown paths
    def _has_teardown(self, call: cst.Call) -> bool:
        f = self.facts
        if self._module_level_teardown():
            return True
        fn = f.enclosing_function(call)
        if fn is None:
            return False
        area = reachable([fn], f.callers)
        area |= reachable(area, lambda g: {c for _, c in f.callees(g)})
        cls = fn.cls
        if cls is not None:
            area |= set(cls.methods.values())
        sites = self._teardown_sites()
        if any(F.CALLBACK in f.contexts(g) or mentions(g.name, CLEANUP_WORDS) for g in sites):
            # a signal/atexit handler that tears down is process-wide; a module that ships a
            # `shutdown_*()` teardown leaves calling it to its framework (Ray Train's backend)
            return True
        for g in area:
            if g in sites:
                return True
            if any(w in f.module.code_for_node(g.node) for w in _GUARD_WORDS):
                return True
        return False

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
            g = f._call_scope.get(c)
            if not (f.in_cleanup_block(c) or (g is not None and self._on_teardown_path(c, g))):
                continue
            other = f.resolve_elsewhere(c.func, c)
            if other is not None and any(_destroys(call[0]) and len(call) <= 3 for call in other.info["calls"]):
                found = other.where()
                break
        looked: list[str] = []
        if found is None:
            # `destroy_process_group(self.sub_group)` elsewhere releases a subgroup, not this one
            found, looked = F.teardown_elsewhere(f.project, lambda written, args: _destroys(written) and not args,
                                                 lambda name: mentions(name, CLEANUP_WORDS), words=(_DESTROY, *_GUARD_WORDS))
        self._project_td = (found, [F.display_path(p) for p in looked])
        return self._project_td

    def _module_level_teardown(self) -> bool:
        if "_module_td" not in self.__dict__:
            m = self.facts.module
            text = "".join(m.code_for_node(s) for s in m.body if not _is_def_or_import(s))
            self._module_td = _DESTROY in text or any(w in text for w in _GUARD_WORDS)
        return self._module_td

    def _teardown_sites(self) -> set[FunctionInfo]:
        """Functions that tear the group down on a teardown path."""
        if "_sites" in self.__dict__:
            return self._sites
        f = self.facts
        # functions that call destroy_process_group anywhere, and same-module wrappers of them
        destroyers: set[FunctionInfo] = set()
        direct: list[cst.Call] = []
        for c in f.calls:
            if isinstance(c.func, (cst.Attribute, cst.Name)) and _last_name(c.func) == _DESTROY:
                direct.append(c)
                g = f._call_scope.get(c)
                if g is not None:
                    destroyers.add(g)
        destroyers = reachable(destroyers, f.callers)
        sites: set[FunctionInfo] = set()
        for c in f.calls:
            g = f._call_scope.get(c)
            if g is None:
                continue
            target = f.resolve_call(c)
            if c in direct or (target is not None and target in destroyers):
                if self._on_teardown_path(c, g):
                    sites.add(g)
        # a destroyer reached from a signal/atexit callback or a cleanup-named function
        for g in destroyers:
            if mentions(g.name, CLEANUP_WORDS) or F.CALLBACK in f.contexts(g):
                sites.add(g)
        self._sites = sites
        return sites

    def _on_teardown_path(self, call: cst.Call, fn: FunctionInfo) -> bool:
        if mentions(fn.name, CLEANUP_WORDS) or F.CALLBACK in self.facts.contexts(fn):
            return True
        return self.facts.in_cleanup_block(call)


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


