"""Zero-code activation: ``runtime_guard-autoload.pth`` + ``RUNTIME_GUARD=1``.

The programs here never import runtime_guard. ``site.addsitedir`` processes a temporary directory
holding the shipped .pth file exactly as Python's startup does for site-packages.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rg_testutil import REPO, child_env

pytestmark = pytest.mark.timeout(120)

PTH = REPO / "runtime_guard" / "data" / "runtime_guard-autoload.pth"

# Threshold 0.5 s and 1.2 s blocks (not 0.1 s): a loaded machine stops a process for 0.1-0.3 s at
# times, which the watchdog rightly reports as one more stall (see test_watchdog.py's docstring).
PROGRAM = """
import asyncio, sys, time
async def main():
    await asyncio.sleep(0.1)
    time.sleep(1.2)  # BLOCK
    await asyncio.sleep(0.1)
asyncio.run(main())
print("LOADED", "runtime_guard" in sys.modules, flush=True)
"""


def _run_with_pth(tmp_path: Path, env: dict) -> "tuple[subprocess.CompletedProcess, list]":
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    shutil.copy(PTH, site_dir / PTH.name)
    prog = tmp_path / "prog.py"
    prog.write_text(PROGRAM)
    report = tmp_path / "stalls.jsonl"
    boot = f"import site; site.addsitedir({str(site_dir)!r}); import runpy; runpy.run_path({str(prog)!r}, run_name='__main__')"
    r = subprocess.run([sys.executable, "-c", boot], capture_output=True, text=True, timeout=60, cwd=str(tmp_path),
                       env=child_env({"RUNTIME_GUARD_REPORT_FILE": str(report), **env}))
    records = [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    return r, records


def test_pth_file_is_one_import_line() -> None:
    lines = [x for x in PTH.read_text().splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("import ")  # site.py only executes lines starting with import
    from runtime_guard._pth_hook import PTH_NAME

    assert PTH.name == PTH_NAME


@pytest.mark.parametrize("value", ["1", "true"])
def test_pth_with_env_reports_stall_in_program_that_never_imports_runtime_guard(tmp_path: Path, value: str) -> None:
    r, records = _run_with_pth(tmp_path, {"RUNTIME_GUARD": value, "RUNTIME_GUARD_THRESHOLD": "0.5"})
    assert r.returncode == 0, r.stderr
    assert "LOADED True" in r.stdout
    stalls = [x for x in records if x["event"] == "stall"]
    assert len(stalls) == 1, records
    assert stalls[0]["lineno"] == 5 and stalls[0]["filename"].endswith("prog.py") and stalls[0]["rule"] == "SHD301"
    assert "1 event-loop stall(s)" in r.stderr  # exit summary on the default log sink


@pytest.mark.parametrize("value", [None, "0", "false", ""])
def test_pth_without_env_is_inert(tmp_path: Path, value: "str | None") -> None:
    env = {} if value is None else {"RUNTIME_GUARD": value}
    r, records = _run_with_pth(tmp_path, env)
    assert r.returncode == 0, r.stderr
    assert "LOADED False" in r.stdout and records == [] and r.stderr == ""


LAUNCHED = """
import asyncio, sys, time
print("ARGV", sys.argv[1:], __name__, flush=True)
async def main():
    time.sleep(1.2)  # BLOCK
    await asyncio.sleep(0.1)
asyncio.run(main())
sys.exit(3)
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("editable", [False, True], ids=["wheel", "editable"])
def test_fresh_install_runtime_guard_env_and_launcher(tmp_path: Path, editable: bool) -> None:
    # Install a copy of the runtime distribution (packaging/runtime, its link to runtime_guard copied as
    # files; the build writes build/ and *.egg-info next to the sources) into a throwaway venv; then
    # use it the three documented ways: RUNTIME_GUARD=1, python -m runtime_guard script.py,
    # python -m runtime_guard -m module.
    src = tmp_path / "src"
    shutil.copytree(REPO / "packaging" / "runtime", src, symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.egg-info"))
    venv = tmp_path / "venv"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RUNTIME_GUARD")}
    env["RUNTIME_GUARD_THRESHOLD"] = "0.5"  # a stall that a loaded machine makes is not counted (see PROGRAM)
    # --without-pip: ensurepip's own install of pip was half of this test's CPU time (about 5 CPU-s);
    # the test's pip installs into the venv instead (pip --python runs pip under the venv's interpreter)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)], check=True,
                   timeout=120, env=env)
    py = venv / "bin" / "python"
    r = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                        *(["-e"] if editable else []), str(src)], capture_output=True, text=True, timeout=240, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, timeout=60, env=env, check=True).stdout.strip()
    assert (Path(purelib) / PTH.name).read_text() == PTH.read_text()
    work = tmp_path / "work"
    work.mkdir()
    where = subprocess.run([str(py), "-c", "import runtime_guard; print(runtime_guard.__file__)"], cwd=str(work),
                           capture_output=True, text=True, timeout=60, env=env, check=True).stdout
    assert where.startswith(str(src if editable else purelib)), where

    prog = work / "prog.py"
    prog.write_text(textwrap.dedent(PROGRAM))
    report = work / "stalls.jsonl"
    on = subprocess.run([str(py), str(prog)], capture_output=True, text=True, timeout=60, cwd=str(work),
                        env={**env, "RUNTIME_GUARD": "1", "RUNTIME_GUARD_REPORT_FILE": str(report)})
    assert on.returncode == 0 and "LOADED True" in on.stdout, on.stderr
    assert [json.loads(x)["lineno"] for x in report.read_text().splitlines() if '"stall"' in x] == [5]
    off = subprocess.run([str(py), str(prog)], capture_output=True, text=True, timeout=60, cwd=str(work), env=env)
    assert off.returncode == 0 and "LOADED False" in off.stdout and off.stderr == ""

    (work / "app").mkdir()
    (work / "app" / "__init__.py").write_text("")
    (work / "app" / "main.py").write_text(textwrap.dedent(LAUNCHED))
    (work / "script.py").write_text(textwrap.dedent(LAUNCHED))
    for form, target in (("script", ["script.py"]), ("module", ["-m", "app.main"])):
        out = work / f"{form}.jsonl"
        r = subprocess.run([str(py), "-m", "runtime_guard", "--json", str(out), *target, "x", "--y"],
                           capture_output=True, text=True, timeout=60, cwd=str(work), env=env)
        assert r.returncode == 3, (form, r.stdout, r.stderr)  # the program's own exit status
        assert "ARGV ['x', '--y'] __main__" in r.stdout, (form, r.stdout)
        assert [json.loads(x)["lineno"] for x in out.read_text().splitlines() if '"stall"' in x] == [5], form
        assert "1 event-loop stall(s)" in r.stderr, (form, r.stderr)
