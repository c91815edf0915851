# SHD301 fixture, family `files`. "# blocking": flagged; "# ok": not flagged.
import asyncio
import gzip
import io
import os

import aiofiles
import anyio


async def openers(path, fd):
    open(path)  # blocking
    io.open(path)  # blocking
    os.fdopen(fd)  # blocking
    gzip.open(path)  # blocking
    input("continue? ")  # blocking


async def file_objects(path):
    f = open(path)  # blocking
    f.read()  # blocking
    f.readline()  # blocking
    open(path).read()  # blocking
    for line in f:  # blocking
        pass
    with open(path, "w") as out:  # blocking
        out.write("x")  # blocking
        out.flush()  # blocking
    with open(path, "rb") as a, open(path + ".bak", "wb") as b:  # blocking
        b.write(a.read())  # blocking


class Log:
    def __init__(self, path):
        self.fh = open(path, "a")

    def flush(self):
        self.fh.flush()

    async def record(self, line):
        self.fh.write(line)  # blocking
        self.flush()  # blocking (callee)


# ---------------------------------------------------------------- near misses
async def near_misses(path):
    async with aiofiles.open(path) as f:
        await f.read()  # ok
        async for line in f:  # ok
            pass
    async with await anyio.open_file(path) as g:
        await g.read()  # ok
    buf = io.StringIO()
    buf.write("x")  # ok
    buf.read()  # ok
    await asyncio.to_thread(open, path)  # ok


def read_all(path):
    with open(path) as f:  # ok
        return f.read()  # ok


async def helper_in_thread(path):
    return await anyio.to_thread.run_sync(read_all, path)  # ok
