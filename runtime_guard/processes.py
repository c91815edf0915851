"""Ending the child processes a program started, and only those (the remedy for SHD601).

``pkill -f vllm`` ends every process whose command line mentions vllm: other users' servers and
other runs on a shared node, all at once and often with SIGKILL. A program that keeps the
``Popen`` objects it started, with ``start_new_session=True`` so that each child leads its own
process group, can end exactly its children and their descendants with ``os.killpg``.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Iterable, List, Optional

__all__ = ["terminate_process_groups"]

_POLL = 0.05


def _group_of(proc: "subprocess.Popen") -> Optional[int]:
    """The child's own process group, if it leads one (``start_new_session=True`` or
    ``process_group=0``); None when it shares ours or someone else's (then only the
    process itself is signalled) or is already reaped."""
    if proc.returncode is not None:
        return None  # reaped: its pid may already belong to an unrelated process
    try:
        pgid = os.getpgid(proc.pid)
    except (ProcessLookupError, PermissionError, OSError):
        return None
    return pgid if pgid == proc.pid and pgid != os.getpgrp() else None


def _signal(proc: "subprocess.Popen", pgid: Optional[int], sig: int) -> None:
    try:
        if pgid is not None:
            os.killpg(pgid, sig)
        elif proc.poll() is None:
            proc.send_signal(sig)
    except (ProcessLookupError, PermissionError, OSError):
        pass  # already gone


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # a member we may not signal: count it as alive


def _alive(proc: "subprocess.Popen", pgid: Optional[int]) -> bool:
    leader_alive = proc.poll() is None  # also reaps the leader, so it stops counting as a member
    return leader_alive or (pgid is not None and _group_alive(pgid))


def terminate_process_groups(procs: Iterable["subprocess.Popen"], grace: float = 10.0,
                             *, kill_timeout: float = 5.0) -> List[Optional[int]]:
    """End the processes in ``procs`` and, for those started with ``start_new_session=True``
    (or ``process_group=0``), every process in their process group: SIGTERM to each group,
    up to ``grace`` seconds for all of them to exit (their handlers and ``finally`` blocks
    run), then SIGKILL to what is left; waits at most ``kill_timeout`` more for the kills.

    A child that shares the caller's process group is signalled alone (never ``killpg`` on
    our own group). Nothing else on the machine is touched, whatever its name. Never raises
    for a process that is already gone. Returns the return codes, in order (None for a
    process still alive after the SIGKILL wait, e.g. stuck in the kernel).

    Signals: sends SIGTERM and SIGKILL to the given children's groups only; installs no handler,
    changes no mask, starts no thread or process; polls in the calling thread.
    """
    procs = list(procs)
    groups = [_group_of(p) for p in procs]
    for proc, pgid in zip(procs, groups):
        _signal(proc, pgid, signal.SIGTERM)
    deadline = time.monotonic() + max(grace, 0.0)
    while any(_alive(p, g) for p, g in zip(procs, groups)) and time.monotonic() < deadline:
        time.sleep(_POLL)
    for proc, pgid in zip(procs, groups):
        if _alive(proc, pgid):
            _signal(proc, pgid, signal.SIGKILL)
    deadline = time.monotonic() + max(kill_timeout, 0.0)
    while any(_alive(p, g) for p, g in zip(procs, groups)) and time.monotonic() < deadline:
        time.sleep(_POLL)
    return [p.poll() for p in procs]
