"""The harness the test_shd*_ast.py files share: lint one source with the ast path on and off and compare.

Imported as `from ast_both_ways import ...` (pytest puts tests/rules on sys.path; no __init__.py here, it would
shadow the `rules` package).
"""
from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, lint_source


def every_file_a_candidate(monkeypatch) -> None:
    """The candidate tiers pass every rule through (the tree is still parsed for the ast path)."""
    monkeypatch.setattr(analyzer, "prefilter", lambda source, rules, present=None: list(rules))
    monkeypatch.setattr(analyzer.candidate_stage, "filter_rules", lambda source, rules, settings, present=None: list(rules))
    monkeypatch.setattr(analyzer.candidate_stage, "filter_rules_by_tree",
                        lambda tree, rules, settings, project: list(rules))


def key(result):
    """What must be equal both ways: diagnostics (fix edits emptied), error, warnings, deps, parsed."""
    rows = []
    for d in result.diagnostics:
        row = d.to_dict()
        if row.get("fix"):
            row["fix"] = {**row["fix"], "edits": []}
        rows.append(row)
    return (result.error, rows, result.warnings, result.deps, result.parsed)


def both_ways(source: bytes, monkeypatch, settings, path: str = "m.py", ast_path: bool = True):
    """The result with AST_MODE on, after asserting it equals AST_MODE off (and, if ast_path, took STAGE_AST)."""
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    on = lint_source(source, path, settings, fix_edits=False)
    monkeypatch.setattr(analyzer, "AST_MODE", "off")
    off = lint_source(source, path, settings, fix_edits=False)
    if ast_path:
        assert on.stage == STAGE_AST and off.stage != STAGE_AST
    assert key(on) == key(off)
    return on
