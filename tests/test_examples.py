"""The bundled example project (the README's first command lints it) has a hazard for every
rule, and ``shutdown-lint --fix --unsafe-fixes`` turns it into the checked-in fixed twin."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shutdown_lint import registry

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ROOT / "examples" / "rollout_project"
TWIN = ROOT / "tests" / "data" / "examples_fixed" / "rollout_project"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shutdown_lint", "--no-cache", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )


def _py_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def test_example_project_has_a_finding_for_every_rule():
    proc = _cli("--output-format", "json", ".", cwd=PROJECT)
    assert proc.returncode == 1, proc.stderr
    codes = {d["code"] for d in json.loads(proc.stdout)}
    assert codes == {r.code for r in registry.all_rules()}
    # sandbox.py is the clean module: no finding there
    assert not [d for d in json.loads(proc.stdout) if d["path"].endswith("sandbox.py")]


@pytest.mark.timeout(600)
def test_fix_produces_the_checked_in_twin(tmp_path):
    work = tmp_path / "rollout_project"
    shutil.copytree(PROJECT, work, ignore=shutil.ignore_patterns("__pycache__", ".shutdown_lint_cache"))
    proc = _cli("--fix", "--unsafe-fixes", ".", cwd=work)
    assert proc.returncode in (0, 1), proc.stderr
    got, want = _py_files(work), _py_files(TWIN)
    assert got.keys() == want.keys()
    for name in got:
        assert got[name] == want[name], f"{name} differs from the twin (regenerate it if the change is intended)"
        ast.parse(got[name])
    # what is left has no fix, and a second run changes nothing
    left = json.loads(_cli("--unsafe-fixes", "--output-format", "json", ".", cwd=work).stdout)
    assert left and all(d["fix"] is None for d in left)
    again = _cli("--fix", "--unsafe-fixes", ".", cwd=work)
    assert _py_files(work) == got, again.stdout
