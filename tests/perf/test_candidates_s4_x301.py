"""SHD301's tier 2 (issue 30, session 4): a superset of the facts' qualified names and types on
Python's ``ast`` (``_Values``), and the project index asked by the condition itself
(``Rule.candidate_tree_project``) for a receiver that another module's return annotation types.

Each case: the file the condition keeps, or the near miss it now rules out, and linting agrees
with the tier on and off. The project cases run the command line in a subprocess on a real
package (the index is the run's); each of them was lost by the condition before (its tier 2 ruled
the file out, the rule reports it with the tier off)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.perf.test_candidates import _tier2_decides

# --------------------------------------------------------------------------- without an index
_QUEUE_ACTOR = '''
import asyncio
import queue


class _QueueActor:
    def __init__(self, maxsize):
        self.queue = QUEUE(maxsize)

    async def put(self, item, timeout=None):
        self.queue.put(item)
'''


@pytest.mark.parametrize("make,candidate,reported", [
    ("asyncio.Queue", False, False),  # an asyncio queue's put is a coroutine; ``queue`` is imported
    ("queue.Queue", True, True),
])
def test_shd301_a_receiver_is_typed_by_what_it_is_bound_to(make, candidate, reported):
    assert bool(_tier2_decides("SHD301", _QUEUE_ACTOR.replace("QUEUE", make), candidate)) is reported


@pytest.mark.parametrize("source,candidate,reported", [
    # a parameter annotated with asyncio's Condition, in a module that imports threading
    ("import asyncio, threading\nL = threading.Lock()\n"
     "async def wait(condition: asyncio.Condition):\n    await condition.acquire()\n    condition.wait()\n",
     False, False),
    ("import asyncio, threading\n"
     "async def wait(condition: threading.Condition):\n    condition.wait()\n", True, True),
    # a dict's get, in a module where a queue.Queue exists
    ("import queue\nQ = queue.Queue()\nasync def f(d):\n    headers = dict(d)\n    return headers.get('a')\n",
     False, False),
    # a task's result() (create_task gives no type the vocabulary knows)
    ("import asyncio, concurrent.futures\nasync def f(c):\n    task = asyncio.create_task(c)\n"
     "    await task\n    return task.result()\n", False, False),
    # ``obj.get()`` never resolves to a same-module ``def get`` (only ``self.get()``, ``C.get()``)
    ("import ray\nclass R:\n    def get(self):\n        return ray.get(self.ref)\n"
     "async def f(other):\n    return other.get()\n", False, False),
    ("import ray\nclass R:\n    def get(self):\n        return ray.get(self.ref)\n"
     "    async def f(self):\n        return self.get()\n", True, True),
    # a string return annotation types the call's value (the facts read it; Tree.mentioned does not)
    ("import queue\ndef make() -> 'queue.Queue':\n    return queue.Queue(1)\n"
     "async def f():\n    q = make()\n    return q.get()\n", True, True),
    # iterating over a file in a comprehension (the rule's visit_CompFor)
    ("from typing import TextIO\nasync def f(fh: TextIO):\n    return [line for line in fh]\n", True, True),
    ("async def f(fh):\n    return [line for line in fh]\n", False, False),
])
def test_shd301_local_near_misses(source, candidate, reported):
    assert bool(_tier2_decides("SHD301", source, candidate)) is reported


# --------------------------------------------------------------------------- with the project index
_LIB = '''
import queue
import httpx


def make() -> queue.Queue:
    return queue.Queue(3)


def client() -> httpx.Client:
    return httpx.Client()


def plain() -> dict:
    return {}


class Factory:
    def open(self) -> httpx.Client:
        return httpx.Client()
'''

_USERS = {
    # ``self.q`` assigned a call of another module's function
    "a.py": "from pkg.lib import make\n\nclass A:\n    def __init__(self):\n        self.q = make()\n\n"
            "    async def f(self):\n        return self.q.get()\n",
    # the call itself is the receiver
    "b.py": "from pkg.lib import client\n\nasync def f(url):\n    return client().get(url)\n",
    # a ``with ... as`` binding, through a module imported whole
    "c.py": "from pkg import lib\n\nasync def f(url):\n    with lib.client() as c:\n        return c.get(url)\n",
    # a method of an instance of another module's class
    "d.py": "from pkg.lib import Factory\n\nfac = Factory()\n\nasync def f(url):\n    c = fac.open()\n"
            "    return c.get(url)\n",
    # tuple unpacking
    "e.py": "from pkg.lib import make\n\nasync def f():\n    a, b = make(), 1\n    return a.get()\n",
    # a relative import, awaited elsewhere
    "g.py": "from .lib import client\n\nasync def f(url):\n    c = client()\n    return c.post(url)\n",
}
#: the near misses: what the index says types nothing the vocabulary knows
_RULED_OUT = {
    "n1.py": "from pkg.lib import plain\n\nasync def f():\n    d = plain()\n    return d.get(1)\n",
    "n2.py": "from pkg.missing import make\n\nasync def f():\n    q = make()\n    return q.get()\n",
}


def _write_pkg(tmp_path: Path, files: dict[str, str]) -> Path:
    """A package ``pkg`` below ``tmp_path`` holding ``files`` (name: text) and an empty ``__init__``."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, text in files.items():
        (pkg / name).write_text(text)
    return pkg


@contextmanager
def _project_index(tmp_path: Path):
    """The project index of ``tmp_path``'s ``pkg`` is the current one (run from ``tmp_path``)."""
    from shutdown_lint.index import hooks, project as P

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        hooks.start(["pkg"], None, None)
        yield
    finally:
        P.set_current(None)
        os.chdir(cwd)


