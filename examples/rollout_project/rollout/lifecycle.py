"""Start, stop and clean up a rollout worker: signals, exits and the inference servers it starts."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading


class MetricsTracker:
    """Buffers metrics and syncs them when the process exits (the way wandb does, in atexit)."""

    def __init__(self) -> None:
        self.rows: list[str] = []

    def log(self, step: int, reward: float) -> None:
        self.rows.append(f"{step} {reward}")


class RolloutWorker:
    def __init__(self, tracker: MetricsTracker) -> None:
        self.tracker = tracker
        self.stop_event = asyncio.Event()
        self.pump = threading.Thread(target=self._pump, daemon=True)
        self.servers: list[subprocess.Popen] = []

    def _pump(self) -> None:
        ...

    def start_servers(self, n: int) -> None:
        for _ in range(n):
            cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
            self.servers.append(subprocess.Popen(cmd))

    async def serve(self) -> None:
        def on_term(signum, frame):
            self.stop_event.set()

        signal.signal(signal.SIGTERM, on_term)
        await self.stop_event.wait()

    def save_checkpoint(self) -> None:
        ...

    def shutdown(self) -> None:
        # the checkpoint must not be cut half way
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        self.save_checkpoint()
        self.pump.join()
        # make sure no inference server outlives us
        subprocess.run(["pkill", "-f", "vllm.entrypoints"])


def train(worker: RolloutWorker) -> None:
    try:
        for step in range(1000):
            worker.tracker.log(step, 0.0)
    except KeyboardInterrupt:
        worker.shutdown()
        os._exit(0)  # bypass NCCL heartbeat noise
