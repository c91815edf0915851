"""Every output format, --statistics, --explain, --list-rules, --version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from .conftest import CLEAN, HAZARD, REPO, run_sub, write

SCHEMA = os.path.join(os.path.dirname(__file__), "data", "sarif-2.1.0-structure.schema.json")


@pytest.fixture
def two_findings(project):
    write(project / "b.py", HAZARD)
    write(project / "a.py", HAZARD.replace("sys.exit(3)", "sys.exit(3)\n    raise SystemExit(4)"))
    write(project / "clean.py", CLEAN)
    return project


def test_concise_sorted_by_path_line_column(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--output-format", "concise")
    assert run.code == 1
    lines = run.out.splitlines()
    assert lines[:3] == [
        "a.py:7:5: SHD201 [*] " + lines[0].split("[*] ", 1)[1],
        "a.py:8:5: SHD201 [*] " + lines[1].split("[*] ", 1)[1],
        "b.py:7:5: SHD201 [*] " + lines[2].split("[*] ", 1)[1],
    ]
    assert "thread" in lines[0]
    # the hint, then the summary as the last line (what happened)
    assert lines[3] == "[*] 3 fixable with the `--fix` option."
    assert lines[4] == "Found 3 findings (3 fixable)."


def test_full_shows_source_caret_fix_hint_and_summary(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--output-format", "full", "b.py")
    assert run.code == 1
    lines = run.out.splitlines()
    assert lines[0].startswith("b.py:7:5: SHD201 [*] ")
    assert lines[2] == "7 |     sys.exit(3)"
    assert lines[3] == "  |     ^^^^^^^^^^^ SHD201"
    assert "help: " in lines[4] and "(safe fix)" in lines[4]
    assert "Found 1 finding (1 fixable)." in run.out


def test_quiet_prints_findings_only(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--output-format", "concise", "-q")
    assert run.code == 1 and len(run.out.splitlines()) == 3 and "Found" not in run.out


def test_json_objects(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--output-format", "json")
    assert run.code == 1
    items = json.loads(run.out)
    assert [(d["path"], d["line"], d["column"]) for d in items] == [("a.py", 7, 5), ("a.py", 8, 5), ("b.py", 7, 5)]
    first = items[0]
    assert first["code"] == "SHD201" and first["name"] == "sys-exit-in-task"
    assert (first["end_line"], first["end_column"]) == (7, 16)
    assert first["fix"]["applicability"] == "safe"
    assert any("runtime_guard.hard_exit(3)" in e["content"] for e in first["fix"]["edits"])
    clean = cli(two_findings, "--no-cache", "--output-format", "json", "clean.py")
    assert clean.code == 0 and json.loads(clean.out) == []


def test_sarif_validates_and_carries_rule_help(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--output-format", "sarif")
    assert run.code == 1
    log = json.loads(run.out)
    with open(SCHEMA) as fh:
        jsonschema.validate(log, json.load(fh), format_checker=jsonschema.FormatChecker())
    run0 = log["runs"][0]
    rules = run0["tool"]["driver"]["rules"]
    shd201 = next(r for r in rules if r["id"] == "SHD201")
    assert "## Why is this bad?" in shd201["help"]["markdown"]
    results = run0["results"]
    assert len(results) == 3
    assert results[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "a.py"
    assert rules[results[0]["ruleIndex"]]["id"] == "SHD201"
    assert run0["invocations"][0]["executionSuccessful"] is True
    # the schema really checks: a broken log is rejected
    del results[0]["locations"][0]["physicalLocation"]["region"]["startLine"]
    with open(SCHEMA) as fh, pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(log, json.load(fh))


def test_sarif_om_accepts_the_shape(two_findings, cli):
    # sarif-om's object model names the same properties (camelCase in JSON)
    import sarif_om

    run = cli(two_findings, "--no-cache", "--output-format", "sarif")
    log = json.loads(run.out)
    fields = {f.metadata["schema_property_name"] for f in sarif_om.Result.__attrs_attrs__}
    assert set(log["runs"][0]["results"][0]) <= fields


def test_github_annotations(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--output-format", "github")
    lines = run.out.splitlines()
    assert len(lines) == 3
    # a finding is a warning in every format with levels (SARIF, the editor): one source, output.FINDING_LEVEL
    assert lines[0].startswith("::warning title=shutdown-lint (SHD201),file=a.py,line=7,col=5,endLine=7,endColumn=16::")
    assert lines[0].split("::", 2)[2].startswith("a.py:7:5: SHD201 ")


def test_junit_xml(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--output-format", "junit")
    root = ET.fromstring(run.out.split("\n", 1)[1])
    assert root.tag == "testsuites" and root.get("failures") == "3"
    cases = root.findall(".//testcase")
    assert [c.get("classname") for c in cases] == ["a.py", "a.py", "b.py"]
    assert cases[0].find("failure").get("type") == "SHD201"
    clean = cli(two_findings, "--no-cache", "--output-format", "junit", "clean.py")
    assert ET.fromstring(clean.out.split("\n", 1)[1]).get("failures") == "0"


def test_statistics(two_findings, cli):
    run = cli(two_findings, "--no-cache", "--statistics", "--output-format", "concise")
    assert run.out.splitlines()[0] == "3  SHD201  [*] sys-exit-in-task"
    run = cli(two_findings, "--no-cache", "--statistics", "--output-format", "json")
    assert json.loads(run.out) == [{"code": "SHD201", "name": "sys-exit-in-task", "count": 3, "fixable": 3}]


def test_explain_and_list_rules(project, cli):
    run = cli(project, "--explain", "SHD201", "--output-format", "full")
    assert run.code == 0 and "sys-exit-in-task" in run.out and "Why is this bad?" in run.out
    by_name = cli(project, "--explain", "sys-exit-in-task", "--output-format", "json")
    assert json.loads(by_name.out)["code"] == "SHD201"
    assert cli(project, "--explain", "SHD000").code == 2
    listing = cli(project, "--list-rules", "--output-format", "full")
    assert "SHD201" in listing.out and "sys-exit-in-task" in listing.out
    rows = json.loads(cli(project, "--list-rules", "--output-format", "json").out)
    assert {"code": "SHD201", "name": "sys-exit-in-task", "fixable": True}.items() <= rows[[r["code"] for r in rows].index("SHD201")].items()


def test_version_imports_neither_libcst_nor_rich(tmp_path):
    code = ("import sys; from shutdown_lint.cli import main; rc = main(['--version']); "
            "print('HEAVY', sorted(m for m in ('libcst', 'rich') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=REPO))
    assert "shutdown-lint 0." in proc.stdout and "HEAVY []" in proc.stdout
    assert run_sub(tmp_path, "--version").stdout.startswith(b"shutdown-lint ")
