"""SHD106 for real: a dropped background task is garbage-collected while it runs.

Hazard: a heartbeat task that catches its own errors (so SHD102 does not apply) is started
with a bare `asyncio.create_task(...)`. It waits on a future that only its own coroutine
references, so once the starter returns nothing but the loop's *weak* reference points at
the task: a `gc.collect()` destroys it mid-run ("Task was destroyed but it is pending!"), the
weak reference to it dies and its loop never beats again. Fixed (the exact autofix output,
`runtime_guard.supervise(..., on_error="log")`): the task survives the collection and is
still pending.
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

SETTINGS = Settings(selected=("SHD102", "SHD106"), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))

HAZARD = textwrap.dedent('''
    import asyncio
    import gc
    import json
    import weakref

    SEEN = []  # weak references to the heartbeat task, for the check below


    async def heartbeat():
        try:
            SEEN.append(weakref.ref(asyncio.current_task()))
            reply = asyncio.get_running_loop().create_future()  # a reply only this task waits for
            await reply
        except Exception:
            print("heartbeat failed", flush=True)


    async def start():
        asyncio.create_task(heartbeat())


    async def main():
        await start()
        await asyncio.sleep(0.1)  # the heartbeat is running, waiting for its reply
        gc.collect()
        task = SEEN[0]()
        print(json.dumps({"alive": task is not None, "pending": task is not None and not task.done()}), flush=True)
        if task is not None:
            task.cancel()


    if __name__ == "__main__":
        asyncio.run(main())
''')


def _run(path) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-X", "dev", str(path)], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.mark.timeout(90)
def test_dropped_task_is_collected_before_and_kept_after_fix(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    # exactly one report for the call, and it is SHD106's (the coroutine handles its own errors)
    assert [d.code for d in lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD106"]

    before, err = _run(hazard)
    assert before == {"alive": False, "pending": False}  # collected mid-run
    assert "Task was destroyed but it is pending" in err

    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert b'runtime_guard.supervise(asyncio.create_task(heartbeat()), on_error="log")' in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    after, err = _run(fixed)
    assert after == {"alive": True, "pending": True}
    assert "Task was destroyed" not in err
