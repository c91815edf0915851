"""Which functions and methods can be the last thing the process does (across modules).

A function is a *process tail* when its normal return ends the process with status 0:
the ``__main__`` block calls it as its last statement (``f()``, ``sys.exit(f())``,
``asyncio.run(f())``), a console script of the project's ``pyproject.toml`` names it, or a
process tail calls it as a statement after which nothing raises, exits or returns a value
(``summary._tail_calls``), at any depth and across modules: ``main()`` -> ``Trainer(cfg).fit()``
-> ``self._loop()``. Methods are followed through local instances (``t = Trainer(); t.fit()``),
``self.m()`` and the class hierarchy (an inherited method is the base's function).

The search goes backwards from the function asked about: its module and the nearest modules
that import it and spell ``name(`` (``ProjectIndex.importers``, two hops per step, at most
``_MAX_IMPORTERS``), up to ``_MAX_DEPTH`` callers. Every
summary read is a dependency of the asking file's result (``ProjectView.deps``): a change in
a caller's module re-lints it; so does a change to the console scripts (``pyproject.toml``
has a summary of its own: its scripts).
"""

from __future__ import annotations

import os
from typing import Optional

from .classes import importers
from .project import ProjectFunction, ProjectView, display
from .text_facts import no_tail_call_reaches_out

#: callers followed from the function asked about
_MAX_DEPTH = 8
#: importers read per step, nearest first
_MAX_IMPORTERS = 24
#: pyproject.toml files looked for above a module (the project's own, not a parent repository's)
_MAX_UP = 4


def process_tail(view: ProjectView, path: str, qualname: str) -> Optional[list[str]]:
    """The chain that makes ``qualname`` (a function or ``Class.method`` of the module in
    ``path``) a process tail, callee first: ``["`Trainer.fit()`", "`main()`", "the `__main__`
    block of train.py"]``; None when it is not one (or the search gave up)."""
    memo: dict[tuple[str, str], Optional[list[str]]] = {}
    try:
        return _chain(view, (os.path.abspath(path), qualname), 0, memo, set())
    except (RecursionError, OSError):  # a pathological layout must not end the analysis
        return None


def _chain(view: ProjectView, target: tuple[str, str], depth: int, memo: dict, active: set) -> Optional[list[str]]:
    if target in memo:
        return memo[target]
    if depth > _MAX_DEPTH or target in active:
        return None
    active.add(target)
    found: Optional[list[str]] = None
    label = f"`{target[1]}()`"
    script = _console_script(view, target)
    if script is not None:
        found = [label, f"the console script `{script}`"]
    else:
        for kind, caller, where in _tail_callers(view, target):
            if kind == "main":
                found = [label, f"the `__main__` block of {display(where)}"]
                break
            rest = _chain(view, (caller.path, caller.qualname), depth + 1, memo, active)
            if rest is not None:
                found = [label, *rest]
                break
    active.discard(target)
    memo[target] = found
    return found


def _tail_callers(view: ProjectView, target: tuple[str, str]):
    """(``"main"``, None, path) for a ``__main__`` block, (``"call"``, caller, path) for a
    function or method that calls ``target`` as one of its tail calls."""
    path = target[0]
    # a caller spells the name it calls (``fit`` of ``Trainer.fit``)
    word = target[1].rsplit(".", 1)[-1]
    near = [m for m in importers(view, path) if view.index.text_has(m, (word + "(",))]
    # the nearest importers only: a hub module (torch, a package's ``__init__``) is imported by
    # hundreds, and a name like ``run`` is in most of them (measured on site-packages: three
    # searches had read 376 files)
    modules = [path, *near[:_MAX_IMPORTERS]]
    for m in modules:
        if "." not in target[1] and os.path.abspath(m) != path:
            # a module-level function of another module: a module whose text shows that no call
            # ending in ``word`` leaves it is not summarised (its text is then the dependency;
            # ``text_facts.no_tail_call_reaches_out``)
            stamp = no_tail_call_reaches_out(view.index, m, word)
            if stamp is not None:
                if m not in view.deps and m != view.path:
                    view.deps[m] = stamp
                continue
        s = view.summary_of(m)
        if not s:
            continue
        names = view.index.module_names(m)
        mod = names[0] if names else os.path.splitext(os.path.basename(m))[0]
        if s.get("main_tail"):
            block = ProjectFunction(mod, m, "<main>", {"imports": {}, "line": 0})
            for written in s["main_tail"]:
                if written.rsplit(".", 1)[-1] == word and _is(view.callee(block, written), target):
                    yield "main", None, m
        for fn in view.functions_in(m):
            for written in fn.info.get("tail", ()):
                if written.rsplit(".", 1)[-1] == word and _is(view.callee(fn, written), target):
                    yield "call", fn, m


def _is(hit: Optional[ProjectFunction], target: tuple[str, str]) -> bool:
    return hit is not None and (os.path.abspath(hit.path), hit.qualname) == target


def _console_script(view: ProjectView, target: tuple[str, str]) -> Optional[str]:
    """The name of a console script of the nearest ``pyproject.toml`` above the module whose
    target is ``target``."""
    d = os.path.dirname(target[0])
    for _ in range(_MAX_UP):
        candidate = os.path.join(d, "pyproject.toml")
        if view.index._isfile(candidate):
            s = view.index.summary(candidate, view.deps)
            view.deps.pop(view.path, None)
            for name, spec in ((s or {}).get("scripts") or {}).items():
                mod, _, attr = spec.partition(":")
                hit = view.index.resolve(f"{mod.strip()}.{attr.strip()}", view.deps)
                view.deps.pop(view.path, None)
                if isinstance(hit, ProjectFunction) and _is(hit, target):
                    return name
            return None
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return None
