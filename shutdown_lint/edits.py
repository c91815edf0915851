"""Applying fixes to a libcst module: conflict detection and the one transform.

A fix is a list of node-level edits (``rule.Replace``, ``InsertBefore``, ``InsertAfter``,
``AddImport``). Several fixes are applied together in one transform when they do not
conflict; conflicting ones wait for the next pass (see ``fixer.py``).
"""

from __future__ import annotations

import difflib
from typing import Iterable, Sequence

import libcst as cst
from libcst.codemod import CodemodContext
from libcst.codemod.visitors import AddImportsVisitor

from .facts import ModuleFacts
from .facts.tree import chain_from_top
from .rule import AddImport, Edit, Fix, InsertAfter, InsertBefore, Replace


def _targets(edit: Edit) -> tuple[str, cst.CSTNode | None]:
    if isinstance(edit, Replace):
        return "replace", edit.node
    if isinstance(edit, (InsertBefore, InsertAfter)):
        return "insert", edit.anchor
    return "import", None


def conflicts(a: Fix, b: Fix, facts: ModuleFacts) -> bool:
    """Two fixes conflict when one replaces a node that contains (or is) a node the other
    edits: the replacement was built from the original subtree and would drop the edit."""
    for ea in a.edits:
        ka, na = _targets(ea)
        if na is None:
            continue
        for eb in b.edits:
            kb, nb = _targets(eb)
            if nb is None:
                continue
            if ka == "insert" and kb == "insert":
                continue
            if na is nb:
                return True
            if ka == "replace" and facts.is_ancestor(na, nb):
                return True
            if kb == "replace" and facts.is_ancestor(nb, na):
                return True
    return False


def choose_batch(fixes: Sequence[Fix], facts: ModuleFacts) -> list[Fix]:
    """Greedy, in the given (source) order: take each fix that conflicts with none taken."""
    batch: list[Fix] = []
    for fix in fixes:
        if all(not conflicts(fix, other, facts) for other in batch):
            batch.append(fix)
    return batch


class _Apply(cst.CSTTransformer):
    def __init__(self, fixes: Iterable[Fix]) -> None:
        self.replace: dict[cst.CSTNode, object] = {}
        self.before: dict[cst.CSTNode, list[cst.BaseStatement]] = {}
        self.after: dict[cst.CSTNode, list[cst.BaseStatement]] = {}
        for fix in fixes:
            for e in fix.edits:
                if isinstance(e, Replace):
                    self.replace[e.node] = e.new
                elif isinstance(e, InsertBefore):
                    self.before.setdefault(e.anchor, []).extend(e.statements)
                elif isinstance(e, InsertAfter):
                    self.after.setdefault(e.anchor, []).extend(e.statements)

    def pending(self, root: cst.CSTNode) -> bool:
        """Some edit targets ``root`` itself (it must be transformed from its parent)."""
        return root in self.replace or root in self.before or root in self.after

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        result = self.replace.get(original_node, updated_node)
        if result is not updated_node:
            result = _keep_commented_parens(original_node, result)
        before = self.before.get(original_node)
        after = self.after.get(original_node)
        if before or after:
            if isinstance(result, cst.FlattenSentinel):
                middle = list(result.nodes)
            elif isinstance(result, cst.RemovalSentinel):
                middle = []
            else:
                middle = [result]
            if before and middle and isinstance(middle[0], cst.BaseStatement):
                # comments that sat above the anchor stay above the inserted lines
                first = middle[0]
                lines = getattr(first, "leading_lines", ())
                if lines:
                    middle[0] = first.with_changes(leading_lines=())
                    before = [before[0].with_changes(leading_lines=tuple(lines) + tuple(before[0].leading_lines))] + before[1:]
            return cst.FlattenSentinel([*(before or []), *middle, *(after or [])])
        return result


