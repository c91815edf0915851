"""Threads, child processes and a process group."""

from __future__ import annotations

import os
import subprocess
import threading

import torch.distributed as dist


def _pump() -> None:
    ...


def start_pump() -> threading.Thread:
    thread = threading.Thread(target=_pump, name="pump")
    thread.start()
    launch_sidecar()
    return thread


def launch_sidecar() -> None:
    subprocess.Popen(["sleep", "60"], start_new_session=True)


def start_watcher(daemon: bool) -> threading.Thread:
    watcher = threading.Thread(target=_pump, daemon=daemon)
    watcher.start()
    return watcher


def all_reduce_once() -> None:
    dist.init_process_group("gloo", rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]))
    try:
        dist.barrier()
    finally:
        dist.destroy_process_group()
