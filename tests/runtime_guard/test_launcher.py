"""``python -m runtime_guard``: the launcher that watches every loop of a program that never imports it.

Real subprocesses with the repository on ``sys.path``; fresh installs (wheel and editable) are covered
by tests/runtime_guard/test_pth_autoload.py.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

from rg_testutil import child_env

pytestmark = pytest.mark.timeout(120)

# Threshold 0.5 s and a 1.2 s block (not 0.1 s): a loaded machine stops a process for 0.1-0.3 s at
# times, which the watchdog rightly reports as one more stall (see test_watchdog.py's docstring).
PROGRAM = """
import asyncio, os, sys, time
print("ARGV", sys.argv, __name__, os.path.basename(sys.path[0]) or ".", flush=True)
async def main():
    time.sleep(1.2)  # BLOCK
    await asyncio.sleep(0.05)
asyncio.run(main())
if "--fail" in sys.argv:
    raise SystemExit(5)
"""


def _launch(cwd: Path, *args: str, env: "dict | None" = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runtime_guard", *args], capture_output=True, text=True,
                          timeout=60, cwd=str(cwd), env=child_env(env))


def _stall_lines(path: Path) -> List[int]:
    return [json.loads(x)["lineno"] for x in path.read_text().splitlines() if json.loads(x)["event"] == "stall"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "prog.py").write_text(textwrap.dedent(PROGRAM))
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(textwrap.dedent(PROGRAM))
    return tmp_path


def test_script_gets_its_argv_main_and_path_and_stall_is_reported(project: Path) -> None:
    out = project / "stalls.jsonl"
    r = _launch(project, "--threshold", "0.5", "--json", str(out), "scripts/prog.py", "a", "--fail")
    assert r.returncode == 5, r.stderr  # the program's exit status, passed through
    assert "ARGV ['scripts/prog.py', 'a', '--fail'] __main__ scripts" in r.stdout
    assert _stall_lines(out) == [5]
    assert "1 event-loop stall(s)" in r.stderr and "prog.py:5" in r.stderr


def test_module_form_runs_like_python_dash_m(project: Path) -> None:
    out = project / "stalls.jsonl"
    r = _launch(project, "--json", str(out), "-m", "pkg.mod", "b", env={"RUNTIME_GUARD_THRESHOLD": "0.5"})
    assert r.returncode == 0, r.stderr
    argv_line = next(line for line in r.stdout.splitlines() if line.startswith("ARGV"))
    assert argv_line.endswith("'b'] __main__ " + project.name)  # cwd first on sys.path, as python -m
    assert str(project / "pkg" / "mod.py") in argv_line
    assert _stall_lines(out) == [5]


def test_clean_program_says_so_at_exit(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("import asyncio\nasyncio.run(asyncio.sleep(0.05))\n")
    r = _launch(tmp_path, "--threshold", "0.5", "ok.py")
    assert r.returncode == 0 and r.stderr.strip() == "runtime_guard: no event-loop stall over 0.5s"


def test_uncaught_exception_keeps_pythons_status_and_traceback(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text("raise RuntimeError('boom')\n")
    r = _launch(tmp_path, "boom.py")
    assert r.returncode == 1 and "RuntimeError: boom" in r.stderr


@pytest.mark.parametrize("args, message", [
    (["missing.py"], "cannot run 'missing.py': no such file"),
    (["-m", "no_such_pkg.mod"], "cannot run module 'no_such_pkg.mod'"),
    ([], "no script or -m module given"),
    (["--threshold", "soon", "x.py"], "--threshold expects seconds"),
    (["--threshold", "0", "x.py"], "--threshold must be > 0"),
    (["--bogus", "x.py"], "unknown option --bogus"),
    (["--json"], "--json needs a value"),
])
def test_bad_usage_exits_2_with_one_clear_line(tmp_path: Path, args: List[str], message: str) -> None:
    r = _launch(tmp_path, *args)
    assert r.returncode == 2 and r.stdout == ""
    assert message in r.stderr and "Traceback" not in r.stderr


def test_help() -> None:
    r = subprocess.run([sys.executable, "-m", "runtime_guard", "--help"], capture_output=True, text=True,
                       timeout=60, env=child_env())
    assert r.returncode == 0 and "-m module" in r.stdout and "--threshold" in r.stdout
