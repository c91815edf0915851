"""The cold run writes the snapshot of the project's walk (``index.store._Snapshot``) when it takes
the project's stamp, so the first warm run after it lists no folder. That first warm run is the
one that decides from a snapshot with no record of a run's discovered files (the cold run's walk
happens in a worker): the snapshot's files are compared one by one. Each test: a cold run, a
change, then the first warm run, which must print what a run without the cache prints.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from shutdown_lint.index import store

from .test_s5_inval_importers import FINDING, SHUTS, UNRELATED, _where
from .test_s6_inval_snapshot import _aged_project, _lint_out

pytestmark = pytest.mark.timeout(300)


def _snapshots(root: Path) -> list[str]:
    return sorted(p.name for p in (root.parent / "cache").glob("project-*.bin"))


def _cold_then(root: Path, change) -> tuple[list[tuple], list[tuple]]:  # type: ignore[no-untyped-def]
    """A cold run (it writes the snapshot), ``change()``, the first warm run: their findings."""
    cold = _lint_out(root)
    assert len(_snapshots(root)) == 2  # the walk's record and its listings, from the cold run
    change()
    warm = _lint_out(root)
    assert warm == _lint_out(root, "--no-cache")
    assert _lint_out(root) == warm  # and the run after
    return cold, warm


def test_the_cold_run_writes_the_snapshot(tmp_path: Path) -> None:
    root = _aged_project(tmp_path)
    assert _where(_lint_out(root)) == FINDING
    assert len(_snapshots(root)) == 2


def test_a_module_edited_to_import_it_after_the_cold_run(tmp_path: Path) -> None:
    """No cached result read the module (it imported nothing of the project) and its folder's stamp
    is unchanged: only its stat tells (the snapshot's files, compared one by one)."""
    root = _aged_project(tmp_path, closer=UNRELATED)
    cold, warm = _cold_then(root, lambda: (root / "closer.py").write_text(SHUTS))
    assert _where(cold) == FINDING and warm == []


def test_a_module_in_a_subpackage_edited_to_import_it_after_the_cold_run(tmp_path: Path) -> None:
    root = _aged_project(tmp_path)
    sub = root / "pkg" / "sub" / "closer.py"
    sub.write_text(UNRELATED)
    time.sleep(store.RACY_NS / 1e9 + 0.2)  # the folder's new stamp older than the snapshot's margin
    cold, warm = _cold_then(root, lambda: sub.write_text(SHUTS))
    assert _where(cold) == FINDING and warm == []


def test_an_importer_added_in_a_subpackage_after_the_cold_run(tmp_path: Path) -> None:
    """The subpackage's stamp changed: it is listed again."""
    root = _aged_project(tmp_path)
    cold, warm = _cold_then(root, lambda: (root / "pkg" / "sub" / "closer.py").write_text(SHUTS))
    assert _where(cold) == FINDING and warm == []


def test_a_module_edited_to_import_it_after_warm_runs(tmp_path: Path) -> None:
    """The snapshot then holds the discovered files' key (``cache.files_key``, taken once a run by
    ``cache.Seen``): their stats changed, so it is not the key recorded, and the files are compared
    one by one."""
    root = _aged_project(tmp_path, closer=UNRELATED)
    assert _where(_lint_out(root)) == FINDING
    assert _where(_lint_out(root)) == FINDING  # warm: the snapshot gets the discovered files' key
    assert _where(_lint_out(root)) == FINDING  # warm: decided by that key
    (root / "closer.py").write_text(SHUTS)
    warm = _lint_out(root)
    assert warm == _lint_out(root, "--no-cache") == []
    assert _lint_out(root) == warm
