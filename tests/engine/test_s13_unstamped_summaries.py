"""A ``--no-cache`` run computes no content hash of a summary (``store.load_summary`` with a store
that keeps nothing: ``SummaryStore.stamped`` false): nothing would keep the hash, no cached
result would carry the stamp. A run with a cache still stamps each summary, and its warm runs
still see a dependency whose summary changed (the summary digest is what they compare).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from shutdown_lint.index import store
from shutdown_lint.index.summary import digest

from .test_s5_inval_importers import FINDING, POOL, SHUTS, USES, _lint, _project, _where


def _module(tmp_path: Path) -> Path:
    path = tmp_path / "a.py"
    path.write_text(POOL)
    return path


def test_a_store_without_a_folder_stamps_nothing(tmp_path: Path) -> None:
    path = _module(tmp_path)
    new: dict = {}
    summary, stamp = store.load_summary(str(path), store.SummaryStore(None), new)
    assert summary is not None and summary["functions"]
    st = os.stat(path)
    assert stamp == [st.st_mtime_ns, st.st_size, store.UNSTAMPED]
    assert new[str(path)] == [st.st_mtime_ns, st.st_size, store.UNSTAMPED, summary]


def test_a_store_with_a_folder_stamps_the_summary_and_the_text(tmp_path: Path) -> None:
    path = _module(tmp_path)
    new: dict = {}
    summary, stamp = store.load_summary(str(path), store.SummaryStore(str(tmp_path / "cache")), new)
    unstamped, _ = store.load_summary(str(path), store.SummaryStore(None), {})
    assert summary == unstamped  # the same summary either way: only the hashes differ
    st = os.stat(path)
    assert stamp == [st.st_mtime_ns, st.st_size, digest(summary)]
    assert new[str(path)][2] == hashlib.sha256(path.read_bytes()).hexdigest()
    # without a store at all (an index built by hand) the stamps are kept, as before
    _, bare = store.load_summary(str(path), None, {})
    assert bare == stamp


def test_an_entry_kept_in_memory_by_a_store_without_a_folder_is_reused_unstamped(tmp_path: Path) -> None:
    """A process that runs ``--no-cache`` twice (a test session, ``--watch``) keeps the first run's
    entries in memory: the second run reuses the summary of an unchanged file, and stamps nothing."""
    path = _module(tmp_path)
    kept = store.SummaryStore(None)
    new: dict = {}
    first, _ = store.load_summary(str(path), kept, new)
    kept.add(new)
    again, stamp = store.load_summary(str(path), kept, {})
    assert again is first and stamp[2] == store.UNSTAMPED


def test_no_cache_and_cached_runs_agree_and_warm_runs_still_see_a_changed_summary(tmp_path: Path) -> None:
    """The cross-module search (SHD503: the executor is shut down in the module importing it)
    reports the same with and without the cache; after the importer stops shutting it down, the
    warm run reports it, as ``--no-cache`` does (the cached result's stamp of the importer's
    summary is a real digest)."""
    root = _project(tmp_path, b=SHUTS)
    assert _lint(root, "--no-cache") == _lint(root) == _lint(root) == []
    (root / "b.py").write_text(USES)
    warm = _lint(root)
    assert _where(warm) == FINDING
    assert warm == _lint(root, "--no-cache")


def test_the_project_stamp_is_taken_only_by_a_run_that_keeps_it(tmp_path: Path) -> None:
    """An importer search records the stamp of the project's files (a digest of a walk of its
    roots and a stat of each file): a run without a cache folder takes none."""
    from shutdown_lint.index.project import ProjectIndex

    root = _project(tmp_path, b=SHUTS)
    key, stamp = ProjectIndex([str(root)], None, store.SummaryStore(None)).project_stamp()
    assert key.startswith(store.PROJECT) and stamp == [0, 0, store.UNSTAMPED]
    key2, stamp2 = ProjectIndex([str(root)], None, store.SummaryStore(str(tmp_path / "cache"))).project_stamp()
    assert key2 == key and stamp2[2].startswith(store.PROJECT_DIGEST)
    assert ProjectIndex([str(root)], None, None).project_stamp()[1] == stamp2
