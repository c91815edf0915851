"""Cheap questions about a ``prefilter.ast_tree.Tree``'s names for the tier-2 conditions: each
answers what a ``Tree`` summary would, without building that summary when one name is asked."""

from __future__ import annotations

import ast
import weakref
from typing import Optional

from shutdown_lint.prefilter import ast_tree as T


def may_alias(tree, words: frozenset) -> bool:
    """Some set of last words that ``Tree.words`` reads for a name or an attribute through
    bindings (``Tree._aliases``) may hold one of ``words``. Its fixpoint only ever adds an import's
    last word, the word a bound value spells at its head (``head``), the words of other such sets
    and a factory's result types (``alias_seeds``): without one of ``words`` among those, no set
    holds it, and ``tree.may_call_any(call, names)`` for names whose last words are ``words`` holds
    only for a callee spelled with one of them (a name, an attribute) or of another shape."""
    return not words.isdisjoint(alias_seeds(tree))


_SEEDS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def alias_seeds(tree) -> frozenset:
    """The words ``may_alias`` reads, once per tree."""
    found = _SEEDS.get(tree)
    if found is None:
        out = {w for _, w in tree._imports}
        Name, Attribute, Call, Await = ast.Name, ast.Attribute, ast.Call, ast.Await
        add = out.add
        for bindings in (tree._bindings, tree._attr_bindings):
            for _, v in bindings:  # ``head(v)``, inline: most values are calls
                t = type(v)
                while t is Call or t is Await:
                    v = v.func if t is Call else v.value
                    t = type(v)
                if t is Name:
                    add(v.id)
                elif t is Attribute:
                    add(v.attr)
        for types in T._factory_results().values():
            out |= types
        found = _SEEDS[tree] = frozenset(out)
    return found


def head(value: ast.AST) -> Optional[str]:
    """The word ``Tree._words(value)`` starts from (``x`` of ``x``, ``m`` of ``a.m``, ``f`` of
    ``f(...)`` and of ``await f(...)``; the rest comes from the alias sets and the factory
    results), None when it gives none."""
    while True:
        t = type(value)
        if t is ast.Name:
            return value.id
        if t is ast.Attribute:
            return value.attr
        if t is ast.Await:
            value = value.value
        elif t is ast.Call:
            value = value.func
        else:
            return None


def binds_name(tree, name: str) -> bool:
    """``name in tree.named_bindings``, without building that set when it is not built yet: a
    def, a class, a ``name = value`` binding, then an import at the top level, then an import
    anywhere (``nested_statements``, as ``named_bindings`` reads them)."""
    built = tree.__dict__.get("named_bindings")  # a ``cached_property``: there once built
    if built is not None:
        return name in built
    if any(fn.name == name for fn in tree.functions) or any(c.name == name for c in tree.classes):
        return True
    if any(bound == name for bound, _ in tree.value_bindings):
        return True
    body = tree.module.body
    return _imports(body, name) or _imports(T.nested_statements(body), name)


def _imports(stmts, name: str) -> bool:
    for st in stmts:
        t = type(st)
        if t is ast.Import:
            if any((a.asname or a.name.split(".")[0]) == name for a in st.names):
                return True
        elif t is ast.ImportFrom:
            if any((a.asname or a.name) == name for a in st.names):
                return True
    return False


def may_call_word(tree, call: ast.Call, lasts: frozenset, aliased: bool) -> bool:
    """A necessary condition of ``tree.may_call_any(call, names)`` for dotted ``names`` whose last
    words are ``lasts``: the callee's words (``Tree.words``) meet ``lasts`` (an attribute callee:
    its name, or what ``x.attr = ...`` bindings make it). ``aliased``: some alias may hold one of
    ``lasts`` (``may_alias``); without one, a name or an attribute callee meets them only when
    spelled with one of them, and the module's aliases are not read. Exact for a name callee."""
    func = call.func
    t = type(func)
    if t is ast.Attribute:
        return func.attr in lasts or (aliased and not lasts.isdisjoint(tree.aliases_of_attr(func.attr)))
    if t is ast.Name:
        return func.id in lasts or (aliased and not lasts.isdisjoint(tree.words(func)))
    return not lasts.isdisjoint(tree.words(func))
