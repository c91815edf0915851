"""The walk asks ``Ignorer.ignored`` only where a pattern can apply (issue 30, warm path).

A directory with no ``exclude`` pattern over it and no ``.gitignore`` between the git top and
it keeps every file (and every subdirectory but the tool/venv ones): the walk takes them
without asking. These tests check that shortcut against the full ``ignored`` answer on trees
with ``.gitignore`` files at several levels, and that a walk over a tree with no pattern at all
does not import pathspec.
"""

from __future__ import annotations

import os
import subprocess
import sys

from shutdown_lint.discovery import DEFAULT_EXCLUDED_DIRS, Ignorer, discover


def _tree(root) -> None:
    (root / ".git").mkdir()
    for rel in ("a/x.py", "a/b/y.py", "a/b/c/z.py", "a/b/c/gen_q.py", "d/w.py", "d/build/v.py", "d/keep/u.py",
                "e/n.py", "e/f/m.py", "e/f/skip_me.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x = 1\n")
    (root / "a/b/.gitignore").write_text("gen_*.py\n")
    (root / "e/.gitignore").write_text("f/skip_*.py\n")
    (root / "d/keep/.gitignore").write_text("!u.py\n")


def _all_dirs(root):
    for here, dirs, _files in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        yield here


def test_files_kept_agrees_with_ignored(tmp_path) -> None:
    _tree(tmp_path)
    for exclude in ([], ["d/"], ["*.py"]):
        ig = Ignorer(str(tmp_path), exclude, True)
        for directory in _all_dirs(str(tmp_path)):
            if not ig.files_kept(directory):
                continue
            for entry in os.scandir(directory):
                if entry.is_dir():
                    assert ig.ignored(entry.path, True) == (entry.name in DEFAULT_EXCLUDED_DIRS), entry.path
                else:
                    assert not ig.ignored(entry.path, False), entry.path


def test_walk_same_files_as_asking_each(tmp_path) -> None:
    _tree(tmp_path)
    for exclude in ([], ["d/"], ["a/b/c/"]):
        found = {f.abspath for f in discover([str(tmp_path)], str(tmp_path), exclude).files}
        ig = Ignorer(str(tmp_path), exclude, True)
        expected = set()
        for here, dirs, files in os.walk(str(tmp_path)):
            dirs[:] = [d for d in dirs if not ig.ignored(os.path.join(here, d), True)]
            expected.update(os.path.join(here, f) for f in files
                            if f.endswith(".py") and not ig.ignored(os.path.join(here, f), False))
        assert found == expected
    names = {os.path.basename(p) for p in found}
    assert "gen_q.py" not in names and "skip_me.py" not in names and "v.py" not in names


def test_walk_without_patterns_imports_no_pathspec(tmp_path) -> None:
    for rel in ("pkg/a.py", "pkg/sub/b.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    code = ("import sys; from shutdown_lint.discovery import discover; "
            f"d = discover(['pkg'], {str(tmp_path)!r}); print(len(d.files), 'pathspec' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["2", "False"], out.stderr
