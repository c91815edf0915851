"""Lease files: what a process holds (a sandbox, a GPU lease, a temp dir), written down with its owner.

A process that is SIGKILLed (OOM killer, preemption after the grace period, ``ray.kill``) runs no
``finally`` block, so nothing it does at exit can release what it holds. What it can do is write
down, before it takes the resource, who holds it: a lease file naming the owner (host, PID, the
PID's start time so a reused PID is not mistaken for the owner, and the Ray node when the process
is a Ray worker). A survivor (the restarted actor, the driver, the next run) then calls
:func:`reap` on the directory: every lease whose owner is known to be dead is handed to a cleanup
callback and deleted. Leases of live owners, and of owners on other hosts whose Ray node is not
known to be dead, are left alone.

No Ray import here: :func:`dead_ray_nodes` uses Ray only if the program already imported it.

Signals, threads, children: none (no handler, no mask, no thread, no process; ``reap`` calls
``cleanup`` in the calling thread).
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import tempfile
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Set

__all__ = ["SUFFIX", "owner", "acquire", "release", "lease", "read", "owner_alive", "reap", "dead_ray_nodes"]

log = logging.getLogger("runtime_guard.leases")

SUFFIX = ".lease"


def _start_time(pid: int) -> Optional[str]:
    """The process start time in clock ticks since boot (/proc/PID/stat field 22); None off Linux."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields and fields[0] == "Z":
        return None  # a zombie has ended: it holds nothing
    return fields[19] if len(fields) > 19 else None


def _ray_node_id() -> Optional[str]:
    ray = sys.modules.get("ray")
    if ray is None:
        return None
    try:
        if ray.is_initialized():
            return ray.get_runtime_context().get_node_id()
    except Exception:
        pass
    return None


def owner() -> Dict[str, Any]:
    """The record that identifies this process as a lease owner."""
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "start": _start_time(pid), "node_id": _ray_node_id()}


def acquire(directory: "str | os.PathLike[str]", name: str, data: Optional[Dict[str, Any]] = None) -> str:
    """Write ``directory/name.lease`` (atomically) naming this process as owner; return its path.

    Call it *before* taking the resource, and :func:`release` after giving it back.
    """
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(os.fspath(directory), name + SUFFIX)
    record = {"name": name, "owner": owner(), "data": data or {}}
    fd, tmp = tempfile.mkstemp(dir=os.fspath(directory), prefix=".tmp-")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return path


def release(path: "str | os.PathLike[str]") -> bool:
    """Delete a lease file; False if it was already gone (reaped). Never raises for a missing file."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


@contextlib.contextmanager
def lease(directory: "str | os.PathLike[str]", name: str, data: Optional[Dict[str, Any]] = None) -> Iterator[str]:
    """``with lease(dir, name):`` hold a lease for the duration of the block (released in ``finally``)."""
    path = acquire(directory, name, data)
    try:
        yield path
    finally:
        release(path)


def read(path: "str | os.PathLike[str]") -> Optional[Dict[str, Any]]:
    """The lease record at ``path``, or None if it is gone or unreadable (a torn write counts as unreadable)."""
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("owner"), dict) else None


def owner_alive(record: Dict[str, Any], dead_nodes: Iterable[str] = ()) -> Optional[bool]:
    """True/False when the owner's fate is known, None when it is not (another host, node not known dead)."""
    who = record.get("owner") or {}
    node = who.get("node_id")
    if node and node in set(dead_nodes):
        return False
    if who.get("host") != socket.gethostname():
        return None
    pid = who.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return None
    start = _start_time(pid)
    if start is not None:
        recorded = who.get("start")
        return recorded is None or recorded == start  # another start time: the PID was reused
    if os.path.isdir("/proc"):
        return False  # Linux: no /proc/PID/stat (or a zombie): the owner has ended
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


_CLAIM = ".reaping-"


def _unclaim_abandoned(directory: str, entry: str, host: str) -> str:
    """A claim left by a reaper of this host that died mid-cleanup goes back to being a lease."""
    lease_name, sep, claimer = entry.partition(_CLAIM)
    if not sep or not lease_name.endswith(SUFFIX):
        return entry
    claim_host, _, pid = claimer.rpartition(":")
    if claim_host != host or not pid.isdigit() or _start_time(int(pid)) is not None:
        return entry  # another host's reaper, or a live one
    try:
        os.rename(os.path.join(directory, entry), os.path.join(directory, lease_name))
    except OSError:
        return entry
    return lease_name


def reap(directory: "str | os.PathLike[str]", cleanup: Optional[Callable[[Dict[str, Any]], Any]] = None, *,
         dead_nodes: Iterable[str] = ()) -> List[Dict[str, Any]]:
    """Release every lease in ``directory`` whose owner is known to be dead; return their records.

    ``cleanup(record)`` runs first (delete the sandbox, free the GPU lease...; ``record["data"]`` is
    what :func:`acquire` was given). If it raises, the lease is kept for a later reap. Several
    reapers may run at once: each lease is claimed by renaming it, so one cleanup runs per lease
    (a claim whose reaper died on this host is taken up again). Never raises for a missing directory or unreadable lease files (those are skipped).
    """
    dead = set(dead_nodes)
    reaped: List[Dict[str, Any]] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return reaped
    host, me = socket.gethostname(), os.getpid()
    names = [_unclaim_abandoned(os.fspath(directory), entry, host) for entry in names]
    for entry in names:
        if not entry.endswith(SUFFIX):
            continue
        path = os.path.join(os.fspath(directory), entry)
        record = read(path)
        if record is None or owner_alive(record, dead) is not False:
            continue
        claimed = f"{path}{_CLAIM}{host}:{me}"
        try:
            os.rename(path, claimed)
        except OSError:
            continue  # another reaper has it, or its owner released it meanwhile
        try:
            if cleanup is not None:
                cleanup(record)
        except Exception:
            log.warning("runtime_guard.leases: cleanup of %s failed; lease kept", entry, exc_info=True)
            with contextlib.suppress(OSError):
                os.rename(claimed, path)
            continue
        with contextlib.suppress(OSError):
            os.unlink(claimed)
        reaped.append(record)
    return reaped


def dead_ray_nodes() -> Set[str]:
    """Node IDs the Ray cluster reports dead (empty when Ray is not imported or not connected)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return set()
    try:
        if not ray.is_initialized():
            return set()
        return {n["NodeID"] for n in ray.nodes() if not n.get("Alive", True)}
    except Exception:
        log.debug("runtime_guard.leases: ray.nodes() failed", exc_info=True)
        return set()
