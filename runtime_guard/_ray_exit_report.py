"""The exit report on Ray: the driver's report includes what its workers left, each tagged with its
node and actor (one report for a multi-node job).

Mechanism (pull, through Ray itself; measured to work for every ending of the driver, see
docs/runtime_guard.md "Exit report on Ray"):

* Driver (``exit_report`` installed): ``ray.init`` with ``runtime_guard.ray.setup_worker`` as the
  job's ``worker_process_setup_hook`` gets ``RUNTIME_GUARD_EXIT_REPORT_WORKERS=1`` added to the
  job's ``env_vars`` (only when that hook is ours, and never over a value the program set), and
  right after ``ray.init`` returns, the driver creates one named, non-detached async actor, the
  collector (``num_cpus=0``; it ends with the job; its own worker runs no responder).
* Worker: ``setup_worker`` sees the variable, installs the exit report's recording (creation
  sites; no atexit report, no signal handler), registers with the collector (one actor call,
  submitted from the hook without waiting) and starts one daemon thread that waits, in a pending
  call on the collector, until the driver asks.
* Driver at its exit report (before Ray's own atexit shutdown; also just before an explicit
  ``ray.shutdown()``): one call ``gather(timeout)`` wakes every waiting worker thread; each
  collects its report at that moment and submits it; the collector returns when every
  registered worker has answered or after ``timeout`` s (``RUNTIME_GUARD_EXIT_REPORT_RAY_TIMEOUT``,
  default 3), naming the workers that did not answer. A Ray driver's SIGTERM is Ray's own handler
  (``sys.exit``), so SIGTERM takes the same path as return, exception and Ctrl+C.

Off (no exit report in the driver, or the hook not ours): ``setup_worker`` reads one environment
variable and does nothing more; no actor, no thread, no call.
"""
from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any, Dict, List, Optional

import ray

ENV_WORKERS = "RUNTIME_GUARD_EXIT_REPORT_WORKERS"
ENV_TIMEOUT = "RUNTIME_GUARD_EXIT_REPORT_RAY_TIMEOUT"
HOOK = "runtime_guard.ray.setup_worker"
_NAME = "runtime_guard_exit_report_"
_TRUE = ("1", "true", "yes", "on")
FIND_FOR = 120.0  # a worker that started before the collector existed looks for it this long


class _Collector:
    """Holds the registered workers; ``gather`` asks them all and returns what they answered."""

    def __init__(self) -> None:
        self._workers: Dict[str, Dict[str, Any]] = {}
        self._reports: Dict[str, Dict[str, Any]] = {}
        self._asked: Optional[asyncio.Event] = None
        self._changed: Optional[asyncio.Event] = None

    def _events(self) -> "tuple[asyncio.Event, asyncio.Event]":
        if self._asked is None or self._changed is None:
            self._asked, self._changed = asyncio.Event(), asyncio.Event()
        return self._asked, self._changed

    async def register(self, worker_id: str, info: Dict[str, Any]) -> bool:
        self._events()
        self._workers[worker_id] = info
        return True

    async def unregister(self, worker_id: str) -> bool:
        self._workers.pop(worker_id, None)
        self._events()[1].set()
        return True

    async def wait(self) -> bool:
        await self._events()[0].wait()
        return True

    async def submit(self, worker_id: str, report: Dict[str, Any]) -> bool:
        self._reports[worker_id] = report
        self._workers.setdefault(worker_id, report.get("process") or {})
        self._events()[1].set()
        return True

    async def gather(self, timeout: float) -> Dict[str, Any]:
        asked, changed = self._events()
        asked.set()
        loop = asyncio.get_running_loop()
        end = loop.time() + timeout
        while any(w not in self._reports for w in self._workers):
            left = end - loop.time()
            if left <= 0:
                break
            changed.clear()
            try:
                await asyncio.wait_for(changed.wait(), left)
            except asyncio.TimeoutError:
                break
        silent = [dict(info, worker_id=w) for w, info in self._workers.items() if w not in self._reports]
        return {"reports": list(self._reports.values()), "silent": silent}


_collector: Any = None
_gathered = False


def _name(job_id: str) -> str:
    return _NAME + job_id


def _truthy(value: Optional[str]) -> bool:
    return (value or "").strip().lower() in _TRUE


def _is_our_hook(hook: Any) -> bool:
    if isinstance(hook, str):
        return hook.strip() == HOOK
    return getattr(hook, "__module__", None) == "runtime_guard.ray" and getattr(hook, "__name__", None) == "setup_worker"


def job_runtime_env(runtime_env: Any) -> Any:
    """The runtime_env ``ray.init`` gets: with ``ENV_WORKERS=1`` added when the hook is ours
    (a new dict; the program's is not changed). Anything else comes back as it was."""
    if not isinstance(runtime_env, dict) or not _is_our_hook(runtime_env.get("worker_process_setup_hook")):
        return runtime_env
    env_vars = runtime_env.get("env_vars") or {}
    if ENV_WORKERS in env_vars:
        return runtime_env
    new = dict(runtime_env)
    new["env_vars"] = dict(env_vars, **{ENV_WORKERS: "1"})
    return new


def wants_collector(runtime_env: Any) -> bool:
    return isinstance(runtime_env, dict) and _truthy((runtime_env.get("env_vars") or {}).get(ENV_WORKERS))


