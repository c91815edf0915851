"""The candidate stage (shutdown_lint/candidates.py) must never lose a finding.

Every rule's examples and every file of the example project are linted with and
without the stage; the diagnostics must be identical. A rule whose invalid example
is ruled out by its own declaration is a bug in the declaration.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shutdown_lint import candidates, registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.candidates import FileText
from shutdown_lint.settings import Settings

RULES = registry.all_rules()
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _both_ways(source: bytes, path: str, settings: Settings):
    with_stage = lint_source(source, path, settings)
    with candidates.disabled():
        without = lint_source(source, path, settings)
    return with_stage, without


def _key(result):
    return (result.error, [d.to_dict() if hasattr(d, "to_dict") else vars(d) for d in result.diagnostics])


def _example_cases():
    for rule in RULES:
        valid, invalid = rule.examples()
        for i, ex in enumerate(invalid):
            yield pytest.param(rule, ex, id=f"{rule.code}-invalid-{i}")
        for i, ex in enumerate(valid):
            yield pytest.param(rule, ex, id=f"{rule.code}-valid-{i}")


@pytest.mark.parametrize("rule, example", list(_example_cases()))
def test_stage_keeps_example_findings(rule, example):
    settings = Settings(
        selected=(rule.code,),
        target_version=example.target_version or "py312",
        rule_options={rule.code: dict(example.options)} if example.options else {},
    )
    with_stage, without = _both_ways(example.code.encode(), "example.py", settings)
    assert _key(with_stage) == _key(without)


@pytest.mark.parametrize("rule", RULES, ids=[r.code for r in RULES])
def test_declaration_admits_every_invalid_example(rule):
    cond = candidates.declaration(rule)
    if cond is None:
        pytest.skip(f"{rule.code} has no candidate declaration (always parsed)")
    _, invalid = rule.examples()
    for ex in invalid:
        assert cond.holds(FileText(ex.code.encode())), f"{rule.code}: {cond!r} rules out\n{ex.code}"


def test_stage_keeps_example_project_findings():
    files = sorted(EXAMPLES.rglob("*.py"))
    assert files, f"no example project under {EXAMPLES}"
    settings = Settings(selected=tuple(r.code for r in RULES), target_version="py311")
    total = 0
    for path in files:
        with_stage, without = _both_ways(path.read_bytes(), str(path), settings)
        assert _key(with_stage) == _key(without), path
        total += len(without.diagnostics)
    assert total > 0, "the example project should have findings"


def test_every_registered_rule_has_a_declaration():
    missing = [r.code for r in RULES if candidates.declaration(r) is None]
    assert not missing, f"rules parsed for every file (no candidate declaration): {missing}"


def test_words_are_whole_identifiers():
    text = FileText(b"def __exit__(self):\n    pass  # exit_code\n")
    assert not candidates.Word("exit").holds(text)
    assert candidates.Word("exit").holds(FileText(b"import sys\nsys.exit(1)\n"))
    assert candidates.Word("exit").holds(FileText(b"from sys import exit as die\ndie(1)\n"))


def test_qualified_needs_root_module_except_for_types_and_builtins():
    ray_get = candidates.qualified("ray.get")
    assert ray_get.holds(FileText(b"import ray as r\nr.get(x)\n"))
    assert not ray_get.holds(FileText(b"d.get(x)\n"))
    loop_task = candidates.qualified("asyncio.AbstractEventLoop.create_task")
    assert loop_task.holds(FileText(b"import uvloop\nloop = uvloop.new_event_loop()\nloop.create_task(c())\n"))
    assert candidates.qualified("builtins.exit").holds(FileText(b"exit(1)\n"))


def test_options_set_explicitly_bypass_the_declaration():
    rule = next(r for r in RULES if candidates.declaration(r) is not None)
    plain = Settings(selected=(rule.code,))
    configured = Settings(selected=(rule.code,), rule_options={rule.code: {"anything": 1}})
    assert candidates.filter_rules(b"x = 1\n", [rule], plain) == []
    assert candidates.filter_rules(b"x = 1\n", [rule], configured) == [rule]


def test_words_in_comments_do_not_count_but_strings_keep_them_conservative():
    word = candidates.Word("exit")
    assert not word.holds(FileText(b"x = 1  # early exit here\n"))
    assert word.holds(FileText(b"s = '#'; exit(1)\n"))  # a quote before: cannot tell, keep it
    assert word.holds(FileText(b'x = """\n# text """; exit()\n'))
    assert not word.holds(FileText(b'x = """\n# text and exit\n"""\n'))


def test_candidate_module_is_cheap_to_import():
    import subprocess
    import sys

    code = "import sys, shutdown_lint.candidates; print('libcst' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
