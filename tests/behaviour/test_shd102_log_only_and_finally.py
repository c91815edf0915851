"""SHD102, issue 28: two shapes in which a task's failure was counted as handled.

- *Log only*: a producer task fails, its done callback retrieves the exception and only
  writes it into a log. The consumer waiting for the producer's output waits forever: the
  log line is printed, the process never ends (shown: still running after the hang window,
  killed by the test). SHD102 used to count the callback as observing the task; it now
  reports the spawn ("only written into a log"), with no fix under the default
  ``on-error = "log"`` (supervising would only log it a second time) and, with
  ``on-error = "cancel-main"``, the unsafe fix that ends the run: the fixed program exits
  non-zero within the window.
- *Finally*: the task's coroutine catches every ``Exception`` but its ``finally`` raises.
  SHD102 used to read "handles its own errors" and stay quiet; the error escapes the task and
  is lost (the program goes on as if the drain succeeded; asyncio prints "Task exception was
  never retrieved" only when the task object is garbage-collected, here at exit after the
  last line). It is now reported, and the safe fix prints the traceback at once, before the
  program's next line, with the same normal output and status.

Every program runs in a real subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

REPO = Path(__file__).resolve().parents[2]
HANG_WINDOW_S = 5.0
LOG = Settings(selected=("SHD102",), target_version="py311")
CANCEL_MAIN = Settings(selected=("SHD102",), target_version="py311",
                       rule_options={"SHD102": {"on-error": "cancel-main"}})

LOG_ONLY = '''
import asyncio
import logging

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
log = logging.getLogger("pipeline")


async def produce(queue):
    await asyncio.sleep(0.2)
    raise RuntimeError("tokenizer crashed")


def on_done(t):
    if not t.cancelled() and t.exception() is not None:
        log.error("producer failed: %s", t.exception())


async def main():
    queue = asyncio.Queue()
    task = asyncio.create_task(produce(queue))
    task.add_done_callback(on_done)
    print("waiting for the first batch", flush=True)
    batch = await queue.get()
    print("got", batch, flush=True)


asyncio.run(main())
'''

FINALLY = '''
import asyncio
import logging

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")


async def drain(state):
    try:
        await asyncio.sleep(0.1)
        state["drained"] = True
    except Exception:
        logging.exception("drain failed")
    finally:
        if state["dirty"]:
            raise RuntimeError("queue left dirty")


async def main():
    state = {"dirty": True, "drained": False}
    asyncio.create_task(drain(state))
    await asyncio.sleep(0.5)
    print("drained:", state["drained"], flush=True)
    await asyncio.sleep(0.5)
    print("done", flush=True)


asyncio.run(main())
'''


def _run(program: str, tmp_path: Path, name: str, merged: bool = False) -> tuple[object, str, str]:
    """(exit status, or "running" when still alive after the window and killed; stdout; stderr).
    ``merged``: stderr goes into stdout, in the order written."""
    script = tmp_path / f"{name}.py"
    script.write_text(program)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("RUNTIME_GUARD_TASK_POLICY", None)
    proc = subprocess.Popen([sys.executable, str(script)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT if merged else subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=HANG_WINDOW_S)
        return proc.returncode, out, err or ""
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=10)
        return "running", out, err or ""


def _codes(src: str, settings: Settings) -> list:
    return lint_source(src.encode(), "prog.py", settings).diagnostics


def test_log_only_callback_leaves_the_consumer_hanging_and_is_reported(tmp_path):
    status, out, err = _run(LOG_ONLY, tmp_path, "log_only")
    assert status == "running", (status, out, err)  # still waiting for a batch that never comes
    assert "waiting for the first batch" in out and "got" not in out
    assert "producer failed: tokenizer crashed" in err  # ... although the failure was logged
    found = _codes(LOG_ONLY, LOG)
    assert [d.code for d in found] == ["SHD102"], found
    assert "only written into a log" in found[0].message and found[0].fix is None


def test_log_only_with_cancel_main_fix_ends_the_run(tmp_path):
    assert fix_source(LOG_ONLY.encode(), "prog.py", LOG, unsafe=True).applied == 0  # no fix under "log"
    text = fix_source(LOG_ONLY.encode(), "prog.py", CANCEL_MAIN, unsafe=True).source.decode()
    assert 'on_error="cancel-main"' in text
    status, out, err = _run(text, tmp_path, "log_only_fixed")
    assert status not in ("running", 0), (status, out, err)
    assert "producer failed: tokenizer crashed" in err and "tokenizer crashed" in err


def test_finally_that_raises_is_not_handling_its_own_errors(tmp_path):
    status, out, _ = _run(FINALLY, tmp_path, "finally", merged=True)
    assert status == 0, (status, out)
    # the run goes on as if the drain were fine; the error shows up only when the finished
    # task is garbage-collected (here at interpreter exit, after "done")
    assert out.index("done") < out.index("queue left dirty"), out
    found = _codes(FINALLY, LOG)
    assert [d.code for d in found] == ["SHD102"], found
    assert found[0].fix is not None
    text = fix_source(FINALLY.encode(), "prog.py", LOG).source.decode()  # the safe fix
    assert 'on_error="log"' in text
    status2, out2, _ = _run(text, tmp_path, "finally_fixed", merged=True)
    assert status2 == 0, (status2, out2)
    # the same normal output, and the finally's error printed at once, before the run goes on
    assert [ln for ln in out2.splitlines() if ln.startswith(("drained", "done"))] == ["drained: True", "done"]
    assert out2.index("queue left dirty") < out2.index("drained: True"), out2
