"""SHD101's tier-2 condition made cheaper (issue 30), same answers: it asks the index for another
module's function with words that every ``async def`` spells (only a coroutine function can own a
child): a module that spells none is not summarised.
"""

from __future__ import annotations

from pathlib import Path

from tests.perf.test_candidates_s4_x301 import _project_index, _tiers_agree, _write_pkg


_HELPERS = '''
import asyncio


def run_one(x):
    try:
        return x
    finally:
        pass
'''

_ODD = '''
import asyncio


async  def run_two(x):
    try:
        return x
    finally:
        pass
'''

_GATHER = '''
import asyncio
from pkg.NAME import FN


async def main():
    await asyncio.gather(FN(1), FN(2))
'''


def test_shd101_does_not_summarise_a_module_without_a_coroutine_function(tmp_path):
    """A gathered function of a module whose text holds no ``async def`` is no coroutine
    function: that module is not summarised, and the answer depends on its text; an ``async
    def`` spelled with two spaces is still found (the words cover every spacing)."""
    from shutdown_lint import registry
    from shutdown_lint.index import project as P
    from shutdown_lint.prefilter import ast_tree

    pkg = _write_pkg(tmp_path, {
        "helpers.py": _HELPERS, "odd.py": _ODD,
        "g1.py": _GATHER.replace("NAME", "helpers").replace("FN", "run_one"),
        "g2.py": _GATHER.replace("NAME", "odd").replace("FN", "run_two")})
    rule = registry.rules_by_code()["SHD101"]
    with _project_index(tmp_path):
        view = P.view_for(str(pkg / "g1.py"))
        assert rule.candidate_tree(ast_tree.parse((pkg / "g1.py").read_bytes()), view) is False
        helpers = str(pkg / "helpers.py")
        assert helpers not in view.index._summaries  # decided from the text
        assert any(Path(p).name == "helpers.py" for p in view.deps)  # and the answer depends on it
        view = P.view_for(str(pkg / "g2.py"))
        assert rule.candidate_tree(ast_tree.parse((pkg / "g2.py").read_bytes()), view) is True
    reported = {Path(d["path"]).name for d in _tiers_agree(tmp_path, "SHD101")}
    assert reported == {"g2.py"}
