"""The cache, configuration errors, suppressions, --add-noqa and baselines."""

from __future__ import annotations

import ast
import glob
import json
import os
import subprocess
import sys

import pytest


from .conftest import CLEAN, HAZARD, REPO, write


def test_second_run_is_served_from_cache(project, cli, count_lints):
    write(project / "bad.py", HAZARD)
    write(project / "clean.py", CLEAN)
    first = cli(project, "--jobs", "1", "--output-format", "json")
    assert sorted(count_lints) == ["bad.py", "clean.py"]
    assert glob.glob(str(project / ".shutdown_lint_cache" / "results-*.bin"))
    count_lints.clear()
    second = cli(project, "--jobs", "1", "--output-format", "json")
    assert count_lints == [] and second.out == first.out and second.code == 1
    # a touched but unchanged file is recognised by its content hash
    os.utime(project / "clean.py", ns=(1, 1))
    cli(project, "--jobs", "1")
    assert count_lints == []
    # an edited file is analysed again, the other one is not
    write(project / "clean.py", CLEAN + "# edited\n")
    cli(project, "--jobs", "1")
    assert count_lints == ["clean.py"]
    # another configuration has its own entries
    count_lints.clear()
    cli(project, "--jobs", "1", "--target-version", "py312")
    assert sorted(count_lints) == ["bad.py", "clean.py"]
    # fix mode does not trust the cache for files with fixable findings
    count_lints.clear()
    assert cli(project, "--jobs", "1", "--fix").code == 0
    assert "bad.py" in count_lints and "clean.py" not in count_lints
    assert "runtime_guard.hard_exit(3)" in (project / "bad.py").read_text()


def test_fully_cached_run_does_not_import_libcst(project):
    write(project / "bad.py", HAZARD)
    # newer syntax than this Python's ``ast`` reads (PEP 695): libcst judges it, so the cold run
    # loads libcst (it is imported on first use); the fully cached run must not
    write(project / "newer.py", "type Alias = list[int]\n" + HAZARD)
    code = ("import sys; from shutdown_lint.cli import main; rc = main(['--output-format', 'concise']); "
            "print('LIBCST', 'libcst' in sys.modules, 'RC', rc)")
    env = dict(os.environ, PYTHONPATH=REPO)
    outs = [subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True, text=True,
                           timeout=60, env=env).stdout for _ in range(2)]
    try:  # (a Python whose ``ast`` reads PEP 695 lints every file on ``ast``: no libcst then)
        ast.parse("type Alias = list[int]\n")
        cold_needs_libcst = False
    except SyntaxError:
        cold_needs_libcst = True
    assert f"LIBCST {cold_needs_libcst} RC 1" in outs[0]
    assert "LIBCST False RC 1" in outs[1] and "bad.py:7:5: SHD201" in outs[1]


def test_corrupt_cache_is_a_warning(project, cli, count_lints):
    write(project / "bad.py", HAZARD)
    cli(project, "--jobs", "1")
    cache = project / ".shutdown_lint_cache"
    for path in glob.glob(str(cache / "*.json")) + glob.glob(str(cache / "results-*.bin")):
        with open(path, "w") as fh:
            fh.write("{not json")
    run = cli(project, "--jobs", "1", "--output-format", "concise")
    assert run.code == 1 and "bad.py:7:5: SHD201" in run.out
    assert "warning: ignoring unreadable cache" in run.err
    count_lints.clear()
    cli(project, "--jobs", "1")  # rewritten by the previous run
    assert count_lints == []
    count_lints.clear()
    cli(project, "--jobs", "1", "--no-cache")
    assert count_lints == ["bad.py"]


@pytest.mark.parametrize("body, message", [
    ('[tool.shutdown-lint]\nselekt = ["SHD201"]\n', "unknown key `selekt` in [tool.shutdown-lint] (did you mean `select`?)"),
    ('[tool.shutdown-lint]\nselect = "SHD201"\n', "`select` must be a list of strings"),
    ('[tool.shutdown-lint]\ntarget-version = "py39"\n', "`target-version` must be one of"),
    ('[tool.shutdown-lint]\nselect = ["SHD9"]\n', "unknown rule selector 'SHD9'"),
    ('[tool.shutdown-lint.rules.SHD201]\nextra = 1\n', "[tool.shutdown-lint.rules.SHD201]: unknown option `extra`"),
    ('[tool.shutdown-lint.rules.no-such-rule]\nx = 1\n', "no rule has the code or name `no-such-rule`"),
    ('[tool.shutdown-lint\n', "invalid TOML"),
])
def test_config_errors_name_the_key_and_file(project, cli, body, message):
    write(project / "pyproject.toml", body)
    write(project / "a.py", CLEAN)
    run = cli(project, "--no-cache")
    assert run.code == 2
    assert message in run.err and "pyproject.toml" in run.err


