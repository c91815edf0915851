"""The experiment entrypoint: set up the trainer, then run the async training loop."""

from __future__ import annotations

import asyncio
import signal
import time


class Trainer:
    def __init__(self) -> None:
        self.steps = 0

    async def train(self) -> None:
        while self.steps < 100:
            await asyncio.sleep(0.1)
            self.steps += 1


class Experiment:
    def _setup_trainer(self) -> Trainer:
        time.sleep(2.0)  # build inference engines, load models: minutes in production
        return Trainer()

    async def _run_with_graceful_shutdown(self, trainer: Trainer) -> None:
        loop = asyncio.get_running_loop()
        main = asyncio.current_task()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, main.cancel)
        await trainer.train()

    def run(self) -> None:
        trainer = self._setup_trainer()
        # Stop asyncio.run() from installing its own SIGINT handler (we add ours in the loop).
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        asyncio.run(self._run_with_graceful_shutdown(trainer))


if __name__ == "__main__":
    Experiment().run()
