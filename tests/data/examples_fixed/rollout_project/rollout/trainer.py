"""The trainer worker: torch.distributed with a thread pool computing rewards."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import torch
import torch.distributed as dist
import runtime_guard


def score(sample: torch.Tensor) -> float:
    return float(sample.sum())


class RewardBuffer:
    def __init__(self, workers: int = 4) -> None:
        self.pool = ThreadPoolExecutor(max_workers=workers)
        self.pending = []

    def submit(self, sample: torch.Tensor) -> None:
        self.pending.append(self.pool.submit(score, sample))

    def drain(self) -> list[float]:
        done = [f.result() for f in self.pending]
        self.pending.clear()
        return done

    def close(self) -> None:
        self.pending.clear()
        runtime_guard.shutdown_executor(self.pool)


def train(steps: int) -> None:
    dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    runtime_guard.torch.install_distributed_teardown()
    rewards = RewardBuffer()
    weights = torch.zeros(8)
    for _ in range(steps):
        grad = torch.randn(8)
        dist.all_reduce(grad)
        weights -= 0.01 * grad
        rewards.submit(weights)
    print(rewards.drain())
