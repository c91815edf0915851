"""A warm run over walked directories prints exactly what a cold run prints, after every kind of
change: the walk stats each file through its directory listing (``discovery._Walker``), decides
per directory from that listing whether a configuration or ``.gitignore`` file can be there, and
the cache serves what did not change. Every run is a real ``python -m shutdown_lint`` process;
each warm run follows a cached run of the same command and is compared, byte for byte (stdout,
stderr, status), with a ``--no-cache`` run of the same command in the same directory."""

from __future__ import annotations

import os

import pytest

from .conftest import CLEAN, HAZARD, run_sub, write

ROOT_CONFIG = '[tool.shutdown-lint]\nselect = ["SHD201", "SHD102"]\n'
TASK = "import asyncio\n\n\nasync def main():\n    asyncio.create_task(asyncio.sleep(1))\n"


def _tree(root):
    """Nested configurations (one with our table, one pyproject without it, a shutdown-lint.toml),
    nested .gitignore files, a symlink loop, a directory reached by a second name, a broken link."""
    write(root / "pyproject.toml", ROOT_CONFIG)
    write(root / ".gitignore", "gen/\n")
    write(root / "app" / "h.py", HAZARD)
    write(root / "app" / "clean.py", CLEAN)
    write(root / "app" / "tasks.py", TASK)
    write(root / "gen" / "g.py", HAZARD)
    write(root / "sub" / ".gitignore", "skip_*.py\n")
    write(root / "sub" / "skip_me.py", HAZARD)
    write(root / "sub" / "keep.py", HAZARD)
    write(root / "pkg_a" / "pyproject.toml", '[tool.shutdown-lint]\nselect = ["SHD102"]\n')
    write(root / "pkg_a" / "x.py", HAZARD + TASK.replace("import asyncio\n", "import asyncio\n", 1))
    write(root / "pkg_b" / "pyproject.toml", '[project]\nname = "b"\n')  # no table of ours: the root's applies
    write(root / "pkg_b" / "y.py", HAZARD)
    write(root / "pkg_b" / "deep" / "shutdown-lint.toml", 'extend = "../../pyproject.toml"\nignore = ["SHD201"]\n')
    write(root / "pkg_b" / "deep" / "z.py", HAZARD + TASK)
    os.symlink("..", root / "app" / "loop")  # a loop: walked once
    os.symlink("app", root / "alias")  # app's files by a second name (walked as app: depth first, last name first)
    os.symlink("gone.py", root / "dangling.py")


def _same(cwd, *args):
    """Cached run (fills or refreshes the cache), then warm and cold: warm == cold, byte for byte."""
    args = ("-j", "1", *args)
    run_sub(cwd, *args)
    warm = run_sub(cwd, *args)
    cold = run_sub(cwd, "--no-cache", *args)
    assert (warm.returncode, warm.stdout.decode(), warm.stderr.decode()) == \
        (cold.returncode, cold.stdout.decode(), cold.stderr.decode()), args
    return cold


def test_warm_walked_runs_match_cold_runs_after_every_change(tmp_path):
    root = tmp_path / "proj"
    _tree(root)
    first = _same(root, ".")
    out = first.stdout.decode()
    assert "app/h.py:7:5: SHD201" in out and "sub/keep.py" in out and "pkg_b/y.py" in out  # the root's SHD201
    assert "app/tasks.py:5:5: SHD102" in out and "alias" not in out
    assert "gen/g.py" not in out and "skip_me.py" not in out  # .gitignore at two levels
    assert "pkg_a/x.py:7:5: SHD201" not in out and "pkg_a/x.py" in out  # pkg_a's own select
    assert "pkg_b/deep/z.py" in out and "pkg_b/deep/z.py:7:5: SHD201" not in out  # deep ignores SHD201
    assert "dangling.py: broken symlink, skipped" in first.stderr.decode()

    write(root / "app" / "new.py", HAZARD)  # a new file
    assert "app/new.py" in _same(root, ".").stdout.decode()
    os.remove(root / "app" / "new.py")  # a deleted file
    assert "app/new.py" not in _same(root, ".").stdout.decode()

    # an edit of the same size (another mtime): the stat differs, the content decides
    st = os.stat(root / "app" / "h.py")
    same_size = HAZARD.replace("sys.exit(3)", "print( 3 ) ")
    assert len(same_size) == len(HAZARD)
    write(root / "app" / "h.py", same_size)
    os.utime(root / "app" / "h.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert "app/h.py:" not in _same(root, ".").stdout.decode()
    os.utime(root / "app" / "clean.py")  # touched: same content, new stamp
    _same(root, ".")

    # configurations: a nested table appears, a pyproject gains our table, a rule option changes
    write(root / "pkg_b" / "deep" / "shutdown-lint.toml", 'extend = "../../pyproject.toml"\n')
    assert "pkg_b/deep/z.py:7:5: SHD201" in _same(root, ".").stdout.decode()
    write(root / "pkg_b" / "pyproject.toml", '[project]\nname = "b"\n\n[tool.shutdown-lint]\nselect = ["SHD102"]\n')
    assert "pkg_b/y.py" not in _same(root, ".").stdout.decode()
    write(root / "sub" / "shutdown-lint.toml", '[rules.SHD102]\non-error = "exit"\n')  # a new config file
    _same(root, ".")
    write(root / "pyproject.toml", ROOT_CONFIG + '\n[tool.shutdown-lint.rules.SHD102]\nflag-reference-only = false\n')
    _same(root, ".")

    # ignores: a .gitignore changes, an exclude is added (in the config, on the command line)
    write(root / "sub" / ".gitignore", "keep.py\n")
    out = _same(root, ".").stdout.decode()
    assert "sub/keep.py" not in out and "sub/skip_me.py" in out
    write(root / "pyproject.toml", ROOT_CONFIG.replace("]\n", ']\nexclude = ["app/tasks.py"]\n', 1))
    assert "app/tasks.py" not in _same(root, ".").stdout.decode()
    assert "pkg_a" not in _same(root, ".", "--exclude", "pkg_a").stdout.decode()
    _same(root, ".", "--no-respect-gitignore")  # another command line

    # other working directories: the display paths change with them
    _same(root / "app", "..")
    _same(tmp_path, "proj")
    _same(root / "pkg_b", ".", str(root / "app"))


def test_a_file_that_is_a_link_to_something_else_than_a_file_is_skipped_as_before(tmp_path):
    root = tmp_path / "proj"
    write(root / "pyproject.toml", ROOT_CONFIG)
    write(root / "a.py", HAZARD)
    os.mkfifo(root / "fifo")
    os.symlink("fifo", root / "pipe.py")  # a .py name on a FIFO: not read (it would block)
    os.mkdir(root / "dir.py")  # a directory with a .py name is walked
    write(root / "dir.py" / "inner.py", HAZARD)
    run = _same(root, ".")
    assert "a.py" in run.stdout.decode() and "dir.py/inner.py" in run.stdout.decode()
    assert "pipe.py: broken symlink, skipped" in run.stderr.decode()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads a directory whatever its mode")
def test_an_unreadable_directory_is_skipped_warm_as_cold(tmp_path):
    root = tmp_path / "proj"
    write(root / "pyproject.toml", ROOT_CONFIG)
    write(root / "a.py", HAZARD)
    write(root / "locked" / "b.py", HAZARD)
    _same(root, ".")
    os.chmod(root / "locked", 0)
    try:
        run = _same(root, ".")
        assert "locked" not in run.stdout.decode()
    finally:
        os.chmod(root / "locked", 0o755)
