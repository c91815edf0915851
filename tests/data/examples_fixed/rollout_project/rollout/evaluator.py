"""Scores a checkpoint against a reward-model server that it starts as a child process."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import runtime_guard


def _score(port: int, checkpoint: str, shard: int) -> float:
    body = json.dumps({"checkpoint": checkpoint, "shard": shard}).encode()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/score", data=body, timeout=60) as resp:
        return float(json.load(resp)["score"])


def evaluate(checkpoint: str, port: int = 8100, shards: int = 8) -> float:
    server = subprocess.Popen(
        [sys.executable, "-m", "rollout.reward_server", "--port", str(port)],
        start_new_session=True,
    )
    try:
        scores = [_score(port, checkpoint, shard) for shard in range(shards)]
        server.terminate()
        server.wait()
    finally:
        runtime_guard.terminate_process_groups([server])
    return sum(scores) / len(scores)
