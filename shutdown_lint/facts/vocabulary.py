"""The names the facts know: execution contexts, and the spawners, runners, submitters,
registrars and factories through which code comes to run somewhere."""

from __future__ import annotations

import builtins

#: Facts a rule may declare in ``facts_needed``. All are derived from one walk.
FACTS = ("parents", "imports", "functions", "calls", "execution", "types")

_BUILTINS = frozenset(dir(builtins))

# ---------------------------------------------------------------- execution contexts
TASK = "task"  # coroutine wrapped into a Task (create_task, ensure_future, gather, TaskGroup)
MAIN_COROUTINE = "main-coroutine"  # passed to asyncio.run / run_until_complete on a main-thread entrypoint
LOOP_THREAD = "loop-thread"  # coroutine whose loop runs in a thread other than the main one
EXECUTOR = "executor"  # passed to to_thread / run_in_executor / submit / map
THREAD = "thread"  # threading.Thread target
CALLBACK = "callback"  # loop.call_soon / add_signal_handler / signal.signal handler / add_done_callback
RAY_REMOTE = "ray-remote"  # @ray.remote function, or method of an @ray.remote class
RAY_ASYNC_ACTOR = "ray-async-actor"  # method of an @ray.remote class that has async methods
RAY_THREADED_ACTOR = "ray-threaded-actor"  # runs on the thread pool of a sync actor with max_concurrency > 1
RAY_WORKER = "ray-worker"  # runs in a Ray worker process (remote, or called from remote)
DRIVER = "driver"  # process entrypoint: __main__ block, main(), calls ray.init, called from those
TORCH_WORKER = "torch-worker"  # calls init_process_group, or is called from a function that does

TASK_SPAWNERS = frozenset(
    {
        "asyncio.create_task",
        "asyncio.ensure_future",
        "asyncio.AbstractEventLoop.create_task",
        "asyncio.TaskGroup.create_task",
        "asyncio.run_coroutine_threadsafe",
        "asyncio.gather",
        "asyncio.wait",
        "asyncio.as_completed",
        "asyncio.shield",
        "asyncio.wait_for",
        "tqdm.asyncio.tqdm.gather",
        "tqdm.asyncio.tqdm_asyncio.gather",
        "anyio.abc.TaskGroup.start_soon",
    }
)
MAIN_RUNNERS = frozenset(
    {"asyncio.run", "asyncio.AbstractEventLoop.run_until_complete", "asyncio.Runner.run", "uvloop.run"}
)
EXECUTOR_SUBMITTERS = {
    # qualified name -> index of the callable argument
    "asyncio.to_thread": 0,
    "asyncio.AbstractEventLoop.run_in_executor": 1,
    "concurrent.futures.ThreadPoolExecutor.submit": 0,
    "concurrent.futures.ProcessPoolExecutor.submit": 0,
    "concurrent.futures.Executor.submit": 0,
    "concurrent.futures.ThreadPoolExecutor.map": 0,
    "concurrent.futures.ProcessPoolExecutor.map": 0,
    "anyio.to_thread.run_sync": 0,
}
CALLBACK_REGISTRARS = {
    "asyncio.AbstractEventLoop.call_soon": 0,
    "asyncio.AbstractEventLoop.call_soon_threadsafe": 0,
    "asyncio.AbstractEventLoop.call_later": 1,
    "asyncio.AbstractEventLoop.call_at": 1,
    "asyncio.AbstractEventLoop.add_signal_handler": 1,
    "signal.signal": 1,
    "atexit.register": 0,
}

#: Calls whose result is an instance of a known type, for ``x = f()`` bindings.
FACTORY_TYPES = {
    "asyncio.get_running_loop": "asyncio.AbstractEventLoop",
    "asyncio.get_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.new_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.events.get_running_loop": "asyncio.AbstractEventLoop",
    "asyncio.events.get_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.events.new_event_loop": "asyncio.AbstractEventLoop",
    "uvloop.new_event_loop": "asyncio.AbstractEventLoop",
    "asyncio.TaskGroup": "asyncio.TaskGroup",
    "asyncio.taskgroups.TaskGroup": "asyncio.TaskGroup",
    "asyncio.Runner": "asyncio.Runner",
    "anyio.create_task_group": "anyio.abc.TaskGroup",
    "multiprocessing.Pool": "multiprocessing.pool.Pool",
    "multiprocessing.pool.Pool": "multiprocessing.pool.Pool",
    "multiprocessing.pool.ThreadPool": "multiprocessing.pool.ThreadPool",
    "asyncio.create_task": "asyncio.Task",
    "asyncio.ensure_future": "asyncio.Task",
    "asyncio.AbstractEventLoop.create_task": "asyncio.Task",
    "threading.Thread": "threading.Thread",
    "concurrent.futures.ThreadPoolExecutor": "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.ProcessPoolExecutor": "concurrent.futures.ProcessPoolExecutor",
    "concurrent.futures.thread.ThreadPoolExecutor": "concurrent.futures.ThreadPoolExecutor",
    "concurrent.futures.process.ProcessPoolExecutor": "concurrent.futures.ProcessPoolExecutor",
    # futures from executors and cross-thread submission (their ``.result()`` blocks: SHD301)
    "concurrent.futures.ThreadPoolExecutor.submit": "concurrent.futures.Future",
    "concurrent.futures.ProcessPoolExecutor.submit": "concurrent.futures.Future",
    "concurrent.futures.Executor.submit": "concurrent.futures.Future",
    "asyncio.run_coroutine_threadsafe": "concurrent.futures.Future",
}
#: Modules re-exporting names under a canonical module (``from concurrent.futures.thread import X``).
_CANONICAL_PREFIXES = (
    ("asyncio.tasks.", "asyncio."),
    ("asyncio.runners.", "asyncio."),
    ("asyncio.events.", "asyncio."),
    ("asyncio.taskgroups.", "asyncio."),
    ("concurrent.futures.thread.", "concurrent.futures."),
    ("concurrent.futures.process.", "concurrent.futures."),
    ("torch.distributed.distributed_c10d.", "torch.distributed."),
)


def _canonical(qualified: str) -> str:
    for prefix, repl in _CANONICAL_PREFIXES:
        if qualified.startswith(prefix):
            return repl + qualified[len(prefix):]
    return qualified

