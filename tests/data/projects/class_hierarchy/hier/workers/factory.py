import ray

from .base import RolloutWorker
from .safe import SafeWorker


def make_worker(num_gpus):
    class GPUWorker(RolloutWorker):  # flagged (SHD404): async serve() with a finally, inherited
        pass

    return ray.remote(num_gpus=num_gpus)(GPUWorker)


def make_safe_worker():
    class SafeGPUWorker(SafeWorker):  # near miss: the base's __init__ sets up SIGTERM handling
        pass

    return ray.remote(SafeGPUWorker)
