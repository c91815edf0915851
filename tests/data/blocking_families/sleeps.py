# SHD301 fixture, family `sleeps`. "# blocking": flagged; "# ok": not flagged.
import asyncio
import time
from time import sleep

import anyio
import trio


async def sleeps():
    time.sleep(1)  # blocking
    sleep(0.1)  # blocking
    time.sleep(0)  # blocking


def _backoff(attempt):
    time.sleep(2 ** attempt)


async def retry(attempt):
    _backoff(attempt)  # blocking (callee)


async def in_trio():
    time.sleep(1)  # blocking


# ---------------------------------------------------------------- near misses
async def near_misses():
    await asyncio.sleep(1)  # ok
    await trio.sleep(1)  # ok
    await anyio.sleep(1)  # ok
    await asyncio.to_thread(time.sleep, 1)  # ok
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, time.sleep, 1)  # ok
    time.monotonic()  # ok


def sync_sleep():
    time.sleep(1)  # ok
