"""runtime_guard.supervise: what each policy does to the rest of the process, in real subprocesses.

``on_error="log"`` (what SHD102's and SHD106's safe fixes pass) must change nothing but the report:
no signal handler, no ``threading.excepthook``/``sys.excepthook``, no thread, no cancellation, no
exit, whatever ``set_default_policy`` or ``$RUNTIME_GUARD_TASK_POLICY`` say. The other policies wrap
``threading.excepthook`` once and must chain to the hook that was there, act only on supervised
tasks, and never replace a hook installed after theirs.
"""
from __future__ import annotations

import pytest

from rg_testutil import run_code

pytestmark = pytest.mark.timeout(120)


def test_log_policy_changes_nothing_but_the_report() -> None:
    r = run_code("""
        import asyncio, signal, sys, threading, runtime_guard
        runtime_guard.set_default_policy("exit")  # an explicit on_error wins over the default
        def hooks():
            return (threading.excepthook, sys.excepthook, signal.getsignal(signal.SIGINT),
                    signal.getsignal(signal.SIGTERM))
        before = hooks()
        async def boom():
            await asyncio.sleep(0.01)
            raise RuntimeError('engine dead')
        async def main():
            threads = threading.active_count()
            t = runtime_guard.supervise(asyncio.create_task(boom(), name='writer'), on_error='log')
            assert isinstance(t, asyncio.Task) and t.get_name() == 'writer'
            await asyncio.sleep(0.3)
            print('threads started:', threading.active_count() - threads, flush=True)
            print('main cancelled:', asyncio.current_task().cancelling(), flush=True)
            return 'main result'
        print(asyncio.run(main()), flush=True)
        print('hooks unchanged:', hooks() == before, flush=True)  # (asyncio.run's own SIGINT handler is gone again)
    """, env={"RUNTIME_GUARD_TASK_POLICY": "cancel-main"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["threads started: 0", "main cancelled: 0", "main result",
                                     "hooks unchanged: True"], r.stdout + r.stderr
    assert "runtime_guard: supervised task writer failed" in r.stderr
    assert "Traceback" in r.stderr and "RuntimeError: engine dead" in r.stderr
    assert "cancelling" not in r.stderr and "Task exception was never retrieved" not in r.stderr


def test_log_policy_leaves_systemexit_in_a_loop_thread_to_that_thread() -> None:
    # asyncio re-raises a task's SystemExit out of run_forever: without supervise only the loop's
    # thread ends. With on_error="log" that stays so (the other policies end the process instead).
    r = run_code("""
        import asyncio, sys, threading, time, runtime_guard
        async def worker():
            await asyncio.sleep(0.05)
            sys.exit(7)
        def loop_thread():
            loop = asyncio.new_event_loop()
            loop.call_soon(lambda: runtime_guard.supervise(loop.create_task(worker()), on_error='log'))
            loop.run_forever()
        t = threading.Thread(target=loop_thread)
        t.start(); t.join(10)
        print('loop thread ended:', not t.is_alive(), flush=True)
        print('process still alive', flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert "loop thread ended: True" in r.stdout and "process still alive" in r.stdout, r.stdout + r.stderr


def test_other_policies_chain_the_threading_excepthook_and_act_only_on_their_tasks() -> None:
    r = run_code("""
        import asyncio, sys, threading, runtime_guard
        seen = []
        def mine(args):
            seen.append(type(args.exc_value).__name__)
        threading.excepthook = mine  # installed before supervise
        async def ok():
            return 1
        async def main():
            await runtime_guard.supervise(asyncio.create_task(ok()), on_error='cancel-main')
        asyncio.run(main())
        assert threading.excepthook is not mine  # wrapped, once
        def raises(exc):
            raise exc
        for exc in (ValueError('not ours'), SystemExit(3), KeyboardInterrupt()):
            t = threading.Thread(target=raises, args=(exc,)); t.start(); t.join()
        # an unsupervised task's SystemExit in a loop thread: only that thread ends, as without us
        def loop_thread():
            loop = asyncio.new_event_loop()
            async def plain():
                sys.exit(5)
            loop.call_soon(lambda: loop.create_task(plain()))
            loop.run_forever()
        t = threading.Thread(target=loop_thread); t.start(); t.join(10)
        print('hook saw:', seen, flush=True)
        later = lambda args: None
        threading.excepthook = later  # installed after: never replaced
        asyncio.run(main())
        print('later hook kept:', threading.excepthook is later, flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert "hook saw: ['ValueError', 'SystemExit', 'KeyboardInterrupt', 'SystemExit']" in r.stdout, r.stdout + r.stderr
    assert "later hook kept: True" in r.stdout


def test_explicit_policy_ignores_the_environment_and_the_default_follows_it() -> None:
    program = """
        import asyncio, sys, runtime_guard
        async def boom():
            await asyncio.sleep(0.01)
            raise RuntimeError('engine dead')
        async def main():
            kw = {} if sys.argv[1] == 'none' else {'on_error': sys.argv[1]}
            runtime_guard.supervise(asyncio.create_task(boom()), **kw)
            await asyncio.sleep(0.3)
            print('main finished', flush=True)
        asyncio.run(main())
    """
    env = {"RUNTIME_GUARD_TASK_POLICY": "exit"}
    explicit = run_code(program, args=["log"], env=env)
    assert explicit.returncode == 0 and "main finished" in explicit.stdout, explicit.stderr
    default = run_code(program, args=["none"], env=env)  # no on_error: the environment decides
    assert default.returncode == 1 and "main finished" not in default.stdout, default.stderr
