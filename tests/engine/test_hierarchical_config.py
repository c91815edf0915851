"""Configuration that follows the directory tree: each file uses the nearest config above it,
``extend`` inherits, ``--show-settings`` says where each value came from, and the cache keeps
results apart per configuration."""

from __future__ import annotations

from .conftest import HAZARD, write

# SHD301 fires on this (a blocking sleep inside a coroutine); HAZARD fires SHD201.
BLOCKING = "import time\n\n\nasync def poll():\n    time.sleep(1)\n"


def _codes(out: str) -> set[tuple[str, str]]:
    found = set()
    for line in out.splitlines():
        parts = line.split(": ", 1)
        if len(parts) == 2 and parts[1].startswith("SHD"):
            found.add((parts[0].split(":")[0], parts[1].split()[0]))
    return found


def _monorepo(root):
    write(root / "pyproject.toml", '[tool.shutdown-lint]\nselect = ["SHD201", "SHD301"]\n')
    # package a: only SHD201
    write(root / "pkg_a" / "pyproject.toml",
          '[project]\nname = "a"\n\n[tool.shutdown-lint]\nselect = ["SHD201"]\n')
    # package b: inherits the root and ignores SHD201
    write(root / "pkg_b" / "shutdown-lint.toml", 'extend = "../pyproject.toml"\nignore = ["SHD201"]\n')
    for pkg in ("pkg_a", "pkg_b", "shared"):
        write(root / pkg / "threads.py", HAZARD)
        write(root / pkg / "aio.py", BLOCKING)


def test_monorepo_packages_are_linted_with_their_own_config_in_one_run(tmp_path, cli):
    _monorepo(tmp_path)
    expected = {
        ("pkg_a/threads.py", "SHD201"),
        ("pkg_b/aio.py", "SHD301"),
        ("shared/threads.py", "SHD201"), ("shared/aio.py", "SHD301"),
    }
    run = cli(tmp_path, "--output-format", "concise", ".")
    assert run.code == 1, run.err
    assert _codes(run.out) == expected
    # warm cache: the same answer, each file from the index of its own settings
    again = cli(tmp_path, "--output-format", "concise", ".")
    assert _codes(again.out) == expected
    # linting from inside a package, or one file, gives that file the same settings
    inside = cli(tmp_path / "pkg_b", "--output-format", "concise", "--no-cache", "threads.py", "aio.py")
    assert _codes(inside.out) == {("aio.py", "SHD301")}
    # the command line overrides every file's configuration
    cmd = cli(tmp_path, "--output-format", "concise", "--select", "SHD301", ".")
    assert _codes(cmd.out) == {("pkg_a/aio.py", "SHD301"), ("pkg_b/aio.py", "SHD301"), ("shared/aio.py", "SHD301")}
    # --config: one configuration for every file
    one = cli(tmp_path, "--output-format", "concise", "--config", "pkg_a/pyproject.toml", ".")
    assert _codes(one.out) == {("pkg_a/threads.py", "SHD201"), ("pkg_b/threads.py", "SHD201"),
                               ("shared/threads.py", "SHD201")}


def test_cache_follows_a_change_in_a_nested_config(tmp_path, cli):
    _monorepo(tmp_path)
    cli(tmp_path, "--output-format", "concise", ".")
    write(tmp_path / "pkg_a" / "pyproject.toml", '[tool.shutdown-lint]\nselect = ["SHD301"]\n')
    run = cli(tmp_path, "--output-format", "concise", "pkg_a")
    assert _codes(run.out) == {("pkg_a/aio.py", "SHD301")}


def test_show_settings_names_where_each_value_came_from(tmp_path, cli):
    _monorepo(tmp_path)
    run = cli(tmp_path, "--show-settings", "pkg_b/aio.py")
    assert run.code == 0, run.err
    out = run.out
    child, parent = str(tmp_path / "pkg_b" / "shutdown-lint.toml"), str(tmp_path / "pyproject.toml")
    assert f"config file: {child} -> {parent}" in out
    assert f"select = ['SHD201', 'SHD301']    # {parent}" in out
    assert f"ignore = ['SHD201']    # {child}" in out
    assert "target-version = py310    # default" in out
    assert "rules that run (1): SHD301" in out
    cmd = cli(tmp_path, "--show-settings", "pkg_a/aio.py", "--select", "SHD301")
    assert "select = ['SHD301']    # command line" in cmd.out and "rules that run (1): SHD301" in cmd.out
    none = cli(tmp_path, "--show-settings", "nope.py")
    assert none.code == 2 and "nope.py: no such file" in none.err


