"""After ``--fix`` writes code that imports ``runtime_guard``, the run says once per project when the
project's declared dependencies do not provide it (``shutdown-lint-runtime``), with the line to add;
it says nothing when they do. The CLI runs as a real subprocess in a project made in tmp_path."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from shutdown_lint import deployment

BIN = os.path.join(os.path.dirname(sys.executable), "shutdown-lint")

# SHD102's safe fix wraps the task in runtime_guard.supervise(...) and adds the import
PROGRAM = textwrap.dedent("""\
    import asyncio


    async def work():
        raise RuntimeError("boom")


    async def main():
        asyncio.create_task(work())
        await asyncio.sleep(0.1)


    asyncio.run(main())
""")


def _project(root, files: dict) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in {"job.py": PROGRAM, **files}.items():
        (root / name).write_text(text)


def _fix(root) -> subprocess.CompletedProcess:
    return subprocess.run([BIN, "--no-cache", "--fix", "--select", "SHD102", "."], cwd=root,
                          capture_output=True, text=True, timeout=120)


def test_notice_when_the_project_does_not_declare_the_runtime(tmp_path):
    _project(tmp_path / "p", {"pyproject.toml": '[project]\nname = "demo"\ndependencies = ["ray>=2"]\n'})
    run = _fix(tmp_path / "p")
    assert "import runtime_guard" in (tmp_path / "p" / "job.py").read_text()
    notes = [line for line in run.stderr.splitlines() if "runtime_guard" in line]
    assert len(notes) == 1, run.stderr
    assert "does not declare" in notes[0] and "shutdown-lint-runtime" in notes[0]
    assert "#subdirectory=packaging/runtime" in notes[0] or "packaging/runtime" in notes[0]


@pytest.mark.parametrize("files", [
    {"pyproject.toml": '[project]\nname = "demo"\ndependencies = ["shutdown-lint-runtime @ git+https://example.invalid/s.git@abc#subdirectory=packaging/runtime"]\n'},
    {"pyproject.toml": '[project]\nname = "demo"\ndependencies = ["Shutdown_Lint.Runtime>=0.1"]\n'},
    {"requirements.txt": "ray>=2  # the cluster\nshutdown-lint-runtime==0.1.0\n"},
    {"requirements-prod.txt": "-e ../shutdown-lint/packaging/runtime\n"},
    {"setup.cfg": "[options]\ninstall_requires =\n    ray\n    shutdown-lint-runtime\n"},
    {"pyproject.toml": '[tool.poetry.dependencies]\npython = "^3.10"\nshutdown-lint-runtime = {git = "x"}\n'},
], ids=["pyproject-url", "pyproject-normalised", "requirements", "requirements-editable", "setup.cfg", "poetry"])
def test_no_notice_when_a_declaration_provides_it(tmp_path, files):
    _project(tmp_path / "p", files)
    run = _fix(tmp_path / "p")
    assert "import runtime_guard" in (tmp_path / "p" / "job.py").read_text()
    assert "does not declare" not in run.stderr, run.stderr


def test_no_notice_without_fixes_or_without_the_import(tmp_path):
    _project(tmp_path / "p", {"pyproject.toml": '[project]\nname = "demo"\n'})
    lint_only = subprocess.run([BIN, "--no-cache", "--select", "SHD102", "."], cwd=tmp_path / "p",
                               capture_output=True, text=True, timeout=120)
    assert "does not declare" not in lint_only.stderr
    assert deployment.notices([str(tmp_path / "p" / "pyproject.toml")]) == []


def test_one_notice_per_project(tmp_path):
    for name in ("a", "b"):
        _project(tmp_path / name, {"pyproject.toml": f'[project]\nname = "{name}"\n', "job2.py": PROGRAM})
    run = subprocess.run([BIN, "--no-cache", "--fix", "--select", "SHD102", "a", "b"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    notes = [line for line in run.stderr.splitlines() if "does not declare" in line]
    assert len(notes) == 2 and "(2 files)" in notes[0], run.stderr
