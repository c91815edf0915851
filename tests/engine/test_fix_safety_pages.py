"""Every rule with a fix says, in its page's "## Fix safety" section, the labels its fixes use
(docs/fix-safety.md): "Safe" where some fix is safe, "Unsafe" where some fix is unsafe, and not
the other word when all its fixes carry one label. The contract itself exists and is linked."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
RULES = sorted(registry.all_rules(), key=lambda r: r.code)


def _cls(rule) -> type:
    return rule if isinstance(rule, type) else type(rule)


def _labels_in_source(rule) -> set[str]:
    """The labels the rule module can produce: every ``Fix.safe`` / ``Fix.unsafe`` it names."""
    return set(re.findall(r"\bFix\.(safe|unsafe)\b", inspect.getsource(inspect.getmodule(_cls(rule)))))


def _section(rule) -> str | None:
    doc = inspect.getdoc(_cls(rule)) or ""
    found = re.search(r"^## Fix safety\n(.*?)(?=^## |\Z)", doc, re.S | re.M)
    return found.group(1) if found else None


@pytest.mark.parametrize("rule", [r for r in RULES if _labels_in_source(r)], ids=lambda r: r.code)
def test_fix_safety_section_names_the_labels_the_fixes_use(rule):
    labels = _labels_in_source(rule)
    section = _section(rule)
    assert section, f"{rule.code}: its page has no '## Fix safety' section"
    says_safe = re.search(r"\bSafe\b", section) is not None
    says_unsafe = re.search(r"\bUnsafe\b", section) is not None
    assert says_safe == ("safe" in labels), f"{rule.code}: fixes {sorted(labels)}, section says Safe: {says_safe}"
    assert says_unsafe == ("unsafe" in labels), \
        f"{rule.code}: fixes {sorted(labels)}, section says Unsafe: {says_unsafe}"


@pytest.mark.parametrize("rule", [r for r in RULES if _labels_in_source(r)], ids=lambda r: r.code)
def test_the_examples_fixes_carry_only_labels_the_page_names(rule):
    """The labels found in the source are the ones the fixes really get (on the examples)."""
    labels = _labels_in_source(rule)
    seen = set()
    for example in rule.invalid:
        code = getattr(example, "code", example)
        settings = Settings(selected=(rule.code,), target_version=getattr(example, "target_version", None) or "py313")
        for found in lint_source(code.encode(), "example.py", settings).diagnostics:
            if found.fix:
                seen.add(found.fix["applicability"])
    assert seen <= labels, f"{rule.code}: examples' fixes are {sorted(seen)}, the module names {sorted(labels)}"


def test_the_contract_exists_and_is_linked():
    contract = ROOT / "docs" / "fix-safety.md"
    assert contract.is_file()
    text = contract.read_text()
    for term in ("hazard's path", "--unsafe-fixes", "import runtime_guard", "one cancel, one wait"):
        assert term in text, term
    assert "docs/fix-safety.md" in (ROOT / "README.md").read_text()
    cli = (ROOT / "docs" / "cli.md").read_text()
    if "--unsafe-fixes" in cli:
        assert "fix-safety.md" in cli
