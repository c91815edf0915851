"""The result index's run record (``cache._run_record``): a warm run that discovered the same
files, with the same stats, as the run that wrote the index gets ``count_clean``'s answer from the
record and reads no entry of a file with nothing to report. Anything else it discovered (a file
edited, added, removed, or another file in a removed one's place with its very stats) is decided
entry by entry, as before. Each test: a cold run, a change, a warm run that prints what a run
without the cache prints (real command-line runs).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shutdown_lint import cache as C

from .conftest import CLEAN, HAZARD, warm_after, write

pytestmark = pytest.mark.timeout(300)

QUIET = CLEAN + "#" * (len(HAZARD) - len(CLEAN) - 1) + "\n"  # no finding, the hazard's size
assert len(QUIET) == len(HAZARD)


def _lint(root: Path, *extra: str) -> list[tuple]:
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--select", "SHD201",
                           "--output-format", "json", "--exit-zero", "-j", "1", "--cache-dir",
                           str(root.parent / "cache"), *extra, "."],
                          cwd=root, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return sorted((d["path"], d["code"], d["line"]) for d in json.loads(proc.stdout))


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / "a.py", HAZARD)
    write(root / "b.py", QUIET)
    write(root / "pkg" / "c.py", CLEAN)
    return root


def _record(root: Path) -> tuple:
    (index,) = glob.glob(str(root.parent / "cache" / "results-*.bin"))
    with open(index, "rb") as fh:
        first, record = C._frames(fh.read())
    assert record is not None
    return record


def _cold_then(root: Path, change) -> list[tuple]:  # type: ignore[no-untyped-def]
    cold = _lint(root)
    assert cold == [("a.py", "SHD201", 7)]
    assert _record(root)[4:6] == ({"text": 2}, [0])  # b.py, pkg/c.py counted; a.py entry by entry
    assert _lint(root) == cold  # warm, nothing changed: the record serves
    return warm_after(lambda *extra: _lint(root, *extra), change)


def test_a_file_edited(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _cold_then(root, lambda: write(root / "pkg" / "c.py", HAZARD)) == [
        ("a.py", "SHD201", 7), ("pkg/c.py", "SHD201", 7)]


def test_a_file_edited_under_its_restored_mtime_with_another_size(tmp_path: Path) -> None:
    root = _project(tmp_path)
    st = os.stat(root / "pkg" / "c.py")

    def change() -> None:
        write(root / "pkg" / "c.py", HAZARD)
        os.utime(root / "pkg" / "c.py", ns=(st.st_atime_ns, st.st_mtime_ns))

    assert _cold_then(root, change) == [("a.py", "SHD201", 7), ("pkg/c.py", "SHD201", 7)]


def test_a_file_added(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _cold_then(root, lambda: write(root / "pkg" / "d.py", HAZARD)) == [
        ("a.py", "SHD201", 7), ("pkg/d.py", "SHD201", 7)]


def test_another_file_with_the_removed_ones_stats_in_its_place(tmp_path: Path) -> None:
    """b.py (nothing to report) removed, b2.py written with the hazard, its size, its mtime: the
    same stats at the same position of the sorted list; only the path differs."""
    root = _project(tmp_path)
    st = os.stat(root / "b.py")

    def change() -> None:
        (root / "b.py").unlink()
        write(root / "b2.py", HAZARD)
        os.utime(root / "b2.py", ns=(st.st_atime_ns, st.st_mtime_ns))

    assert _cold_then(root, change) == [("a.py", "SHD201", 7), ("b2.py", "SHD201", 7)]


def test_a_file_removed(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _cold_then(root, lambda: (root / "a.py").unlink()) == []
