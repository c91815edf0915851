"""runtime_guard.leases: lease files that survivors reap once their owner is dead (real processes)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

from rg_testutil import REPO, child_env

from runtime_guard import leases

HOLD = """
import sys, time
from runtime_guard import leases
leases.acquire(sys.argv[1], "sandbox-1", {"id": 1})
leases.acquire(sys.argv[1], "sandbox-2", {"id": 2})
print("held", flush=True)
time.sleep(600)
"""


def _holder(directory) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(directory)], stdout=subprocess.PIPE, text=True,
                         env=child_env(), cwd=str(REPO))
    assert p.stdout.readline().strip() == "held"
    return p


def _files(directory) -> list:
    return sorted(os.listdir(directory))


def test_lease_is_released_on_exit_of_the_block(tmp_path) -> None:
    with leases.lease(tmp_path, "gpu-0", {"device": 0}) as path:
        record = leases.read(path)
        assert record["owner"]["pid"] == os.getpid() and record["data"] == {"device": 0}
        assert leases.owner_alive(record) is True
    assert _files(tmp_path) == []
    assert leases.release(path) is False  # already gone: no error


def test_reap_releases_the_leases_of_a_sigkilled_owner_only(tmp_path) -> None:
    cleaned = []
    with leases.lease(tmp_path, "mine"):
        p = _holder(tmp_path)
        try:
            assert leases.reap(tmp_path, cleaned.append) == []  # the owner lives: nothing to reap
            p.send_signal(signal.SIGKILL)  # no finally runs in the owner
            p.wait(timeout=30)
            reaped = leases.reap(tmp_path, cleaned.append)
        finally:
            p.kill()
            p.wait()
        assert sorted(r["data"]["id"] for r in reaped) == [1, 2]
        assert sorted(r["data"]["id"] for r in cleaned) == [1, 2]
        assert _files(tmp_path) == ["mine.lease"]  # our own live lease stays


def test_a_reused_pid_is_not_the_owner(tmp_path) -> None:
    path = leases.acquire(tmp_path, "old")
    record = leases.read(path)
    record["owner"]["start"] = "1"  # same PID, another process start time: the PID was reused
    with open(path, "w") as f:
        json.dump(record, f)
    assert leases.owner_alive(record) is False
    assert [r["name"] for r in leases.reap(tmp_path)] == ["old"]


def test_other_hosts_are_reaped_only_when_their_ray_node_is_dead(tmp_path) -> None:
    path = leases.acquire(tmp_path, "remote")
    record = leases.read(path)
    record["owner"].update(host="another-host", node_id="abc")
    with open(path, "w") as f:
        json.dump(record, f)
    assert leases.owner_alive(record) is None
    assert leases.reap(tmp_path) == []
    assert [r["name"] for r in leases.reap(tmp_path, dead_nodes={"abc"})] == ["remote"]


def test_failed_cleanup_keeps_the_lease_and_bad_files_are_skipped(tmp_path) -> None:
    p = _holder(tmp_path)
    p.kill()
    p.wait()
    (tmp_path / "torn.lease").write_text("{not json")
    (tmp_path / "notes.txt").write_text("x")

    def boom(record):
        raise RuntimeError("sandbox API down")

    assert leases.reap(tmp_path, boom) == []
    assert _files(tmp_path) == ["notes.txt", "sandbox-1.lease", "sandbox-2.lease", "torn.lease"]
    assert len(leases.reap(tmp_path)) == 2
    assert leases.reap(tmp_path / "missing") == []


def test_concurrent_reapers_clean_each_lease_once(tmp_path) -> None:
    p = _holder(tmp_path)
    p.kill()
    p.wait()
    cleaned = []
    lock = threading.Lock()

    def cleanup(record):
        with lock:
            cleaned.append(record["name"])

    threads = [threading.Thread(target=leases.reap, args=(tmp_path, cleanup)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(cleaned) == ["sandbox-1", "sandbox-2"]
    assert _files(tmp_path) == []


def test_dead_ray_nodes_without_ray_connected_is_empty() -> None:
    code = "from runtime_guard import leases; import sys; print(leases.dead_ray_nodes(), 'ray' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(),
                       cwd=str(REPO), timeout=60)
    assert r.stdout.split() == ["set()", "False"], r.stderr  # never imports ray itself


def test_a_claim_abandoned_by_a_dead_reaper_is_reaped_again(tmp_path) -> None:
    import socket

    p = _holder(tmp_path)
    p.kill()
    p.wait()
    dead_reaper = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                                 text=True, timeout=60)
    pid = int(dead_reaper.stdout)
    src = tmp_path / "sandbox-1.lease"
    src.rename(tmp_path / f"sandbox-1.lease.reaping-{socket.gethostname()}:{pid}")  # it died mid-cleanup
    (tmp_path / "sandbox-2.lease").rename(tmp_path / "sandbox-2.lease.reaping-other-host:1")
    assert sorted(r["name"] for r in leases.reap(tmp_path)) == ["sandbox-1"]
    assert _files(tmp_path) == ["sandbox-2.lease.reaping-other-host:1"]  # another host's claim: left alone
