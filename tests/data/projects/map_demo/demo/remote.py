"""Ray: an actor class and a remote function with declared resources."""

from __future__ import annotations

import ray


@ray.remote(num_cpus=1, num_gpus=0.5)
class Scorer:
    def rate(self, x: int) -> int:
        return x * 2


@ray.remote(num_cpus=2, memory=2**30)
def score(x: int) -> int:
    return x + 1
