"""Syntax errors where they matter, and newer syntax never mistaken for one.

A file that no rule can examine (the candidate tiers rule every rule out) is not
compiled just to look for syntax errors. A file a rule examines is parsed; when this
Python's ``ast`` rejects it, libcst (which knows the grammar up to 3.14) judges before
anything is called an error: code in 3.12-3.14 syntax is linted, with findings, on the
oldest Python the project supports. A real syntax error is still one line and exit 2.
"""

from __future__ import annotations

import ast
import json
import sys

import pytest

from shutdown_lint.analyzer import STAGE_LIBCST, STAGE_NEWER, STAGE_TEXT, STAGE_TREE, lint_source
from shutdown_lint.registry import all_rules
from shutdown_lint.settings import Settings

from .conftest import HAZARD, write

ALL = Settings(selected=tuple(r.code for r in all_rules()), target_version="py310")

# each one: the SHD201 hazard plus syntax that Python 3.11 rejects (3.12: PEP 695, 701;
# 3.14: PEP 758, PEP 750) or accepts (3.11: except*); pep695.py also blocks in a coroutine
NEWER = {
    "pep695.py": HAZARD + "import time\n\n\nasync def fetch[T](x: T) -> T:\n    time.sleep(1)\n    return x\n\n\n"
                          "class Box[T]:\n    pass\n\n\ntype Pair[T] = tuple[T, T]\n",
    "pep701.py": HAZARD + 'label = f"{ {"k": 1}["k"] } {f"{f"{1}"}"}"\n',
    "except_star.py": HAZARD + "try:\n    pass\nexcept* ValueError:\n    pass\n",
    "pep758.py": HAZARD + "try:\n    pass\nexcept ValueError, TypeError:\n    pass\n",
    "tstring.py": HAZARD + 'who = "you"\ngreeting = t"hello {who}"\n',
}
EXPECTED = {name: ["SHD201"] for name in NEWER}
EXPECTED["pep695.py"] = ["SHD201", "SHD301"]


def _rejected_here(code: str) -> bool:
    try:
        ast.parse(code)
    except SyntaxError:
        return True
    return False


@pytest.mark.parametrize("name", sorted(NEWER))
def test_newer_syntax_is_linted_with_findings(name):
    result = lint_source(NEWER[name].encode(), name, ALL)
    assert result.error is None, result.error
    assert sorted(d.code for d in result.diagnostics) == EXPECTED[name]
    assert result.stage == (STAGE_NEWER if _rejected_here(NEWER[name]) else STAGE_LIBCST)


def test_real_syntax_error_in_newer_syntax_file_is_one_line():
    code = NEWER["pep695.py"] + "def broken[T](:\n    pass\n"
    result = lint_source(code.encode(), "bad.py", ALL)
    assert result.error is not None and "\n" not in result.error
    assert result.error.startswith("bad.py:") and "syntax error" in result.error


def test_no_rule_can_examine_means_no_syntax_check():
    # nothing here can make any rule fire: the file is neither parsed nor compiled
    result = lint_source(b"def broken(:\n    x = 1\n", "quiet.py", ALL)
    assert (result.error, result.diagnostics, result.stage) == (None, [], STAGE_TEXT)
    # the same error where a rule looks (a coroutine: SHD301's words) is reported
    result = lint_source(b"import time\nasync def broken(:\n    time.sleep(1)\n", "loud.py", ALL)
    assert result.error is not None and result.error.startswith("loud.py:2:") and "syntax error" in result.error


def test_ast_tier_rules_a_file_out():
    # SHD201's words are here (an exit, a coroutine) but the exit is in plain sync code
    code = b"import sys\n\nasync def f():\n    pass\n\ndef g():\n    sys.exit(1)\n"
    result = lint_source(code, "tree.py", ALL)
    assert (result.error, result.diagnostics, result.stage) == (None, [], STAGE_TREE)


def test_target_version_decides_whether_newer_syntax_gets_a_warning():
    code = NEWER["pep695.py"].encode()
    if not _rejected_here(NEWER["pep695.py"]):
        pytest.skip("this Python parses PEP 695 itself")  # pragma: no cover - runs on 3.11 in CI
    old = lint_source(code, "pep695.py", ALL)
    assert [w for w in old.warnings if "syntax newer than --target-version py310" in w], old.warnings
    new = lint_source(code, "pep695.py", Settings(selected=ALL.selected, target_version="py314"))
    assert not [w for w in new.warnings if "syntax newer" in w], new.warnings
    assert sorted(d.code for d in new.diagnostics) == EXPECTED["pep695.py"]


def test_cli_lints_newer_syntax_and_reports_real_errors(project, cli):
    for name, code in NEWER.items():
        write(project / name, code)
    run = cli(project, "--no-cache", "--isolated", "--select", "ALL", "--target-version", "py314",
              "--output-format", "json", *NEWER)
    assert run.code == 1, run.err
    got = sorted((d["path"], d["code"]) for d in json.loads(run.out))
    assert got == sorted((n, c) for n, codes in EXPECTED.items() for c in codes)
    assert "syntax error" not in run.err

    write(project / "broken.py", "import sys, threading\n\n\ndef pump(:\n    sys.exit(3)\n\n\nthreading.Thread(target=pump)\n")
    write(project / "quiet.py", "def broken(:\n    x = 1\n")  # no rule looks: not reported
    run = cli(project, "--no-cache", "--isolated", "--select", "ALL", "--output-format", "concise",
              "--jobs", "2", *NEWER, "broken.py", "quiet.py")
    assert run.code == 2
    errors = [line for line in run.err.splitlines() if "syntax error" in line]
    assert len(errors) == 1 and errors[0].startswith("broken.py:4:"), run.err
    assert "quiet.py" not in run.err


def test_statistics_show_the_stages(project, cli):
    for name, code in NEWER.items():
        write(project / name, code)
    write(project / "plain.py", "x = 1\n")
    write(project / "tree.py", "import sys\n\nasync def f():\n    pass\n\ndef g():\n    sys.exit(1)\n")
    run = cli(project, "--no-cache", "--isolated", "--select", "ALL", "--statistics", "--output-format", "concise")
    newer = sum(_rejected_here(code) for code in NEWER.values())
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert (f"Checked 7 files: 2 held nothing the selected rules look for (not syntax-checked), "
            f"5 analysed in full{f' ({newer} of them in syntax newer than Python {here})' if newer else ''}, "
            "0 could not be analysed.") in run.out.splitlines(), run.out
    assert run.out.splitlines()[-1].startswith("Found 6 findings"), run.out  # the summary is the last line


def test_newer_syntax_file_is_fixed():
    from shutdown_lint.fixer import fix_source

    outcome = fix_source(NEWER["pep695.py"].encode(), "pep695.py", ALL, unsafe=True)
    assert outcome.applied == 2, outcome.warnings  # SHD201: hard_exit; SHD301: time.sleep -> asyncio.sleep
    fixed = outcome.source.decode()
    assert "runtime_guard.hard_exit(3)" in fixed and "await asyncio.sleep(1)" in fixed
    assert "def fetch[T](x: T) -> T:" in fixed
