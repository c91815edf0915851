"""File objects that arrive as parameters or attributes, typed by their annotations."""

from __future__ import annotations

import asyncio
import io
import typing
from io import BufferedReader, StringIO, TextIOWrapper
from typing import IO, BinaryIO, Optional, TextIO, Union


async def header(f: BufferedReader) -> bytes:
    return f.read(16)  # blocking


async def maybe(f: TextIOWrapper | None = None) -> str:
    return f.readline() if f else ""  # blocking


async def optional(f: Optional[io.TextIOWrapper]) -> list[str]:
    return f.readlines()  # blocking


async def generic(f: IO[bytes], g: typing.BinaryIO) -> None:
    f.write(b"x")  # blocking
    g.flush()  # blocking


async def text(f: "TextIO") -> str:
    return f.read()  # blocking


async def positional_only(f: BinaryIO, /, *, log: Optional["typing.TextIO"] = None) -> None:
    f.truncate(0)  # blocking
    log.write("done")  # blocking


async def same_family(f: Union[io.BufferedReader, io.BufferedRandom]) -> bytes:
    return f.read()  # blocking


def reader(f: TextIOWrapper):
    async def next_line() -> str:
        return f.readline()  # blocking
    return next_line


class Tail:
    source: TextIO

    def __init__(self, path: str) -> None:
        self.sink: Optional[BinaryIO] = None

    async def poll(self) -> str:
        return self.source.readline()  # blocking

    async def save(self, data: bytes) -> None:
        self.sink.write(data)  # blocking


# ---------------------------------------------------------------- near misses
async def in_memory(buf: StringIO, raw: io.BytesIO) -> str:
    raw.read()  # ok
    return buf.read()  # ok


async def mixed(f: Union[TextIOWrapper, StringIO]) -> str:
    return f.read()  # ok


async def untyped(f, *args: TextIO, **kw: TextIO) -> str:
    args.count(1)  # ok
    return f.read()  # ok


async def in_thread(f: TextIOWrapper) -> str:
    name = f.name  # ok
    f.close()  # ok
    return await asyncio.to_thread(f.read)  # ok


async def shadowed(f: TextIOWrapper) -> str:
    f = "not a file"
    return f.strip()  # ok
