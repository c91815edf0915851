"""A private multi-node Ray cluster on this one machine, and the faults injected into it.

``ray.cluster_utils.Cluster`` starts a head node and worker nodes as separate raylets (each with its
own workers) on one host. It writes the head's address to ``$RAY_TMPDIR/ray/ray_current_cluster``
(default ``/tmp/ray``), which a plain ``ray.init()`` of any other process on the machine would join,
and deletes that file on shutdown. So the cluster lives under a private ``RAY_TMPDIR`` (short: Unix
socket paths are limited to 107 bytes) set only while it runs.
"""
from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from typing import Dict, Iterable, List, Optional, Set


def _children(pid: int) -> List[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def process_tree(pids: Iterable[int]) -> Set[int]:
    """``pids`` and all their descendants (read from /proc)."""
    seen: Set[int] = set()
    todo = list(pids)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(_children(pid))
    return seen


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return False


def signal_all(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def wait_dead(pids: Iterable[int], timeout: float) -> Set[int]:
    """Wait up to ``timeout`` s for ``pids`` to end; return those still alive."""
    pending = set(pids)
    end = time.monotonic() + timeout
    while pending and time.monotonic() < end:
        pending = {p for p in pending if alive(p)}
        if pending:
            time.sleep(0.05)
    return {p for p in pending if alive(p)}


def preempt(pids: Iterable[int], grace: float) -> Dict[str, int]:
    """What a cloud preemption does: SIGTERM to every process, ``grace`` s, SIGKILL to the rest."""
    pids = set(pids)
    signal_all(pids, signal.SIGTERM)
    left = wait_dead(pids, grace)
    signal_all(left, signal.SIGKILL)
    wait_dead(left, 5.0)
    return {"sigtermed": len(pids), "sigkilled": len(left)}


class FaultCluster:
    """Head node (resource ``head``) plus worker nodes named by a custom resource (``node_b``...)."""

    def __init__(self, head_cpus: int = 1, system_config: Optional[Dict[str, object]] = None) -> None:
        self.tmp = tempfile.mkdtemp(prefix="rgf", dir="/tmp")
        self._old_tmpdir = os.environ.get("RAY_TMPDIR")
        # Each node registers a SIGTERM handler (and an atexit hook) in this process; the handler is
        # put back on close so a test session does not keep one for a cluster that is gone.
        self._old_sigterm = signal.getsignal(signal.SIGTERM)
        os.environ["RAY_TMPDIR"] = self.tmp  # read by Cluster at start and at shutdown
        from ray.cluster_utils import Cluster

        self.cluster = Cluster()
        self.nodes: Dict[str, object] = {}
        try:
            self.nodes["head"] = self.cluster.add_node(num_cpus=head_cpus, resources={"head": 100},
                                                       include_dashboard=False,
                                                       _system_config=system_config or {})
        except BaseException:
            self.close()
            raise

    @property
    def address(self) -> str:
        return self.cluster.address

    def env(self) -> Dict[str, str]:
        """Environment for a driver process that joins this cluster (and nothing else)."""
        env = dict(os.environ)
        env["RAY_TMPDIR"] = self.tmp
        env["RAY_ADDRESS"] = self.address
        env.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        return env

    def add(self, name: str, num_cpus: int = 1) -> None:
        self.nodes[name] = self.cluster.add_node(num_cpus=num_cpus, resources={name: 100})
        self.cluster.wait_for_nodes()

    def ensure(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None or not self.node_alive(name):
            self.forget(name)
            self.add(name)

    def node_pids(self, name: str) -> Set[int]:
        """Every process of node ``name``: its raylet, agents, log monitor, and their children (the workers)."""
        node = self.nodes[name]
        roots = [info.process.pid for infos in node.all_processes.values() for info in infos]
        return {p for p in process_tree(roots) if alive(p)}

    def node_alive(self, name: str) -> bool:
        node = self.nodes.get(name)
        if node is None:
            return False
        raylet = node.all_processes.get("raylet") or []
        return bool(raylet) and alive(raylet[0].process.pid)

    def forget(self, name: str) -> None:
        """Drop a node whose processes are gone (or kill what is left of it)."""
        node = self.nodes.pop(name, None)
        if node is None:
            return
        signal_all(self.node_pids_of(node), signal.SIGKILL)
        for infos in node.all_processes.values():
            for info in infos:
                try:
                    info.process.wait(timeout=5)
                except Exception:
                    pass
        self.cluster.worker_nodes.discard(node)

    @staticmethod
    def node_pids_of(node: object) -> Set[int]:
        roots = [info.process.pid for infos in node.all_processes.values() for info in infos]  # type: ignore[attr-defined]
        return {p for p in process_tree(roots) if alive(p)}

    def close(self) -> None:
        try:
            all_pids: Set[int] = set()
            for node in list(self.nodes.values()):
                all_pids |= self.node_pids_of(node)
            for name in [n for n in self.nodes if n != "head"]:
                self.forget(name)
            try:
                self.cluster.shutdown()
            except Exception:
                pass
            signal_all({p for p in all_pids if alive(p)}, signal.SIGKILL)  # nothing we started survives
        finally:
            try:
                signal.signal(signal.SIGTERM, self._old_sigterm)
            except (ValueError, TypeError):  # off the main thread / a handler set from C
                pass
            if self._old_tmpdir is None:
                os.environ.pop("RAY_TMPDIR", None)
            else:
                os.environ["RAY_TMPDIR"] = self._old_tmpdir
            if not os.environ.get("RGF_KEEP_TMP"):
                shutil.rmtree(self.tmp, ignore_errors=True)

    def __enter__(self) -> "FaultCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