def start_driver() -> None:
    """After ``ray.init``: the job's collector (named, non-detached, no CPU)."""
    global _collector, _gathered
    job = ray.get_runtime_context().get_job_id()
    cls = ray.remote(num_cpus=0, max_concurrency=100_000)(_Collector)
    _collector = cls.options(name=_name(job), runtime_env={"env_vars": {ENV_WORKERS: "0"}}).remote()
    _gathered = False


def gather(timeout: Optional[float] = None) -> Optional[Dict[str, Any]]:
    """Ask every registered worker for its report now (once per collector). None when there is
    no collector or Ray is gone."""
    global _gathered
    if _collector is None or _gathered or not ray.is_initialized():
        return None
    _gathered = True
    if timeout is None:
        try:
            timeout = float(os.environ.get(ENV_TIMEOUT) or 3.0)
        except ValueError:
            timeout = 3.0
    return ray.get(_collector.gather.remote(timeout), timeout=timeout + 5.0)


# ---------------------------------------------------------------------------------------------
# Worker side


def _process(ctx: Any) -> Dict[str, Any]:
    info: Dict[str, Any] = {"pid": os.getpid()}
    for key, get in (("node_id", ctx.get_node_id), ("worker_id", ctx.get_worker_id), ("actor_id", ctx.get_actor_id)):
        try:
            info[key] = get()
        except Exception:
            info[key] = None
    try:
        info["node_ip"] = ray.util.get_node_ip_address()
    except Exception:
        info["node_ip"] = None
    try:
        info["actor_name"] = ctx.get_actor_name() if info["actor_id"] else None
    except Exception:
        info["actor_name"] = None
    info["actor_class"] = None
    if info["actor_id"]:
        try:
            actors = ray._private.worker.global_worker.actors
            instance = next(iter(list(actors.values())), None)
            if instance is not None:
                info["actor_class"] = type(instance).__name__
        except Exception:
            pass
    return info


def _find(job: str) -> Any:
    try:
        return ray.get_actor(_name(job))
    except Exception:
        return None


def _respond(collector: Any, job: str, worker_id: str, info: Dict[str, Any], registered: threading.Event) -> None:
    from . import exit_report

    try:
        delay = 0.05
        end = time.monotonic() + FIND_FOR
        while collector is None:
            if time.monotonic() > end:
                return
            time.sleep(delay)  # only a worker that ran before the driver made the collector
            delay = min(delay * 2, 2.0)
            collector = _find(job)
        ray.get(collector.register.remote(worker_id, info))
        registered.set()
        ray.get(collector.wait.remote())
        ctx = ray.get_runtime_context()
        report = {"process": _process(ctx), "items": exit_report.collect()}
        ray.get(collector.submit.remote(worker_id, report))
    except BaseException:  # the job ended, the collector is gone: nothing to answer
        return
    finally:
        registered.set()


# The registration waits for the collector's own worker process to start (the driver makes it at
# ``ray.init``, at the same time as the job's first workers). Measured on 2 cores at load 5-7 with four
# jobs starting together: 2.0-2.3 s every time, so the former 2.0 s bound let the task return
# unregistered and a driver that ended right then gathered nothing. The wait ends as soon as the
# collector answered (or failed); this bound only matters for a collector that is still not up.
REGISTER_WAIT = 30.0


def _register() -> None:
    """The first creation this worker records (in a task: Ray takes calls from there, not from
    the setup hook itself): register with the collector, then answer from a thread. The
    registration is awaited (once per worker, until the collector took it, at most ``REGISTER_WAIT``
    s; a thread's event, so an async actor's loop is not seen calling ``ray.get``) so that a driver
    that ends right after this task returned finds the worker registered."""
    try:
        ctx = ray.get_runtime_context()
        job = ctx.get_job_id()
        worker_id = ctx.get_worker_id()
        info = _process(ctx)
        collector = _find(job)
        registered = threading.Event()
        thread = threading.Thread(target=_respond, args=(collector, job, worker_id, info, registered),
                                  name="runtime_guard-exit-report", daemon=True)
        thread.start()
        if collector is not None:
            registered.wait(REGISTER_WAIT)
    except Exception:
        pass


def start_worker() -> bool:
    """In ``setup_worker``: record creation sites and, from the first one on, answer the driver's
    ``gather``. Only when the driver's exit report asked for it (``ENV_WORKERS``); never raises.
    A worker that makes nothing never registers."""
    if not _truthy(os.environ.get(ENV_WORKERS)):
        return False
    try:
        from . import exit_report

        exit_report._first_record = _register
        return exit_report.install(sigterm=False, at_exit=False, worker=True)
    except Exception:
        return False


def worker_items(answer: Optional[Dict[str, Any]]) -> "tuple[List[Dict[str, Any]], List[Dict[str, Any]]]":
    """The workers' items, each tagged with ``process`` (node, actor, pid), and the workers seen."""
    items: List[Dict[str, Any]] = []
    workers: List[Dict[str, Any]] = []
    if not answer:
        return items, workers
    for report in answer.get("reports") or ():
        process = report.get("process") or {}
        workers.append(dict(process, answered=True, items=len(report.get("items") or ())))
        for item in report.get("items") or ():
            item = dict(item)
            item["process"] = process
            items.append(item)
    for info in answer.get("silent") or ():
        workers.append(dict(info, answered=False))
    return items, workers

