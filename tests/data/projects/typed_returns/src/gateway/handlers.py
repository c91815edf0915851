"""The same calls from another module: the return annotations are read through the project
index (the callee's module summary)."""

from __future__ import annotations

from . import factories
from .factories import anything, maybe_client, open_async, open_client, open_log, open_sync_later, untyped


async def handle(path: str) -> None:
    c = open_client()
    c.get("/status")  # blocking
    m = maybe_client(True)
    m.put("/x")  # blocking
    f = open_log(path)
    f.read()  # blocking
    d = factories.open_client()
    d.delete("/x")  # blocking
    s = await open_sync_later()
    s.get("/x")  # blocking
    a = await open_async()
    await a.get("/x")  # ok
    u = untyped()
    u.get("/x")  # ok
    n = anything()
    n.get("/x")  # ok
    c = make_local()
    c.get("/x")  # ok


def make_local():
    return object()


def sync_handler() -> None:
    c = open_client()
    c.get("/status")  # ok
