"""``Tree.once``: a value that the tier-2 conditions of several rules read, computed once per
tree (issue 30, session 12); SHD102's ``spawns`` (read by SHD106's condition too) through it."""

from __future__ import annotations

import ast

from shutdown_lint.prefilter.ast_tree import Tree
from rules.shd102_unobserved_task_exception import _spawns, spawns

SOURCE = '''
import asyncio
from asyncio import ensure_future as later
loop = asyncio.get_event_loop()
loop.create_task(main())

class C:
    def tg(self):
        return None

    async def run(self, tg):
        asyncio.create_task(self.work())
        later(self.work())
        tg.create_task(self.work())
        self.tg.create_task(self.work())
        asyncio.create_task()

    async def work(self):
        pass
'''


def test_once_computes_once_per_tree():
    tree = Tree(ast.parse(SOURCE))
    calls = []

    def count(t):
        calls.append(t)
        return len(t.functions)

    assert tree.once(count) == 3 and tree.once(count) == 3
    assert calls == [tree]
    assert Tree(ast.parse(SOURCE)).once(count) == 3 and len(calls) == 2


def test_spawns_are_shared_and_the_plain_computation():
    tree = Tree(ast.parse(SOURCE))
    got = spawns(tree)
    assert spawns(tree) is got
    plain = _spawns(Tree(tree.module))
    assert [(id(c), fn and fn.name) for c, fn in got] == [(id(c), fn and fn.name) for c, fn in plain]
    # the loop's create_task, asyncio.create_task and the aliased ensure_future; not tg's,
    # not self.tg's (a method of the class), not the call without arguments
    assert [(c.lineno, fn and fn.name) for c, fn in got] == [(5, None), (12, "run"), (13, "run")]
