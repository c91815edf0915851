"""The entry point: ``demo`` (console script)."""

from __future__ import annotations

import asyncio
import atexit
import signal
from concurrent.futures import ThreadPoolExecutor

import ray

from . import service, workers
from .remote import Scorer, score


def flush_metrics() -> None:
    print("metrics flushed")


def on_term(signum, frame) -> None:
    raise SystemExit(143)


def main() -> None:
    atexit.register(flush_metrics)
    signal.signal(signal.SIGTERM, on_term)
    ray.init(num_cpus=4)
    scorer = Scorer.options(max_concurrency=2).remote()
    ref = score.remote(3)
    pool = ThreadPoolExecutor(max_workers=2)
    pump = workers.start_pump()
    try:
        print(ray.get([ref, scorer.rate.remote(1)]))
        asyncio.run(service.serve(pool))
    finally:
        pool.shutdown(cancel_futures=True)
        pump.join()
        ray.kill(scorer)
