"""The runtime half installs on its own: ``packaging/runtime`` builds the ``shutdown-lint-runtime``
wheel (``runtime_guard`` only, no dependencies); in a fresh virtual environment holding nothing
else, neither libcst nor rich is importable, ``import runtime_guard`` works, code fixed by
``shutdown-lint`` runs, and ``RUNTIME_GUARD=1`` autoloads through the installed .pth file."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import zipfile

import pytest

import runtime_guard
import shutdown_lint
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

HAZARD = textwrap.dedent("""\
    import asyncio
    import signal


    async def work(i):
        if i == 2:
            raise RuntimeError("background write failed")
        return i


    async def main():
        for i in range(4):
            asyncio.create_task(work(i))
        await asyncio.sleep(0.2)
        print("served", 4, flush=True)


    asyncio.run(main())
""")


@pytest.fixture(scope="module")
def runtime_env(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("runtime-dist")
    src = tmp / "src"
    shutil.copytree(os.path.join(REPO, "packaging", "runtime"), src, symlinks=False)  # the link becomes files
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(wheels), str(src)], check=True, capture_output=True, timeout=240)
    (wheel,) = wheels.glob("shutdown_lint_runtime-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = str(venv / "bin" / "python")
    subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True, timeout=240)
    return python, wheel, tmp


def _run(python: str, code: str, cwd, env=None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RUNTIME_GUARD", "VIRTUAL_ENV")}
    return subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env={**clean, **(env or {})})


def test_the_wheel_holds_runtime_guard_and_nothing_of_the_linter(runtime_env):
    _, wheel, _ = runtime_env
    names = zipfile.ZipFile(wheel).namelist()
    assert "runtime_guard/__init__.py" in names and "runtime_guard-autoload.pth" in names
    assert not any(n.startswith(("shutdown_lint/", "rules/")) for n in names)
    meta = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(wheel).read(meta).decode()
    assert not any(line.startswith("Requires-Dist:") and "extra ==" not in line for line in text.splitlines())
    entry = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "runtime_guard = runtime_guard.pytest_plugin" in entry


def test_runtime_guard_imports_without_the_linters_dependencies(runtime_env):
    python, _, tmp = runtime_env
    probe = _run(python, textwrap.dedent("""\
        import importlib.util, runtime_guard
        print(runtime_guard.__file__)
        print([m for m in ("libcst", "rich", "pathspec", "shutdown_lint") if importlib.util.find_spec(m)])
    """), cwd=tmp)
    assert probe.returncode == 0, probe.stderr
    where, found = probe.stdout.splitlines()
    assert where.startswith(str(tmp / "venv")) and found == "[]"


def test_fixed_code_runs_in_the_runtime_only_environment(runtime_env):
    python, _, tmp = runtime_env
    fixed_text = fix_source(HAZARD.encode(), "job.py", Settings(selected=("SHD102",), target_version="py310")).source
    assert b"import runtime_guard" in fixed_text
    (tmp / "job.py").write_bytes(fixed_text)
    (tmp / "orig.py").write_text(HAZARD)
    fixed = subprocess.run([python, "job.py"], capture_output=True, text=True, timeout=60, cwd=tmp,
                           env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    orig = subprocess.run([python, "orig.py"], capture_output=True, text=True, timeout=60, cwd=tmp,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert "ModuleNotFoundError" not in fixed.stderr, fixed.stderr
    assert "background write failed" in fixed.stderr  # the failure is reported
    assert fixed.stdout == orig.stdout == "served 4\n"


def test_autoload_through_the_installed_pth(runtime_env):
    python, _, tmp = runtime_env
    run = _run(python, "import sys; print('runtime_guard' in sys.modules)", cwd=tmp, env={"RUNTIME_GUARD": "1"})
    off = _run(python, "import sys; print('runtime_guard' in sys.modules)", cwd=tmp)
    assert run.stdout.strip() == "True", run.stderr
    assert off.stdout.strip() == "False"


def test_one_version_for_both_distributions():
    assert runtime_guard.__version__ == shutdown_lint.__version__
