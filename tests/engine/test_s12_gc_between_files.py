"""The serial runner and the pool workers analyse a file and release its memory
(``runner.after_file``) with the cyclic collector paused, then run the collection that became
due, if one did, and freeze what survives it (``runner._one_file``): the project index's tables
and the outcomes are not walked again by every later collection. A serial run unfreezes what it
froze when it ends; a caller that disabled the collector keeps it disabled."""

from __future__ import annotations

import gc

import pytest

from shutdown_lint import registry, runner
from shutdown_lint.settings import Settings

from .conftest import write

SOURCE = "import asyncio\n\n\nasync def go{i}():\n    asyncio.create_task(asyncio.sleep(1))\n"


def _jobs(root, n: int) -> list[runner.Job]:
    jobs = []
    for i in range(n):
        path = root / f"m{i}.py"
        write(path, SOURCE.format(i=i))
        jobs.append(runner.Job(path.name, str(path)))
    return jobs


def _findings(outcomes) -> list[tuple[str, list]]:
    return [(o.result.path, [d.code for d in o.result.diagnostics]) for o in outcomes]


SETTINGS = Settings(selected=tuple(r.code for r in registry.all_rules()))


@pytest.fixture(autouse=True)
def _nothing_frozen():
    """Each test starts with nothing frozen, as a fresh process does; the CI run that failed had
    1.2 M objects frozen by an earlier in-process pool run in the same worker (fixed: see
    ``test_a_callers_own_freeze_is_left_as_it_was``)."""
    gc.unfreeze()
    yield


def _frozen(obj) -> bool:
    """``obj`` is in the permanent generation: ``gc.get_objects()`` lists generations 0-2 only."""
    return gc.is_tracked(obj) and not any(o is obj for o in gc.get_objects())


def test_a_due_collection_freezes_its_survivors_for_the_run_only(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, 4)
    plain = runner.run(jobs, SETTINGS, runner.Mode(), 1)
    frozen_before = gc.get_freeze_count()
    seen = []
    monkeypatch.setattr(runner, "FEW_COLLECTIONS", 1)  # a collection due after every file
    monkeypatch.setattr(runner, "after_file", lambda f=runner.after_file: (f(), seen.append(gc.get_freeze_count())))
    collecting = runner.run(jobs, SETTINGS, runner.Mode(), 1)
    assert _findings(collecting) == _findings(plain)
    assert any("SHD" in c for _p, codes in _findings(plain) for c in codes)  # something was found
    assert seen and seen[-1] > frozen_before  # frozen between files
    assert gc.get_freeze_count() == frozen_before  # and collectable again once the run is over
    assert gc.isenabled()


def test_the_collector_is_paused_through_after_file(tmp_path, monkeypatch):
    jobs = _jobs(tmp_path, 2)
    states = []
    monkeypatch.setattr(runner, "after_file", lambda f=runner.after_file: (states.append(gc.isenabled()), f()))
    runner.run(jobs, SETTINGS, runner.Mode(), 1)
    assert states == [False, False]
    assert gc.isenabled()


@pytest.mark.parametrize("n", [1, 3])
def test_a_disabled_collector_stays_disabled_and_nothing_is_frozen(tmp_path, n):
    jobs = _jobs(tmp_path, n)
    frozen_before = gc.get_freeze_count()
    gc.disable()
    try:
        runner.run(jobs, SETTINGS, runner.Mode(), 1)
        assert not gc.isenabled()
        assert gc.get_freeze_count() == frozen_before
    finally:
        gc.enable()


# ---------------------------------------------------------------- start-up (cli._load_catalogue)

CONSOLE = r"""
import gc, sys
counts = []
gc.callbacks.append(lambda phase, info: phase == "start" and counts.append(info["generation"]))
from shutdown_lint import cli
sys.argv = ["shutdown-lint", "--no-cache", "-q", "--exit-zero", sys.argv[1]]
rc = cli.main()  # argv None: the command line's own run
print("COLLECTIONS", len(counts), "FROZEN", gc.get_freeze_count() > 0, "ENABLED", gc.isenabled())
"""


