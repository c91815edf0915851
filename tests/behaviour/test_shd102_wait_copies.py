"""SHD102 and `asyncio.wait` on a builtin copy of the tasks.

`asyncio.wait(list(d.values()))`, `set(tasks)`, `tuple(tasks)`, `frozenset(tasks)`,
`sorted(tasks, key=id)`, `[*tasks]`: the copy holds the same tasks, so what the code does with
wait's done set decides as it does for `asyncio.wait(tasks)`. Run for real in a subprocess: the
shapes whose result is discarded end with status 0 and the error never reaching the program;
`for t in done: t.result()` after the same copy raises it (status 1). A user function that
receives the tasks (`asyncio.wait(mine(tasks))`) is still a hand-over: not reported.
"""
from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings
from wait_shapes import assert_lost_or_raised, marked_lines, program, spawn_lines

SETTINGS = Settings(selected=("SHD102",), target_version="py311")

PROGRAM = program('''
    async def list_of_values():
        d = {i: asyncio.create_task(boom(i)) for i in range(3)}  # lost
        done, pending = await asyncio.wait(list(d.values()))


    async def set_discarded():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        await asyncio.wait(set(tasks))


    async def tuple_counted():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        done, pending = await asyncio.wait(tuple(tasks))
        print("done", len(done))


    async def frozenset_discarded():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        await asyncio.wait(frozenset(tasks), timeout=5)


    async def sorted_discarded():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        await asyncio.wait(sorted(tasks, key=id))


    async def starred_discarded():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        await asyncio.wait([*tasks])


    async def list_of_values_asked():
        d = {i: asyncio.create_task(boom(i)) for i in range(3)}
        done, pending = await asyncio.wait(list(d.values()))
        for t in done:
            t.result()


    async def set_gathered():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        done, _ = await asyncio.wait(set(tasks))
        await asyncio.gather(*done)


    async def starred_asked():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        done, _ = await asyncio.wait([*tasks])
        for t in done:
            await t


    def mine(tasks):
        for t in tasks:
            t.add_done_callback(lambda t: t.result())
        return list(tasks)


    async def user_function():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        await asyncio.wait(mine(tasks))
''')

LOST = ["list_of_values", "set_discarded", "tuple_counted", "frozenset_discarded", "sorted_discarded",
        "starred_discarded"]
OBSERVED = ["list_of_values_asked", "set_gathered", "starred_asked"]
HANDED_ON = ["user_function"]


def test_copies_followed_like_the_tasks():
    diags = lint_source(PROGRAM.encode(), "copies.py", SETTINGS).diagnostics
    lines = {d.line for d in diags}
    assert lines == spawn_lines(PROGRAM, LOST)
    assert lines == marked_lines(PROGRAM)
    assert all("`asyncio.wait`" in d.message for d in diags)
    assert not lines & spawn_lines(PROGRAM, OBSERVED + HANDED_ON)


@pytest.mark.parametrize("source", [
    # a user function named like a builtin copy is not the builtin: handed on
    """
    import asyncio
    def list(tasks):
        return tasks
    async def main(jobs):
        tasks = [asyncio.create_task(run(j)) for j in jobs]
        await asyncio.wait(list(tasks))
    """,
    # the copy handed to a user function, not to wait
    """
    import asyncio
    async def main(jobs, keep):
        tasks = [asyncio.create_task(run(j)) for j in jobs]
        keep(list(tasks))
    """,
    # a copy kept in a name (vllm launcher.py's shutdown): only a copy handed straight to wait is
    # followed, any other copy stays a hand-over
    """
    import asyncio
    class Server:
        def _track(self, coro):
            task = asyncio.create_task(coro)
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        async def shutdown(self):
            tasks = list(self._tasks)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    """,
    # the copy awaited through gather
    """
    import asyncio
    async def main(jobs):
        tasks = [asyncio.create_task(run(j)) for j in jobs]
        await asyncio.gather(*list(tasks))
    """,
])
def test_not_reported_when_handed_on(source):
    assert lint_source(textwrap.dedent(source).encode(), "m.py", SETTINGS).diagnostics == []


@pytest.mark.timeout(120)
def test_exception_lost_or_raised_for_real(tmp_path):
    assert_lost_or_raised(tmp_path, PROGRAM, LOST, OBSERVED)
