"""The project index's call chains to the entrypoint and class hierarchies (issue 28).

``tests/data/projects/entry_chains``: interrupt handlers reached from the ``__main__`` block or
a console script through chains of calls and methods in other modules (SHD202), with near
misses: code after the call that exits, a loop that goes on, a caller that raises, a
coroutine whose ``except KeyboardInterrupt`` never runs under ``asyncio.run``, a handler no
entrypoint reaches.

``tests/data/projects/class_hierarchy``: ``gather`` over a method that is abstract where it is
called and owns a sandbox in its override elsewhere (SHD101); a base class that becomes a Ray
actor only through a subclass built in a factory function in another module (SHD501 on the
base's method, SHD404 on the subclass that inherits its async methods; SHD403 no longer takes the
base's ``ray.get`` for the driver's), with near misses: an override that owns nothing, a class never
made an actor, a base that handles SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from shutdown_lint.cache import read_index
from shutdown_lint.index.store import stale

from .conftest import edit

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests", "data", "projects")

CHAINS = {
    ("chains/base.py", 13, "SHD202"): "the last call of `Trainer.fit()`, the last call of `main()`, "
                                      "the last call of the `__main__` block of train.py",
    ("chains/report.py", 8, "SHD202"): "`upload_report()` (the last call of `main()`",
    ("chains/jobs.py", 8, "SHD202"): "the console script `chains-jobs`",
    ("chains/agent.py", 8, "SHD202"): "`except (KeyboardInterrupt, CancelledError)`",
}
HIERARCHY = {
    ("hier/envs/base.py", 11, "SHD101"): "its override `DockerEnv.rollout` has `async with Sandbox.create(...)` "
                                         "at hier/envs/docker.py:7",
    ("hier/workers/base.py", 9, "SHD501"): "out of the Ray remote method `stop()`",
    ("hier/workers/factory.py", 8, "SHD404"): "`RolloutWorker.serve()` (hier/workers/base.py:16), inherited",
}
#: what the same projects give without the index: every finding above missed, and one false alarm
#: (a base method that calls ray.init and ray.get is taken for the driver; it runs in the actor)
WITHOUT_INDEX = {"entry_chains": set(), "class_hierarchy": {("hier/workers/base.py", 14, "SHD403")}}
RULES = "SHD101,SHD202,SHD403,SHD404,SHD501"


def _lint(cwd: str, *args: str, env_extra: dict | None = None) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=REPO)
    for k in ("SHUTDOWN_LINT_NO_INDEX", "SHUTDOWN_LINT_CANDIDATES", "SHUTDOWN_LINT_TREE_TIER"):
        env.pop(k, None)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--select", RULES,
                           "--output-format", "json", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout or "[]")


def _found(diags: list[dict]) -> dict:
    return {(d["path"], d["line"], d["code"]): d["message"] for d in diags}


def _copy(tmp_path, name: str) -> str:
    dst = tmp_path / name
    shutil.copytree(os.path.join(DATA, name), dst)
    return str(dst)


@pytest.mark.parametrize("name, expected", [("entry_chains", CHAINS), ("class_hierarchy", HIERARCHY)])
def test_every_shape_flagged_and_near_misses_not(tmp_path, name, expected):
    project = _copy(tmp_path, name)
    found = _found(_lint(project, "--no-cache", "."))
    assert set(found) == set(expected), sorted(found)
    for key, text in expected.items():
        assert text in found[key], found[key]
    # without the index: every one of them is missed (the gaps this closes)
    assert set(_found(_lint(project, "--no-cache", ".", env_extra={"SHUTDOWN_LINT_NO_INDEX": "1"}))) == WITHOUT_INDEX[name]


@pytest.mark.parametrize("name", ["entry_chains", "class_hierarchy"])
def test_candidate_tiers_lose_nothing_with_the_index_on(tmp_path, name):
    """Findings that depend on another module: the candidate tiers (which read one file) must
    still admit the file; with both tiers off, tier 1 only and both on: the same findings."""
    project = _copy(tmp_path, name)
    both = _found(_lint(project, "--no-cache", "."))
    words_only = _found(_lint(project, "--no-cache", ".", env_extra={"SHUTDOWN_LINT_TREE_TIER": "0"}))
    none = _found(_lint(project, "--no-cache", ".", env_extra={"SHUTDOWN_LINT_CANDIDATES": "0"}))
    assert both == words_only == none


def test_jobs_and_single_files_give_the_same_findings(tmp_path):
    project = _copy(tmp_path, "entry_chains")
    assert _found(_lint(project, "--no-cache", "-j", "1", ".")) == _found(_lint(project, "--no-cache", "-j", "2", "."))
    # one file on its own: the index finds its callers in the modules that import it, and the
    # console scripts of the pyproject.toml above it (a script beside the package, train.py, is
    # not part of the project when only a file of the package is given: the roots come from the paths)
    assert set(_found(_lint(project, "--no-cache", "chains/jobs.py"))) == {("chains/jobs.py", 8, "SHD202")}
    hier = _copy(tmp_path, "class_hierarchy")
    assert set(_found(_lint(hier, "--no-cache", "hier/workers/base.py"))) == {("hier/workers/base.py", 9, "SHD501")}


def _deps(project: str, cache: str, rel: str) -> dict:
    results = next(os.path.join(cache, f) for f in os.listdir(cache) if f.startswith("results-"))
    return read_index(results)[os.path.join(project, rel)][3]["deps"]


def test_a_change_to_a_caller_or_a_subclass_elsewhere_re_lints_the_dependant(tmp_path):
    project = _copy(tmp_path, "class_hierarchy")
    cache = os.path.join(project, ".cache")
    assert set(_found(_lint(project, "--cache-dir", cache, "."))) == set(HIERARCHY)
    deps = _deps(project, cache, "hier/envs/base.py")
    docker = os.path.join(project, "hier", "envs", "docker.py")
    assert docker in deps and not stale(deps, None, lambda: None)[0]
    # the override elsewhere stops owning the sandbox: base.py (unchanged) is re-linted
    edit(docker, "        async with Sandbox.create() as box:\n            return await box.run(task)\n",
         "        return task\n")
    assert stale(deps, None, lambda: None)[0]
    # the factory stops making the subclass an actor: the base's methods are no longer remote
    # (base.py, unchanged, is re-linted: its cancel is no longer an actor's, its get is the driver's)
    edit(os.path.join(project, "hier", "workers", "factory.py"), "    return ray.remote(num_gpus=num_gpus)(GPUWorker)\n",
         "    return GPUWorker\n")
    assert set(_found(_lint(project, "--cache-dir", cache, "."))) == {("hier/workers/base.py", 14, "SHD403")}

    chains = _copy(tmp_path, "entry_chains")
    cache = os.path.join(chains, ".cache")
    assert set(_found(_lint(chains, "--cache-dir", cache, "."))) == set(CHAINS)
    # main() exits 3 after the helper (in its finally); the console script goes
    edit(os.path.join(chains, "train.py"), "        upload_report()\n", "        upload_report()\n        sys.exit(3)\n")
    edit(os.path.join(chains, "pyproject.toml"), 'chains-jobs = "chains.jobs:run"\n', "")
    found = set(_found(_lint(chains, "--cache-dir", cache, ".")))
    assert found == {("chains/agent.py", 8, "SHD202")}, found


def test_summary_tail_calls_stubs_remote_targets_and_scripts():
    from shutdown_lint.index.summary import summarize

    s = summarize(b"""
