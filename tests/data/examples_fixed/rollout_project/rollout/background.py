"""Background work around the rollout loop: the epoch generator, a heartbeat, a metrics loop thread."""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import threading
import runtime_guard

log = logging.getLogger(__name__)


def _lease(epoch: int) -> str:
    path = os.path.join(tempfile.gettempdir(), f"generator-{os.getpid()}-{epoch}.lease")
    open(path, "w").close()
    return path


async def generate_epoch(queue: asyncio.Queue, epoch: int) -> None:
    lease = await asyncio.to_thread(_lease, epoch)
    try:
        step = 0
        while True:
            await queue.put((epoch, step))
            step += 1
    except Exception:
        log.exception("generator for epoch %d failed", epoch)
    finally:
        await asyncio.sleep(0.05)  # flush the last rollouts, hand the sandbox back
        await asyncio.to_thread(os.remove, lease)


async def heartbeat(ping, interval: float) -> None:
    while True:
        try:
            await ping()
            await asyncio.sleep(interval)
        except Exception:
            log.exception("heartbeat failed")


async def run_epochs(n_epochs: int, batch: int, save_checkpoint, ping) -> None:
    runtime_guard.supervise(asyncio.create_task(heartbeat(ping, 5.0)), on_error="log")
    for epoch in range(n_epochs):
        queue: asyncio.Queue = asyncio.Queue(maxsize=batch)
        gen = asyncio.create_task(generate_epoch(queue, epoch))
        for _ in range(batch):
            await queue.get()
        await runtime_guard.cancel_and_wait(gen, timeout=30)  # the epoch is over
        save_checkpoint(epoch)


async def _metrics_server() -> None:
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    async with server:
        await server.serve_forever()


def _serve_metrics() -> None:
    asyncio.run(_metrics_server())


def start_metrics_thread() -> threading.Thread:
    thread = runtime_guard.LoopThread(target=_serve_metrics, name="metrics", daemon=True)
    thread.start()
    return thread
