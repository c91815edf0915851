"""File discovery: .gitignore (nested, negation), exclude, default dirs, .pyi, symlink
loops, explicit files and --force-exclude."""

from __future__ import annotations

import os

import pytest

from shutdown_lint.discovery import discover

from .conftest import CLEAN, HAZARD, write


def _names(result, root):
    return [os.path.relpath(f.abspath, root).replace(os.sep, "/") for f in result.files]


def test_walks_py_files_sorted_and_skips_stubs_and_tool_dirs(tmp_path):
    for rel in ["b.py", "a/x.py", "a/y.pyi", ".venv/lib.py", "pkg/__pycache__/c.py", "node_modules/n.py",
                "notes.txt", "a/deep/z.py"]:
        write(tmp_path / rel, CLEAN)
    found = discover(["."], str(tmp_path), cwd=str(tmp_path))
    assert _names(found, tmp_path) == ["a/deep/z.py", "a/x.py", "b.py"]
    assert [f.display for f in found.files] == ["a/deep/z.py", "a/x.py", "b.py"]
    assert found.errors == []


def test_nested_gitignore_with_negation(tmp_path):
    write(tmp_path / ".gitignore", "generated/\n*_pb2.py\n")
    write(tmp_path / "svc/.gitignore", "local_*.py\n!local_keep.py\n")
    write(tmp_path / "svc/sub/.gitignore", "!api_pb2.py\n")
    for rel in ["main.py", "generated/g.py", "svc/x_pb2.py", "svc/local_tmp.py", "svc/local_keep.py", "svc/ok.py",
                "svc/sub/api_pb2.py", "svc/sub/local_a.py"]:
        write(tmp_path / rel, CLEAN)
    found = discover(["."], str(tmp_path), cwd=str(tmp_path))
    assert _names(found, tmp_path) == ["main.py", "svc/local_keep.py", "svc/ok.py", "svc/sub/api_pb2.py"]
    # the gitignore of the enclosing git work tree applies when linting a subdirectory
    os.mkdir(tmp_path / ".git")
    found = discover(["svc"], str(tmp_path / "svc"), cwd=str(tmp_path))
    assert _names(found, tmp_path) == ["svc/local_keep.py", "svc/ok.py", "svc/sub/api_pb2.py"]
    # and can be switched off
    found = discover(["."], str(tmp_path), respect_gitignore=False, cwd=str(tmp_path))
    assert "generated/g.py" in _names(found, tmp_path)


def test_exclude_patterns_and_explicit_files(tmp_path):
    for rel in ["src/app.py", "tests/data/bad.py", "tests/test_a.py", "legacy/old.py"]:
        write(tmp_path / rel, CLEAN)
    found = discover(["."], str(tmp_path), ["tests/data", "legacy/"], cwd=str(tmp_path))
    assert _names(found, tmp_path) == ["src/app.py", "tests/test_a.py"]
    # a file named on the command line is linted even when excluded ...
    found = discover(["legacy/old.py"], str(tmp_path), ["legacy/"], cwd=str(tmp_path))
    assert _names(found, tmp_path) == ["legacy/old.py"]
    # ... unless --force-exclude (what pre-commit needs)
    found = discover(["legacy/old.py"], str(tmp_path), ["legacy/"], force_exclude=True, cwd=str(tmp_path))
    assert found.files == []


def test_symlink_loop_is_walked_once(tmp_path):
    write(tmp_path / "pkg/mod.py", CLEAN)
    os.symlink(tmp_path / "pkg", tmp_path / "pkg" / "again")  # pkg/again -> pkg
    os.symlink(tmp_path, tmp_path / "pkg" / "root")  # pkg/root -> .
    found = discover(["."], str(tmp_path), cwd=str(tmp_path))
    assert len(found.files) == 1 and found.files[0].abspath.endswith("mod.py")


def test_missing_path_is_an_error(tmp_path):
    found = discover(["nope.py"], str(tmp_path), cwd=str(tmp_path))
    assert found.files == [] and "nope.py" in found.errors[0]


def test_cli_respects_config_exclude_and_gitignore(project, cli):
    with open(project / "pyproject.toml", "a") as fh:
        fh.write('exclude = ["vendored"]\n')
    write(project / ".gitignore", "build_out/\n")
    write(project / "vendored/h.py", HAZARD)
    write(project / "build_out/h.py", HAZARD)
    write(project / "stubs/h.pyi", HAZARD)
    write(project / "app/h.py", HAZARD)
    run = cli(project, "--no-cache", "--output-format", "concise")
    assert run.code == 1
    assert [line.split(":")[0] for line in run.out.splitlines() if "SHD201" in line] == ["app/h.py"]


@pytest.mark.parametrize("arg", ["app", "app/h.py"])
def test_cli_paths_outside_cwd_are_shown_absolute(project, tmp_path_factory, cli, arg):
    write(project / "app/h.py", HAZARD)
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    run = cli(elsewhere, "--no-cache", "--output-format", "concise", project / arg)
    assert run.code == 1
    assert run.out.startswith(str(project / "app" / "h.py") + ":7:5: SHD201")


