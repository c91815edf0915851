"""SHD102 for real: a fire-and-forget task raises while the main coroutine keeps waiting
for its output. The process hangs (SkyRL #1691: 128 GPUs idle for days); when the task is
kept in a list the error is never printed at all. The autofix wraps the task in
`runtime_guard.supervise(...)`: the program ends promptly, non-zero, with the traceback.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

REPO = Path(__file__).resolve().parents[2]
SETTINGS = Settings(selected=("SHD102",), target_version="py311")
HANG_WINDOW_S = 5.0

TRAINER = '''
import asyncio


class Trainer:
    def __init__(self):
        self.batches = asyncio.Queue()
        self.workers = []

    async def generate_loop(self):
        await asyncio.sleep(0.2)
        raise RuntimeError("EngineDeadError: the vLLM engine died")

    async def train(self):
        {spawn}
        print("training started", flush=True)
        while True:
            batch = await self.batches.get()  # the generator never produces one
            print("trained on", batch, flush=True)


asyncio.run(Trainer().train())
'''

PROGRAMS = {
    # kept in a list that nobody awaits: never garbage-collected, the error is never printed
    "kept-in-list": TRAINER.format(spawn="self.workers.append(asyncio.create_task(self.generate_loop()))"),
    # discarded: the error shows up only when the finished task is garbage-collected
    "discarded": TRAINER.format(spawn="asyncio.create_task(self.generate_loop())"),
}


def _start(program: str, tmp_path: Path, name: str) -> subprocess.Popen:
    script = tmp_path / f"{name}.py"
    script.write_text(program)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("RUNTIME_GUARD_TASK_POLICY", None)  # the default policy is what we test
    return subprocess.Popen(
        [sys.executable, str(script)], cwd=REPO, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _codes(program: str) -> list[str]:
    result = lint_source(program.encode(), "program.py", SETTINGS)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("variant", sorted(PROGRAMS))
def test_unobserved_task_exception_hangs_and_supervise_ends_the_program(tmp_path, variant):
    program = PROGRAMS[variant]
    assert _codes(program) == ["SHD102"]

    proc = _start(program, tmp_path, "hazard")
    try:
        proc.wait(timeout=HANG_WINDOW_S)
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
    # SIGINT first (like Ctrl+C) so asyncio shuts down; its teardown may print what it finds
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=15)
    assert hung, f"the hazard program exited by itself: rc={proc.returncode}\n{err}"
    assert "training started" in out
    if variant == "kept-in-list":
        # the RuntimeError was never printed while the program hung
        assert "EngineDeadError" not in err.split("KeyboardInterrupt")[0], err
    else:
        # printed only by the garbage collector's "never retrieved" hook, and the program hung anyway
        assert "Task exception was never retrieved" in err, err

    fixed = fix_source(program.encode(), "program.py", SETTINGS).source.decode()  # a safe fix
    assert "runtime_guard.supervise(asyncio.create_task(self.generate_loop()))" in fixed
    assert "import runtime_guard" in fixed
    assert _codes(fixed) == []

    proc = _start(fixed, tmp_path, "fixed")
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=15)
        pytest.fail(f"the fixed program still hangs:\n{err}")
    assert proc.returncode != 0
    assert "Traceback" in err and "RuntimeError: EngineDeadError: the vLLM engine died" in err, err


# Awaited, but the outcome is still lost: the workers are awaited only through a discarded
# gather(..., return_exceptions=True) at the end of the epoch. One dies at once; the others keep
# the epoch going; the epoch ends, the gather collects the RuntimeError into a list nobody reads,
# and the program exits 0 with no traceback.
GATHERED = '''
import asyncio


async def generate(i, queue):
    await asyncio.sleep(0.1)
    if i == 0:
        raise RuntimeError("EngineDeadError: the vLLM engine died")
    while True:
        await queue.put(i)
        await asyncio.sleep(0.05)


async def train_epoch():
    queue = asyncio.Queue()
    workers = [asyncio.create_task(generate(i, queue)) for i in range(3)]
    for _ in range(20):
        await queue.get()  # train on a batch
    for w in workers:
        w.cancel()
    await asyncio.gather(*workers, return_exceptions=True)
    print("epoch finished", flush=True)


asyncio.run(train_epoch())
'''


@pytest.mark.timeout(90)
def test_failure_lost_in_discarded_gather_results_and_supervise_surfaces_it(tmp_path):
    assert _codes(GATHERED) == ["SHD102"]
    proc = _start(GATHERED, tmp_path, "hazard")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "epoch finished" in out  # the run looks successful
    assert "EngineDeadError" not in err and "Traceback" not in err, err  # the failure is gone

    fixed = fix_source(GATHERED.encode(), "program.py", SETTINGS).source.decode()  # a safe fix
    assert "runtime_guard.supervise(asyncio.create_task(generate(i, queue)))" in fixed
    assert _codes(fixed) == []
    proc = _start(fixed, tmp_path, "fixed")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode != 0
    assert "RuntimeError: EngineDeadError: the vLLM engine died" in err, err
