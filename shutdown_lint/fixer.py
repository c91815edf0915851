"""Applying fixes to one file until nothing fixable is left.

Each pass analyses the current text, takes the applicable fixes that do not conflict,
applies them in one transform, and keeps the result only if it still parses and the
fixed findings are gone (no rule's count grows). A batch that fails is retried fix by
fix so one bad fix cannot block the others. Conflicting fixes wait for the next pass.
"""

from __future__ import annotations

import ast
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Optional

from .analyzer import Analysis, AnalysisError, analyze, gc_paused, is_applicable
from .edits import apply_fixes, choose_batch
from .rule import Finding
from .settings import Settings

MAX_PASSES = 10


@dataclass
class FixOutcome:
    source: bytes
    applied: int = 0
    warnings: list[str] = field(default_factory=list)


def _counts(analysis: Optional[Analysis]) -> Counter:
    if analysis is None:
        return Counter()
    return Counter(f.code for f in analysis.active_findings())


def _valid_python(data: bytes, path: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _try(analysis: Analysis, batch: list[Finding], settings: Settings, path: str):
    """Apply ``batch``; return (new bytes, new analysis) or None if it must be rejected."""
    try:
        new_module = apply_fixes(analysis.module, [f.fix for f in batch], analysis.facts)  # type: ignore[misc]
        data = new_module.bytes
    except Exception:
        return None
    if not _valid_python(data, path) and _valid_python(analysis.module.bytes, path):
        # this Python parsed the original but not the fix; when it rejects both (syntax newer
        # than this Python, docs/cli.md), libcst judges the fixed code in analyze() below
        return None
    try:
        after = analyze(data, path, settings)
    except AnalysisError:
        return None
    before = _counts(analysis)
    now = _counts(after)
    fixed = Counter(f.code for f in batch)
    for code in set(before) | set(now):
        if now[code] > before[code] - fixed[code]:
            return None
    return data, after


def fix_source(source: bytes, path: str, settings: Settings, *, unsafe: bool = False) -> FixOutcome:
    """Apply safe (and with ``unsafe``, unsafe) fixes. Raises ``AnalysisError`` when the
    original does not parse."""
    try:
        with gc_paused():
            return _fix_source(source, path, settings, unsafe)
    except RecursionError:  # a tree deep enough to pass the parser but not libcst's rendering
        raise AnalysisError(f"{path}:1:1: file too deeply nested to fix (recursion limit)") from None


def _fix_source(source: bytes, path: str, settings: Settings, unsafe: bool) -> FixOutcome:
    outcome = FixOutcome(source)
    analysis = analyze(source, path, settings)
    rejected: set[tuple[str, str]] = set()
    for _ in range(MAX_PASSES):
        if analysis is None:
            break
        live = analysis.active_findings()
        fixable = [f for f in live if is_applicable(f, unsafe)
                   and (f.code, analysis.module.code_for_node(f.node)) not in rejected]
        if not fixable:
            break
        by_fix = {id(f.fix): f for f in fixable}
        batch_fixes = choose_batch([f.fix for f in fixable], analysis.facts)  # type: ignore[misc]
        batch = [by_fix[id(fx)] for fx in batch_fixes]
        attempt = _try(analysis, batch, settings, path)
        if attempt is None:
            # find the culprits one by one
            attempt = None
            for finding in batch:
                single = _try(analysis, [finding], settings, path)
                if single is None:
                    pos = analysis.position(finding.node).start
                    rejected.add((finding.code, analysis.module.code_for_node(finding.node)))
                    outcome.warnings.append(
                        f"{path}:{pos.line}:{pos.column + 1}: {finding.code} fix skipped: "
                        "the fixed code would not parse or would not remove the finding"
                    )
                else:
                    attempt = single
                    batch = [finding]
                    break
            if attempt is None:
                continue
        outcome.source, analysis = attempt
        outcome.applied += len(batch)
    return outcome
