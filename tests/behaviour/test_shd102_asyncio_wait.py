"""SHD102 and `asyncio.wait`: waiting is not observing.

`asyncio.wait(tasks)` returns `(done, pending)` and never raises a task's exception. Each shape
below spawns three tasks, one of which raises `RuntimeError("lost 1")`, waits for them with
`asyncio.wait`, then (by shape) does or does not ask the done set for results. Run for real in
a subprocess:

- lost (flagged): the result discarded (`await asyncio.wait(tasks)`, also with a timeout, also
  with `return_when=FIRST_EXCEPTION`, whose own look at the exception only decides when to
  return, so not even the garbage-collection log appears), bound to `_`, a done set only counted
  or cancelled, `loop.run_until_complete(asyncio.wait(tasks))`: the program ends normally
  (status 0, "finished normally") and the error never reaches its code;
- observed (not flagged): `for t in done: t.result()`, `await asyncio.gather(*done)`, `await t`
  for each done task, `FIRST_EXCEPTION` then `t.exception()`, `done.pop().exception()`, the
  original list asked for `.result()`: the error is raised in the program (status 1).
"""
from __future__ import annotations

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings
from wait_shapes import assert_lost_or_raised, marked_lines, program, spawn_lines

SETTINGS = Settings(selected=("SHD102",), target_version="py311")

PROGRAM = program('''
    async def discard():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        await asyncio.wait(tasks)


    async def discard_timeout():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        await asyncio.wait(tasks, timeout=5)


    async def first_exception_discarded():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        await asyncio.sleep(0.1)


    async def underscore():
        t = asyncio.create_task(boom(1))  # lost
        _ = await asyncio.wait({t})


    async def done_counted():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        done, pending = await asyncio.wait(tasks)
        print("done", len(done))


    async def done_cancelled():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]  # lost
        done, pending = await asyncio.wait(tasks)
        for t in done:
            t.cancel()


    def run_until_complete():
        loop = asyncio.new_event_loop()
        tasks = [loop.create_task(boom(i)) for i in range(3)]  # lost
        loop.run_until_complete(asyncio.wait(tasks))
        loop.close()


    async def for_result():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        done, pending = await asyncio.wait(tasks)
        for t in done:
            t.result()


    async def gather_done():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        done, _ = await asyncio.wait(tasks)
        await asyncio.gather(*done)


    async def await_done():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        done, _ = await asyncio.wait(tasks)
        for t in done:
            await t


    async def first_exception_checked():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for t in pending:
            t.cancel()
        for t in done:
            if t.exception() is not None:
                raise t.exception()


    async def popped():
        t = asyncio.create_task(boom(1))
        done, _ = await asyncio.wait([t])
        exc = done.pop().exception()
        if exc is not None:
            raise exc


    async def original_asked():
        tasks = [asyncio.create_task(boom(i)) for i in range(3)]
        await asyncio.wait(tasks)
        print([t.result() for t in tasks])
''')

LOST = ["discard", "discard_timeout", "first_exception_discarded", "underscore", "done_counted", "done_cancelled",
        "run_until_complete"]
OBSERVED = ["for_result", "gather_done", "await_done", "first_exception_checked", "popped", "original_asked"]


def test_lost_shapes_flagged_and_observing_shapes_not():
    diags = lint_source(PROGRAM.encode(), "waits.py", SETTINGS).diagnostics
    assert {d.line for d in diags} == spawn_lines(PROGRAM, LOST)
    assert {d.line for d in diags} == marked_lines(PROGRAM)
    assert all("`asyncio.wait`" in d.message for d in diags)
    assert not {d.line for d in diags} & spawn_lines(PROGRAM, OBSERVED)


@pytest.mark.timeout(120)
def test_exception_lost_or_raised_for_real(tmp_path):
    assert_lost_or_raised(tmp_path, PROGRAM, LOST, OBSERVED)