def test_broken_symlink_is_skipped_with_a_warning(tmp_path):
    (tmp_path / "ok.py").write_text("x = 1\n")
    os.symlink("gone.py", tmp_path / "dangling.py")
    found = discover(["."], str(tmp_path), cwd=str(tmp_path))
    assert [f.display for f in found.files] == ["ok.py"]
    assert found.warnings == ["dangling.py: broken symlink, skipped"] and found.errors == []


def test_the_bulk_plain_path_test_agrees_with_the_one_path_test():
    """``discover`` joins a file list to test every path at once; it must agree with ``_plain``."""
    import random

    from shutdown_lint.discovery import _all_plain, _plain

    rng = random.Random(3)
    parts = ["a", "b.py", "/", ".", "..", "", "x\0y", "-", "py", "//"]
    for _ in range(20000):
        paths = ["".join(rng.choice(parts) for _ in range(rng.randint(0, 4))) for _ in range(rng.randint(0, 5))]
        expected = bool(paths) and all(_plain(p) and "\0" not in p for p in paths)
        assert _all_plain(paths) == expected, paths


def test_files_named_in_any_spelling_get_the_same_display_and_absolute_path(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "s.pyi").write_text("x: int\n")
    monkeypatch.chdir(tmp_path)
    expected = [("pkg/m.py", str(tmp_path / "pkg" / "m.py"))]
    for names in (["pkg/m.py"], ["./pkg/m.py"], ["pkg//m.py"], ["pkg/../pkg/m.py"], [str(tmp_path / "pkg" / "m.py")],
                  ["pkg/m.py", "pkg/s.pyi"], ["pkg/m.py", "./pkg/m.py", "pkg/m.py"], ["pkg"], ["pkg/"]):
        found = discover(names, str(tmp_path))
        assert [(f.display, f.abspath) for f in found.files] == expected, names
        assert found.errors == []
        if names[0] != "pkg" and names[0] != "pkg/":  # named files carry their stat stamp
            st = os.stat(tmp_path / "pkg" / "m.py")
            assert (found.files[0].mtime_ns, found.files[0].size) == (st.st_mtime_ns, st.st_size)
    missing = discover(["pkg/nope.py", "./nope.py"], str(tmp_path))
    assert missing.files == [] and missing.errors == ["pkg/nope.py: no such file or directory",
                                                      "./nope.py: no such file or directory"]


def test_the_walk_by_path_finds_what_the_walk_by_open_directory_finds(tmp_path, monkeypatch):
    """Where ``os.scandir`` cannot list an fd the walk lists each directory by its path: the same
    files (with their stat stamps), warnings and configuration-free directories."""
    import shutdown_lint.discovery as D

    for rel in ["a.py", "pkg/b.py", "pkg/deep/c.py", "cfg/pyproject.toml", "cfg/d.py", "notes.txt"]:
        write(tmp_path / rel, CLEAN)
    write(tmp_path / "pkg" / ".gitignore", "c.py\n")
    os.symlink("..", tmp_path / "pkg" / "up")
    os.symlink("gone.py", tmp_path / "dangling.py")
    names = frozenset({"pyproject.toml", "shutdown-lint.toml"})
    by_fd = discover(["."], str(tmp_path), cwd=str(tmp_path), config_names=names)
    monkeypatch.setattr(D, "_FD_WALK", False)
    by_path = discover(["."], str(tmp_path), cwd=str(tmp_path), config_names=names)
    assert by_fd == by_path and by_fd.plain_dirs == by_path.plain_dirs
    assert [f.display for f in by_fd.files] == ["a.py", "cfg/d.py", "pkg/b.py"]
    assert all(f.mtime_ns == os.stat(f.abspath).st_mtime_ns and f.size == len(CLEAN) for f in by_fd.files)
    assert by_fd.warnings == ["dangling.py: broken symlink, skipped"]
    assert str(tmp_path / "cfg") not in by_fd.plain_dirs and str(tmp_path / "pkg" / "deep") in by_fd.plain_dirs


def test_warnings_come_in_walk_order_whatever_the_listing_order(tmp_path):
    """Directories are listed in the file system's order; the warnings still come depth first, by name."""
    for name in ("zz.py", "aa.py", "mm.py"):
        os.symlink("gone.py", tmp_path / name)
    (tmp_path / "b").mkdir()
    os.symlink("gone.py", tmp_path / "b" / "x.py")
    (tmp_path / "a").mkdir()
    os.symlink("gone.py", tmp_path / "a" / "y.py")
    found = discover(["."], str(tmp_path), cwd=str(tmp_path))
    # the root's own entries first, then its subdirectories, the last name first (a stack)
    assert found.warnings == [f"{n}: broken symlink, skipped" for n in ("aa.py", "mm.py", "zz.py", "b/x.py", "a/y.py")]
