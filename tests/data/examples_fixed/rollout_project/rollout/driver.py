"""The Ray driver: start the generator, wait for rollouts, stop cleanly (it does not)."""

from __future__ import annotations

import sys
import tempfile

import ray
import runtime_guard

from .generator import RolloutWorker


def load_prompts(n: int) -> list[str]:
    return [f"task-{i}" for i in range(n)]


def main() -> None:
    ray.init(num_cpus=2, include_dashboard=False)
    prompts = load_prompts(20)
    worker = RolloutWorker.remote(tempfile.mkdtemp())
    ref = worker.generate.remote(prompts)
    try:
        results = runtime_guard.ray.interruptible_get(ref)
        print(f"{len(results)} trajectories")
    except KeyboardInterrupt:
        print("interrupted")
        sys.exit(130)
    except RuntimeError:
        runtime_guard.ray.cancel_and_wait(ref, timeout=30)
        raise


if __name__ == "__main__":
    main()
