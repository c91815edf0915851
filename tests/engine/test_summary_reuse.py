"""A module summary (``index/summary.py``) made from the candidate tier's tree of the same bytes,
and with the leaf-less walk, is the one ``ast.parse`` + ``ast.walk`` gave."""

from __future__ import annotations

import ast
import pathlib

from shutdown_lint.index import summary
from shutdown_lint.prefilter import ast_tree

ROOT = pathlib.Path(summary.__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "shutdown_lint").rglob("*.py")) + sorted((ROOT / "rules").glob("*.py"))

FACTORY = b'''
import ray

def make(base):
    class Sub(base):
        pass

    @ray.remote(num_cpus=1)
    class Inner:
        async def close(self):
            pass

    return ray.remote(Sub), ray.remote(num_gpus=1)(Inner)
'''


def test_the_tier_tree_gives_the_same_summary():
    for data in [FACTORY] + [p.read_bytes() for p in SOURCES[:40]]:
        ast_tree._trees.clear()
        fresh = summary.summarize(data, "m.py")
        ast_tree.parse(data)
        assert ast_tree.cached(data) is not None
        assert summary.summarize(data, "m.py") == fresh
    assert summary.summarize(FACTORY, "m.py")["remote"] == ["ray.remote:base"]  # Inner has no base to record


def test_the_walk_visits_what_ast_walk_does_in_its_order():
    kinds = (ast.ClassDef, ast.Call, ast.FunctionDef, ast.Attribute)
    for data in [FACTORY] + [p.read_bytes() for p in SOURCES]:
        tree = ast.parse(data)
        assert [n for n in summary._walk(tree) if isinstance(n, kinds)] == \
            [n for n in ast.walk(tree) if isinstance(n, kinds)]
