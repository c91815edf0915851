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


# ------------------------------------------------------------------------------------------------
# One program per fix shape (the discarded statement in an async function is above). "gc": the
# heartbeat waits for a reply only it holds and the program collects garbage (the hazard: collected
# before the fix, alive after). "ok": every reply comes (a timer holds it), the heartbeat ends by
# itself: the normal path, where the fixed program must print, report and exit exactly the same.

HEARTBEAT = '''
import asyncio
import gc
import json
import sys
import weakref

HAZARD = sys.argv[1] == "gc"
SEEN = []  # weak references to the heartbeat task, for the check below


async def heartbeat(beats):
    try:
        SEEN.append(weakref.ref(asyncio.current_task()))
        loop = asyncio.get_running_loop()
        for i in range(beats):
            reply = loop.create_future()
            if not HAZARD:
                loop.call_later(0.01, reply.set_result, i)
            print("beat", await reply, flush=True)
    except Exception:
        print("heartbeat failed", flush=True)
'''

CHECK = '''
    await asyncio.sleep(0.2)
    gc.collect()
    task = SEEN[0]()
    print(json.dumps({"alive": task is not None, "pending": task is not None and not task.done()}), flush=True)
    if task is not None:
        task.cancel()
'''

SHAPES = {
    # bound to a local name that is never read
    "unused-local": ('t = runtime_guard.supervise(asyncio.create_task(heartbeat(3)), on_error="log")',
                     HEARTBEAT + '''

async def start():
    t = asyncio.create_task(heartbeat(3))  # gone when start() returns


async def main():
    await start()
''' + CHECK + '''

asyncio.run(main())
'''),
    # loop.create_task in a sync method run as a loop callback
    "sync-method-loop-create-task": (
        'runtime_guard.supervise(self.loop.create_task(heartbeat(3)), on_error="log")', HEARTBEAT + '''

class Pinger:
    def __init__(self, loop):
        self.loop = loop

    def start(self):
        self.loop.create_task(heartbeat(3))


async def main():
    asyncio.get_running_loop().call_soon(Pinger(asyncio.get_running_loop()).start)
''' + CHECK + '''

asyncio.run(main())
'''),
    "ensure-future": ('runtime_guard.supervise(asyncio.ensure_future(heartbeat(3)), on_error="log")', HEARTBEAT + '''

async def main():
    asyncio.ensure_future(heartbeat(3))
''' + CHECK + '''

asyncio.run(main())
'''),
}


def _run_mode(path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(path), mode], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_fix_shape_keeps_the_task_and_the_normal_path(tmp_path, shape):
    expected, program = SHAPES[shape]
    assert [d.code for d in lint_source(program.encode(), "program.py", SETTINGS).diagnostics] == ["SHD106"]
    outcome = fix_source(program.encode(), "program.py", SETTINGS)  # a safe fix
    assert outcome.applied == 1 and expected.encode() in outcome.source, outcome.source.decode()
    original, fixed = tmp_path / "original.py", tmp_path / "fixed.py"
    original.write_text(program)
    fixed.write_bytes(outcome.source)

    ok_before, ok_after = _run_mode(original, "ok"), _run_mode(fixed, "ok")
    assert ok_before.returncode == 0 and "beat 2" in ok_before.stdout, ok_before.stderr
    assert (ok_after.returncode, ok_after.stdout, ok_after.stderr) == \
        (ok_before.returncode, ok_before.stdout, ok_before.stderr)

    gc_before, gc_after = _run_mode(original, "gc"), _run_mode(fixed, "gc")
    assert json.loads(gc_before.stdout.splitlines()[-1]) == {"alive": False, "pending": False}, gc_before.stderr
    assert json.loads(gc_after.stdout.splitlines()[-1]) == {"alive": True, "pending": True}, gc_after.stderr
    assert gc_after.returncode == gc_before.returncode == 0


# A heartbeat on a loop that a helper thread runs; a "stop" command ends that thread with
# SystemExit (asyncio re-raises it out of run_forever; the thread ends, the process goes on). The
# fix must not turn that into the end of the process: `on_error="log"` installs no
# threading.excepthook (before, supervise wrapped it for every policy and exited here).
THREAD_LOOP = '''
import asyncio
import sys
import threading
import time


class Pinger:
    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.queue = None

    def run(self):
        self.loop.call_soon(self.start)
        self.loop.run_forever()

    def start(self):
        self.queue = asyncio.Queue()
        self.loop.create_task(self.heartbeat())

    async def heartbeat(self):
        try:
            while True:
                command = await self.queue.get()
                if command == "stop":
                    sys.exit(0)  # ends the loop's thread
                print("beat", command, flush=True)
        except Exception:
            print("heartbeat failed", flush=True)


pinger = Pinger()
thread = threading.Thread(target=pinger.run)
thread.start()
while pinger.queue is None:
    time.sleep(0.01)
for command in ("ping", "ping", "stop"):
    pinger.loop.call_soon_threadsafe(pinger.queue.put_nowait, command)
thread.join(10)
print("loop thread ended:", not thread.is_alive(), flush=True)
print("excepthook untouched:", threading.excepthook is threading.__excepthook__, flush=True)
print("main thread goes on", flush=True)
'''


@pytest.mark.timeout(120)
def test_fix_in_a_loop_thread_keeps_what_systemexit_does_there(tmp_path):
    assert [d.code for d in lint_source(THREAD_LOOP.encode(), "program.py", SETTINGS).diagnostics] == ["SHD106"]
    outcome = fix_source(THREAD_LOOP.encode(), "program.py", SETTINGS)
    assert b'runtime_guard.supervise(self.loop.create_task(self.heartbeat()), on_error="log")' in outcome.source
    original, fixed = tmp_path / "original.py", tmp_path / "fixed.py"
    original.write_text(THREAD_LOOP)
    fixed.write_bytes(outcome.source)
    before = subprocess.run([sys.executable, str(original)], cwd=REPO, env=ENV, capture_output=True, text=True,
                            timeout=60)
    after = subprocess.run([sys.executable, str(fixed)], cwd=REPO, env=ENV, capture_output=True, text=True,
                           timeout=60)
    assert before.returncode == 0 and "main thread goes on" in before.stdout, before.stderr
    assert "loop thread ended: True" in before.stdout and "excepthook untouched: True" in before.stdout
    assert (after.returncode, after.stdout) == (before.returncode, before.stdout), after.stderr[-2000:]
