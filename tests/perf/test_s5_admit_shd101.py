"""SHD101 tier-2 near misses for issue 30's fifth session: a gather child ``self.<x>.<m>()`` in a
method is judged, as the facts resolve it, by the last ``self.<x> =`` value of the method's class
(ray's AggregatorAgent: ``self._publisher`` is a ``RayEventPublisher`` or, last, a ``NoopPublisher``),
not by every value. Tier on and off agree on a small project; the quiet files are ruled out
before libcst, the others kept and reported."""

from __future__ import annotations

from pathlib import Path

from tests.perf.test_candidates_s4_x301 import _project_index, _tiers_agree, _write_pkg

_PUBLISHERS = '''
import asyncio


class Owning:
    async def run_forever(self):
        try:
            await asyncio.sleep(3600)
        finally:
            print("flush")


class Quiet:
    async def run_forever(self):
        await asyncio.Event().wait()
'''

_AGENT = '''
import asyncio
from pkg.publishers import Owning, Quiet
{extra}

class Agent:
    def __init__(self, on):
        if on:
            self._pub = {first}()
        else:
            self._pub = {last}()
{methods}
    async def run(self):
        await asyncio.gather(self._pub.run_forever(), self._other.run_forever())
'''


def agent(first: str = "Owning", last: str = "Quiet", extra: str = "", methods: str = "") -> str:
    return _AGENT.format(first=first, last=last, extra=extra, methods=methods)


_QUIET = {
    "quiet.py": agent(),
    "quiet_twice.py": agent(first="Quiet"),
    # a method of that name is what the facts name first (``<module>.Agent._pub``): nothing resolves
    "method.py": agent(methods="\n    def _pub(self):\n        return None\n"),
}
_KEPT = {
    "owning_last.py": agent(first="Quiet", last="Owning"),  # the last value owns: reported
    # the last value of another class does not count
    "other_class.py": agent(first="Quiet", last="Owning") + "\n\nclass Later:\n    def __init__(self):\n"
                                                             "        self._pub = Quiet()\n",
    # ``Quiet`` bound twice: its type is not sure (the facts type nothing; the index types the
    # attribute by another value: reported)
    "rebound.py": agent(extra="Quiet2 = Quiet\nQuiet = Quiet2"),
    # a nested def's call is judged by every value
    "nested.py": agent().replace("        await asyncio.gather(", "        async def inner():\n"
                                 "            await asyncio.gather(") .replace(
        "self._other.run_forever())\n", "self._other.run_forever())\n        await inner()\n"),
}


def test_shd101_self_attribute_children_typed_by_the_class_last_value(tmp_path):
    pkg = _write_pkg(tmp_path, {"publishers.py": _PUBLISHERS, **_QUIET, **_KEPT})
    with_tier = _tiers_agree(tmp_path, "SHD101")
    assert {Path(d["path"]).name for d in with_tier} == {"owning_last.py", "other_class.py", "rebound.py"}
    from shutdown_lint import registry
    from shutdown_lint.index import project as P
    from shutdown_lint.prefilter import ast_tree

    with _project_index(tmp_path):
        rule = registry.rules_by_code()["SHD101"]
        for name, kept in [*((n, False) for n in _QUIET), *((n, True) for n in _KEPT)]:
            tree = ast_tree.parse((pkg / name).read_bytes())
            assert rule.candidate_tree(tree, P.view_for(str(pkg / name))) is kept, name
