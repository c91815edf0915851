"""SHD301 blocking-call-in-coroutine, for real: a checkpoint save stalls the event loop.

The hazard program (the SkyRL #1446 shape) runs a "generation" task that ticks every
10 ms while ``async def train()`` calls ``self.save_checkpoints()``, a same-class
method that does a real ``torch.save`` of a 4 MB state dict to a checkpoint store that
takes its time: a FIFO in tmp_path whose reader, like a slow network filesystem, starts
draining it 1 s late (into ``step<N>.pt.stored``). We measure, inside each run, the
longest gap between generation ticks and the shortest save.

The save lasts 1 s so that "the fixed program's longest gap is under half a save" has room
for the 0.1-0.3 s a loaded machine stops a process at times. A 64 MB save to disk took
0.06-0.2 s: half of it is what one such pause takes (a 0.2 s SIGSTOP every 1 s failed it:
0.226 s >= 0.5 * 0.191 s).

Hazard: the longest gap covers a whole save (the loop did nothing meanwhile). Fixed
(``fix_source`` output, ``await asyncio.to_thread(self.save_checkpoints, step)``): the
generation task keeps ticking during the saves; its longest gap is a small fraction of
both the hazard's and of its own saves. Assertions are ratios within runs, never
absolute durations.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

REPO = Path(__file__).resolve().parents[2]
# The fixed programs import runtime_guard from the repo. ``python prog.py`` puts the
# program's folder, not the cwd, on sys.path, and outside the repo the editable install
# resolves ``runtime_guard`` to an empty namespace package: put the repo first.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
SETTINGS = Settings(selected=("SHD301",), target_version="py311")

HAZARD = textwrap.dedent(
    '''
    import asyncio
    import os
    import shutil
    import sys
    import threading
    import time

    import torch

    CKPT_DIR = sys.argv[1]
    STORE_DELAY = 1.0
    STORES = []


    def checkpoint_store(path):
        """The checkpoint store: takes the bytes written to ``path`` (a FIFO) STORE_DELAY s late."""
        with open(path, "rb") as src:
            time.sleep(STORE_DELAY)
            with open(path + ".stored", "wb") as dst:
                shutil.copyfileobj(src, dst)


    class Trainer:
        def __init__(self):
            self.state = {"w": torch.randn(1_000_000)}  # 4 MB of "weights", far more than a pipe holds
            self.ticks = []
            self.save_secs = []
            for step in range(3):
                os.mkfifo(f"{CKPT_DIR}/step{step}.pt")
                STORES.append(threading.Thread(target=checkpoint_store, args=(f"{CKPT_DIR}/step{step}.pt",)))
                STORES[-1].start()

        def save_checkpoints(self, step):
            start = time.monotonic()
            torch.save(self.state, f"{CKPT_DIR}/step{step}.pt")
            self.save_secs.append(time.monotonic() - start)

        async def generate_loop(self):
            # the sibling "generation" task: wants to run every 10 ms
            while True:
                self.ticks.append(time.monotonic())
                await asyncio.sleep(0.01)

        async def train(self):
            gen = asyncio.create_task(self.generate_loop())
            await asyncio.sleep(0.1)
            for step in range(3):
                await asyncio.sleep(0.05)
                # periodic checkpoint
                self.save_checkpoints(step)
            await asyncio.sleep(0.05)
            gen.cancel()
            gaps = [b - a for a, b in zip(self.ticks, self.ticks[1:])]
            print(f"MAX_GAP={max(gaps):.4f} MIN_SAVE={min(self.save_secs):.4f}", flush=True)


    asyncio.run(Trainer().train())
    for store in STORES:
        store.join()
    '''
).lstrip()


def _diagnostics(source: str):
    result = lint_source(source.encode(), "trainer.py", SETTINGS)
    assert result.error is None, result.error
    return result.diagnostics


def _run(path: Path, ckpt_dir: Path) -> tuple[float, float]:
    ckpt_dir.mkdir()
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(path), str(ckpt_dir)],
        cwd=str(REPO), env=ENV, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    m = re.search(r"MAX_GAP=([\d.]+) MIN_SAVE=([\d.]+)", done.stdout)
    assert m, done.stdout
    stored = sorted(ckpt_dir.glob("step*.pt.stored"))
    assert len(stored) == 3 and all(p.stat().st_size > 4_000_000 for p in stored)  # the saves really happened
    return float(m.group(1)), float(m.group(2))


@pytest.mark.torch
@pytest.mark.timeout(300)
def test_blocking_save_stalls_the_loop_and_to_thread_fix_does_not(tmp_path):
    diags = _diagnostics(HAZARD)
    assert [d.code for d in diags] == ["SHD301"]
    assert "self.save_checkpoints()" in diags[0].message and "torch.save()" in diags[0].message

    fixed_src = fix_source(HAZARD.encode(), "trainer.py", SETTINGS, unsafe=True).source.decode()
    assert _diagnostics(fixed_src) == []
    assert (
        "            # periodic checkpoint\n"
        "            await asyncio.to_thread(self.save_checkpoints, step)\n"
    ) in fixed_src
    # the fix is unsafe (the save now runs on another thread): not applied without --unsafe-fixes
    assert fix_source(HAZARD.encode(), "trainer.py", SETTINGS).source.decode() == HAZARD

    hazard, fixed = tmp_path / "hazard.py", tmp_path / "fixed.py"
    hazard.write_text(HAZARD)
    fixed.write_text(fixed_src)
    hazard_gap, hazard_save = _run(hazard, tmp_path / "ck_hazard")
    fixed_gap, fixed_save = _run(fixed, tmp_path / "ck_fixed")
    print(f"hazard: longest loop stall {hazard_gap:.3f}s (shortest save {hazard_save:.3f}s); "
          f"fixed: longest stall {fixed_gap:.3f}s (shortest save {fixed_save:.3f}s)")

    # hazard: no tick during a whole save -> the stall is at least as long as a save
    assert hazard_gap >= 0.9 * hazard_save
    # fixed: generation kept ticking during the saves
    assert fixed_gap < 0.5 * fixed_save
    assert fixed_gap < 0.5 * hazard_gap