def test_extend_merges_tables_and_reads_requires_python_of_the_child(tmp_path, cli):
    write(tmp_path / "pyproject.toml",
          '[tool.shutdown-lint]\nextend-select = ["SHD301"]\n[tool.shutdown-lint.per-file-ignores]\n"x.py" = ["SHD201"]\n')
    write(tmp_path / "sub" / "pyproject.toml",
          '[project]\nname = "s"\nrequires-python = ">=3.12"\n\n[tool.shutdown-lint]\nextend = "../pyproject.toml"\n'
          'select = ["SHD201"]\n[tool.shutdown-lint.per-file-ignores]\n"y.py" = ["SHD201"]\n')
    out = cli(tmp_path, "--show-settings", "sub").out
    assert "target-version = py312    # [project] requires-python = '>=3.12'" in out
    assert "'x.py': ('SHD201',)" in out and "'y.py': ('SHD201',)" in out
    assert "rules that run (2): SHD201, SHD301" in out


def test_extend_errors_name_the_file_and_key(tmp_path, cli):
    write(tmp_path / "a" / "shutdown-lint.toml", 'extend = "../b/shutdown-lint.toml"\n')
    write(tmp_path / "b" / "shutdown-lint.toml", 'extend = "../a/shutdown-lint.toml"\n')
    write(tmp_path / "a" / "x.py", HAZARD)
    run = cli(tmp_path / "a", "x.py")
    assert run.code == 2 and "`extend`" in run.err and "makes a cycle" in run.err
    write(tmp_path / "b" / "shutdown-lint.toml", 'extend = "missing.toml"\n')
    run = cli(tmp_path / "a", "x.py")
    assert run.code == 2 and "b/shutdown-lint.toml: `extend` = 'missing.toml': no such file" in run.err
    write(tmp_path / "b" / "shutdown-lint.toml", 'selct = ["SHD2"]\n')
    run = cli(tmp_path / "a", "x.py")
    assert run.code == 2 and "b/shutdown-lint.toml: unknown key `selct`" in run.err
    # a broken nested config is reported for the files under it, named by file
    write(tmp_path / "a" / "shutdown-lint.toml", 'select = ["SHD201"]\n')
    write(tmp_path / "a" / "inner" / "shutdown-lint.toml", 'select = "SHD201"\n')
    write(tmp_path / "a" / "inner" / "y.py", HAZARD)
    run = cli(tmp_path / "a", ".")
    assert run.code == 2 and "inner/shutdown-lint.toml: `select` must be a list of strings" in run.err
    assert "Traceback" not in run.err


def test_nested_exclude_applies_to_the_files_under_it(tmp_path, cli):
    write(tmp_path / "pyproject.toml", '[tool.shutdown-lint]\nselect = ["SHD201"]\n')
    write(tmp_path / "pkg" / "shutdown-lint.toml", 'extend = "../pyproject.toml"\nexclude = ["generated/"]\n')
    write(tmp_path / "pkg" / "generated" / "g.py", HAZARD)
    write(tmp_path / "pkg" / "real.py", HAZARD)
    run = cli(tmp_path, "--output-format", "concise", "--no-cache", ".")
    assert _codes(run.out) == {("pkg/real.py", "SHD201")}
    named = cli(tmp_path, "--output-format", "concise", "--no-cache", "pkg/generated/g.py")
    assert _codes(named.out) == {("pkg/generated/g.py", "SHD201")}
    forced = cli(tmp_path, "--output-format", "concise", "--no-cache", "--force-exclude", "pkg/generated/g.py")
    assert forced.code == 0 and "SHD201" not in forced.out
