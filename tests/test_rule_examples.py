"""Every rule's VALID/INVALID examples, run automatically (the Fixit way).

For each invalid example with ``fixed``: applying the fixes (unsafe included) gives
exactly ``fixed``, the result parses, the rule no longer fires, and a second fix run
changes nothing.
"""

from __future__ import annotations

import ast

import pytest

from shutdown_lint import registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.rule import DOC_SECTIONS
from shutdown_lint.settings import Settings

RULES = registry.all_rules()


def _settings(rule, example) -> Settings:
    return Settings(
        selected=(rule.code,),
        target_version=example.target_version or "py312",
        rule_options={rule.code: dict(example.options)} if example.options else {},
    )


def _cases(kind):
    for rule in RULES:
        valid, invalid = rule.examples()
        for i, ex in enumerate(valid if kind == "valid" else invalid):
            yield pytest.param(rule, ex, id=f"{rule.code}-{kind}-{i}")


@pytest.mark.parametrize("rule, example", list(_cases("valid")))
def test_valid_example_is_not_flagged(rule, example):
    result = lint_source(example.code.encode(), "example.py", _settings(rule, example))
    assert result.error is None, result.error
    assert result.diagnostics == [], [d.message for d in result.diagnostics]


@pytest.mark.parametrize("rule, example", list(_cases("invalid")))
def test_invalid_example_is_flagged_and_fixed(rule, example):
    settings = _settings(rule, example)
    result = lint_source(example.code.encode(), "example.py", settings)
    assert result.error is None, result.error
    codes = [d.code for d in result.diagnostics]
    assert rule.code in codes, f"{rule.code} did not fire on:\n{example.code}"
    if example.count is not None:
        assert codes.count(rule.code) == example.count
    if example.message_contains:
        assert any(example.message_contains in d.message for d in result.diagnostics)
    if example.fixed is None:
        assert all(d.fix is None for d in result.diagnostics), "example says no fix, but one was offered"
        return
    assert any(d.fix for d in result.diagnostics)
    outcome = fix_source(example.code.encode(), "example.py", settings, unsafe=True)
    fixed = outcome.source.decode()
    assert fixed == example.fixed, f"--- got\n{fixed}\n--- expected\n{example.fixed}"
    ast.parse(fixed)
    after = lint_source(outcome.source, "example.py", settings)
    assert not [d for d in after.diagnostics if d.fix], "fixable findings remain after --fix"
    again = fix_source(outcome.source, "example.py", settings, unsafe=True)
    assert again.source == outcome.source and again.applied == 0, "second --fix changed the file"


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_rule_metadata_and_documentation(rule):
    assert rule.summary and not rule.summary.endswith(".")
    doc = rule.documentation()
    for section in DOC_SECTIONS:
        assert f"## {section}" in doc, f"{rule.code} documentation lacks '## {section}'"
    valid, invalid = rule.examples()
    assert len(valid) >= 2 and len(invalid) >= 2, "each rule needs several valid and invalid examples"
    assert rule.triggers, "a rule without triggers defeats the pre-filter"
    for ex in [*valid, *invalid]:
        source = ex.code
        assert any(t in source for t in rule.triggers) or isinstance(ex, type(valid[0]) if valid else object), \
            f"{rule.code}: example contains none of the triggers {rule.triggers}"
    for ex in invalid:
        assert any(t in ex.code for t in rule.triggers), f"{rule.code}: invalid example escapes the pre-filter"


def test_codes_and_names_are_unique():
    codes = [r.code for r in RULES]
    names = [r.name for r in RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
