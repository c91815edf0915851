"""Bounded property-based fuzzing of the analyzer and the fixer (the long run is
``bench/fuzz_long.py``).

Properties, for every rule selected and the pre-filter off (so every rule walks every
generated tree): linting never raises; an error diagnostic is one line and only for
input that does not parse; ``fix_source(unsafe=True)`` output parses (ast and libcst),
keeps every comment, is idempotent, and leaves no fixable finding it did not report
as skipped. See ``programs.check``.
"""

from __future__ import annotations

import hypothesmith
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from shutdown_lint.analyzer import lint_source

from .programs import SETTINGS, SETTINGS_PY310, check, hazard_modules, hazard_program, is_valid_python

# Bounded for CI: ~4 minutes in total for this directory. No shrinking database on disk.
_CI = settings(
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
    phases=[Phase.explicit, Phase.generate, Phase.shrink],
)


def ci(max_examples: int) -> settings:
    return settings(_CI, max_examples=max_examples)


def _assert_holds(data: bytes, **kw) -> None:
    report = check(data, **kw)
    assert not report.problems, "\n\n".join(report.problems) + "\n\n--- program\n" + data.decode("utf-8", "replace")


@pytest.mark.timeout(600)
@ci(80)
@given(hazard_program())
def test_generated_hazard_programs_keep_every_property(data):
    _assert_holds(data)


@pytest.mark.timeout(400)
@ci(30)
@given(hazard_program())
def test_generated_programs_with_py310_target(data):
    # fixes with fix_min_target are withheld: the properties hold all the same
    _assert_holds(data, settings=SETTINGS_PY310)


@pytest.mark.timeout(400)
@ci(60)
@given(hypothesmith.from_node())
def test_hypothesmith_from_node(source):
    # from_node builds libcst trees, so the code always parses
    _assert_holds(source.encode("utf-8"))


@pytest.mark.timeout(180)
@ci(150)
@given(st.deferred(hypothesmith.from_grammar))  # built on first use: building it costs ~3 s of CPU at import
def test_hypothesmith_from_grammar(source):
    # the grammar strategy may produce code CPython rejects (an error diagnostic is fine)
    data = source.encode("utf-8")
    _assert_holds(data, expect_parse=is_valid_python(data))


@pytest.mark.timeout(120)
@ci(150)
@given(st.binary(max_size=400) | st.text(max_size=300).map(lambda s: s.encode("utf-8", "surrogatepass")))
def test_arbitrary_bytes_never_raise(data):
    result = lint_source(data, "junk.py", SETTINGS)
    assert result.error is None or "\n" not in result.error


@pytest.mark.timeout(120)
@pytest.mark.parametrize("index", range(len(hazard_modules())))
def test_every_rule_example_keeps_the_properties(index):
    """Each rule's invalid example (and the interplay modules), all rules on."""
    _assert_holds(hazard_modules()[index].encode())


@pytest.mark.timeout(60)
def test_comment_inside_parentheses_of_a_replaced_call_is_kept():
    # found by this fuzzer: the parentheses (and their comments) belong to the replaced node
    data = (b"import sys, threading\n\ndef pump():\n    v = (  # why\n        sys.exit(1)  # inside\n    )\n\n"
            b"threading.Thread(target=pump).start()\n")
    report = check(data)
    assert report.fixes_applied >= 1 and not report.problems, report.problems
