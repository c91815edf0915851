"""The rollout generator: an async Ray actor that runs trajectories in sandboxes."""

from __future__ import annotations

import asyncio
import logging
import sys

import ray
import torch
import runtime_guard

from .sandbox import Sandbox

log = logging.getLogger(__name__)


async def run_trajectory(prompt: str, root: str) -> dict:
    sandbox = Sandbox(root)
    await sandbox.__aenter__()
    try:
        output = await sandbox.run(prompt)
        if "crash" in prompt:
            raise RuntimeError(f"trajectory failed: {prompt}")
        return {"prompt": prompt, "output": output}
    finally:
        await sandbox.__aexit__(None, None, None)


@ray.remote
class RolloutWorker:
    def __init__(self, root: str) -> None:
        runtime_guard.ray.setup_worker()
        self.root = root
        self.step = 0
        self.engine_alive = True

    async def generate(self, prompts: list[str]) -> list[dict]:
        # One failing trajectory leaves its siblings (and their sandboxes) running.
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(run_trajectory(p, self.root)) for p in prompts]
        results = [t.result() for t in tasks]
        self.step += 1
        await asyncio.to_thread(self.save_checkpoint, f"{self.root}/ckpt-{self.step}.pt")
        return results

    def save_checkpoint(self, path: str) -> None:
        torch.save({"step": self.step}, path)

    async def evaluate(self, prompt: str) -> str:
        async with Sandbox(self.root) as sandbox:
            return await sandbox.run(f"pytest {prompt}")

    async def start_background_generation(self, prompts: list[str]) -> None:
        # Fire and forget: an exception in the loop is never seen.
        runtime_guard.supervise(asyncio.create_task(self._generation_loop(prompts)), on_error="log")

    async def _generation_loop(self, prompts: list[str]) -> None:
        while True:
            try:
                await self.generate(prompts)
            except RuntimeError:
                log.error("engine died")
                runtime_guard.hard_exit(1)
            try:
                await asyncio.sleep(1.0)
            except asyncio.CancelledError:
                log.info("generation loop cancelled")
                if asyncio.current_task().cancelling():
                    raise
