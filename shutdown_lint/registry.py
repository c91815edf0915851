"""Finding the rules (``shutdown_lint.rules``, i.e. the repository's ``rules/``) and
resolving ``--select``/``--ignore`` selectors (codes, prefixes such as ``SHD1``, names)."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache
from typing import Iterable

from .rule import CODE_RE, NAME_RE, Rule


class UnknownSelector(ValueError):
    pass


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    import shutdown_lint.rules as pkg

    found: dict[str, type[Rule]] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and getattr(obj, "code", None):
                if obj.__module__ != module.__name__:
                    continue  # imported from elsewhere
                if obj.code in found and found[obj.code] is not obj:
                    raise RuntimeError(f"two rules share the code {obj.code}: {found[obj.code]} and {obj}")
                assert CODE_RE.match(obj.code), obj.code
                assert NAME_RE.match(obj.name), obj.name
                found[obj.code] = obj
    return tuple(found[c] for c in sorted(found))


def rules_by_code() -> dict[str, type[Rule]]:
    return {r.code: r for r in all_rules()}


def names_to_codes() -> dict[str, str]:
    return {r.name: r.code for r in all_rules()}


def expand(selector: str) -> set[str]:
    """Codes matched by one selector: ``ALL``, a code, a code prefix or a rule name."""
    sel = selector.strip()
    codes = rules_by_code()
    if sel.upper() == "ALL":
        return set(codes)
    by_name = names_to_codes()
    if sel.lower() in by_name:
        return {by_name[sel.lower()]}
    up = sel.upper()
    if up.startswith("SHD"):
        matched = {c for c in codes if c.startswith(up)}
        if matched:
            return matched
    raise UnknownSelector(f"unknown rule selector {selector!r} (expected a code like SHD201, a prefix like SHD2, "
                          f"a rule name like sys-exit-in-task, or ALL)")


def resolve(select: Iterable[str] | None, ignore: Iterable[str] = (), extend_select: Iterable[str] = ()) -> tuple[str, ...]:
    chosen: set[str] = set()
    for s in select if select is not None else ["ALL"]:
        chosen |= expand(s)
    for s in extend_select:
        chosen |= expand(s)
    for s in ignore:
        chosen -= expand(s)
    return tuple(sorted(chosen))