def _keep_commented_parens(original: cst.CSTNode, new: object) -> object:
    """Parentheses belong to the expression node they wrap, so replacing ``(\n f()  # why\n)``
    would drop them and the comments inside; carry them over to a paren-less replacement."""
    lpar = getattr(original, "lpar", None)
    if not lpar or not isinstance(new, cst.CSTNode) or not hasattr(new, "lpar") or new.lpar:
        return new
    empty = cst.Module([])
    if not any("#" in empty.code_for_node(p) for p in (*lpar, *original.rpar)):  # type: ignore[attr-defined]
        return new
    try:
        return new.with_changes(lpar=lpar, rpar=original.rpar)  # type: ignore[attr-defined]
    except Exception:
        return new


def apply_fixes(module: cst.Module, fixes: Sequence[Fix], facts: ModuleFacts | None = None) -> cst.Module:
    """``module`` with ``fixes`` applied. With the module's ``facts`` (its parent map), only
    the top-level statements that hold an edited node are transformed: ``CSTNode.visit``
    rebuilds every node it passes, ~5x a parse, and rendering one fix's edits for the JSON
    and SARIF output paid that for the whole file once per finding."""
    new = _transform(module, _Apply(fixes), _touched(module, fixes, facts))
    imports = [e for fix in fixes for e in fix.edits if isinstance(e, AddImport)]
    if imports:
        context = CodemodContext()
        for imp in imports:
            AddImportsVisitor.add_needed_import(context, imp.module, imp.obj, imp.asname)
        new = _add_imports(new, context)
    return new


def _touched(module: cst.Module, fixes: Sequence[Fix], facts: ModuleFacts | None) -> set[int] | None:
    """Indexes in ``module.body`` of the statements holding an edited node; None: all."""
    if facts is None:
        return None
    index = {id(stmt): i for i, stmt in enumerate(module.body)}
    out: set[int] = set()
    for fix in fixes:
        for e in fix.edits:
            _, node = _targets(e)
            if node is None:
                continue  # an import: added after the transform
            chain = chain_from_top(module, facts.parent, node)
            if chain is None or id(chain[0]) not in index:
                return None  # not under a top-level statement (the module itself, its header)
            out.add(index[id(chain[0])])
    return out


def _transform(module: cst.Module, apply: "_Apply", touched: set[int] | None) -> cst.Module:
    if touched is None:
        return module.visit(apply)
    body: list[cst.BaseStatement] = []
    for i, stmt in enumerate(module.body):
        if i in touched:
            # a module of one statement, so that an insertion next to a top-level statement
            # flattens into the module's body as in the whole transform
            body.extend(cst.Module(body=[stmt]).visit(apply).body)
        else:
            body.append(stmt)
    return module.with_changes(body=body)


def _is_header_statement(stmt: cst.CSTNode) -> bool:
    """A docstring or an import: what AddImportsVisitor reads and inserts after."""
    if not isinstance(stmt, cst.SimpleStatementLine):
        return False
    return all(isinstance(s, (cst.Import, cst.ImportFrom))
               or isinstance(s, cst.Expr) and isinstance(s.value, (cst.SimpleString, cst.ConcatenatedString))
               for s in stmt.body)


def _header_end(body: list) -> int:
    """Index of the first statement after the leading docstring/import block."""
    k = 0
    while k < len(body) and _is_header_statement(body[k]):
        k += 1
    return k


def _add_imports(module: cst.Module, context: CodemodContext) -> cst.Module:
    # AddImportsVisitor only reads the leading docstring/import block and inserts right
    # after it, but copies and walks the whole module (a minute on a 50k-line file):
    # run it on the head (that block and the statement after it) and splice the tail back.
    body = list(module.body)
    k = _header_end(body)
    head, tail = body[: k + 1], body[k + 1:]
    done = _with_imports(context, module.with_changes(body=head))
    return done.with_changes(body=[*done.body, *tail])


