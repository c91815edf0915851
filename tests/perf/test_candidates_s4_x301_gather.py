"""SHD101's tier 2 (issue 30, session 4): a gather is a candidate only when one of its children
may own a resource as the rule judges it (``_Owners``: the children followed over every binding,
same-module coroutines by name, another module's through the project index). Each near miss
is ruled out and reports nothing with the tier off; each kept file is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.perf.test_candidates import _tier2_decides
from tests.perf.test_candidates_s4_x301 import _project_index, _tiers_agree, _write_pkg

_SERVER = '''
import asyncio


class Server:
    async def shutdown(self, timeout=None):
        coros = (CHILD for conn in self._connections)
        await asyncio.gather(*coros)
'''


@pytest.mark.parametrize("child,candidate,reported", [
    ("conn.shutdown(timeout)", False, False),  # an unresolved callee whose words name no resource
    ("conn.session.close()", True, True),  # a lifecycle verb on a resource
    ("conn.close_sandbox()", True, True),  # its own name names one
    ("(conn or self).close_sandbox()", True, True),  # an expression receiver: the name's words still count
])
def test_shd101_unresolved_children_are_judged_by_their_words(child, candidate, reported):
    assert bool(_tier2_decides("SHD101", _SERVER.replace("CHILD", child), candidate)) is reported


_NESTED = '''
import asyncio


class Client:
    async def shutdown(self):
        async def shutdown_task(key):
            BODY
            del self.handle_cache[key]

        await asyncio.gather(*[shutdown_task(k) for k in list(self.handle_cache)])
'''


@pytest.mark.parametrize("body,candidate,reported", [
    ("await self.handle_cache[key].shutdown_async()", False, False),
    # a finally block in the gathered coroutine
    ("try:\n                await self.handle_cache[key].shutdown_async()\n            finally:\n"
     "                pass", True, True),
    # an async with that is not a lock or a timeout
    ("async with self.handle_cache[key].open() as h:\n                pass", True, True),
    ("async with self.lock:\n                pass", False, False),
    # two calls down: a same-module helper that names a resource
    ("await helper(key)", True, True),
])
def test_shd101_same_module_children_are_judged_by_their_body(body, candidate, reported):
    src = _NESTED.replace("BODY", body) + "\n\nasync def helper(k):\n    await close_session(k)\n"
    assert bool(_tier2_decides("SHD101", src, candidate)) is reported


@pytest.mark.parametrize("source,candidate,reported", [
    # children bound to names, and appended to a list
    ("import asyncio\nasync def f(tasks):\n    a = make_env()\n    b = other()\n    await asyncio.gather(a, b)\n",
     True, True),
    ("import asyncio\nasync def f(xs):\n    coros = []\n    for x in xs:\n        coros.append(x.remote(1))\n"
     "    await asyncio.gather(*coros)\n", False, False),
    ("import asyncio\nasync def f(xs):\n    coros = []\n    for x in xs:\n        coros.append(run_trial(x))\n"
     "    await asyncio.gather(*coros)\n", True, True),
    # a task made of a coroutine: the coroutine is the child
    ("import asyncio\nasync def f(xs):\n    ts = [asyncio.create_task(open_sandbox(x)) for x in xs]\n"
     "    await asyncio.gather(*ts)\n", True, True),
    ("import asyncio\nasync def f(xs):\n    ts = [asyncio.create_task(fetch(x)) for x in xs]\n"
     "    await asyncio.gather(*ts)\n", False, False),
    # an abstract method is judged by its overrides (here: one that owns)
    ("import abc, asyncio\nclass B(abc.ABC):\n    @abc.abstractmethod\n    async def step(self):\n        ...\n"
     "    async def run(self):\n        await asyncio.gather(self.step(), self.step())\n"
     "class C(B):\n    async def step(self):\n        try:\n            pass\n        finally:\n            pass\n",
     True, True),
])
def test_shd101_children_through_bindings(source, candidate, reported):
    assert bool(_tier2_decides("SHD101", source, candidate)) is reported


# --------------------------------------------------------------------------- with the project index
_ENVS = '''
class Env:
    async def rollout(self):
        try:
            return 1
        finally:
            pass

    async def fetch(self):
        return 1


async def run_one(x):
    return x
'''
_GATHERS = {
    "owning.py": "import asyncio\nfrom pkg.envs import Env\n\nasync def f(n):\n    env = Env()\n"
                 "    await asyncio.gather(*[env.rollout() for _ in range(n)])\n",
    "owning_param.py": "import asyncio\nfrom pkg.envs import Env\n\nasync def f(n, worker: Env):\n"
                       "    await asyncio.gather(worker.rollout(), worker.rollout())\n",
}
_QUIET = {
    "quiet.py": "import asyncio\nfrom pkg.envs import Env\n\nasync def f(n):\n    w = Env()\n"
                "    await asyncio.gather(*[w.fetch() for _ in range(n)])\n",
    "quiet_fn.py": "import asyncio\nfrom pkg.envs import run_one\n\nasync def f(xs):\n"
                   "    await asyncio.gather(*[run_one(x) for x in xs])\n",
}


def test_shd101_children_in_another_module_are_judged_by_the_index(tmp_path):
    pkg = _write_pkg(tmp_path, {"envs.py": _ENVS, **_GATHERS, **_QUIET})
    with_tier = _tiers_agree(tmp_path, "SHD101")
    assert {Path(d["path"]).name for d in with_tier} == set(_GATHERS)
    # the quiet ones are ruled out before libcst (``--statistics`` counts the stages)
    from shutdown_lint import registry
    from shutdown_lint.index import project as P
    from shutdown_lint.prefilter import ast_tree

    with _project_index(tmp_path):
        rule = registry.rules_by_code()["SHD101"]
        for name in _QUIET:
            tree = ast_tree.parse((pkg / name).read_bytes())
            assert rule.candidate_tree(tree, P.view_for(str(pkg / name))) is False, name
            assert rule.candidate_tree(tree) is False  # no index: nothing resolves elsewhere
        for name in _GATHERS:
            tree = ast_tree.parse((pkg / name).read_bytes())
            assert rule.candidate_tree(tree, P.view_for(str(pkg / name))) is True, name
