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


def _add_imports(module: cst.Module, context: CodemodContext) -> cst.Module:
    # AddImportsVisitor only reads the leading docstring/import block and inserts right
    # after it, but copies and walks the whole module (a minute on a 50k-line file):
    # run it on the head (that block and the statement after it) and splice the tail back.
    body = list(module.body)
    k = 0
    while k < len(body) and _is_header_statement(body[k]):
        k += 1
    head, tail = body[: k + 1], body[k + 1:]
    done = AddImportsVisitor(context).transform_module(module.with_changes(body=head))
    return done.with_changes(body=[*done.body, *tail])


def text_edits(old: str, new: str) -> list[dict]:
    """Line-granular text edits turning ``old`` into ``new`` (1-based, end exclusive at
    column 1 of ``end_line``), for JSON/SARIF output."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        out.append(
            {
                "content": "".join(b[j1:j2]),
                "location": {"row": i1 + 1, "column": 1},
                "end_location": {"row": i2 + 1, "column": 1},
            }
        )
    return out
