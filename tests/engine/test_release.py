"""A finished analysis frees its libcst tree by reference counting (``Analysis.release``).

The facts (functions and their bindings point at each other), the rules (they hold their
findings, which hold them) and the collector (its hook tables hold its own bound methods)
make reference cycles, and a cycle that reaches the module keeps every node of it alive
until the cyclic garbage collector walks them all: ~10% of a cold run over the reference
corpus. These tests fail when a rule or a fact keeps the tree in a cycle again: the module
must be gone the moment the analysis is released and dropped, with the collector off.
"""

from __future__ import annotations

import gc
import pathlib

import libcst as cst
import pytest

from shutdown_lint import analyzer, registry
from shutdown_lint.settings import Settings

RULES = registry.all_rules()
# the candidate stages off: every rule runs on every example
ALL = Settings(tuple(sorted(r.code for r in RULES)), target_version="py312", prefilter=False)
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "rollout_project"


def _sources():
    for rule in RULES:
        valid, invalid = rule.examples()
        for i, ex in enumerate(invalid):
            yield pytest.param(ex.code, id=f"{rule.code}-invalid-{i}")
        for i, ex in enumerate(valid):
            yield pytest.param(ex.code, id=f"{rule.code}-valid-{i}")
    for path in sorted(EXAMPLES.rglob("*.py")):
        yield pytest.param(path.read_text(), id=f"example-{path.name}")


def _alive(module_id: int, generation: "int | None" = None) -> bool:
    """The module (libcst nodes take no weak references) is still among the live objects (of
    ``generation`` only, if given)."""
    objects = gc.get_objects() if generation is None else gc.get_objects(generation=generation)
    return any(id(o) == module_id for o in objects if type(o) is cst.Module)


def _collections() -> list:
    return [s["collections"] for s in gc.get_stats()]


@pytest.mark.parametrize("code", list(_sources()))
def test_the_tree_is_freed_without_the_cycle_collector(code):
    gc.disable()
    try:
        collections = _collections()
        analysis = analyzer.analyze(code.encode(), "example.py", ALL)
        assert analysis is not None
        module_id = id(analysis.module)
        # With the collector off no object leaves the youngest generation: the module is looked for
        # there (a scan of every live object costs ~0.3 s of CPU in a worker that collected the whole
        # suite, 373 times); where it is not there (another GC design), among all objects.
        generation = 0 if _alive(module_id, generation=0) else None
        # what lint_source does with an analysis: diagnostics (positions, fix edits), then release
        [analysis.diagnostic(f, with_edits=True) for f in analysis.active_findings()]
        analysis.release()
        del analysis
        assert _collections() == collections, "a collection ran: the check below would prove nothing"
        assert not _alive(module_id, generation), "a reference cycle still holds the module's tree"
    finally:
        gc.enable()


def test_the_check_can_fail():
    """Without ``release`` the facts' cycles keep the tree: the test above would notice."""
    code = "import asyncio\n\nasync def main():\n    asyncio.create_task(work())\n\nasync def work():\n    pass\n"
    gc.collect()
    gc.disable()
    try:
        analysis = analyzer.analyze(code.encode(), "example.py", ALL)
        module_id = id(analysis.module)
        del analysis
        assert _alive(module_id) and _alive(module_id, generation=0)
        gc.collect()
        assert not _alive(module_id)
    finally:
        gc.enable()


def test_lint_source_releases_and_reports_the_same():
    code = (EXAMPLES / "rollout" / "driver.py").read_text()
    first = analyzer.lint_source(code.encode(), "driver.py", ALL)
    again = analyzer.lint_source(code.encode(), "driver.py", ALL)
    assert first.diagnostics and first.to_dict() == again.to_dict()
