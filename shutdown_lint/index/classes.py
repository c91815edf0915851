"""Class hierarchies across the project: which classes a module's class is a base of, what
overrides a method, and whether a subclass anywhere is made a Ray actor.

The search covers the class's own module and the modules that import it (two hops,
``ProjectIndex.importers``): a subclass must name its base, so it imports the base's module
(or a package re-exporting it). Every summary read is a dependency of the asking file's result
(``ProjectView.deps``): a change to a subclass elsewhere re-lints the module of its base.
"""

from __future__ import annotations

import os
from typing import Iterator, Optional

from .project import ProjectClass, ProjectFunction, ProjectView, display
from .text_facts import no_ray_remote

#: Spellings of Ray's ``remote`` (an import's target) that make an actor.
_RAY_REMOTE = ("ray.remote", "ray.actor.remote")


def _modules(view: ProjectView, path: str, *words: str) -> list[str]:
    """The module in ``path`` and the modules that import it (two hops) whose text contains each
    of ``words`` (what a match must spell: the class's name, since a subclass or ``ray.remote(X)``
    names it; a summary costs an ``ast`` parse, a text search a read. A subclass of a subclass
    defined in a third module, which names only its direct base, is not followed). The importers
    are searched once per module and run; at most ``_MAX_IMPORTERS`` of them are read."""
    path = os.path.abspath(path)
    near = [m for m in importers(view, path) if all(view.index.text_has(m, (w,)) for w in words)]
    return [path, *near[:_MAX_IMPORTERS]]


#: importers read per search, nearest first (a hub module's importers are hundreds)
_MAX_IMPORTERS = 48


def importers(view: ProjectView, path: str) -> list[str]:
    """``ProjectIndex.importers``, once per module and run (asked for each class, each handler)."""
    memo = view.index.__dict__.setdefault("_importers_memo", {})
    found = memo.get(path)
    if found is None:
        found = memo[path] = view.index.importers(path, view.deps)
        view.deps.pop(view.path, None)
    else:  # asked before, maybe from another file: this file's result depends on the files too
        view.index.depend_on_files(view.deps)
    return found


def _module_name(view: ProjectView, path: str) -> str:
    names = view.index.module_names(path)
    return names[0] if names else os.path.splitext(os.path.basename(path))[0]


def _resolve_in(view: ProjectView, path: str, s: dict, written: str):
    """What ``written`` (a name as spelled at module level of ``path``) refers to."""
    mod = _module_name(view, path)
    first, _, rest = written.partition(".")
    if first in s["imports"]:
        full = view.index.absolute(s["imports"][first], mod, path.endswith("__init__.py")) + ("." + rest if rest else "")
    else:
        full = f"{mod}.{written}"
    hit = view.index.resolve(full, view.deps)
    view.deps.pop(view.path, None)
    return hit


def _is_ray_remote(view: ProjectView, path: str, s: dict, callee: str) -> bool:
    first, _, rest = callee.partition(".")
    target = s["imports"].get(first)
    if target is None:
        return False
    return (target + ("." + rest if rest else "")) in _RAY_REMOTE


def _in_mro(view: ProjectView, cls: ProjectClass, target: tuple[str, str]) -> bool:
    return any((os.path.abspath(c.path), c.name) == target for c in view.index.mro(cls, view.deps))


def subclasses(view: ProjectView, path: str, name: str, *words: str) -> Iterator[tuple[ProjectClass, Optional[str]]]:
    """Top-level classes of the project (this module and its importers) that have the class
    ``name`` of ``path`` among their bases, at any depth; with ``"ray.remote"`` when decorated
    with Ray's ``remote``. ``words``: text a module must contain to be read."""
    target = (os.path.abspath(path), name)
    for m in _modules(view, path, name, *words):
        s = view.summary_of(m)
        if not s:
            continue
        mod = _module_name(view, m)
        for cname, c in s["classes"].items():
            if not c["bases"] or (os.path.abspath(m), cname) == target:
                continue
            pc = ProjectClass(mod, m, cname, c)
            if _in_mro(view, pc, target):
                remote = next((d for d in c["decorators"] if _is_ray_remote(view, m, s, d)), None)
                yield pc, remote


def made_remote(view: ProjectView, path: str, name: str) -> Optional[tuple[str, bool]]:
    """When the class ``name`` of ``path`` runs as a Ray actor through a subclass (or itself)
    made remote in another place of the project - ``@ray.remote`` on a subclass,
    ``ray.remote(Sub)`` / ``ray.remote(**options)(Sub)``, a subclass built in a factory
    function - (where, whether the actor has async methods); else None."""
    target = (os.path.abspath(path), name)
    try:
        for m in _modules(view, path, name, "remote", "ray"):
            stamp = no_ray_remote(view.index, m)
            if stamp is not None:
                # no callee there can be Ray's ``remote``: not summarised (its text is the dependency)
                if m not in view.deps and m != view.path:
                    view.deps[m] = stamp
                continue
            s = view.summary_of(m)
            if not s:
                continue
            mod = _module_name(view, m)
            for entry in s.get("remote", ()):
                callee, _, written = entry.partition(":")
                if not _is_ray_remote(view, m, s, callee):
                    continue
                hit = _resolve_in(view, m, s, written)
                if isinstance(hit, ProjectClass) and _in_mro(view, hit, target):
                    return f"`ray.remote({written})` in {display(m)}", _has_async(view, hit)
            for cname, c in s["classes"].items():
                if c["bases"] and any(_is_ray_remote(view, m, s, d) for d in c["decorators"]):
                    pc = ProjectClass(mod, m, cname, c)
                    if (os.path.abspath(m), cname) != target and _in_mro(view, pc, target):
                        return f"`@ray.remote class {cname}` in {display(m)}:{c['line']}", _has_async(view, pc)
    except (RecursionError, OSError):
        return None
    return None


def _has_async(view: ProjectView, cls: ProjectClass) -> bool:
    return any(fn.get("async") for c in view.index.mro(cls, view.deps) for fn in c.info["methods"].values())


def overrides(view: ProjectView, path: str, cls_name: str, method: str) -> list[ProjectFunction]:
    """The methods named ``method`` defined by subclasses of ``cls_name`` (of ``path``)
    elsewhere in the project: what a call to an abstract or stub method runs."""
    out: list[ProjectFunction] = []
    try:
        for pc, _ in subclasses(view, path, cls_name, method):
            fn = pc.info["methods"].get(method)
            if fn is not None and not fn.get("stub"):
                out.append(ProjectFunction(pc.module, pc.path, f"{pc.name}.{method}", fn, pc))
    except (RecursionError, OSError):
        return out
    return out
