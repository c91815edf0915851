"""SHD105 for real: a generator task cancelled at epoch end and never awaited.

Hazard: `gen.cancel()` then the checkpoint is written at once, while the generator's
`finally` (flushing its last rollouts, releasing its sandbox) is still awaiting; then
`main()` returns and `asyncio.run` cancels the still-cleaning task a second time, which
aborts that cleanup: the checkpoint never contains the flushed rollouts and the sandbox
lease is never released. Fixed (the exact autofix output, `await
runtime_guard.cancel_and_wait(gen, timeout=30)`): the cleanup finishes before the checkpoint.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD105",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))

HAZARD = textwrap.dedent('''
    import asyncio
    import json
    import os
    import sys

    WORK = sys.argv[1]
    LEASE = os.path.join(WORK, "sandbox.lease")
    FLUSHED = os.path.join(WORK, "rollouts.flushed")


    async def generate(buffer):
        open(LEASE, "w").close()
        try:
            while True:
                buffer.append("rollout")
                await asyncio.sleep(0.01)
        finally:
            await asyncio.sleep(0.2)  # flush the last rollouts to storage
            open(FLUSHED, "w").close()
            await asyncio.sleep(0.1)  # release the sandbox
            os.remove(LEASE)


    async def main():
        buffer = []
        gen = asyncio.create_task(generate(buffer))
        await asyncio.sleep(0.3)  # train on the epoch
        gen.cancel()
        checkpoint = {"flushed": os.path.exists(FLUSHED), "lease_released": not os.path.exists(LEASE)}
        with open(os.path.join(WORK, "checkpoint.json"), "w") as f:
            json.dump(checkpoint, f)


    if __name__ == "__main__":
        asyncio.run(main())
''')


def _run(path, work) -> dict:
    proc = subprocess.run([sys.executable, str(path), str(work)], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return {"checkpoint": json.loads((work / "checkpoint.json").read_text()),
            "flushed_at_exit": (work / "rollouts.flushed").exists(),
            "lease_left_at_exit": (work / "sandbox.lease").exists()}


@pytest.mark.timeout(90)
def test_cleanup_races_the_checkpoint_before_and_not_after_fix(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    assert [d.code for d in lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD105"]

    (tmp_path / "before").mkdir()
    before = _run(hazard, tmp_path / "before")
    # the checkpoint was written while the cancelled generator was still in its finally ...
    assert before["checkpoint"] == {"flushed": False, "lease_released": False}
    # ... and asyncio.run's second cancel at exit cut that cleanup off
    assert before["flushed_at_exit"] is False and before["lease_left_at_exit"] is True

    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert b"await runtime_guard.cancel_and_wait(gen, timeout=30)" in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    (tmp_path / "after").mkdir()
    after = _run(fixed, tmp_path / "after")
    assert after["checkpoint"] == {"flushed": True, "lease_released": True}
    assert after["flushed_at_exit"] is True and after["lease_left_at_exit"] is False


# Shape 2: a loop that cancels several tasks gets one wait after the loop.
LOOP = HAZARD.replace(
    "    gen = asyncio.create_task(generate(buffer))\n",
    "    gens = [asyncio.create_task(generate(buffer))]\n",
).replace(
    "    gen.cancel()\n",
    "    for gen in gens:\n        gen.cancel()\n",
)


@pytest.mark.timeout(90)
def test_loop_shape_waits_once_after_the_loop(tmp_path):
    assert "for gen in gens:" in LOOP
    (found,) = lint_source(LOOP.encode(), "loop.py", SETTINGS).diagnostics
    assert found.fix["applicability"] == "unsafe"
    fixed_src = fix_source(LOOP.encode(), "loop.py", SETTINGS, unsafe=True).source
    assert b"        gen.cancel()\n    await runtime_guard.cancel_and_wait(gens, timeout=30)\n" in fixed_src
    results = []
    for name, text in (("loop_before", LOOP.encode()), ("loop_after", fixed_src)):
        path = tmp_path / f"{name}.py"
        path.write_bytes(text)
        (tmp_path / name).mkdir()
        results.append(_run(path, tmp_path / name))
    assert results[0]["checkpoint"] == {"flushed": False, "lease_released": False}
    assert results[1]["checkpoint"] == {"flushed": True, "lease_released": True}
    assert results[1]["lease_left_at_exit"] is False
