"""The README stays true: its rule table matches the registry, and its two set-up commands
are the ones CI runs. ``python tests/test_readme.py`` rewrites the rule table."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from shutdown_lint import registry

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START, END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"


def rules_table() -> str:
    rows = ["| code | name | what it catches | autofix |", "| --- | --- | --- | --- |"]
    for rule in registry.all_rules():
        rows.append(f"| {rule.code} | `{rule.name}` | {rule.summary} | {'yes' if rule.has_fix() else 'no'} |")
    return "\n".join(rows)


def _section(text: str) -> str:
    return text.split(START, 1)[1].split(END, 1)[0].strip()


def test_rule_table_matches_registry():
    assert _section(README.read_text()) == rules_table(), "run `python tests/test_readme.py` to refresh the table"


def test_setup_commands_are_the_ones_ci_runs():
    text = README.read_text()
    commands = re.findall(r"^python -m pip install .*$", text, re.M)
    assert commands[:2] == [
        "python -m pip install -e . && shutdown-lint examples/rollout_project",
        'python -m pip install -e ./packaging/runtime -e ".[test]" && python -m pytest',
    ]
    ci = (ROOT / ".ci" / "run").read_text()
    assert commands[1] in ci


def test_every_rule_has_a_behaviour_test():
    names = {p.name for p in (ROOT / "tests" / "behaviour").glob("test_shd*.py")}
    for rule in registry.all_rules():
        prefix = f"test_{rule.code.lower()}_"
        assert any(n.startswith(prefix) for n in names), f"{rule.code} has no behaviour test in tests/behaviour/"


def test_example_output_shown_is_what_command_1_prints():
    """The README's and docs/cli.md's copies of command 1's last lines are what it prints today."""
    import subprocess

    run = subprocess.run([sys.executable, "-m", "shutdown_lint", "--no-cache", "--output-format", "concise",
                          "examples/rollout_project"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    hint, summary = run.stdout.strip().splitlines()[-2:]
    for doc in (README, ROOT / "docs" / "cli.md"):
        text = doc.read_text()
        assert f"{hint}\n{summary}\n" in text, f"{doc.name}: refresh the example's last lines: {hint!r} {summary!r}"


if __name__ == "__main__":
    text = README.read_text()
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{START}\n{rules_table()}\n{END}{tail}")
    sys.exit(0)