def _with_imports(context: CodemodContext, module: cst.Module) -> cst.Module:
    """``AddImportsVisitor`` on ``module``, then each import it added after a relative import
    (``from . import x``) moved up to just before the first one: with the absolute imports,
    where isort and ruff's ``I001`` want it (the visitor appends to the end of the block)."""
    done = AddImportsVisitor(context).transform_module(module)
    body = list(done.body)
    k = _header_end(body)
    first_relative = next((i for i in range(k) if _is_relative_import(body[i])), None)
    if first_relative is None:
        return done
    # the visitor rebuilds the statements it walks: what it added is told by its text
    before: dict[str, int] = {}
    for stmt in module.body:
        key = _bare_code(stmt)
        before[key] = before.get(key, 0) + 1
    moved = []
    for stmt in body[first_relative + 1:k]:
        key = _bare_code(stmt)
        if before.get(key):
            before[key] -= 1
        elif _is_import(stmt) and not _is_relative_import(stmt):
            moved.append(stmt)
    if not moved:
        return done
    keep = [stmt for stmt in body if not any(stmt is m for m in moved)]
    relative = keep[first_relative]
    moved = [m.with_changes(leading_lines=()) for m in moved]
    if first_relative == 0 or not _is_import(keep[first_relative - 1]):
        # the relative import opened the block (after the docstring): the moved one takes its place
        moved[0] = moved[0].with_changes(leading_lines=relative.leading_lines)
        keep[first_relative] = relative.with_changes(leading_lines=[cst.EmptyLine()])
    elif not relative.leading_lines:  # isort: a blank line between the absolute and the relative imports
        keep[first_relative] = relative.with_changes(leading_lines=[cst.EmptyLine()])
    return done.with_changes(body=[*keep[:first_relative], *moved, *keep[first_relative:]])


def _bare_code(stmt: cst.CSTNode) -> str:
    """A top-level statement's text without the blank lines and comments above it."""
    if isinstance(stmt, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        stmt = stmt.with_changes(leading_lines=())
    return cst.Module(body=[stmt]).code  # type: ignore[list-item]


def _is_import(stmt: cst.CSTNode) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and bool(stmt.body) \
        and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)


def _is_relative_import(stmt: cst.CSTNode) -> bool:
    return _is_import(stmt) and any(isinstance(s, cst.ImportFrom) and s.relative for s in stmt.body)


def fix_text_edits(module: cst.Module, text: str, fixes: Sequence[Fix], facts: ModuleFacts, positions,
                   heads: dict | None = None) -> list[dict]:
    """``text_edits(text, apply_fixes(...).code)``, rendering only what changes when it can.
    A fix's edits sit in one function or block of a large file, yet the whole transform,
    render and diff cost ~0.7 s per finding on a 4,700-line file (the JSON and SARIF output
    and the language server render every fix). Here the innermost compound statement
    holding every edited node is transformed and rendered alone, in its place in the source
    text (``Positions.span`` checks the place), imports are added to the import block with a
    stand-in for the statement after it (``heads``: the new import blocks of this module by
    the imports added, kept by the caller across the findings of one file), and each changed
    region is diffed alone. Anything it cannot place takes the whole-module path."""
    patches = _patches(module, text, fixes, facts, positions, {} if heads is None else heads)
    if patches is None:
        return text_edits(text, apply_fixes(module, fixes, facts).code)
    out: list[dict] = []
    for start, end, new in patches:
        before = text.count("\n", 0, start)  # the regions start at line starts
        for e in text_edits(text[start:end], new):
            e["location"]["row"] += before
            e["end_location"]["row"] += before
            out.append(e)
    return out


