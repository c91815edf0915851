"""Two fixes on one program (docs/fix-safety.md, "Several fixes on one region"): SHD402 makes
SIGTERM raise KeyboardInterrupt before `asyncio.run`, SHD502 installs the distributed teardown
after the init inside the coroutine. Composed, each promise is kept once: one SIGTERM handler
chain (the teardown chains to SHD402's handler), the group destroyed once, the coroutine's
`finally` runs once, and the process ends by the interrupt, well inside the grace period.
Real torch.distributed (gloo, one rank) in a real subprocess.
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import textwrap
import time

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild

pytestmark = [pytest.mark.torch, pytest.mark.slow]

SETTINGS = Settings(selected=("SHD402", "SHD502"), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))

PROGRAM = textwrap.dedent('''
    import asyncio
    import sys

    import torch.distributed as dist


    async def main():
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{sys.argv[1]}", rank=0, world_size=1)
        try:
            print("ready", flush=True)
            for _ in range(1200):  # short sleeps: a SIGTERM just before one long epoll_wait would wait for it
                await asyncio.sleep(0.05)
        finally:
            print("finally ran, group still initialised:", dist.is_initialized(), flush=True)


    if __name__ == "__main__":
        asyncio.run(main())
''')


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sigterm(path) -> tuple[int, str, str, float]:
    with PipedChild([sys.executable, path, _free_port()], cwd=REPO, env=ENV) as proc:
        proc.expect("ready")
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        status, out, err = proc.finish(40)
        return status, out, err, time.monotonic() - t0


@pytest.mark.timeout(120)
def test_sigterm_teardown_and_keyboard_interrupt_compose_once(tmp_path):
    codes = sorted(d.code for d in lint_source(PROGRAM.encode(), "prog.py", SETTINGS).diagnostics)
    assert codes == ["SHD402", "SHD502"]
    fixed_src = fix_source(PROGRAM.encode(), "prog.py", SETTINGS, unsafe=True).source.decode()
    assert fixed_src.count("runtime_guard.sigterm_as_keyboard_interrupt()") == 1
    assert fixed_src.count("runtime_guard.torch.install_distributed_teardown()") == 1
    assert lint_source(fixed_src.encode(), "prog.py", SETTINGS).diagnostics == []

    original, fixed = tmp_path / "original.py", tmp_path / "fixed.py"
    original.write_text(PROGRAM)
    fixed.write_text(fixed_src)
    rc, out, _, _ = _sigterm(original)
    assert rc == -signal.SIGTERM and "finally ran" not in out  # the hazard: no cleanup at all

    rc, out, err, took = _sigterm(fixed)
    assert out.count("finally ran, group still initialised: False") == 1, (out, err)
    assert err.count("tearing down torch.distributed") == 1, err  # one teardown
    assert "blocked in a C call" not in err  # the Python handler ran; the helper thread stood by
    assert "KeyboardInterrupt" in err  # then SHD402's handler, chained, unwound asyncio.run
    assert rc in (-signal.SIGINT, 130), (rc, err)
    assert took < 20  # not the teardown's deadline (0.9 x 25 s): the interrupt path ended it
