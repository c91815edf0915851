"""SHD602 on ``tests/data/projects/child_owners`` (issue 28): a child kept on ``self`` is
followed through its class, bases and subclasses (here and, through the project index, in the
modules that import this one), and ``multiprocessing`` context objects' ``Process`` is a
factory. Every line marked ``# expect: SHD602`` carries a finding and no other line does (the
near misses: stopped in ``close()``/``__exit__``/a poll loop, handed on, stopped by a subclass
or by the owner in another module, its own session, a daemon context child, a
context's ``Queue``, a class's own ``Process`` method). Removing the other module's stop
brings the finding back: the index, not the name, decides."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "tests" / "data" / "projects" / "child_owners"


def _lint(root: Path, *extra: str) -> set[tuple[str, int]]:
    done = subprocess.run(
        [sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD602",
         "--output-format", "json", "--exit-zero", *extra, str(root)],
        capture_output=True, text=True, timeout=120, cwd=str(REPO),
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr
    return {(Path(d["path"]).resolve().relative_to(root.resolve()).as_posix(), d["line"])
            for d in json.loads(done.stdout)}


def _expected(root: Path) -> set[tuple[str, int]]:
    return {(path.relative_to(root).as_posix(), n)
            for path in sorted(root.rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), start=1)
            if line.rstrip().endswith("# expect: SHD602")}


def test_marked_lines_are_exactly_the_findings():
    expected = _expected(PROJECT)
    assert len(expected) == 7
    assert _lint(PROJECT) == expected


def test_same_findings_with_two_jobs():
    assert _lint(PROJECT, "--jobs", "2") == _expected(PROJECT)


def test_stop_in_another_module_decides(tmp_path):
    root = tmp_path / "child_owners"
    shutil.copytree(PROJECT, root)
    services = root / "src" / "services"
    base = services / "base.py"
    engine_line = next(n for n, line in enumerate(base.read_text().splitlines(), 1) if "self.engine_proc =" in line)
    worker_line = next(n for n, line in enumerate(base.read_text().splitlines(), 1) if "self.worker =" in line)
    # the subclass's shutdown() no longer stops the base class's child: reported
    managed = services / "managed.py"
    managed.write_text(managed.read_text().replace("self.engine_proc.terminate()", "print(self.engine_proc.pid)")
                       .replace("self.engine_proc.wait(timeout=10)", "pass"))
    # the owner's finally no longer kills it: reported
    runner = services / "runner.py"
    runner.write_text(runner.read_text().replace("owned.worker.kill()", "print(owned.worker.pid)"))
    found = _lint(root)
    assert ("src/services/base.py", engine_line) in found
    assert ("src/services/base.py", worker_line) in found
    assert found - _expected(root) == {("src/services/base.py", engine_line), ("src/services/base.py", worker_line)}


def test_a_snippet_without_the_index_trusts_nothing_elsewhere(tmp_path):
    # one file linted from stdin: no project index, the subclass is not seen and base.py's
    # Engine child is reported
    src = (PROJECT / "src" / "services" / "base.py").read_text()
    done = subprocess.run(
        [sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD602",
         "--output-format", "json", "--exit-zero", "--stdin-filename", "base.py", "-"],
        input=src, capture_output=True, text=True, timeout=120, cwd=str(tmp_path),
        env={**os.environ, "PYTHONPATH": str(REPO), "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr
    lines = {d["line"] for d in json.loads(done.stdout)}
    engine_line = next(n for n, line in enumerate(src.splitlines(), 1) if "self.engine_proc =" in line)
    assert engine_line in lines
