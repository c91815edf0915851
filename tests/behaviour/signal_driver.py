"""Driving a program in a subprocess to a signal: what the signal behaviour tests share."""
from __future__ import annotations

import sys
from typing import Sequence

from piped_child import PipedChild


def signalled(args: Sequence[object], sig: int, *, cwd, env: dict, ready: Sequence[str] = ("ready",),
              timeout: float = 30) -> "tuple[int, str, str]":
    """Run ``python args``; the first lines it prints must be ``ready``, one by one; then send it
    ``sig`` and wait up to ``timeout`` s. Returns (exit status, stdout after the ready lines,
    stderr). A process still running on the way out is killed (piped_child: no output lost)."""
    with PipedChild([sys.executable, *args], cwd=cwd, env=env) as child:
        child.expect(*ready)
        child.send_signal(sig)
        return child.finish(timeout)
