"""The analyzer's libcst parse skips per-node validation (``shutdown_lint.unvalidated_parse``)
and pauses the cyclic garbage collector per file (``analyzer.gc_paused``): neither may
change the tree, and both must be undone afterwards."""

from __future__ import annotations

import gc
import threading

import libcst as cst
import pytest

from shutdown_lint import analyzer, unvalidated_parse
from tests.perf.test_walk import _sources


@pytest.mark.parametrize("name,code", list(_sources()), ids=lambda v: v if isinstance(v, str) and len(v) < 60 else "")
def test_parse_without_validation_builds_the_same_tree(name, code):
    fast = analyzer._parse_module(code.encode(), name)
    slow = cst.parse_module(code)  # validated: the analyzer's switch is off here
    assert fast.deep_equals(slow)
    assert fast.code == code


def test_validation_is_back_after_parse_and_after_a_syntax_error():
    analyzer._parse_module(b"x = 1\n", "ok.py")
    with pytest.raises(analyzer.AnalysisError):
        analyzer._parse_module(b"def (:\n", "bad.py")
    assert cst.CSTNode.__post_init__ is unvalidated_parse._original_post_init
    # a hand-built node that is invalid is still refused
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("not whitespace")


def test_concurrent_parses_leave_validation_on():
    """The language server parses in several threads at once: whatever the interleaving, the
    last parse to finish restores validation."""
    code = ("def f(x):\n    return [y for y in x if y]\n" * 400).encode()
    errors: list[BaseException] = []

    def parse_many() -> None:
        try:
            for _ in range(5):
                analyzer._parse_module(code, "t.py")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=parse_many) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert cst.CSTNode.__post_init__ is unvalidated_parse._original_post_init
    with pytest.raises(cst.CSTValidationError):
        cst.SimpleWhitespace("x")


def test_gc_paused_restores_the_collector():
    assert gc.isenabled()
    with analyzer.gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with analyzer.gc_paused():
            pass
        assert not gc.isenabled(), "a collector the caller disabled stays disabled"
    finally:
        gc.enable()


def test_lint_source_leaves_the_collector_on():
    from shutdown_lint import registry
    from shutdown_lint.settings import Settings

    settings = Settings(selected=tuple(sorted(registry.rules_by_code())))
    result = analyzer.lint_source(b"import asyncio\nasync def f():\n    asyncio.create_task(g())\n", "t.py",
                                  settings)
    assert result.diagnostics
    assert gc.isenabled()


def test_fixes_applied_per_statement_equal_the_whole_transform():
    """``edits.apply_fixes`` with the facts transforms only the top-level statements that
    hold an edit: for every fix of every rule example and of the example project, the code is
    the same as the whole module's transform."""
    from pathlib import Path

    from shutdown_lint import registry
    from shutdown_lint.analyzer import analyze
    from shutdown_lint.edits import apply_fixes
    from shutdown_lint.settings import Settings

    settings = Settings(selected=tuple(sorted(registry.rules_by_code())))
    root = Path(__file__).resolve().parents[2]
    sources = [ex.code for r in registry.all_rules() for ex in r.examples()[1]]
    sources += [p.read_text() for p in sorted((root / "examples").rglob("*.py"))]
    compared = 0
    for code in sources:
        analysis = analyze(code.encode(), "example.py", settings)
        if analysis is None:
            continue
        fixes = [f.fix for f in analysis.findings if f.fix is not None]
        for fix in fixes:
            assert apply_fixes(analysis.module, [fix], analysis.facts).code == \
                apply_fixes(analysis.module, [fix]).code
            compared += 1
        if len(fixes) > 1:
            assert apply_fixes(analysis.module, fixes, analysis.facts).code == apply_fixes(analysis.module, fixes).code
    assert compared > 50