def _tiers_agree(tmp_path: Path, code: str) -> list[dict]:
    """``pkg``'s findings of rule ``code`` with the tiers on, asserted equal to those with them off."""
    with_tier = _lint(tmp_path, "--no-cache", "--select", code, "pkg")
    assert _key(with_tier) == _key(_lint(tmp_path, "--no-cache", "--select", code, "pkg", tiers=False))
    return with_tier


def _project(tmp_path: Path) -> Path:
    return _write_pkg(tmp_path, {"lib.py": _LIB, **_USERS, **_RULED_OUT})


def _lint(cwd: Path, *args: str, tiers: bool = True) -> list[dict]:
    env = {**os.environ, "SHUTDOWN_LINT_TREE_TIER": "1" if tiers else "0"}
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    out = subprocess.run([sys.executable, "-m", "shutdown_lint", "-q", "--exit-zero", "--output-format", "json",
                          *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def _key(diags: list[dict]) -> list[tuple]:
    return sorted((d["path"], d["line"], d["column"], d["code"], d["message"]) for d in diags)


def test_shd301_receivers_typed_by_another_module_stay_candidates(tmp_path):
    """Tier on and off agree on a project whose coroutines call methods of values another module's
    return annotation types; each file of ``_USERS`` is reported (the condition before asked no
    index and ruled a.py, b.py, c.py, e.py and g.py out), the near misses are not."""
    _project(tmp_path)
    with_tier = _tiers_agree(tmp_path, "SHD301")
    reported = {Path(d["path"]).name for d in with_tier}
    assert reported == set(_USERS), reported
    # the same answers with every rule selected (the index is the run's either way)
    assert _key([d for d in _lint(tmp_path, "--no-cache", "pkg") if d["code"] == "SHD301"]) == _key(with_tier)


def test_shd301_condition_asks_the_index_only_when_given_one():
    from shutdown_lint import registry
    from shutdown_lint.prefilter import ast_tree

    rule = registry.rules_by_code()["SHD301"]
    assert rule.candidate_tree_project is True
    tree = ast_tree.parse(_USERS["b.py"].encode())
    assert rule.candidate_tree(tree) is False  # no index: the walk types nothing there either
    assert rule.candidate_tree(tree, None) is False


def test_shd301_a_file_ruled_out_by_the_index_depends_on_what_it_read(tmp_path):
    """A warm run re-lints a file the tier ruled out when the module whose annotation it read
    changes: its cached result records that module as a dependency, as a walk's does."""
    pkg = _project(tmp_path)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    first = _lint(tmp_path, *cache, "--select", "SHD301", "pkg")
    assert "n1.py" not in {Path(d["path"]).name for d in first}
    (pkg / "lib.py").write_text(_LIB.replace("def plain() -> dict:", "def plain() -> queue.Queue:"))
    warm = _lint(tmp_path, *cache, "--select", "SHD301", "pkg")
    assert "n1.py" in {Path(d["path"]).name for d in warm}
    assert _key(warm) == _key(_lint(tmp_path, "--no-cache", "--select", "SHD301", "pkg", tiers=False))


def test_filter_rules_by_tree_asks_for_the_view_once_and_only_for_declaring_rules():
    from shutdown_lint.prefilter import ast_tree, select
    from shutdown_lint.settings import Settings

    seen = []

    class Plain:
        code = "SHD990"
        candidate_tree = staticmethod(lambda tree: True)

    class Asking:
        code = "SHD991"
        candidate_tree_project = True
        candidate_tree = staticmethod(lambda tree, project=None: seen.append(project) or project == "view")

    def project():
        seen.append("asked")
        return "view"

    tree = ast_tree.parse(b"x = 1\n")
    settings = Settings(selected=("SHD990", "SHD991"))
    assert select.filter_rules_by_tree(tree, [Plain], settings, project) == [Plain]
    assert seen == []  # no rule asked: no view made
    assert select.filter_rules_by_tree(tree, [Asking, Plain, Asking], settings, project) == [Asking, Plain, Asking]
    assert seen == ["asked", "view", "view"]
    seen.clear()
    assert select.filter_rules_by_tree(tree, [Asking], settings) == []  # no index: None
    assert seen == [None]


def test_the_index_view_of_the_tier_is_the_walks(tmp_path):
    """One view per file: the walk's ``facts.project`` is the one the tier asked (its dependencies
    are the result's)."""
    from shutdown_lint import analyzer
    from shutdown_lint.settings import Settings

    pkg = _project(tmp_path)
    with _project_index(tmp_path):
        path = str(pkg / "a.py")
        analysis = analyzer.analyze((pkg / "a.py").read_bytes(), path, Settings(selected=("SHD301",)))
        assert analysis is not None and [f.code for f in analysis.findings] == ["SHD301"]
        assert any(p.endswith("lib.py") for p in analysis.facts.project.deps)
        deps: dict = {}
        assert analyzer.analyze((pkg / "n1.py").read_bytes(), str(pkg / "n1.py"), Settings(selected=("SHD301",)),
                                deps=deps) is None
        assert any(p.endswith("lib.py") for p in deps), deps


def test_project_users_source_is_what_the_cases_say():
    # the cases above are small programs: keep them valid Python
    for text in [_LIB, *_USERS.values(), *_RULED_OUT.values()]:
        compile(textwrap.dedent(text), "<case>", "exec")