import sys, asyncio, ray
from .trainer import Trainer

def main():
    t = Trainer(load())
    t.evaluate()
    if not t.ok:
        sys.exit(2)
    try:
        t.fit()
    finally:
        report()

def looped():
    for _ in range(3):
        step()
    Runner(1).go()
    return 3

async def amain():
    await work()

class K:
    @abstractmethod
    async def run(self): ...
    def stub(self):
        \"\"\"doc\"\"\"
        raise NotImplementedError
    def real(self):
        return 1

def factory():
    class Sub(Base):
        pass
    return ray.remote(num_gpus=1)(Sub)

if __name__ == "__main__":
    sys.exit(asyncio.run(amain()))
""")
    fns = s["functions"]
    assert sorted(fns["main"]["tail"]) == ["Trainer.fit", "report"]  # evaluate() is followed by an exit
    assert "tail" not in fns["looped"]  # returns a value last; the loop's call never counts
    assert fns["amain"]["tail"] == ["work"]
    methods = s["classes"]["K"]["methods"]
    assert methods["run"]["stub"] and methods["stub"]["stub"] and "stub" not in methods["real"]
    assert s["main_tail"] == ["amain"]
    assert s["remote"] == ["ray.remote:Base"]  # the factory's local subclass, by its base
    assert summarize(b'[project.scripts]\nx = "pkg.cli:main"\n', "pyproject.toml") == {"scripts": {"x": "pkg.cli:main"}}
