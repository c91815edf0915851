"""The dependency on the project's files (``index.store``): the walk the warm run repeats finds
the files ``os.walk`` finds (the walk the project index made before), and the digest is a
function of the files' paths and stats only (not of which objects hold them).
"""

from __future__ import annotations

import os
from pathlib import Path

from shutdown_lint.index import store


def _os_walk(roots: list) -> list[str]:
    """The project index's walk as it was written with ``os.walk`` (before ``scan_roots``)."""
    found: list[str] = []
    for root, tops in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            if dirpath == root and tops is not None:
                dirnames[:] = [d for d in dirnames if d in tops]
                filenames = []
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and (
                d not in store.SKIP_DIRS or os.path.isfile(os.path.join(dirpath, d, "__init__.py")))]
            found += [os.path.join(dirpath, f) for f in filenames if f.endswith(".py")]
    return sorted(set(found))


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel in ["a.py", "pkg/__init__.py", "pkg/m.py", "pkg/sub/x.py", "build/gen.py", "dist/__init__.py",
                "dist/d.py", ".hidden/h.py", "node_modules/n.py", "other/o.py", "notes.txt", "pkg/data.pyc"]:
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("x = 1\n")
    (root / "linked").symlink_to(root / "other", target_is_directory=True)  # listed, not followed
    (root / "link.py").symlink_to(root / "a.py")
    (root / "broken.py").symlink_to(root / "gone.py")
    return root


def test_scan_finds_what_os_walk_finds(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    for roots in ([(str(root), None)], [(str(root), frozenset({"pkg"}))], [(str(root), frozenset({"pkg", "dist"}))],
                  [(str(root), None), (str(root / "pkg"), None)], [(str(root / "missing"), None)]):
        assert store.walk_roots(roots) == _os_walk(roots), roots
    found = store.walk_roots([(str(root), None)])
    assert str(root / "linked" / "o.py") not in found and str(root / "broken.py") in found


def test_digest_follows_the_files_and_nothing_else(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    key = store.project_key([(str(root), None), (str(root), frozenset({"pkg"}))])
    first = store.project_digest(key)
    assert store.project_digest(key) == first
    # the stats a run took of its discovered files (other objects, same values) give the same digest
    stats = {p: (os.stat(p).st_mtime_ns, os.stat(p).st_size) for p in store.walk_roots([(str(root), None)])
             if os.path.exists(p)}
    assert store.project_digest(key, None, lambda: {k: tuple(v) for k, v in stats.items()}) == first
    memo: dict = {}
    assert store.project_digest(key, memo) == first and memo == {key: first}
    (root / "pkg" / "m.py").write_text("x = 22\n")  # an edit
    edited = store.project_digest(key)
    assert edited != first
    (root / "pkg" / "new.py").write_text("")  # a file added
    added = store.project_digest(key)
    assert added not in (first, edited)
    (root / "pkg" / "new.py").rename(root / "pkg" / "renamed.py")
    assert store.project_digest(key) not in (first, edited, added)
    (root / "notes.txt").write_text("not python")  # not a project file
    assert store.project_digest(key) == store.project_digest(key, {})
    assert store.project_digest(store.project_key([])) == store.project_digest(store.project_key([]))
