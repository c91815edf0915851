"""LoopThread (SHD407's fix) replaces SIGTERM's default action with a Python handler that stops the
loop threads and then dies of SIGTERM. A Python handler runs only when the main thread next runs
bytecode: with the main thread blocked in a C call (rank 0 of 2 in a gloo rendezvous, waiting for a
peer) the process used to outlive SIGTERM until the call returned, where without LoopThread it died
at once. Real subprocess, real SIGTERM, real torch.distributed rendezvous.
"""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from rg_testutil import child_env, sigterm_in_rendezvous

pytestmark = [pytest.mark.timeout(180), pytest.mark.skipif(not sys.platform.startswith("linux"),
                                                           reason="reads /proc/net/tcp")]

PROGRAM = """
import asyncio, datetime, socket, sys
import torch.distributed as dist
from runtime_guard import LoopThread

async def serve():
    try:
        await asyncio.sleep(3600)
    finally:
        print("loop task cleaned up", flush=True)

loop = asyncio.new_event_loop()
if sys.argv[1] == "loop-thread":
    LoopThread(target=loop.run_forever, daemon=True).start()
    asyncio.run_coroutine_threadsafe(asyncio.sleep(0), loop).result(30)
    asyncio.run_coroutine_threadsafe(serve(), loop)
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
print("ready", port, flush=True)
dist.init_process_group("gloo", rank=0, world_size=2, init_method=f"tcp://127.0.0.1:{port}",
                        timeout=datetime.timedelta(seconds=120))
print("joined", flush=True)
"""


@pytest.mark.parametrize("variant", ["plain", "loop-thread"])
def test_sigterm_ends_a_main_thread_blocked_in_c_with_a_loop_thread(tmp_path, variant) -> None:
    pytest.importorskip("torch.distributed")
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    p = subprocess.Popen([sys.executable, str(script), variant], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=child_env())
    out = sigterm_in_rendezvous(p)
    assert p.returncode == -signal.SIGTERM, out
    assert "joined" not in out, out
    if variant == "loop-thread":  # stopped from the helper thread: the loop's task ran its finally
        assert "loop task cleaned up" in out, out
        assert "main thread is blocked in a C call: stopped 1 loop thread(s)" in out, out
