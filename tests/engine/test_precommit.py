"""The hooks under the real pre-commit tool in a temporary git repository: a commit
with a hazard is blocked, a clean one passes, and the fix hook rewrites the file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from .conftest import CLEAN, HAZARD, REPO, write

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
BIN = os.path.dirname(sys.executable)


def _git(repo, *args, check=True):
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=120, check=check)


def test_precommit_blocks_a_hazard_and_passes_clean_code(tmp_path):
    with open(os.path.join(REPO, ".pre-commit-hooks.yaml")) as fh:
        hooks = {h["id"]: h for h in yaml.safe_load(fh)}
    repo = tmp_path / "repo"
    repo.mkdir()
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pc-home"), PATH=BIN + os.pathsep + os.environ["PATH"],
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid", PYTHONPATH=REPO)
    _git(repo, "init", "-q", "-b", "main")
    # the published hooks, run as local hooks with the installed console script (no network here)
    config = {"repos": [{"repo": "local", "hooks": [
        {**{k: hooks["shutdown-lint"][k] for k in ("id", "name", "types_or")},
         "entry": os.path.join(BIN, hooks["shutdown-lint"]["entry"]), "language": "system",
         "args": ["--no-cache", "--select", "SHD201"]},
    ]}]}
    write(repo / ".pre-commit-config.yaml", yaml.safe_dump(config))
    write(repo / "pyproject.toml", '[project]\nname = "demo"\n')
    run = lambda *a: subprocess.run([os.path.join(BIN, "pre-commit"), *a], cwd=repo, env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=240)
    installed = run("install")
    assert installed.returncode == 0, installed.stderr
    commit = lambda msg: subprocess.run(["git", "commit", "-q", "-m", msg], cwd=repo, env=env,  # noqa: E731
                                        capture_output=True, text=True, timeout=240)

    write(repo / "ok.py", CLEAN)
    _git(repo, "add", "-A")
    clean = commit("clean")
    assert clean.returncode == 0, clean.stdout + clean.stderr

    write(repo / "worker.py", HAZARD)
    _git(repo, "add", "worker.py")
    blocked = commit("hazard")
    assert blocked.returncode != 0
    assert "worker.py:7:5: SHD201" in blocked.stdout + blocked.stderr
    assert _git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "1"

    # the fix hook rewrites the file; the commit then goes through
    config["repos"][0]["hooks"][0].update(id="shutdown-lint-fix", entry=os.path.join(BIN, "shutdown-lint") + " --fix")
    write(repo / ".pre-commit-config.yaml", yaml.safe_dump(config))
    _git(repo, "add", "-A")
    fixing = commit("hazard, fixed by the hook")
    assert fixing.returncode != 0  # pre-commit fails a hook that modifies files
    assert "runtime_guard.hard_exit(3)" in (repo / "worker.py").read_text()
    _git(repo, "add", "-A")
    done = commit("hazard, fixed by the hook")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _git(repo, "rev-list", "--count", "HEAD").stdout.strip() == "2"
