"""The async part: a task group, a cancelled task, a child process."""

from __future__ import annotations

import asyncio


async def tick(n: int) -> None:
    for _ in range(n):
        await asyncio.sleep(0.01)


async def heartbeat() -> None:
    while True:
        await asyncio.sleep(1.0)


async def serve(pool) -> None:
    beat = asyncio.create_task(heartbeat())
    proc = await asyncio.create_subprocess_exec("sleep", "30")
    try:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(tick(3))
            tg.create_task(tick(5))
        await asyncio.get_running_loop().run_in_executor(pool, sum, [1, 2])
    finally:
        beat.cancel()
        proc.terminate()
        await proc.wait()
