"""SHD407 for real: an event loop in a daemon thread at interpreter exit and on SIGTERM.

Hazard: a rollout server runs `asyncio.run(...)` in a `daemon=True` thread; its 5 tasks each
hold a lease file removed in their `finally`. When the main thread ends, the daemon thread
is frozen mid-step: 5 of 5 leases are left behind. SIGTERM kills the process before any
Python code runs: 5 of 5 again. Fixed (the exact autofix output, `runtime_guard.LoopThread`):
0 left in both cases, and SIGTERM still ends the process (status 143).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD407",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
N = 5

HAZARD = textwrap.dedent('''
    import asyncio
    import os
    import sys
    import threading
    import time

    LEASE_DIR, MODE = sys.argv[1], sys.argv[2]


    async def hold_lease(i):
        path = os.path.join(LEASE_DIR, f"lease-{i}")
        open(path, "w").close()
        try:
            while True:
                await asyncio.sleep(0.05)  # serve rollouts
        finally:
            await asyncio.sleep(0.1)  # tell the sandbox service
            os.remove(path)


    async def serve():
        await asyncio.gather(*[hold_lease(i) for i in range(%d)])


    def run_server():
        asyncio.run(serve())


    def main():
        threading.Thread(target=run_server, daemon=True).start()
        while len(os.listdir(LEASE_DIR)) < %d:
            time.sleep(0.02)
        print("ready", flush=True)
        if MODE == "wait":
            time.sleep(60)  # SIGTERM arrives here


    if __name__ == "__main__":
        main()
''' % (N, N))


def _run(path, lease_dir, mode: str) -> tuple[int, list[str], str]:
    proc = subprocess.Popen([sys.executable, str(path), str(lease_dir), mode], cwd=REPO, env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        if mode == "wait":
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode, sorted(os.listdir(lease_dir)), err


@pytest.mark.timeout(120)
def test_daemon_loop_leaks_at_exit_and_on_sigterm_and_the_fix_cleans_up(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    assert [d.code for d in lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD407"]
    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=False).source  # a safe fix
    assert b"runtime_guard.LoopThread(target=run_server, daemon=True).start()" in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)

    results = {}
    for name, path in (("before", hazard), ("after", fixed)):
        for mode in ("exit", "wait"):
            leases = tmp_path / f"{name}-{mode}"
            leases.mkdir()
            results[name, mode] = _run(path, leases, mode)

    rc, left, _ = results["before", "exit"]
    assert rc == 0 and len(left) == N  # the main thread ended; the daemon loop was frozen
    rc, left, _ = results["before", "wait"]
    assert rc == -signal.SIGTERM and len(left) == N  # killed before any cleanup
    rc, left, err = results["after", "exit"]
    assert rc == 0 and left == [], err
    rc, left, err = results["after", "wait"]
    assert rc == 128 + signal.SIGTERM and left == [], err
