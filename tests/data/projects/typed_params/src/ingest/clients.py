"""HTTP clients built elsewhere and declared here (``client: httpx.Client = make()``)."""

from __future__ import annotations

import httpx
import httpx2
import urllib3
import urllib3.connectionpool
import urllib3.poolmanager


def make():
    return httpx.Client()


POOL: urllib3.PoolManager = make()


async def fetch(url: str) -> bytes:
    return POOL.request("GET", url).data  # blocking


async def declared() -> int:
    client: httpx.Client = make()
    return client.get("https://example.com").status_code  # blocking


async def continuation(client: httpx2.Client) -> None:
    client.post("https://example.com")  # blocking
    httpx2.get("https://example.com")  # blocking


async def pools(a: urllib3.HTTPSConnectionPool, b: urllib3.poolmanager.ProxyManager,
                c: "urllib3.connectionpool.HTTPConnectionPool") -> None:
    a.urlopen("GET", "/")  # blocking
    b.request("GET", "https://example.com")  # blocking
    c.request("GET", "/")  # blocking


class Uploader:
    def __init__(self) -> None:
        self.http: httpx.Client = make()

    async def push(self, blob: bytes) -> None:
        self.http.put("https://example.com", content=blob)  # blocking


# ---------------------------------------------------------------- near misses
async def asynchronous(client: httpx.AsyncClient) -> None:
    await client.get("https://example.com")  # ok


async def not_io(client: httpx.Client) -> None:
    client.build_request("GET", "https://example.com")  # ok
    client.close()  # ok


async def redeclared() -> None:
    c: urllib3.PoolManager = make()
    c.request("GET", "/")  # blocking
    c: urllib3.Timeout = make()
    c.clone()  # ok