def test_rule_option_bad_value(project, cli):
    from shutdown_lint import registry

    rule = next((r for r in registry.all_rules() if any(o.item_kind is str for o in r.options.values())), None)
    assert rule is not None, "some rule has a list-of-strings option (e.g. SHD301 extra-blocking-calls)"
    key = next(k for k, o in rule.options.items() if o.item_kind is str)
    write(project / "shutdown-lint.toml", f'[rules.{rule.name}]\n{key} = [1, 2]\n')
    write(project / "a.py", CLEAN)
    run = cli(project, "--no-cache")
    assert run.code == 2 and f"option {key!r} must be a list of" in run.err and "shutdown-lint.toml" in run.err
    write(project / "shutdown-lint.toml", f'[rules.{rule.code}]\n{key} = ["my.blocking"]\n')
    assert cli(project, "--no-cache").code == 0


def test_suppressions_and_unknown_codes(project, cli):
    write(project / "a.py", HAZARD.replace("sys.exit(3)", "sys.exit(3)  # noqa: SHD201"))
    write(project / "b.py", HAZARD.replace("sys.exit(3)", "sys.exit(3)  # shutdown-lint: ignore[sys-exit-in-task]"))
    write(project / "c.py", HAZARD.replace("sys.exit(3)", "sys.exit(3)  # noqa: SHD999, E501"))
    write(project / "d.py", HAZARD.replace("sys.exit(3)", "sys.exit(3)  # noqa"))
    write(project / "e.py", HAZARD.replace("sys.exit(3)", 'print("# noqa: SHD201"); sys.exit(3)'))
    run = cli(project, "--no-cache", "--output-format", "concise")
    flagged = sorted(line.split(":")[0] for line in run.out.splitlines() if "SHD201" in line)
    assert flagged == ["c.py", "e.py"]
    assert "c.py:7:1: unknown rule 'SHD999' in a suppression comment" in run.err
    assert "E501" not in run.err


def test_add_noqa(project, cli):
    path = write(project / "a.py", HAZARD.replace("sys.exit(3)", "sys.exit(3)  # noqa: E501"))
    other = write(project / "b.py", HAZARD.replace("\n", "\r\n"))
    run = cli(project, "--no-cache", "--add-noqa")
    assert run.code == 0 and "Added 2 noqa directives." in run.err
    assert "sys.exit(3)  # noqa: E501, SHD201\n" in path.read_text()
    assert b"sys.exit(3)  # noqa: SHD201\r\n" in other.read_bytes()
    assert cli(project, "--no-cache").code == 0
    compile(path.read_text(), "a.py", "exec")


def test_baseline_gates_only_new_findings(project, cli):
    path = write(project / "svc.py", HAZARD)
    run = cli(project, "--no-cache", "--write-baseline", "baseline.json")
    assert run.code == 0 and "Wrote 1 finding to the baseline" in run.err
    data = json.loads((project / "baseline.json").read_text())
    assert data["findings"][0]["path"] == "svc.py" and data["findings"][0]["line_text"] == "sys.exit(3)"
    assert cli(project, "--no-cache", "--baseline", "baseline.json").code == 0
    # lines shift: still known
    write(project / "svc.py", '"""Docs."""\n\nimport os\n' + HAZARD)
    run = cli(project, "--no-cache", "--baseline", "baseline.json", "--output-format", "concise")
    assert run.code == 0 and "1 known in the baseline" in run.out
    # a second, new occurrence is reported
    write(project / "svc.py", HAZARD.replace("sys.exit(3)", "sys.exit(3)\n    sys.exit(3)"))
    run = cli(project, "--no-cache", "--baseline", "baseline.json", "--output-format", "concise")
    assert run.code == 1 and "svc.py:8:5: SHD201" in run.out and "svc.py:7:5" not in run.out
    assert cli(project, "--no-cache", "--baseline", "missing.json").code == 2
