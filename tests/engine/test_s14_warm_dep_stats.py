"""Session 14, warm path: a module that several cached results depend on is stat'ed once a run.

``index.store.stale`` compares each dependency's stat with the stamp its result stored. A warm
run checks the results one by one; before, a module that N results depend on was stat'ed N times
(a warm ray+torch run: 373 stats for 256 modules). With the run's ``memo`` (``Cache.digests``,
which already kept the project digests) the stat is kept as ``path -> (mtime_ns, size)``: every
result compares the same stat. The decisions must stay those of a stat a result: checked here on
the cross-module project for an untouched run, a comment in a dependency (fresh, new stamps to
store), an edit of its summary (stale), a deleted dependency (stale), and end to end (the warm
run after each change prints what a run with no cache prints). A caller with no memo (the
language server: its files change between lints) stats each time, as before.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest

from shutdown_lint.cache import read_index
from shutdown_lint.index.store import PROJECT, stale

from .conftest import edit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROJECT_DIR = os.path.join(REPO, "tests", "data", "projects", "crossmodule")
RULES = "SHD101,SHD102,SHD502,SHD503"


def _lint(cwd: str, *args: str) -> list:
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--select", RULES,
                           "--output-format", "json", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((d["path"], d["line"], d["code"], d["message"]) for d in json.loads(proc.stdout or "[]"))


@pytest.fixture()
def linted(tmp_path):
    """The project copied, linted once with a cache: (project, cache dir, its results with deps)."""
    project = str(tmp_path / "crossmodule")
    shutil.copytree(PROJECT_DIR, project)
    # a second module with generate.py's findings: two results rely on envs/base.py (and the agent)
    src = os.path.join(project, "src", "rollouts")
    shutil.copyfile(os.path.join(src, "generate.py"), os.path.join(src, "generate_again.py"))
    cache = str(tmp_path / "cache")
    _lint(project, "--cache-dir", cache, "src")
    results = {}
    for name in os.listdir(cache):
        if name.startswith("results-"):
            for path, entry in read_index(os.path.join(cache, name)).items():
                if entry[3].get("deps"):
                    results[path] = entry[3]["deps"]
    shared = Counter(p for deps in results.values() for p in deps if not p.startswith(PROJECT))
    assert results and max(shared.values()) >= 2, "the project must have a module several results depend on"
    return project, cache, results, shared


def _decisions(results: dict, memo) -> dict:
    return {path: stale(deps, None, lambda: None, memo) for path, deps in results.items()}


def _stats_by_path(monkeypatch, results: dict, memo) -> tuple[dict, Counter]:
    calls: Counter = Counter()
    real = os.stat

    def counting(path, *a, **k):
        if sys._getframe(1).f_code is stale.__code__:  # stale's own stat of a dependency (not the project walk's)
            calls[path] += 1
        return real(path, *a, **k)

    monkeypatch.setattr(os, "stat", counting)
    try:
        got = _decisions(results, memo)
    finally:
        monkeypatch.setattr(os, "stat", real)
    return got, calls


def test_a_shared_dependency_is_stat_once_a_run(linted, monkeypatch):
    _project, _cache, results, shared = linted
    with_memo, calls = _stats_by_path(monkeypatch, results, {})
    without, calls_each = _stats_by_path(monkeypatch, results, None)
    assert with_memo == without and not any(changed for changed, _ in with_memo.values())
    modules = [p for p in shared]
    assert all(calls[p] == 1 for p in modules), {p: calls[p] for p in modules}
    assert all(calls_each[p] == shared[p] for p in modules)  # no memo (the language server): one a result
    assert sum(calls[p] for p in modules) < sum(calls_each[p] for p in modules)


@pytest.mark.parametrize("change", ["comment", "summary", "deleted"])
def test_decisions_equal_a_stat_a_result(linted, change):
    project, cache, results, shared = linted
    base = os.path.join(project, "src", "rollouts", "envs", "base.py")
    assert base in shared and shared[base] >= 2
    if change == "comment":  # stat changes, summary does not: fresh, with new stamps to store
        with open(base, "a") as fh:
            fh.write("\n# a comment\n")
    elif change == "summary":  # the base class loses its finally: its dependents are stale
        edit(base, "        try:\n            return await box.run()\n        finally:\n"
             "            await box.delete()\n", "        return await box.run()\n")
    else:
        os.remove(base)
    memo: dict = {}
    with_memo = _decisions(results, memo)
    assert with_memo == _decisions(results, None)
    dependents = {p for p, deps in results.items() if base in deps}
    changed = {p for p, (is_stale, _) in with_memo.items() if is_stale}
    if change == "comment":  # (a result that depends on the project's files sees any file's new stat)
        assert not changed & {p for p in dependents if not any(k.startswith(PROJECT) for k in results[p])}
    else:
        assert dependents <= changed
    if change == "comment":
        assert all(with_memo[p][1][base][0] == os.stat(base).st_mtime_ns for p in dependents)
        assert memo[base] == (os.stat(base).st_mtime_ns, os.stat(base).st_size)
    # end to end: the warm run prints what a run with no cache prints (twice: the second from the cache)
    expected = _lint(project, "--no-cache", "src")
    assert _lint(project, "--cache-dir", cache, "src") == expected
    assert _lint(project, "--cache-dir", cache, "src") == expected
