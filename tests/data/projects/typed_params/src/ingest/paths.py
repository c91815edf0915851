"""Paths bound by tuple unpacking."""

from __future__ import annotations

from pathlib import Path

import anyio


async def copy(a: str, b: str) -> None:
    src, dst = Path(a), Path(b)
    if src.exists():  # blocking
        dst.write_bytes(src.read_bytes())  # blocking


async def pair(a: str) -> None:
    [left, right] = [Path(a), anyio.Path(a)]
    left.mkdir()  # blocking
    await right.mkdir()  # ok


# ---------------------------------------------------------------- near misses
async def counted(a: str) -> int:
    n, p = 3, Path(a)
    return n.bit_length() + len(p.name)  # ok


async def starred(a: str) -> None:
    first, *rest = a.split("/"), Path(a)
    first.count("x")  # ok