def test_the_command_lines_imports_are_not_walked_as_they_are_made(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "t.py"
    write(path, "x = 1\n")
    done = subprocess.run([sys.executable, "-c", CONSOLE, str(path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    words = done.stdout.split()
    # the rules, libcst and the engines imported with the collector paused, then frozen: ~120
    # collections (110 gen0, 10 gen1, a gen2) as they were made, a few now
    assert words[words.index("COLLECTIONS") + 1].isdigit() and int(words[words.index("COLLECTIONS") + 1]) < 20
    assert words[-3:] == ["True", "ENABLED", "True"]


def test_an_in_process_main_freezes_nothing(tmp_path):
    from shutdown_lint import cli

    path = tmp_path / "t.py"
    write(path, "x = 1\n")
    frozen_before = gc.get_freeze_count()
    assert cli.main(["--no-cache", "-q", "--exit-zero", str(path)]) == 0
    assert gc.get_freeze_count() == frozen_before
    assert gc.isenabled()


def test_a_small_serial_run_asks_for_no_trim(tmp_path):
    """``TRIM_STEP_KB`` counts from the peak at the run's start (``runner._trim_from_here``), as a
    pool worker counts from its fork's: a serial run counted from 0, so its first file asked for
    a trim (ctypes imported, ``malloc_trim`` called) of memory that was all in use."""
    jobs = _jobs(tmp_path, 2)
    saved = runner._trim_fn, runner._trimmed_at_kb
    try:
        runner._trim_fn, runner._trimmed_at_kb = None, 0
        runner.run(jobs, SETTINGS, runner.Mode(), 1)
        assert runner._trim_fn is None  # never looked up: no trim was asked for
        assert 0 < runner._trimmed_at_kb <= runner._peak_rss_kb()
    finally:
        runner._trim_fn, runner._trimmed_at_kb = saved


# ---------------------------------------------------------------- what the caller froze

@pytest.mark.parametrize("n_jobs,n_files", [(1, 4), (2, 12)], ids=["serial", "pool"])
def test_a_callers_own_freeze_is_left_as_it_was(tmp_path, monkeypatch, n_jobs, n_files):
    """``gc.unfreeze`` thaws everything: a run that unfroze at its end also thawed what its caller
    had frozen, and an in-process pool run froze the caller's whole heap and left it so (the CI
    failure: this file's first test found 1.2 M objects frozen before it began). Now a run that
    finds something frozen freezes nothing of the caller's and thaws nothing."""
    jobs = _jobs(tmp_path, n_files)
    monkeypatch.setattr(runner, "FEW_COLLECTIONS", 1)  # a collection due after every file
    callers = [[]]
    callers[0].append(callers)  # a cycle: tracked by the collector
    gc.freeze()
    assert _frozen(callers)
    since = [[]]  # the caller's, made after its freeze
    since[0].append(since)
    runner.run(jobs, SETTINGS, runner.Mode(), n_jobs)
    assert _frozen(callers)  # still the caller's freeze
    assert not _frozen(since)  # and nothing more of the caller's heap frozen
    assert gc.isenabled()


@pytest.mark.parametrize("n_jobs,n_files", [(1, 4), (2, 12)], ids=["serial", "pool"])
def test_a_run_that_found_nothing_frozen_leaves_nothing_frozen(tmp_path, monkeypatch, n_jobs, n_files):
    jobs = _jobs(tmp_path, n_files)
    monkeypatch.setattr(runner, "FEW_COLLECTIONS", 1)
    outside = [[]]
    outside[0].append(outside)
    seen = []
    monkeypatch.setattr(runner, "after_file", lambda f=runner.after_file: (f(), seen.append(gc.get_freeze_count())))
    runner.run(jobs, SETTINGS, runner.Mode(), n_jobs)
    if n_jobs == 1:
        assert seen and seen[-1] > 0  # the run froze between its files
    assert gc.get_freeze_count() == 0
    assert not _frozen(outside)


def test_the_command_lines_own_process_keeps_its_freeze(tmp_path, monkeypatch):
    """``Mode.own_process`` (the console script's run: the process exits next) freezes and leaves
    it so, even over an earlier freeze (the imports ``cli._load_catalogue`` froze)."""
    jobs = _jobs(tmp_path, 4)
    monkeypatch.setattr(runner, "FEW_COLLECTIONS", 1)
    made = []  # an object made by each file's clean-up, alive when the due collection runs

    def after_file(f=runner.after_file):
        f()
        made.append([made])

    monkeypatch.setattr(runner, "after_file", after_file)
    gc.freeze()
    try:
        runner.run(jobs, SETTINGS, runner.Mode(own_process=True), 1)
        assert len(made) == 4 and all(_frozen(m) for m in made)
    finally:
        gc.unfreeze()
    made.clear()
    runner.run(jobs, SETTINGS, runner.Mode(), 1)  # the same run in a caller's process
    assert len(made) == 4 and not any(_frozen(m) for m in made)


def test_the_console_script_runs_as_its_own_process_and_watch_does_not(tmp_path, monkeypatch):
    from shutdown_lint import cli

    modes = []
    real = runner.run
    monkeypatch.setattr(runner, "run", lambda jobs, settings, mode, *a, **k: (modes.append(mode), real(jobs, settings, mode, *a, **k))[1])
    path = tmp_path / "t.py"
    write(path, SOURCE.format(i=0))
    monkeypatch.setattr("sys.argv", ["shutdown-lint", "--no-cache", "-q", "--exit-zero", str(path)])
    try:
        assert cli.main() == 0
    finally:
        gc.unfreeze()  # the console script's run freezes for the exit it expects
    assert cli.main(["--no-cache", "-q", "--exit-zero", str(path)]) == 0
    assert [m.own_process for m in modes] == [True, False]
    assert gc.get_freeze_count() == 0
