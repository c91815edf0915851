# SHD301 fixture, family `paths`. "# blocking": flagged; "# ok": not flagged.
import asyncio
import os
import os.path
import pathlib
from os.path import exists
from pathlib import Path
from typing import Optional

import anyio
import trio


async def os_path(p):
    os.path.exists(p)  # blocking
    exists(p)  # blocking
    os.path.isdir(p)  # blocking
    os.path.isfile(p)  # blocking
    os.path.getsize(p)  # blocking
    os.path.getmtime(p)  # blocking
    os.path.realpath(p)  # blocking
    os.stat(p)  # blocking
    os.listdir(p)  # blocking
    os.makedirs(p, exist_ok=True)  # blocking
    os.remove(p)  # blocking
    os.rename(p, p + ".old")  # blocking


async def pathlib_methods(name):
    p = Path(name)
    p.exists()  # blocking
    p.read_text()  # blocking
    p.write_bytes(b"")  # blocking
    p.mkdir(parents=True, exist_ok=True)  # blocking
    (p / "sub").is_dir()  # blocking
    q = p / "a" / "b.txt"
    q.unlink()  # blocking
    for child in p.parent.iterdir():  # blocking
        pass
    pathlib.Path(name).stat()  # blocking
    list(Path.home().glob("*"))  # blocking
    found = p.rglob("*.py")  # blocking
    first = next(found, None)


async def annotated(path: Path, other: Optional[Path] = None, third: "Path | None" = None):
    path.is_file()  # blocking
    if other is not None:
        other.read_bytes()  # blocking


class Store:
    def __init__(self, root):
        self.root = Path(root)

    def flush(self, data):
        (self.root / "state.json").write_text(data)

    async def save(self, data):
        self.flush(data)  # blocking (callee)
        self.root.exists()  # blocking


# ---------------------------------------------------------------- near misses
async def near_misses(name):
    os.path.join(name, "x")  # ok
    os.path.basename(name)  # ok
    os.path.splitext(name)  # ok
    os.path.normpath(name)  # ok
    os.path.relpath(name, "/srv")  # ok
    p = Path(name)
    p.name  # ok
    p.with_suffix(".bak")  # ok
    p.joinpath("x")  # ok
    p.relative_to("/")  # ok
    ap = anyio.Path(name)
    await ap.exists()  # ok
    await anyio.Path(name).read_text()  # ok
    tp = trio.Path(name)
    await tp.is_dir()  # ok
    await asyncio.to_thread(os.path.exists, name)  # ok
    await asyncio.to_thread(p.read_text)  # ok
    # a generator function does no I/O until iterated; here a thread iterates it
    entries = p.iterdir()  # ok
    await anyio.to_thread.run_sync(next, entries)  # ok

    def step():
        return next(entries, None)  # ok

    await asyncio.to_thread(step)  # ok


def sync_helper(name):
    return Path(name).read_text()  # ok


async def helper_in_thread(name):
    return await trio.to_thread.run_sync(sync_helper, name)  # ok


async def conditional(name):
    out = Path(name) if name is not None else None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)  # blocking
