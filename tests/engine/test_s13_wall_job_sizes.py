"""The pool orders its work by the sizes discovery took (``runner.Job.size``): no second
``stat`` of every file in the parent before the workers fork, where nothing runs in parallel."""

from __future__ import annotations

import os
from pathlib import Path

from shutdown_lint import cli
from shutdown_lint.discovery import discover
from shutdown_lint.runner import Job, _batches, _job_size
from shutdown_lint.settings import Settings


def test_a_job_with_discoverys_size_is_not_stated_again(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone.py")  # no such file: a stat would give 0
    assert _job_size(Job("gone.py", gone, size=123)) == 123
    assert _job_size(Job("gone.py", gone)) == 0
    real = tmp_path / "real.py"
    real.write_text("x = 1\n" * 10)
    assert _job_size(Job("real.py", str(real))) == os.stat(real).st_size


def _project(tmp_path: Path) -> Path:
    for name, lines in (("small.py", 1), ("big.py", 400), ("mid.py", 40)):
        (tmp_path / name).write_text("import os\n" * lines)
    return tmp_path


def test_planned_jobs_carry_the_sizes_discovery_took(tmp_path: Path) -> None:
    root = _project(tmp_path)
    found = discover([str(root)], str(root), [])
    for cache_dir in (None, str(tmp_path / ".cache")):  # no cache, and a cold one
        _settings, _cache, jobs, _files = cli._plan_group(found.files, Settings(selected=("SHD201",)), cli._Mode(),
                                                             cache_dir, {}, [])
        assert sorted(j.path for j in jobs) == sorted(f.display for f in found.files)
        for job in jobs:
            assert job.size == os.stat(job.abspath).st_size
        sizes = {i: _job_size(j) for i, j in enumerate(jobs)}
        order = sorted(range(len(jobs)), key=lambda i: -sizes[i])
        assert [os.path.basename(jobs[i].abspath) for i in order] == ["big.py", "mid.py", "small.py"]
        assert _batches(order, sizes) == [order]
