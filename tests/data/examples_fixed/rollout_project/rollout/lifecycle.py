"""Start, stop and clean up a rollout worker: signals, exits and the inference servers it starts."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import runtime_guard


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

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, on_term, signal.SIGTERM, None)
        await self.stop_event.wait()

    def save_checkpoint(self) -> None:
        ...

    def shutdown(self) -> None:
        # the checkpoint must not be cut half way
        _prev_sigterm = signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            self.save_checkpoint()
        finally:
            if _prev_sigterm is not None:
                signal.signal(signal.SIGTERM, _prev_sigterm)
        self.pump.join()
        # make sure no inference server outlives us
        subprocess.run(["pkill", "-f", "vllm.entrypoints"])


def train(worker: RolloutWorker) -> None:
    try:
        for step in range(1000):
            worker.tracker.log(step, 0.0)
    except KeyboardInterrupt:
        worker.shutdown()
        runtime_guard.hard_exit(130)  # bypass NCCL heartbeat noise
