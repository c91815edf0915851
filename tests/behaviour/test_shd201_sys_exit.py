"""SHD201 sys-exit-in-task, for real: where ``sys.exit(1)`` ends the process and where not.

Three programs, each flagged by SHD201, each run as a real subprocess before and after
``fix_source`` (which writes ``runtime_guard.hard_exit(1)``):

1. a task on an event loop running in a non-main thread (vLLM / Ray async actor shape,
   SkyRL #1691): SystemExit ends the loop thread only; the main thread waits on a
   result forever. Hazard: still alive after 3 s, killed. Fixed: exits by itself, status 1.
2. a ``threading.Thread`` target: ``threading`` swallows SystemExit. Same outcome.
3. a task on the main thread's loop (documents the real mechanism, cf.
   shared/lab/sysexit_task_main_thread.py): here SystemExit DOES escape ``asyncio.run``
   and the process exits with status 1 on its own, after the main coroutine's
   ``finally`` ran. The fix also exits with status 1 but skips that ``finally``
   (``os._exit``): the documented cost of the fix.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild

REPO = Path(__file__).resolve().parents[2]
# The fixed programs import runtime_guard from the repo. ``python prog.py`` puts the
# program's folder, not the cwd, on sys.path, and outside the repo the editable install
# resolves ``runtime_guard`` to an empty namespace package: put the repo first.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
SETTINGS = Settings(selected=("SHD201",), target_version="py311")

LOOP_THREAD = textwrap.dedent(
    '''
    import asyncio
    import sys
    import threading


    async def engine_monitor():
        await asyncio.sleep(0.2)
        # the engine died: give up on the whole process
        sys.exit(1)


    async def generate(prompt):
        await asyncio.sleep(3600)  # waits for an engine that is gone
        return prompt


    def main():
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, daemon=True).start()
        asyncio.run_coroutine_threadsafe(engine_monitor(), loop)
        fut = asyncio.run_coroutine_threadsafe(generate("hello"), loop)
        print("WAITING", flush=True)
        print(fut.result())


    if __name__ == "__main__":
        main()
    '''
).lstrip()

THREAD_TARGET = textwrap.dedent(
    '''
    import sys
    import threading
    import time

    results = []
    done = threading.Event()


    def pump():
        time.sleep(0.2)
        if not results:
            # upstream closed: stop the program
            sys.exit(1)
        done.set()


    def main():
        threading.Thread(target=pump, daemon=True).start()
        print("WAITING", flush=True)
        done.wait()


    if __name__ == "__main__":
        main()
    '''
).lstrip()

MAIN_THREAD = textwrap.dedent(
    '''
    import asyncio
    import sys


    async def worker():
        await asyncio.sleep(0.1)
        sys.exit(1)


    async def main():
        task = asyncio.create_task(worker())
        try:
            print("WAITING", flush=True)
            await asyncio.sleep(30)
        finally:
            print("MAIN FINALLY", flush=True)


    if __name__ == "__main__":
        asyncio.run(main())
    '''
).lstrip()


def _codes(source: str) -> list[str]:
    result = lint_source(source.encode(), "prog.py", SETTINGS)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


def _label(source: str) -> str:
    (found,) = lint_source(source.encode(), "prog.py", SETTINGS).diagnostics
    return found.fix["applicability"]


def _fixed(source: str, status: int = 1) -> str:
    # safe where SystemExit can never end the process (a thread target), unsafe where it may
    # (a task, or a coroutine not known to run on another thread's loop): docs/fix-safety.md
    unsafe = _label(source) == "unsafe"
    out = fix_source(source.encode(), "prog.py", SETTINGS, unsafe=unsafe).source.decode()
    assert f"runtime_guard.hard_exit({status})" in out and "sys.exit" not in out
    assert "import runtime_guard" in out
    assert _codes(out) == []
    return out


def _run(path: Path, wait: float) -> tuple[bool, int, str]:
    """Run ``path`` until it prints WAITING, then give it ``wait`` seconds to exit by
    itself. Returns (had to be killed, exit status, stdout)."""
    with PipedChild([sys.executable, path], cwd=str(REPO), env=ENV) as child:
        child.expect("WAITING")
        # piped_child reads WAITING without reading past it: a child that printed its next line
        # with WAITING lost it under load with readline() then communicate() (86981dc)
        killed, status, out, _ = child.finish_or_kill(wait)
        return killed, status, out


@pytest.mark.timeout(90)
@pytest.mark.parametrize("program", [LOOP_THREAD, THREAD_TARGET], ids=["loop-in-thread", "thread-target"])
def test_sys_exit_off_the_main_thread_hangs_and_hard_exit_ends_it(tmp_path, program):
    assert _codes(program) == ["SHD201"]
    hazard = tmp_path / "hazard.py"
    hazard.write_text(program)
    killed, _, _ = _run(hazard, wait=3)
    assert killed, "sys.exit(1) off the main thread should leave the process alive"

    fixed = tmp_path / "fixed.py"
    fixed.write_text(_fixed(program))
    killed, status, _ = _run(fixed, wait=20)
    assert not killed
    assert status == 1


def test_labels_follow_where_the_exit_can_end_the_process():
    assert _label(THREAD_TARGET) == "safe"
    assert _label(MAIN_THREAD) == "unsafe"  # below: the fix skips main()'s finally there
    assert _label(LOOP_THREAD) == "unsafe"  # run_coroutine_threadsafe: the loop's thread is not proven


RAISE_IN_THREAD = THREAD_TARGET.replace("sys.exit(1)", "raise SystemExit(2)")
NORMAL_THREAD = THREAD_TARGET.replace("results = []", "results = [1]")


@pytest.mark.timeout(90)
def test_raise_system_exit_shape_and_the_normal_path(tmp_path):
    # shape 2: `raise SystemExit(code)` -> `runtime_guard.hard_exit(code)` (a statement)
    assert _label(RAISE_IN_THREAD) == "safe"
    hazard = tmp_path / "raise_hazard.py"
    hazard.write_text(RAISE_IN_THREAD)
    killed, _, _ = _run(hazard, wait=3)
    assert killed
    fixed = tmp_path / "raise_fixed.py"
    fixed.write_text(_fixed(RAISE_IN_THREAD, status=2))
    killed, status, _ = _run(fixed, wait=20)
    assert not killed and status == 2

    # normal path: the exit is not reached, so the fixed program ends as the original did
    outcomes = []
    for name, text in (("normal.py", NORMAL_THREAD), ("normal_fixed.py", _fixed(NORMAL_THREAD))):
        path = tmp_path / name
        path.write_text(text)
        outcomes.append(_run(path, wait=20))
    assert outcomes[0] == outcomes[1] == (False, 0, "")


@pytest.mark.timeout(60)
def test_sys_exit_in_a_main_thread_task_escapes_asyncio_run(tmp_path):
    # SHD201 flags it too: the module runs worker() as a task, and nothing guarantees the
    # loop stays on the main thread; here it does, so the hazard exits by itself.
    assert _codes(MAIN_THREAD) == ["SHD201"]
    hazard = tmp_path / "hazard.py"
    hazard.write_text(MAIN_THREAD)
    killed, status, out = _run(hazard, wait=20)
    assert not killed and status == 1
    assert "MAIN FINALLY" in out  # SystemExit cancelled main() and unwound it

    fixed = tmp_path / "fixed.py"
    fixed.write_text(_fixed(MAIN_THREAD))
    killed, status, out = _run(fixed, wait=20)
    assert not killed and status == 1
    assert "MAIN FINALLY" not in out  # os._exit: other tasks' finally blocks do not run


EXECUTOR_AWAITED = textwrap.dedent(
    '''
    import asyncio
    import sys


    def job():
        # the input is unusable: give up
        sys.exit(2)


    async def main():
        try:
            print("WAITING", flush=True)
            await asyncio.get_running_loop().run_in_executor(None, job)
        finally:
            print("MAIN FINALLY", flush=True)


    if __name__ == "__main__":
        asyncio.run(main())
    '''
).lstrip()


@pytest.mark.timeout(60)
def test_executor_job_awaited_on_the_main_thread_is_why_the_label_is_unsafe(tmp_path):
    """An executor job's SystemExit comes back through its awaited future and ends the process
    after unwinding main() (a path where the hazard does not occur); hard_exit skips that."""
    assert _label(EXECUTOR_AWAITED) == "unsafe"
    hazard = tmp_path / "executor.py"
    hazard.write_text(EXECUTOR_AWAITED)
    assert _run(hazard, wait=20) == (False, 2, "MAIN FINALLY\n")
    fixed = tmp_path / "executor_fixed.py"
    fixed.write_text(_fixed(EXECUTOR_AWAITED, status=2))
    assert _run(fixed, wait=20) == (False, 2, "")


# fix audit N3 (prime-rl clean_exit.async_wrapper): the exit sits in a `try` whose `finally` is
# the process-group teardown. SystemExit runs that finally; hard_exit would end the process first.
OWN_FINALLY = textwrap.dedent(
    '''
    import asyncio
    import functools
    import sys


    def clean_exit(func):
        @functools.wraps(func)
        async def async_wrapper(*args, **kwargs):
            try:
                return await func(*args, **kwargs)
            except Exception:
                print("fatal error, exiting 1", flush=True)
                sys.exit(1)
            finally:
                print("teardown ran", flush=True)

        return async_wrapper


    @clean_exit
    async def main():
        print("WAITING", flush=True)
        await asyncio.sleep(0.01)
        raise RuntimeError("step failed")


    if __name__ == "__main__":
        asyncio.run(main())
    '''
).lstrip()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("shape", ["try-finally", "with", "async-with"])
def test_no_fix_where_hard_exit_would_skip_the_functions_own_cleanup(tmp_path, shape):
    """The fixer leaves the exit alone, so the teardown still runs; the old fix (the same
    replacement by hand) skipped it."""
    program = OWN_FINALLY
    if shape != "try-finally":
        cm = textwrap.dedent(
            '''
            import contextlib


            @contextlib.contextmanager
            def teardown():
                try:
                    yield
                finally:
                    print("teardown ran", flush=True)


            @contextlib.asynccontextmanager
            async def ateardown():
                with teardown():
                    yield

            ''')
        block = "with teardown():" if shape == "with" else "async with ateardown():"
        old_body = ("        try:\n            return await func(*args, **kwargs)\n"
                    "        except Exception:\n            print(\"fatal error, exiting 1\", flush=True)\n"
                    "            sys.exit(1)\n        finally:\n            print(\"teardown ran\", flush=True)\n")
        assert old_body in program
        program = program.replace("import sys\n", "import sys\n" + cm).replace(
            old_body,
            f"        {block}\n            try:\n                return await func(*args, **kwargs)\n"
            "            except Exception:\n                print(\"fatal error, exiting 1\", flush=True)\n"
            "                sys.exit(1)\n")
        assert f"        {block}\n" in program and "finally:\n            print" not in program
    fixed = fix_source(program.encode(), "prog.py", SETTINGS, unsafe=True).source.decode()
    original = tmp_path / "original.py"
    original.write_text(program)
    assert _run(original, wait=20) == (False, 1, "fatal error, exiting 1\nteardown ran\n")
    after = tmp_path / "after.py"
    after.write_text(fixed)
    assert _run(after, wait=20) == (False, 1, "fatal error, exiting 1\nteardown ran\n")
    (found,) = lint_source(program.encode(), "prog.py", SETTINGS).diagnostics
    assert found.code == "SHD201" and found.fix is None, found  # flagged, no fix offered
    assert fixed == program
    # what the fix used to write: the process ends before the teardown
    old_fix = tmp_path / "old_fix.py"
    old_fix.write_text(program.replace("import sys\n", "import sys\nimport runtime_guard\n", 1)
                       .replace("sys.exit(1)", "runtime_guard.hard_exit(1)"))
    assert _run(old_fix, wait=20) == (False, 1, "fatal error, exiting 1\n")


def test_run_keeps_the_lines_that_came_with_waiting(tmp_path):
    """``_run``'s own check: a child whose next line arrives in the same read as WAITING (here
    one write) still has it in the output. Read with ``communicate`` after ``readline``, it was
    lost: the executor test above failed in CI so (status 2, no "MAIN FINALLY")."""
    prog = tmp_path / "both.py"
    prog.write_text('print("WAITING\\nMAIN FINALLY", flush=True)\n')
    assert _run(prog, wait=20) == (False, 0, "MAIN FINALLY\n")
