"""The composite GitHub Action (action.yml at the repository root): its own shell steps, run as the
runner would (bash -eo pipefail, the inputs and ``github.action_path`` substituted, $GITHUB_OUTPUT),
in a temporary project with a throwaway venv that installs the linter from the action's checkout."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import CLEAN, HAZARD, REPO, write

ACTION = Path(REPO) / "action.yml"


def _steps(inputs: dict[str, str], action_path: str) -> list[dict]:
    spec = yaml.safe_load(ACTION.read_text())
    values = {k: str(v.get("default", "")) for k, v in spec["inputs"].items()}
    values.update(inputs)

    def sub(text: str) -> str:
        def one(m: re.Match) -> str:
            expr = m.group(1).strip()
            if expr.startswith("inputs."):
                return values[expr[len("inputs."):]]
            if expr == "github.action_path":
                return action_path
            raise AssertionError(f"the test does not know how to evaluate ${{{{ {expr} }}}}")
        return re.sub(r"\$\{\{(.*?)\}\}", one, text)

    assert spec["runs"]["using"] == "composite"
    out = []
    for step in spec["runs"]["steps"]:
        if "uses" in step:  # actions/setup-python: only with python-version, which the test leaves empty
            assert "inputs.python-version" in step.get("if", "")
            continue
        assert step["shell"] == "bash"
        out.append({"id": step.get("id"), "run": sub(step["run"]),
                    "env": {k: sub(str(v)) for k, v in step.get("env", {}).items()},
                    "cwd": sub(step.get("working-directory", "."))})
    return out


def _run_step(step: dict, workspace: Path, path_env: str, output: Path) -> subprocess.CompletedProcess:
    script = workspace.parent / f"step-{step['id'] or 'x'}.sh"
    script.write_text(step["run"])
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(step["env"], PATH=path_env, GITHUB_OUTPUT=str(output), NO_COLOR="1")
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=str(workspace / step["cwd"]), env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_action_steps_install_lint_annotate_and_write_sarif(tmp_path: Path) -> None:
    # the action's checkout: a copy (pip builds write next to the sources)
    action_path = tmp_path / "action"
    action_path.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md", "action.yml"):
        if (Path(REPO) / name).exists():  # setup.py is gone once pyproject.toml alone builds
            shutil.copy(Path(REPO) / name, action_path / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for pkg in ("shutdown_lint", "rules", "runtime_guard"):
        shutil.copytree(Path(REPO) / pkg, action_path / pkg, ignore=ignore)
    # a runner's python: a fresh venv that sees this interpreter's packages (libcst, rich... and pip)
    # through a .pth, so `pip install --no-deps`-free installs resolve without downloading anything.
    # --without-pip: ensurepip's own install of pip cost 3.3 of this test's CPU-s; the step's
    # `python -m pip` (the venv's interpreter) imports this interpreter's pip through the .pth and
    # installs into the venv (its sys.prefix), as a runner's own pip does
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    shared = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    Path(purelib, "_base_packages.pth").write_text("\n".join(shared) + "\n")
    path_env = f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"

    workspace = tmp_path / "repo"
    write(workspace / "pyproject.toml", '[tool.shutdown-lint]\nselect = ["SHD201"]\n')
    write(workspace / "app" / "worker.py", HAZARD)
    write(workspace / "app" / "ok.py", CLEAN)

    install, lint = _steps({"package": "", "args": "app"}, str(action_path))
    output = tmp_path / "github_output"
    r = _run_step(install, workspace, path_env, output)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().startswith("shutdown-lint ")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import shutdown_lint; print(shutdown_lint.__file__)"],
                           capture_output=True, text=True, timeout=60, cwd=str(tmp_path),
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}).stdout
    assert where.startswith(purelib), where  # the action's copy, not the repository under test

    r = _run_step(lint, workspace, path_env, output)
    assert r.returncode == 1, r.stdout + r.stderr  # findings fail the step by default
    # a finding is a warning annotation (the level of every format and the editor); the step fails on it
    assert "::warning title=shutdown-lint (SHD201),file=app/worker.py,line=7" in r.stdout
    sarif = json.loads((workspace / "shutdown-lint.sarif").read_text())
    results = sarif["runs"][0]["results"]
    assert [x["ruleId"] for x in results] == ["SHD201"]
    assert "sarif-file=shutdown-lint.sarif" in output.read_text() and "exit-code=1" in output.read_text()

    # fail-on-findings: false reports but passes; a clean tree passes
    _install, lint = _steps({"args": "app", "fail-on-findings": "false", "sarif-file": "out.sarif"}, str(action_path))
    r = _run_step(lint, workspace, path_env, output)
    assert r.returncode == 0 and "::warning" in r.stdout and (workspace / "out.sarif").exists()
    _install, lint = _steps({"args": "app/ok.py"}, str(action_path))
    r = _run_step(lint, workspace, path_env, output)
    assert r.returncode == 0 and "::error" not in r.stdout and "::warning" not in r.stdout

    # a configuration error is exit 2 whatever fail-on-findings says
    write(workspace / "pyproject.toml", '[tool.shutdown-lint]\nselekt = ["SHD201"]\n')
    _install, lint = _steps({"args": "app", "fail-on-findings": "false"}, str(action_path))
    r = _run_step(lint, workspace, path_env, output)
    assert r.returncode == 2 and "unknown key `selekt`" in r.stderr
