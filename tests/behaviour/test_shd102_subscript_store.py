"""SHD102 for real, a task kept in a dict by key: a model server starts a load task per model
(``self._loading[name] = asyncio.create_task(...)``) and waits for the loaded model's name on a
queue. The load fails; nothing reads the dict's tasks (they are only cancelled on close, or
popped by a done callback that drops them), so the failure is never printed while the server
waits forever. The safe fix (``runtime_guard.supervise(..., on_error="log")``) prints it at once
and changes nothing else; a server that awaits the dict's tasks (the observed shape, no finding)
sees the failure itself and ends with it. Each program runs in a real subprocess."""

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

SERVER = '''
import asyncio


class ModelServer:
    def __init__(self):
        self.ready = asyncio.Queue()
        self._loading = {{}}

    async def load(self, name):
        await asyncio.sleep(0.2)
        raise RuntimeError(f"CUDA out of memory while loading {{name}}")

    def request(self, name):
        {spawn}

    def close(self):
        for task in self._loading.values():
            task.cancel()

    async def serve(self):
        self.request("llama")
        print("loading started", flush=True)
        {wait}
        name = await self.ready.get()  # the loader never puts one
        print("serving", name, flush=True)


asyncio.run(ModelServer().serve())
'''

SPAWNS = {
    # kept in the dict until close() cancels it: never garbage-collected, never printed
    "kept-by-key": "self._loading[name] = asyncio.create_task(self.load(name))",
    # popped when done by a callback that drops it: printed only if the collector gets to it
    "popped-when-done": ("task = asyncio.create_task(self.load(name))\n"
                         "        self._loading[name] = task\n"
                         "        task.add_done_callback(lambda _: self._loading.pop(name, None))"),
}


def program(variant: str, wait: str = "") -> str:
    return SERVER.format(spawn=SPAWNS[variant], wait=wait)


def _start(source: str, tmp_path: Path, name: str) -> subprocess.Popen:
    script = tmp_path / f"{name}.py"
    script.write_text(source)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("RUNTIME_GUARD_TASK_POLICY", None)  # the fixes must not depend on it
    return subprocess.Popen([sys.executable, str(script)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _hangs_then_interrupt(proc: subprocess.Popen) -> tuple[bool, str, str]:
    """(still running after HANG_WINDOW_S, stdout, stderr before Ctrl+C); ended with SIGINT."""
    try:
        proc.wait(timeout=HANG_WINDOW_S)
        hung = False
    except subprocess.TimeoutExpired:
        hung = True
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=15)
    return hung, out, err.split("KeyboardInterrupt")[0]


def _codes(source: str) -> list[str]:
    result = lint_source(source.encode(), "program.py", SETTINGS)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


@pytest.mark.timeout(90)
@pytest.mark.parametrize("variant", sorted(SPAWNS))
def test_task_kept_by_key_loses_its_failure_and_the_safe_fix_prints_it(tmp_path, variant):
    hazard = program(variant)
    assert _codes(hazard) == ["SHD102"]

    hung, out, before_ctrl_c = _hangs_then_interrupt(_start(hazard, tmp_path, "hazard"))
    assert hung, f"the hazard program exited by itself\n{before_ctrl_c}"
    assert "loading started" in out and "serving" not in out
    if variant == "kept-by-key":
        assert "CUDA out of memory" not in before_ctrl_c, before_ctrl_c  # lost while it waited
    else:
        # at best the garbage collector's late "never retrieved" note; nothing stopped the wait
        assert "CUDA out of memory" not in before_ctrl_c or "never retrieved" in before_ctrl_c, before_ctrl_c

    outcome = fix_source(hazard.encode(), "program.py", SETTINGS)  # safe fixes only
    fixed = outcome.source.decode()
    assert outcome.applied == 1
    assert 'runtime_guard.supervise(asyncio.create_task(self.load(name)), on_error="log")' in fixed
    assert _codes(fixed) == []

    # the same program (it still waits), but the failure is printed at once with its traceback
    hung, out, before_ctrl_c = _hangs_then_interrupt(_start(fixed, tmp_path, "fixed"))
    assert hung, f"the safe fix changed what the program does: it ended by itself\n{before_ctrl_c}"
    assert "serving" not in out
    assert "runtime_guard: supervised task" in before_ctrl_c, before_ctrl_c
    assert "RuntimeError: CUDA out of memory while loading llama" in before_ctrl_c
    assert "Task exception was never retrieved" not in before_ctrl_c  # reported once


@pytest.mark.timeout(90)
def test_awaiting_the_dicts_tasks_observes_the_failure(tmp_path):
    """The near miss: the server gathers the dict's tasks before it waits. No finding, and the
    program ends with the load's error (it is raised where the tasks are awaited)."""
    observed = program("kept-by-key", wait="await asyncio.gather(*self._loading.values())")
    assert _codes(observed) == []
    proc = _start(observed, tmp_path, "observed")
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate(timeout=15)
        pytest.fail("the observed program did not end within 60 s")
    assert proc.returncode != 0
    assert "RuntimeError: CUDA out of memory while loading llama" in err, err
    assert "serving" not in out
