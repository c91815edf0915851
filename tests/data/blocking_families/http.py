# SHD301 fixture, family `http`. A line ending in "# blocking" must be flagged by SHD301,
# a line ending in "# ok" must not; "(callee)": the blocking call is in a same-module function it calls (bench/compare_blocking.py, tests/test_shd301_families.py).
import asyncio
import http.client
import urllib.request
from urllib.request import urlopen

import aiohttp
import httpx
import requests
import urllib3


async def module_functions(url):
    requests.get(url)  # blocking
    requests.post(url, json={})  # blocking
    requests.request("GET", url)  # blocking
    httpx.get(url)  # blocking
    httpx.delete(url)  # blocking
    urllib.request.urlopen(url)  # blocking
    urlopen(url)  # blocking
    urllib3.request("GET", url)  # blocking


async def client_objects(url):
    client = httpx.Client()
    client.get(url)  # blocking
    client.send(client.build_request("GET", url))  # blocking
    with httpx.Client(timeout=5) as c:
        c.post(url)  # blocking
    session = requests.Session()
    session.get(url)  # blocking
    pool = urllib3.PoolManager()
    pool.request("GET", url)  # blocking
    conn = http.client.HTTPSConnection("example.com")
    conn.request("GET", "/")  # blocking
    conn.getresponse()  # blocking


async def annotated(client: httpx.Client, session: "requests.Session", url):
    client.put(url)  # blocking


class Fetcher:
    def __init__(self):
        self.http = requests.Session()

    def _fetch(self, url):
        return self.http.get(url)

    async def one_level_down(self, url):
        self._fetch(url)  # blocking (callee)

    async def on_self(self, url):
        self.http.get(url)  # blocking


# ---------------------------------------------------------------- near misses
async def near_misses(url):
    async with httpx.AsyncClient() as client:
        await client.get(url)  # ok
    async with aiohttp.ClientSession() as session:
        async with session.get(url) as resp:  # ok
            await resp.text()  # ok
    await asyncio.to_thread(requests.get, url)  # ok
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, requests.get, url)  # ok
    aclient = httpx.AsyncClient()
    await aclient.post(url)  # ok
    request = httpx.Request("GET", url)  # ok
    requests.Session().mount("https://", None)  # ok


def sync_helper(url):
    return requests.get(url)  # ok


async def helper_in_thread(url):
    await asyncio.to_thread(sync_helper, url)  # ok
