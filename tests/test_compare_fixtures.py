"""bench/compare_fixtures.py on small stand-ins for the peers' checkouts (the real ones are
not vendored): expected lines from flake8-async's ``# ASYNCnnn:`` markers and from ruff's
snapshots, imports appended without moving a line, the deliberate differences counted apart."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import compare_fixtures as cf  # noqa: E402


def test_imports_are_appended_and_no_line_moves():
    text = "async def f(c: Optional[httpx.Client]):\n    c.get()\n    urlopen()\n"
    out = cf.add_imports(text)
    assert out.splitlines()[:3] == text.splitlines()
    assert {"import httpx", "from typing import Optional", "from urllib.request import urlopen"} <= set(
        out.splitlines()[3:])
    assert cf.add_imports("import httpx\nasync def f():\n    httpx.get()\n") == "import httpx\nasync def f():\n" \
                                                                            "    httpx.get()\n"


def test_both_checkouts_measured(tmp_path):
    f8 = tmp_path / "flake8-async" / "tests" / "eval_files"
    f8.mkdir(parents=True)
    (f8 / "async251.py").write_text(
        "import time\n\n\nasync def foo():\n    time.sleep(5)  # ASYNC251: 4, \"trio\"\n    time.sleep(0)\n")
    (f8 / "async240.py").write_text(
        "async def foo():\n    os.path.normpath('')  # ASYNC240: 4, 'normpath'\n"
        "    os.path.exists('')  # ASYNC240: 4, 'exists'\n")
    ruff = tmp_path / "ruff"
    fixtures = ruff / "crates/ruff_linter/resources/test/fixtures/flake8_async"
    snaps = ruff / "crates/ruff_linter/src/rules/flake8_async/snapshots"
    fixtures.mkdir(parents=True)
    snaps.mkdir(parents=True)
    (fixtures / "ASYNC230.py").write_text("async def foo():\n    open('')  # ASYNC230\n")
    (snaps / "ruff_linter__rules__flake8_async__tests__ASYNC230_ASYNC230.py.snap").write_text(
        "---\nsource: x\n---\nASYNC230 Async functions should not open files\n --> ASYNC230.py:2:5\n  |\n")
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "compare_fixtures.py"), "--flake8-async",
                           str(tmp_path / "flake8-async"), "--ruff", str(ruff), "--missed"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "ASYNC251     1 lines   SHD 1/1 (100%)" in out
    assert "ASYNC240     2 lines   SHD 1/2 (50%)" in out  # normpath: a string function, deliberate
    assert "SHD outside the 1 deliberate differences: 2/2 (100.0%)" in out
    assert "ASYNC230     1 lines   SHD 1/1 (100%)" in out
    assert "SHD outside the 0 deliberate differences: 1/1 (100.0%)" in out


def test_a_checkout_without_fixtures_is_an_error(tmp_path):
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "compare_fixtures.py"), "--ruff", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "no snapshots" in proc.stderr and "Traceback" not in proc.stderr
