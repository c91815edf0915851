"""The warm run's snapshot of the project's walk (``index.store._Snapshot``) keeps the dependency
on the project's files exact: with a snapshot, ``project_digest`` gives what a full walk gives,
after files and folders are added, removed, renamed, edited (a size change under a restored
mtime), a folder's mtime set back, an artefact folder made a package, a ``.py`` link's target
turned into a folder, and a file outside the run's discovered ones edited. The snapshot only
saves the walk: an unchanged project is decided with no folder listed.

The folders' stamps are trusted only once older than ``store.RACY_NS`` (3 s): the in-process
tests lower it to 0.2 s and wait that long after building their tree (ext4 here: nanosecond
stamps from a clock that ticks in milliseconds), the command-line tests wait the real 3 s.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from shutdown_lint.index import store

from .test_s5_inval_importers import FINDING, SHUTS, _lint, _project, _where

RACY_NS = 200_000_000


@pytest.fixture
def aged(monkeypatch):  # type: ignore[no-untyped-def]
    """Folders older than 0.2 s are trusted; returns the wait that makes a tree that old."""
    monkeypatch.setattr(store, "RACY_NS", RACY_NS)
    monkeypatch.setattr(store, "_snapshots", {})
    return lambda: time.sleep(RACY_NS / 1e9 + 0.05)


@pytest.fixture
def listed(monkeypatch) -> list:  # type: ignore[no-untyped-def]
    """The folders the walks list (``store._list_dir`` calls)."""
    calls: list = []
    real = store._list_dir

    def counting(d: str):  # type: ignore[no-untyped-def]
        calls.append(d)
        return real(d)

    monkeypatch.setattr(store, "_list_dir", counting)
    return calls


def _tree(tmp_path: Path, extra=()) -> Path:  # type: ignore[no-untyped-def]
    root = tmp_path / "proj"
    for rel in ["a.py", "pkg/__init__.py", "pkg/m.py", "pkg/sub/x.py", "pkg/sub/deep/y.py", "build/gen.py",
                "other/o.py", "pkg/__pycache__/m.cpython-311.pyc", *extra]:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")
    return root


def _digest(key: str, cache: Path, seen=None) -> str:  # type: ignore[no-untyped-def]
    """The digest through the snapshot in ``cache``, read from its files (a new process's view)."""
    store._snapshots.clear()
    return store.project_digest(key, None, (lambda: seen) if seen is not None else None, str(cache))


def _ready(tmp_path: Path, aged, roots=None, extra=()) -> tuple:  # type: ignore[no-untyped-def]
    """A tree, its key, a cache folder holding a complete snapshot of it, and its digest."""
    root = _tree(tmp_path, extra)
    key = store.project_key(roots(root) if roots else [(str(root), None)])
    cache = tmp_path / "cache"
    cache.mkdir()
    aged()
    first = _digest(key, cache)
    assert first == store.project_digest(key)
    assert store._snapshots[(str(cache), key)].whole is not None  # every folder's listing kept
    return root, key, cache, first


def _after(key: str, cache: Path, before: str, seen=None) -> str:  # type: ignore[no-untyped-def]
    """The digest through the snapshot equals a full walk's, and differs from ``before``."""
    found = _digest(key, cache, seen)
    assert found == store.project_digest(key, None, (lambda: seen) if seen is not None else None)
    assert found != before
    return found


def test_an_unchanged_project_lists_no_folder(tmp_path: Path, aged, listed: list) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    listed.clear()
    assert _digest(key, cache) == first and listed == []
    seen = [(str(p), str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sorted(root.rglob("*.py"))]
    assert _digest(key, cache, seen) == first and listed == []  # the run's own stats: the same digest
    assert _digest(key, cache, seen) == first and listed == []  # (and kept for the next run)


def test_a_file_added_in_a_subfolder(tmp_path: Path, aged, listed: list) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    (root / "pkg" / "sub" / "deep" / "new.py").write_text("")
    listed.clear()
    found = _digest(key, cache)
    assert listed == [str(root / "pkg" / "sub" / "deep")]  # the changed folder alone is listed again
    assert found == _after(key, cache, first)


def test_a_file_removed_from_a_subfolder(tmp_path: Path, aged) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    (root / "pkg" / "sub" / "deep" / "y.py").unlink()
    _after(key, cache, first)


def test_a_folder_renamed(tmp_path: Path, aged) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    (root / "pkg" / "sub").rename(root / "pkg" / "sub2")
    _after(key, cache, first)


def test_a_folder_added_then_a_file_in_it(tmp_path: Path, aged) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    (root / "pkg" / "new").mkdir()
    empty = _digest(key, cache)
    assert empty == first == store.project_digest(key)
    aged()
    assert _digest(key, cache) == first
    (root / "pkg" / "new" / "z.py").write_text("")
    _after(key, cache, first)


def test_a_file_edited_under_its_restored_mtime_with_another_size(tmp_path: Path, aged) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    p = root / "pkg" / "sub" / "x.py"
    st = p.stat()
    p.write_text("x = 12345\n")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    _after(key, cache, first)


def test_a_file_added_then_its_folder_mtime_set_back(tmp_path: Path, aged) -> None:
    """The folder's mtime is as snapshotted; its ctime is not (a stamp of mtimes alone misses it)."""
    root, key, cache, first = _ready(tmp_path, aged)
    d = root / "pkg" / "sub"
    st = d.stat()
    (d / "new.py").write_text("")
    os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert d.stat().st_mtime_ns == st.st_mtime_ns
    _after(key, cache, first)


def test_an_artefact_folder_made_a_package(tmp_path: Path, aged) -> None:
    """``build/`` is not walked until it holds ``__init__.py``: no folder the walk listed changes."""
    root, key, cache, first = _ready(tmp_path, aged)
    (root / "build" / "__init__.py").write_text("")
    _after(key, cache, first)


def test_a_package_artefact_folder_that_stops_being_one(tmp_path: Path, aged) -> None:
    root, key, cache, first = _ready(tmp_path, aged, extra=["dist/__init__.py", "dist/d.py"])
    assert str(root / "dist" / "d.py") in store.walk_roots([(str(root), None)])
    (root / "dist" / "__init__.py").unlink()
    _after(key, cache, first)


def test_an_init_folder_in_an_artefact_folder(tmp_path: Path, aged) -> None:
    """``build/__init__.py`` there but not a file (a folder): still no package."""
    root, key, cache, first = _ready(tmp_path, aged, extra=["build/__init__.py/x.txt"])
    (root / "build" / "__init__.py" / "x.txt").unlink()
    (root / "build" / "__init__.py").rmdir()
    (root / "build" / "__init__.py").write_text("")
    _after(key, cache, first)


def test_a_py_link_whose_target_becomes_a_folder(tmp_path: Path, aged) -> None:
    """``link.py`` points outside the tree: its target turned into a folder leaves its folder's
    stamp alone, and the walk no longer counts it as a file."""
    target = tmp_path / "elsewhere.py"
    target.write_text("")
    root = _tree(tmp_path)
    (root / "pkg" / "link.py").symlink_to(target)
    key = store.project_key([(str(root), None)])
    cache = tmp_path / "cache"
    cache.mkdir()
    aged()
    first = _digest(key, cache)
    assert first == store.project_digest(key)
    target.unlink()
    target.mkdir()
    _after(key, cache, first)


def test_a_file_outside_the_discovered_ones_edited(tmp_path: Path, aged) -> None:
    """The run discovered only ``pkg/``: the snapshot stats the project's other files itself."""
    root, key, cache, first = _ready(tmp_path, aged)
    seen = [(str(p), str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in sorted((root / "pkg").rglob("*.py"))]
    with_seen = _digest(key, cache, seen)
    assert with_seen == first
    assert _digest(key, cache, seen) == first
    (root / "other" / "o.py").write_text("x = 12345\n")
    _after(key, cache, first, seen)


def test_a_discovered_file_edited(tmp_path: Path, aged) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    files = sorted(root.rglob("*.py"))
    seen = [(str(p), str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files]
    assert _digest(key, cache, seen) == first
    (root / "pkg" / "m.py").write_text("x = 12345\n")
    seen = [(str(p), str(p), p.stat().st_mtime_ns, p.stat().st_size) for p in files]
    _after(key, cache, first, seen)


def test_the_runs_own_folder_stats(tmp_path: Path, aged, listed: list) -> None:
    """The stats a run's discovery took of the folders it walked (``Discovery.folders``; here all
    but ``pkg/sub/deep``, which is stat'ed) stand for the folders' stamps."""
    root, key, cache, first = _ready(tmp_path, aged)

    def folders() -> dict:
        return {str(d): d.stat() for d in [root, *root.rglob("*")] if d.is_dir() and d.name != "deep"}

    store._snapshots.clear()
    listed.clear()
    assert store.project_digest(key, None, None, str(cache), folders()) == first and listed == []
    (root / "pkg" / "sub" / "new.py").write_text("")
    store._snapshots.clear()
    assert store.project_digest(key, None, None, str(cache), folders()) == store.project_digest(key) != first
    aged()
    assert _digest(key, cache) == store.project_digest(key)  # (the snapshot complete again)
    (root / "pkg" / "sub" / "deep" / "new.py").write_text("")
    store._snapshots.clear()
    assert store.project_digest(key, None, None, str(cache), folders()) == store.project_digest(key)


def test_a_recent_folder_is_listed_until_its_stamp_is_old(tmp_path: Path, aged, listed: list) -> None:
    """A folder changed less than ``RACY_NS`` before the walk is not kept: a change in the same
    clock step as its listing would leave its stamp as listed."""
    root, key, cache, first = _ready(tmp_path, aged)
    (root / "pkg" / "sub" / "new.py").write_text("")
    changed = _after(key, cache, first)
    snap = store._snapshots[(str(cache), key)]
    assert snap.whole is None and str(root / "pkg" / "sub") not in (snap.dirs or {})
    listed.clear()
    assert _digest(key, cache) == changed and listed == [str(root / "pkg" / "sub")]
    aged()
    assert _digest(key, cache) == changed
    listed.clear()
    assert _digest(key, cache) == changed and listed == []


def test_a_damaged_or_foreign_snapshot_is_not_read(tmp_path: Path, aged) -> None:
    root, key, cache, first = _ready(tmp_path, aged)
    other = store.project_key([(str(root / "pkg"), None)])
    for f in cache.glob("project-*.bin"):
        f.write_bytes(f.read_bytes()[:-7])  # truncated
    (root / "pkg" / "n.py").write_text("")
    _after(key, cache, first)
    aged()
    (root / "pkg" / "n.py").unlink()
    assert _digest(key, cache) == first
    path = Path(store._snapshot_path(str(cache), key, ""))
    path.rename(store._snapshot_path(str(cache), other, ""))  # another key's name: its key is checked
    Path(store._snapshot_path(str(cache), key, ".dirs")).rename(store._snapshot_path(str(cache), other, ".dirs"))
    assert _digest(other, cache) == store.project_digest(other) != first


def _aged_project(tmp_path: Path, **files: str) -> Path:
    root = _project(tmp_path, **files)
    (root / "pkg" / "sub").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "__init__.py").write_text("")
    (root / "pkg" / "sub" / "helper.py").write_text("def help():\n    return 1\n")
    time.sleep(store.RACY_NS / 1e9 + 0.2)  # every folder's stamp older than the snapshot's margin
    return root


def _lint_out(root: Path, *extra: str) -> list[tuple]:
    """``_lint`` with the cache outside the project: its writes leave the project's folders alone,
    so the warm runs decide from the snapshot's first level (every folder's stamp kept)."""
    return _lint(root, "--cache-dir", str(root.parent / "cache"), *extra)


def _warm_equals_cold(root: Path, change) -> list[tuple]:  # type: ignore[no-untyped-def]
    _lint_out(root)  # fills the cache
    _lint_out(root)  # warm, nothing changed: walks once, keeps the snapshot
    _lint_out(root)  # warm, nothing changed: the snapshot serves the project's files
    change()
    warm = _lint_out(root)
    assert warm == _lint_out(root, "--no-cache")
    assert _lint_out(root) == warm
    return warm


def test_cli_an_importer_added_in_a_subpackage(tmp_path: Path) -> None:
    root = _aged_project(tmp_path)
    assert _where(_lint_out(root)) == FINDING
    shuts = "import a\n\n\ndef close():\n    a.POOL.shutdown(wait=True)\n"
    assert _warm_equals_cold(root, lambda: (root / "pkg" / "sub" / "closer.py").write_text(shuts)) == []


def test_cli_a_folder_holding_the_importer_renamed_out(tmp_path: Path) -> None:
    root = _aged_project(tmp_path)
    (root / "pkg" / "sub" / "closer.py").write_text(SHUTS)
    time.sleep(store.RACY_NS / 1e9 + 0.2)
    assert _lint_out(root) == []
    assert _where(_warm_equals_cold(root, lambda: (root / "pkg" / "sub").rename(root / "pkg" / ".sub"))) == FINDING