def _patches(module, text, fixes, facts, positions, heads: dict) -> list[tuple[int, int, str]] | None:
    """(start, end, new text) of the regions of ``text`` the fixes change, in order, each
    from a line start to a line start; None when they cannot be placed."""
    edits = [e for fix in fixes for e in fix.edits]
    nodes = [n for e in edits if (n := _targets(e)[1]) is not None]
    imports = [e for e in edits if isinstance(e, AddImport)]
    if not nodes or positions is None or not hasattr(positions, "span"):
        return None
    unit = None
    for candidate in _units(module, facts, nodes):
        found = positions.span(candidate)
        if found is not None:
            unit, (start, end, indents) = candidate, found
            break
    if unit is None:
        return None
    apply = _Apply(fixes)
    new_unit = unit.with_changes(leading_lines=()).visit(apply)
    if not isinstance(new_unit, cst.CSTNode) or apply.pending(unit):
        return None
    from .positions import render

    patches = [(start, end, render(module, new_unit, indents))]
    if imports:
        key = tuple(sorted({(i.module, i.obj or "", i.asname or "") for i in imports}))
        if key not in heads:
            heads[key] = _import_head(module, text, imports)
        found_head = heads[key]
        if found_head is None:
            return None
        head_end, head = found_head
        if head_end > start:
            return None
        patches.insert(0, (0, head_end, head))
    return patches


def _units(module: cst.Module, facts: ModuleFacts, nodes: list) -> list:
    """Compound statements that hold every edited node (none of them edited itself),
    innermost first."""
    chains = []
    for node in nodes:
        chain = chain_from_top(module, facts.parent, node)
        if chain is None:
            return []
        chains.append(chain)
    common = []
    for level in zip(*chains):
        if any(n is not level[0] for n in level):
            break
        common.append(level[0])
    edited = {id(n) for n in nodes}
    return [n for n in reversed(common) if isinstance(n, cst.BaseCompoundStatement) and id(n) not in edited]


def _import_head(module: cst.Module, text: str, imports: list) -> tuple[int, str] | None:
    """(end, new text) of the module's import block with ``imports`` added: what
    ``_add_imports`` does to ``text[:end]``, computed with a ``pass`` standing in for the
    statement after the block (its leading lines kept), which AddImportsVisitor only reads
    as the first statement that is not an import (and gives an empty line above)."""
    body = list(module.body)
    k = _header_end(body)
    if k >= len(body):
        return None
    after = body[k]
    leading = tuple(getattr(after, "leading_lines", ()))
    # (``has_trailing_newline``: a file whose last line has no newline must not shorten the block)
    block = module.with_changes(body=body[:k], footer=(), has_trailing_newline=True)
    old = block.code + "".join(module.code_for_node(x) for x in leading)
    if not text.startswith(old):
        return None
    stand_in = cst.SimpleStatementLine([cst.Pass()], leading_lines=leading)
    context = CodemodContext()
    for imp in imports:
        AddImportsVisitor.add_needed_import(context, imp.module, imp.obj, imp.asname)
    done = _with_imports(context, block.with_changes(body=[*body[:k], stand_in]))
    last = done.body[-1] if done.body else None
    if not isinstance(last, cst.SimpleStatementLine) or not last.with_changes(leading_lines=()).deep_equals(
            stand_in.with_changes(leading_lines=())):
        return None
    new = done.with_changes(body=done.body[:-1]).code + "".join(module.code_for_node(x) for x in last.leading_lines)
    return len(old), new


def text_edits(old: str, new: str) -> list[dict]:
    """Line-granular text edits turning ``old`` into ``new`` (1-based, end exclusive at
    column 1 of ``end_line``), for JSON/SARIF output. Lines common to both ends are
    skipped before the diff (on a large file the diff of the whole text cost ~0.15 s)."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    lo = 0
    while lo < len(a) and lo < len(b) and a[lo] == b[lo]:
        lo += 1
    hi = 0
    while hi < len(a) - lo and hi < len(b) - lo and a[-1 - hi] == b[-1 - hi]:
        hi += 1
    out = []
    matcher = difflib.SequenceMatcher(None, a[lo:len(a) - hi], b[lo:len(b) - hi], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out.append(
            {
                "content": "".join(b[lo + j1:lo + j2]),
                "location": {"row": lo + i1 + 1, "column": 1},
                "end_location": {"row": lo + i2 + 1, "column": 1},
            }
        )
    return out
