"""Where ``os._exit`` is the right call: shared by SHD204 (which flags the others) and SHD202
(which leaves a zero-status ``os._exit`` on an interrupt path to SHD204, so one statement
gets one finding)."""

from __future__ import annotations

import ast
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.facts import FunctionInfo, ModuleFacts, reachable

#: Calls after which the process is a fork child that must not run the parent's cleanup.
FORK_CALLS = frozenset({"os.fork", "os.forkpty", "pty.fork"})
#: Calls that start a child process running a function (argument index of the function, or a keyword).
CHILD_STARTERS_POSITIONAL = {
    "torch.multiprocessing.spawn": 0, "torch.multiprocessing.start_processes": 0,
    "torch.multiprocessing.spawn.spawn": 0,
}
CHILD_TARGET_KEYWORDS = ("target", "initializer")


def _child_roots(facts: ModuleFacts) -> set[FunctionInfo]:
    roots: set[FunctionInfo] = set()
    for call in facts.calls:
        name = facts.call_name(call) or ""
        func = call.func
        attr = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        is_process = attr in ("Process", "Pool", "ProcessPoolExecutor") and ("multiprocessing" in name or name.endswith((".Process", ".Pool"))
                                                       or isinstance(func, cst.Attribute))
        if is_process:
            for a in call.args:
                if a.keyword is not None and a.keyword.value in CHILD_TARGET_KEYWORDS:
                    t = facts.resolve_function(a.value, call)
                    if t is not None:
                        roots.add(t)
        idx = CHILD_STARTERS_POSITIONAL.get(name)
        if idx is None and attr in ("spawn", "start_processes") and "multiprocessing" in name:
            idx = 0
        if idx is not None:
            args = [a for a in call.args if a.keyword is None]
            if len(args) > idx:
                t = facts.resolve_function(args[idx].value, call)
                if t is not None:
                    roots.add(t)
    for cls in facts.classes:  # class Worker(multiprocessing.Process): def run(self): ...
        for base in cls.node.bases:
            q = facts.qualified_name(base.value, cls.node) or ""
            if q.endswith(".Process") and "multiprocessing" in q and "run" in cls.methods:
                roots.add(cls.methods["run"])
    return roots


def rule_runs_here(code: str, facts: ModuleFacts, settings) -> bool:
    """``code`` is selected and not switched off for this file by ``per-file-ignores``."""
    if code not in settings.selected:
        return False
    from shutdown_lint.analyzer import rules_for

    return any(r.code == code for r in rules_for(facts.path, settings))


def _forking(facts: ModuleFacts) -> set[FunctionInfo]:
    return {fn for fn in facts.functions if any(facts.call_name(c) in FORK_CALLS for c in fn.calls)}


def child_process_reason(facts: ModuleFacts, node: cst.CSTNode, child_roots=_child_roots) -> Optional[str]:
    """Why the code at ``node`` runs in a child process where ``os._exit`` is meant, or None:
    its function calls ``os.fork()`` (or module-level code does), or it is a
    ``multiprocessing``/``torch.multiprocessing`` child's target (and what that calls).
    ``child_roots``: ``_child_roots`` for the tree of ``facts`` (SHD204's ``ast`` check gives its own)."""
    cache = facts.__dict__.setdefault("_shd204_child_cache", {})
    if "children" not in cache:
        roots = child_roots(facts)
        cache["children"] = reachable(roots, lambda fn: (c for _, c in facts.callees(fn)))
        cache["forking"] = _forking(facts)
        cache["module_forks"] = any(facts.call_name(c) in FORK_CALLS for c in facts.module_calls)
    fn = facts.enclosing_function(node)
    if fn is None:
        return "after os.fork()" if cache["module_forks"] else None
    cur: Optional[FunctionInfo] = fn
    while cur is not None:  # a handler nested in a forking function runs in the child too
        if cur in cache["forking"]:
            return "after os.fork()"
        if cur in cache["children"]:
            return "in a child process's target"
        cur = cur.scope
    return None


def raises_system_exit(tree, node: ast.Raise) -> bool:
    """Candidate tier 2: ``raise SystemExit`` / ``raise SystemExit(...)`` through aliases."""
    exc = node.exc.func if type(node.exc) is ast.Call else node.exc
    return exc is not None and "SystemExit" in tree.words(exc)
