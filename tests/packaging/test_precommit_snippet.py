"""The README's pre-commit snippet works as written: with `repo` set to this repository (a local clone
path) and `rev` to the tested commit, the real pre-commit tool builds the hook's environment from the
repository itself (`.pre-commit-hooks.yaml`, `language: python`), refuses a commit that adds a hazard
and lets a clean one through. Needs the package index for the hook's dependencies (libcst, rich)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

HAZARD = textwrap.dedent("""\
    import sys
    import threading


    def pump():
        sys.exit(3)


    threading.Thread(target=pump).start()
""")


def _snippet() -> dict:
    with open(os.path.join(REPO, "README.md")) as fh:
        text = fh.read()
    block = re.search(r"```yaml\n# \.pre-commit-config\.yaml\n(.*?)```", text, re.S)
    assert block, "README.md lost its pre-commit snippet"
    return yaml.safe_load(block.group(1))


def _git(cwd, *args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)


def test_readme_snippet_placeholders_are_the_two_a_user_fills_in():
    (repo,) = _snippet()["repos"]
    assert repo["repo"].startswith("https://") and repo["rev"] == "<commit SHA>"
    assert [h["id"] for h in repo["hooks"]] == ["shutdown-lint"]


def test_readme_snippet_with_real_precommit(tmp_path):
    head = _git(REPO, "rev-parse", "HEAD")
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    config = _snippet()
    config["repos"][0].update(repo=REPO, rev=head.stdout.strip())
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(PRE_COMMIT_HOME=str(tmp_path / "pc-home"), PATH=BIN + os.pathsep + env["PATH"],
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid")
    work = tmp_path / "project"
    work.mkdir()
    assert _git(work, "init", "-q", "-b", "main", env=env).returncode == 0
    (work / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (work / "ok.py").write_text("import sys\n\n\ndef main():\n    sys.exit(0)\n")
    precommit = shutil.which("pre-commit", path=env["PATH"])
    assert precommit
    installed = subprocess.run([precommit, "install"], cwd=work, env=env, capture_output=True, text=True,
                               timeout=120)
    assert installed.returncode == 0, installed.stderr

    def commit(msg):
        return subprocess.run(["git", "commit", "-q", "-m", msg], cwd=work, env=env, capture_output=True,
                              text=True, timeout=540)

    _git(work, "add", "-A", env=env)
    clean = commit("clean")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (work / "worker.py").write_text(HAZARD)
    _git(work, "add", "worker.py", env=env)
    refused = commit("hazard")
    assert refused.returncode != 0
    assert "worker.py:6:5: SHD201" in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert _git(work, "rev-list", "--count", "HEAD", env=env).stdout.strip() == "1"
