"""Driving a program in a subprocess to a signal: what the signal behaviour tests share."""
from __future__ import annotations

import subprocess
import sys
from typing import Sequence


def signalled(args: Sequence[object], sig: int, *, cwd, env: dict, ready: Sequence[str] = ("ready",),
              timeout: float = 30) -> "tuple[int, str, str]":
    """Run ``python args`` (text pipes); the first lines it prints must be ``ready``, one by one;
    then send it ``sig`` and wait up to ``timeout`` s. Returns (exit status, stdout, stderr). A
    process still running on the way out is killed."""
    proc = subprocess.Popen([sys.executable, *map(str, args)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        for want in ready:
            line = proc.stdout.readline().strip()
            assert line == want, (line, want)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode, out, err
