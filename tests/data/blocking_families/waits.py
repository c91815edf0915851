# SHD301 fixture, family `waits` (blocking waits on thread and process primitives).
# "# blocking": flagged; "# ok": not flagged.
import asyncio
import concurrent.futures
import multiprocessing
import queue
import threading
from concurrent.futures import ThreadPoolExecutor


async def queues(item):
    q = queue.Queue(maxsize=8)
    q.get()  # blocking
    q.put(item)  # blocking
    q.get(timeout=1)  # blocking
    q.join()  # blocking
    mq = multiprocessing.Queue()
    mq.get()  # blocking
    ctx = multiprocessing.get_context("spawn")
    cq = ctx.Queue(4)
    cq.put(item)  # blocking


async def events_and_locks():
    ev = threading.Event()
    ev.wait()  # blocking
    ev.wait(5)  # blocking
    lock = threading.Lock()
    lock.acquire()  # blocking
    sem = threading.Semaphore(2)
    sem.acquire()  # blocking


async def joins(fn, futs):
    t = threading.Thread(target=fn)
    t.start()
    t.join()  # blocking
    p = multiprocessing.Process(target=fn)
    p.start()
    p.join()  # blocking
    concurrent.futures.wait(futs)  # blocking
    fut = ThreadPoolExecutor().submit(fn)
    fut.result()  # blocking


class Worker(threading.Thread):
    pass


class Pipeline:
    def __init__(self):
        self.inbox = queue.Queue()
        self.stopped = threading.Event()

    def _next(self):
        return self.inbox.get()

    async def step(self):
        self.inbox.get()  # blocking
        self._next()  # blocking (callee)
        self.stopped.wait()  # blocking

    async def stop(self):
        w = Worker()
        w.join()  # blocking


# ---------------------------------------------------------------- near misses
async def near_misses(item, fn):
    q = queue.Queue()
    q.get(block=False)  # ok
    q.get(False)  # ok
    q.get(timeout=0)  # ok
    q.get_nowait()  # ok
    q.put(item, block=False)  # ok
    q.put_nowait(item)  # ok
    # unbounded: its put never waits; a get after a non-empty check finds an item
    q.put(item)  # ok
    if not q.empty():
        q.get()  # ok
    ev = threading.Event()
    ev.is_set()  # ok
    ev.wait(0)  # ok
    lock = threading.Lock()
    lock.acquire(blocking=False)  # ok
    lock.acquire(timeout=0)  # ok
    aq = asyncio.Queue()
    await aq.get()  # ok
    aev = asyncio.Event()
    await aev.wait()  # ok
    alock = asyncio.Lock()
    await alock.acquire()  # ok
    await asyncio.to_thread(q.get)  # ok
    t = threading.Thread(target=fn)
    t.join(timeout=0)  # ok
    fut = ThreadPoolExecutor().submit(fn)
    await asyncio.wrap_future(fut)  # ok


def sync_helper(q):
    return q.get()  # ok


async def helper_in_thread(q):
    await asyncio.to_thread(sync_helper, q)  # ok
