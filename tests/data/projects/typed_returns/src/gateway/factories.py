"""Functions that make clients and files, typed only by their return annotations."""

from __future__ import annotations

import io
from typing import Any, Optional

import httpx
import requests


def open_client() -> httpx.Client:
    return httpx.Client(base_url="https://example.com")


def maybe_client(enabled: bool) -> Optional[httpx.Client]:
    return httpx.Client() if enabled else None


def either_client(sync: bool) -> "httpx.Client | httpx.AsyncClient":
    return httpx.Client() if sync else httpx.AsyncClient()


def open_log(path: str) -> io.TextIOWrapper:
    return open(path)  # noqa: SIM115


async def open_async() -> httpx.AsyncClient:
    return httpx.AsyncClient()


async def open_sync_later() -> httpx.Client:
    return httpx.Client()


def untyped():
    return httpx.Client()


def anything() -> Any:
    return httpx.Client()


class Sessions:
    def session(self) -> requests.Session:
        return requests.Session()

    async def poll(self) -> None:
        s = self.session()
        s.get("https://example.com/health")  # blocking


async def same_module() -> None:
    c = open_client()
    c.get("/status")  # blocking
    m = maybe_client(True)
    if m is not None:
        m.post("/ping")  # blocking
    e = either_client(True)
    e.get("/x")  # ok
    u = untyped()
    u.get("/x")  # ok
    a = anything()
    a.get("/x")  # ok
    later = open_sync_later()
    await later  # ok
    synced = await open_sync_later()
    synced.get("/x")  # blocking


def sync_caller() -> None:
    c = open_client()
    c.get("/status")  # ok
