"""The result cache's index file (``results-<key>.bin``): a framed ``marshal`` payload, compact
entries, and a warm run whose output is the cold run's, byte for byte.

A damaged index (truncated, a flipped byte, another program's file, a torn write) is never
trusted and never crashes a run: it is a warning, the files are linted again and the index is
rewritten. Entries of the wrong shape are skipped one by one."""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from shutdown_lint import cache as C

from .conftest import CLEAN, HAZARD, REPO, write


def _index(project) -> str:
    (path,) = glob.glob(str(project / ".shutdown_lint_cache" / "results-*.bin"))
    return path


# ------------------------------------------------------------------ the frame


def test_pack_round_trips_plain_data():
    data = {"format": 2, "files": {"/a.py": (1, 2, b"\x00" * 32, "text"), "/b.py": (3, 4, b"\x01" * 32, {
        "diagnostics": [{"line": 1, "fix": None, "ratio": 0.5, "ok": True}], "deps": {"/c.py": [1, 2, "ab"]}})}}
    assert C.unpack(C.pack(data)) == data


@pytest.mark.parametrize("damage", [
    lambda raw: raw[:-1],  # truncated
    lambda raw: raw[: len(raw) // 2],
    lambda raw: raw[:10],  # inside the header
    lambda raw: b"",
    lambda raw: raw + b"x",  # trailing bytes (two writers appending)
    lambda raw: raw[:-5] + bytes([raw[-5] ^ 0x40]) + raw[-4:],  # a flipped bit in the payload
    lambda raw: b"{\"format\": 1, \"files\": {}}",  # the old JSON index
    lambda raw: b"\x00\xff" * 100,
])
def test_a_damaged_frame_is_a_value_error(damage):
    raw = C.pack({"format": 2, "files": {"/a.py": (1, 2, b"\x00" * 32, "text")}})
    with pytest.raises(ValueError):
        C.unpack(damage(raw))


def test_a_valid_frame_of_the_wrong_data_is_ignored_with_a_warning(tmp_path):
    cache = C.Cache(str(tmp_path), "fp")
    for data in ([], {"format": 1, "files": {}}, {"format": 2, "files": []}, "files"):
        with open(cache.path, "wb") as fh:
            fh.write(C.pack(data))
        again = C.Cache(str(tmp_path), "fp")
        assert again.entries == {} and "ignoring corrupt cache" in again.warnings[0]


def test_entries_of_the_wrong_shape_are_skipped_one_by_one(tmp_path):
    cache = C.Cache(str(tmp_path), "fp")
    good = (5, 6, b"\x02" * 32, "text")
    files = {"/good.py": good, "/list.py": [5, 6, b"\x02" * 32, "text"], "/short.py": (5, 6),
             "/hexdigest.py": (5, 6, "ab" * 32, "text"), "/result.py": (5, 6, b"\x02" * 32, 7), "/int.py": 3}
    with open(cache.path, "wb") as fh:
        fh.write(C.pack({"format": 2, "version": "x", "key": cache.key, "files": files}))
    cache = C.Cache(str(tmp_path), "fp")
    assert cache.warnings == []
    assert cache.hit("/good.py", 5, 6) == "text" and cache.entry("/good.py")[2] == "02" * 32
    for path in files:
        if path not in ("/good.py", "/hexdigest.py"):  # a digest of the wrong type only makes entry() miss
            assert cache.hit(path, 5, 6) is None and cache.entry(path) is None, path
    assert cache.entry("/hexdigest.py") is None
    assert cache.hit("/good.py", 5, 7) is None and cache.hit("/good.py", 4, 6) is None  # stat changed


# ------------------------------------------------------------------ compact entries


def test_a_result_with_nothing_to_report_is_stored_as_its_stage(tmp_path):
    cache = C.Cache(str(tmp_path), "fp")
    clean = {"path": "", "diagnostics": [], "error": None, "warnings": [], "cached": False, "parsed": False,
             "deps": {}, "stage": "text"}
    parsed = {**clean, "parsed": True, "stage": "libcst"}
    finding = {**clean, "diagnostics": [{"code": "SHD201", "line": 3}], "stage": "libcst"}
    with_deps = {**clean, "deps": {"/dep.py": [1, 2, "abc"]}, "stage": "libcst"}
    for name, result in (("clean", clean), ("parsed", parsed), ("finding", finding), ("deps", with_deps)):
        cache.store(f"/{name}.py", 1, 2, "ab" * 32, result)
    assert cache.entries["/clean.py"][3] == "text"
    for name in ("parsed", "finding", "deps"):
        assert isinstance(cache.entries[f"/{name}.py"][3], dict)
    assert cache.save(live={"/clean.py", "/parsed.py", "/finding.py", "/deps.py"}) is None
    entries = C.read_index(cache.path)
    assert entries["/clean.py"] == [1, 2, "ab" * 32, clean]
    assert entries["/finding.py"][3] == finding and entries["/deps.py"][3] == with_deps
    loaded = C.Cache(str(tmp_path), "fp")
    assert loaded.entry("/parsed.py") == [1, 2, "ab" * 32, parsed]
    # an expanded result is a fresh dict each time: a caller may change it
    loaded.entry("/clean.py")[3]["diagnostics"].append("x")
    assert loaded.entry("/clean.py")[3] == clean


def test_an_index_is_used_only_by_its_own_configuration(tmp_path):
    """Index files are named by a checksum of their key; the key inside decides."""
    cache = C.Cache(str(tmp_path), "fp")
    cache.store("/a.py", 1, 2, "ab" * 32, {"stage": "text"})
    cache.save(live={"/a.py"})
    assert C.Cache(str(tmp_path), "fp").hit("/a.py", 1, 2) == "text"
    other = C.Cache(str(tmp_path), "other settings")
    other.path = cache.path  # as if the two keys had the same checksum
    other.entries, other.warnings = {}, []
    other._load()
    assert other.entries == {} and other.warnings == []  # not served, and not an error either
    other.store("/b.py", 1, 2, "ab" * 32, {"stage": "tree"})
    other.save(live={"/b.py"})
    assert C.Cache(str(tmp_path), "fp").hit("/a.py", 1, 2) is None  # the file changed hands


def test_save_forgets_files_that_are_gone(tmp_path):
    here = write(tmp_path / "here.py", CLEAN)
    cache = C.Cache(str(tmp_path / "c"), "fp")
    cache.store(str(here), 1, 2, "ab" * 32, {"stage": "text"})
    cache.store(str(tmp_path / "gone.py"), 1, 2, "ab" * 32, {"stage": "text"})
    cache.save()
    assert list(C.read_index(cache.path)) == [str(here)]


def test_the_index_file_depends_on_the_format_version_and_settings(tmp_path, monkeypatch):
    path = C.Cache(str(tmp_path), "fp").path
    assert C.Cache(str(tmp_path), "other").path != path
    monkeypatch.setattr(C, "__version__", "999")
    assert C.Cache(str(tmp_path), "fp").path != path
    monkeypatch.undo()
    monkeypatch.setattr(C, "_FORMAT", 99)
    assert C.Cache(str(tmp_path), "fp").path != path


# ------------------------------------------------------------------ whole runs


def test_a_damaged_index_is_a_warning_and_is_rebuilt(project, cli, count_lints):
    write(project / "bad.py", HAZARD)
    write(project / "clean.py", CLEAN)
    first = cli(project, "--jobs", "1", "--output-format", "concise")
    index = _index(project)
    with open(index, "rb") as fh:
        raw = fh.read()
    for damaged in (raw[:-3], raw[:-3] + b"\xff\xff\xff", raw[:40], b""):
        with open(index, "wb") as fh:
            fh.write(damaged)
        count_lints.clear()
        run = cli(project, "--jobs", "1", "--output-format", "concise")
        assert (run.code, run.out) == (first.code, first.out)
        assert sorted(count_lints) == ["bad.py", "clean.py"]
        assert "warning: ignoring unreadable cache" in run.err
        count_lints.clear()
        again = cli(project, "--jobs", "1", "--output-format", "concise")  # rewritten by the previous run
        assert count_lints == [] and (again.code, again.out) == (first.code, first.out)
        assert "warning" not in again.err


def test_an_unreadable_index_is_a_warning(project, cli):
    write(project / "bad.py", HAZARD)
    cli(project, "--jobs", "1")
    index = _index(project)
    os.remove(index)
    os.mkdir(index)  # reading it fails with IsADirectoryError
    run = cli(project, "--jobs", "1", "--output-format", "concise")
    assert run.code == 1 and "bad.py:7:5: SHD201" in run.out
    assert "warning: ignoring unreadable cache" in run.err and "cache not written" in run.err


@pytest.mark.parametrize("fmt", ["concise", "full", "json", "sarif", "github", "junit"])
def test_warm_output_is_the_cold_output(project, cli, count_lints, fmt):
    write(project / "bad.py", HAZARD)
    write(project / "clean.py", CLEAN)
    write(project / "pkg" / "other.py", HAZARD.replace("pump", "drain"))
    write(project / "pkg" / "quiet.py", "x = 1\n")
    for quiet in ((), ("-q",)):
        cold = cli(project, "--no-cache", "--jobs", "1", "--output-format", fmt, *quiet)
        fill = cli(project, "--jobs", "1", "--output-format", fmt, *quiet)
        count_lints.clear()
        warm = cli(project, "--jobs", "1", "--output-format", fmt, *quiet)
        assert count_lints == []
        assert (warm.code, warm.out, warm.err) == (cold.code, cold.out, cold.err) == (fill.code, fill.out, fill.err)
    stats = [cli(project, *args, "--jobs", "1", "--statistics") for args in (("--no-cache",), (), ())]
    assert stats[0] == stats[1] == stats[2] and "Checked 4 files:" in stats[0].out


def test_a_changed_file_is_linted_again_whatever_its_size(project, cli, count_lints):
    write(project / "bad.py", HAZARD)
    write(project / "clean.py", CLEAN)
    cli(project, "--jobs", "1")
    # same size, another content, another mtime: the stat differs, the hash decides
    same_size = CLEAN.replace("main", "mian")
    assert len(same_size) == len(CLEAN)
    st = os.stat(project / "clean.py")
    write(project / "clean.py", same_size)
    os.utime(project / "clean.py", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    count_lints.clear()
    cli(project, "--jobs", "1")
    assert count_lints == ["clean.py"]
    # the hazard removed from bad.py: its finding goes, although the cached entry had one
    write(project / "bad.py", CLEAN)
    count_lints.clear()
    run = cli(project, "--jobs", "1", "--output-format", "concise")
    assert count_lints == ["bad.py"] and run.code == 0 and "SHD201" not in run.out


def test_a_file_named_twice_or_by_another_spelling_is_linted_once(project, cli, count_lints):
    write(project / "pkg" / "bad.py", HAZARD)
    run = cli(project, "--jobs", "1", "--output-format", "concise", "pkg/bad.py", "./pkg/bad.py",
              str(project / "pkg" / "bad.py"), "pkg//bad.py", "pkg/../pkg/bad.py")
    assert run.out.count("SHD201") == 1 and count_lints == ["pkg/bad.py"]
    count_lints.clear()
    again = cli(project, "--jobs", "1", "--output-format", "concise", "./pkg/bad.py", "pkg/bad.py")
    assert again.out == run.out and count_lints == []


# ------------------------------------------------------------------ the command line's long file lists


@pytest.mark.parametrize("head", [
    [], ["--isolated"], ["--select", "SHD201"], ["--cache-dir"], ["-j", "2", "--output-format", "json"],
    ["--output-format=json", "-q"], ["--sel", "SHD2"], ["-j2"], ["--", "-odd.py"], ["--fix", "--no-cache"],
    ["x.py", "--fix"], ["--stdin-filename"], ["--exclude", "a,b", "--isolated", "--show-fixes"],
])
def test_a_long_trailing_file_list_parses_as_argparse_would(head):
    from shutdown_lint.cli import _LONG_TAIL, _parse, build_parser

    tail = [f"pkg/m{i}.py" for i in range(_LONG_TAIL + 5)]
    for argv in (head + tail, head + tail[:3], head):
        expected, got = [], []
        for out, parse in ((expected, lambda a: build_parser().parse_args(a)),
                           (got, lambda a: _parse(build_parser(), a))):
            try:
                out.append(vars(parse(list(argv))))
            except SystemExit as e:
                out.append(("exit", e.code))
        assert got == expected, argv


def test_no_option_takes_more_than_one_value():
    """What ``cli._parse`` relies on to leave a long file list out of argparse."""
    from shutdown_lint.cli import build_parser

    options = [a for a in build_parser()._actions if a.option_strings]
    assert options and all(a.nargs in (None, 0, "?") for a in options), [(a.dest, a.nargs) for a in options]


def test_a_format_that_prints_fix_edits_does_not_reuse_results_made_without_them(project, cli):
    write(project / "bad.py", HAZARD)
    expected = cli(project, "--no-cache", "--jobs", "1", "--output-format", "json")
    assert '"edits": [' in expected.out and '"content"' in expected.out
    cli(project, "--jobs", "1", "--output-format", "concise")  # caches results without edits
    os.utime(project / "bad.py", ns=(1, 1))  # stat changed, content not: the worker compares the hash
    for _ in range(2):
        run = cli(project, "--jobs", "1", "--output-format", "json")
        assert (run.code, run.out) == (expected.code, expected.out)


def test_a_fully_cached_run_imports_only_what_it_needs(project):
    """A warm run is mostly interpreter start and imports: none of these is needed to serve a
    cache (each cost a warm run over 8,670 files 1-5% of its time when it was imported)."""
    write(project / "bad.py", HAZARD)
    write(project / "pkg" / "clean.py", CLEAN)
    heavy = ["libcst", "rich", "pathspec", "tomllib", "dataclasses", "typing", "hashlib", "json", "ast", "inspect",
             "shutil", "shutdown_lint.runner", "shutdown_lint.analyzer", "shutdown_lint.index.summary"]
    # what the interpreter's start loaded (site, .pth files) is not the run's doing
    code = ("import sys; before = set(sys.modules); from shutdown_lint.cli import main; "
            "rc = main(['--isolated', '--output-format', 'concise', 'bad.py', 'pkg/clean.py']); print('RC', rc); "
            f"print('LOADED', sorted(m for m in {heavy!r} if m in sys.modules and m not in before))")
    env = dict(os.environ, PYTHONPATH=REPO)
    outs = [subprocess.run([sys.executable, "-c", code], cwd=project, capture_output=True,
                           text=True, timeout=60, env=env) for _ in range(2)]
    assert "RC 1" in outs[0].stdout, outs[0].stderr
    assert "RC 1" in outs[1].stdout and "bad.py:7:5: SHD201" in outs[1].stdout, outs[1].stderr
    assert "LOADED []" in outs[1].stdout, outs[1].stdout


def test_the_trailing_run_is_found_as_a_loop_would_find_it():
    import random

    from shutdown_lint.cli import _trailing_run

    def loop(argv):
        start = len(argv)
        while start > 0 and not argv[start - 1].startswith("-"):
            start -= 1
        return start

    rng = random.Random(7)
    tokens = ["-a", "--x", "a.py", "b", "-", "", "x\0y", "\0-z", "c-d", "-\0", "--", "pkg/-odd.py"]
    for _ in range(5000):
        argv = [rng.choice(tokens) for _ in range(rng.randint(0, 9))]
        assert _trailing_run(argv) == loop(argv), argv
