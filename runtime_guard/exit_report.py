"""Exit report: what a program left running when it ended, each with the line that started it.

``install()`` (or ``python -m runtime_guard --exit-report script.py``, ``RUNTIME_GUARD_EXIT_REPORT=1``
with the autoload .pth, ``pytest --exit-report``) makes the process print, when it ends by return,
``sys.exit``, an uncaught exception, SIGINT or SIGTERM, what is still there:

=================  ==========================================================  ===============
item               found at exit by                                            static rule
=================  ==========================================================  ===============
pending task       asyncio's task registry: tasks not done                     SHD102/SHD106
                   (asyncio.run's own main task under SIGTERM)                 (SHD402)
thread             ``threading`` threads still alive (not the main one)        SHD407 when it
                                                                               runs a loop
child process      this process's live children (``/proc``), with the line     SHD602
                   of the ``Popen`` / ``Process.start`` that made them
executor           ``Thread/ProcessPoolExecutor`` never ``shutdown()``         SHD503
process group      ``torch.distributed`` groups never destroyed                SHD502
Ray work           (only if ray is imported and initialised) owned object     SHD403/SHD501
                   refs whose tasks are still running, taken before Ray's own
                   atexit shutdown
=================  ==========================================================  ===============

Recording: the creation sites are one ``file:line`` each (a walk up the caller's frames that
skips runtime_guard and the standard library; a site inside site-packages is reported as the
library's, with the user line that called into it), stored as an attribute of the thread, task
or executor, or in a pid table for children. Patched, process-wide, only while installed:
``threading.Thread.start``, ``subprocess.Popen.__init__``, ``multiprocessing.process.BaseProcess
.start``, ``concurrent.futures`` executors' ``__init__``, ``asyncio.BaseEventLoop.create_task``
(the user's task factory, if any, still makes the task), uvloop's ``Loop.create_task``,
``torch.distributed``'s ``init_process_group`` / ``new_group``, and on Ray ``ray.init`` /
``ray.shutdown`` (the workers' reports: ``runtime_guard._ray_exit_report``). Modules not yet imported are patched when they are
(a ``sys.meta_path`` finder that answers only for those names), so installing imports none of them.

The report never changes what the program does:

* Output: nothing when nothing is left (``json_file`` is still written); the text goes to fd 2
  with ``os.write`` (no buffer of the program's is flushed or locked).
* Exit status: unchanged. Return, exception and SIGINT (KeyboardInterrupt) are seen from an
  ``atexit`` handler registered at install, so it runs after every handler registered later.
  SIGTERM: only where its disposition is the default action (``SIG_DFL``) at install, a Python
  handler reports and then restores ``SIG_DFL`` and sends SIGTERM again: the process dies of
  SIGTERM (-15) as before, without running ``atexit`` or flushing buffers, as before.
  Installed through ``runtime_guard.signals`` (``install_owned(stands_for_default=True)``,
  ``die_of``): ``signal.getsignal`` and ``signal.signal`` are wrapped to answer ``SIG_DFL`` where that handler
  is the one in place, so code that installs its own only over the default still does; a handler
  installed over ours replaces it (its program decides what SIGTERM does; if that ends in
  ``sys.exit`` or an exception the atexit report still comes). A Python handler runs only when
  the main thread next runs Python code; so that a main thread blocked in a C call (a
  ``torch.distributed`` rendezvous or collective waiting for a peer) still dies of SIGTERM, the
  signal is also heard at delivery (``runtime_guard.signals.on_delivery``, faulthandler's C hook
  on SIGTERM and the signal wakeup fd): if the handler has not started 1 s later, a helper thread reports and dies of
  SIGTERM. A main thread in a long C call that holds the GIL still dies only when that
  call returns (no Python thread can run meanwhile).
* Threads: two bare helper threads blocked reading pipes while the SIGTERM stand-in is in place
  (not in ``threading.enumerate()``). Children: none; a child forked afterwards gets SIGTERM's
  default back, no C hook and no report (``os.register_at_fork``).
"""
from __future__ import annotations

import atexit
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time (start-up cost when left on everywhere)
    from typing import Any, Dict, List, Optional, Tuple

    #: where a resource was made: (file, line, owner: "user", a library's name or "lib")
    Site = Tuple[str, int, str]

    __all__ = ["install", "uninstall", "is_installed", "collect", "report", "note_ending", "format_report"]

_TRUE = ("1", "true", "yes", "on")
_MAX_FRAMES = 64
_MAX_CHILD_SITES = 10000

_enabled = False
_installed = False
_json_file: Optional[str] = None
_reported = False
_ending: Optional[Dict[str, Any]] = None
_patched: List[Tuple[Any, str, Any]] = []  # (owner object, attribute, original)
_child_sites: Dict[int, Tuple[Optional[Site], Any]] = {}
_executors: Any = None  # a WeakSet, made at the first executor (``_weakrefset`` is not loaded at start-up)
_pg_sites: Dict[int, Optional[Site]] = {}  # id(process group) -> where it was made
_default_pg_site: Optional[Site] = None
_ray_items: Optional[List[Dict[str, Any]]] = None
_first_record: Any = None  # called once, at the first creation recorded (runtime_guard._ray_exit_report)
_worker_mode = False  # in a Ray worker (runtime_guard.ray.setup_worker): only what user code made
_ray_workers_items: List[Dict[str, Any]] = []  # the workers' items, gathered by the driver
_ray_workers: List[Dict[str, Any]] = []  # the workers asked (node, actor, pid, answered)
_sigterm_handler_installed = False

# ---------------------------------------------------------------------------------------------
# Creation sites


def _dir(path: str) -> str:
    return os.path.normcase(os.path.abspath(path)) + os.sep


_GUARD_DIR = _dir(os.path.dirname(__file__))
_STD_DIR = _dir(os.path.dirname(os.__file__))
_kinds: Dict[str, str] = {}


def _kind(filename: str) -> str:
    kind = _kinds.get(filename)
    if kind is None:
        if filename.startswith("<"):
            kind = "std" if filename.startswith("<frozen") else "user"
        else:
            path = os.path.normcase(os.path.abspath(filename))
            if path.startswith(_GUARD_DIR):
                kind = "guard"
            elif os.sep + "site-packages" + os.sep in path or os.sep + "dist-packages" + os.sep in path:
                kind = "lib"
            elif path.startswith(_STD_DIR):
                kind = "std"
            else:
                kind = "user"
        if len(_kinds) < 4096:
            _kinds[filename] = kind
    return kind


def _site(depth: int) -> Optional[Site]:
    """The caller's ``(file, line, owner)``: the first frame outside runtime_guard and the
    standard library; when that frame is a library's (or runtime_guard's), the owner says so and
    the line is the user's line further up that called into it, if any."""
    global _first_record
    if _first_record is not None:  # a Ray worker's first creation: register with the driver's collector
        first_record, _first_record = _first_record, None
        try:
            first_record()
        except Exception:
            pass
    try:
        frame: Any = sys._getframe(depth)
    except ValueError:
        return None
    owner = None
    first = None
    n = 0
    while frame is not None and n < _MAX_FRAMES:
        code = frame.f_code
        kind = _kinds.get(code.co_filename) or _kind(code.co_filename)
        if kind == "user":
            return (code.co_filename, frame.f_lineno, owner or "user")
        if kind != "std" and owner is None:
            owner = kind
            first = (code.co_filename, frame.f_lineno)
        frame = frame.f_back
        n += 1
    if first is not None:
        return (first[0], first[1], owner or "lib")
    return None


# ---------------------------------------------------------------------------------------------
# Patches (each records, then or after, exactly what the original does)


def _patch(owner: Any, name: str, make: Any) -> None:
    original = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
    if original is None or getattr(original, "_runtime_guard_exit_report", False):
        return
    wrapper = make(original)
    wrapper._runtime_guard_exit_report = True
    try:
        wrapper.__wrapped__ = original
        wrapper.__name__ = getattr(original, "__name__", name)
        wrapper.__qualname__ = getattr(original, "__qualname__", name)
        wrapper.__doc__ = getattr(original, "__doc__", None)
    except (AttributeError, TypeError):
        pass
    setattr(owner, name, wrapper)
    _patched.append((owner, name, original))


def _patch_threading(mod: Any) -> None:
    def make(start: Any) -> Any:
        def start_and_record(self: Any) -> Any:
            if _enabled:
                try:
                    self._runtime_guard_site = _site(2)
                except Exception:
                    pass
            return start(self)
        return start_and_record
    _patch(mod.Thread, "start", make)
    if _at_exit_wanted and not _registered_before_join:
        _register_before_threads_joined(mod)


_at_exit_wanted = False
_registered_before_join = False


def _register_before_threads_joined(threading: Any) -> None:
    """threading's exit hook (before every atexit handler: Ray's own shutdown among them), once;
    at install when threading is loaded, else when it is imported."""
    global _registered_before_join
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        try:
            register(_before_threads_joined)
            _registered_before_join = True
        except RuntimeError:
            pass


def _record_child(pid: Any, site: Optional[Site], what: Any) -> None:
    if isinstance(pid, int):
        if len(_child_sites) >= _MAX_CHILD_SITES:
            _child_sites.pop(next(iter(_child_sites)), None)
        _child_sites[pid] = (site, what)


def _patch_subprocess(mod: Any) -> None:
    def make(init: Any) -> Any:
        def init_and_record(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            if _enabled:
                try:
                    _record_child(self.pid, _site(2), self.args)
                except Exception:
                    pass
        return init_and_record
    _patch(mod.Popen, "__init__", make)


def _patch_mp_process(mod: Any) -> None:
    def make(start: Any) -> Any:
        def start_and_record(self: Any) -> None:
            start(self)
            if _enabled:
                try:
                    _record_child(self.pid, _site(2), None)
                except Exception:
                    pass
        return start_and_record
    _patch(mod.BaseProcess, "start", make)


def _patch_executor_class(cls: Any) -> None:
    def make(init: Any) -> Any:
        def init_and_record(self: Any, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            if _enabled:
                try:
                    self._runtime_guard_site = _site(2)
                    _executor_set().add(self)
                except Exception:
                    pass
        return init_and_record
    def make_shutdown(shutdown: Any) -> Any:
        def shutdown_and_record(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                self._runtime_guard_shut = True
            except Exception:
                pass
            return shutdown(self, *args, **kwargs)
        return shutdown_and_record

    _patch(cls, "__init__", make)
    _patch(cls, "shutdown", make_shutdown)


def _executor_set() -> Any:
    global _executors
    if _executors is None:
        from _weakrefset import WeakSet  # weakref.WeakSet itself

        _executors = WeakSet()
    return _executors


def _patch_cf_thread(mod: Any) -> None:
    _patch_executor_class(mod.ThreadPoolExecutor)


def _patch_cf_process(mod: Any) -> None:
    _patch_executor_class(mod.ProcessPoolExecutor)


def _is_runner(frame: Any) -> bool:
    """Was the task made by asyncio.run / run_until_complete (the program's main task)?"""
    for _ in range(3):
        if frame is None:
            return False
        name = frame.f_code.co_name
        if name == "run_until_complete" or (name == "run" and frame.f_code.co_filename.endswith("runners.py")):
            return True
        frame = frame.f_back
    return False


def _patch_asyncio(mod: Any) -> None:
    def make(create_task: Any) -> Any:
        def create_task_and_record(self: Any, *args: Any, **kwargs: Any) -> Any:
            task = create_task(self, *args, **kwargs)
            if _enabled:
                try:
                    site = task._runtime_guard_site = _site(2)
                    caller = sys._getframe(1)
                    if (site is None or caller.f_code.co_filename != site[0]) and _is_runner(caller):
                        task._runtime_guard_main = True
                except Exception:
                    pass
            return task
        return create_task_and_record
    _patch(mod.BaseEventLoop, "create_task", make)
    _create_task_patch[0] = make


_create_task_patch: List[Any] = [None]


def _patch_uvloop(mod: Any) -> None:
    """uvloop (Ray's async actors run on it): its ``Loop`` is a Python subclass of the compiled
    loop, so the wrapper goes on that subclass (``uninstall`` removes it again)."""
    import asyncio.base_events as base_events  # uvloop imports asyncio: already loaded

    _patch_asyncio(base_events)
    loop_cls = getattr(mod, "Loop", None)
    make = _create_task_patch[0]
    if loop_cls is None or make is None or "create_task" in loop_cls.__dict__:
        return
    original = getattr(loop_cls, "create_task", None)
    if original is None:
        return
    wrapper = make(original)
    wrapper._runtime_guard_exit_report = True
    wrapper.__wrapped__ = original
    setattr(loop_cls, "create_task", wrapper)
    _patched.append((loop_cls, "create_task", _INHERITED))


_INHERITED = object()  # uninstall: delete the attribute (the class inherited it)


def _patch_c10d(mod: Any) -> None:
    def make_init(init: Any) -> Any:
        def init_and_record(*args: Any, **kwargs: Any) -> Any:
            global _default_pg_site
            result = init(*args, **kwargs)
            if _enabled:
                try:
                    _default_pg_site = _site(2)
                except Exception:
                    pass
            return result
        return init_and_record

    def make_new(new_group: Any) -> Any:
        def new_group_and_record(*args: Any, **kwargs: Any) -> Any:
            group = new_group(*args, **kwargs)
            if _enabled and group is not None:
                try:
                    _pg_sites[id(group)] = _site(2)
                except Exception:
                    pass
            return group
        return new_group_and_record

    _patch(mod, "init_process_group", make_init)
    _patch(mod, "new_group", make_new)
    _reexport(mod, "torch.distributed")


def _reexport(mod: Any, package_name: str) -> None:
    """The names ``package_name`` already re-exported from ``mod`` point at our wrappers too
    (each restored by ``uninstall`` like any other patch)."""
    package = sys.modules.get(package_name)
    if package is None or package is mod:
        return
    for owner, name, original in list(_patched):
        if owner is mod and getattr(package, name, None) is original:
            setattr(package, name, getattr(mod, name))
            _patched.append((package, name, original))


_ray_sites: Dict[bytes, Optional[Site]] = {}  # ObjectRef.binary() -> where .remote() was called
_MAX_RAY_SITES = 10000


def _patch_ray_remote(cls: Any) -> None:
    def make(remote: Any) -> Any:
        def remote_and_record(self: Any, *args: Any, **kwargs: Any) -> Any:
            result = remote(self, *args, **kwargs)
            if _enabled:
                try:
                    site = _site(2)
                    if site is not None and _kind(site[0]) == "user":
                        site = (site[0], site[1], "user")  # called into Ray from user code: the user's line
                    for ref in (result if isinstance(result, list) else (result,)):
                        binary = getattr(ref, "binary", None)
                        if binary is not None:
                            if len(_ray_sites) >= _MAX_RAY_SITES:
                                _ray_sites.pop(next(iter(_ray_sites)), None)
                            _ray_sites[binary()] = site
                except Exception:
                    pass
            return result
        return remote_and_record
    _patch(cls, "_remote", make)


def _patch_ray_actor(mod: Any) -> None:
    _patch_ray_remote(mod.ActorMethod)


def _patch_ray_remote_function(mod: Any) -> None:
    _patch_ray_remote(mod.RemoteFunction)


def _patch_ray_worker(mod: Any) -> None:
    """``ray.init``: a job whose setup hook is runtime_guard's gets its workers' reports (see
    ``runtime_guard._ray_exit_report``); ``ray.shutdown``: they are gathered first."""
    def make_init(init: Any) -> Any:
        def init_and_collect(*args: Any, **kwargs: Any) -> Any:
            aggregate = False
            if _enabled and not _worker_mode:
                try:
                    from . import _ray_exit_report as rr

                    if "runtime_env" in kwargs:
                        kwargs["runtime_env"] = rr.job_runtime_env(kwargs["runtime_env"])
                        aggregate = rr.wants_collector(kwargs["runtime_env"])
                except Exception:
                    aggregate = False
            result = init(*args, **kwargs)
            if aggregate:
                try:
                    rr.start_driver()
                except Exception:
                    pass
            return result
        return init_and_collect

    def make_shutdown(shutdown: Any) -> Any:
        def gather_and_shutdown(*args: Any, **kwargs: Any) -> Any:
            if _enabled and not _reported and not _worker_mode:
                _gather_ray_workers()
            return shutdown(*args, **kwargs)
        return gather_and_shutdown

    _patch(mod, "init", make_init)
    _patch(mod, "shutdown", make_shutdown)
    _reexport(mod, "ray")


def _gather_ray_workers() -> None:
    """Driver: ask the job's workers for their reports now (once; bounded, never raises)."""
    rr = sys.modules.get("runtime_guard._ray_exit_report")
    if rr is None or rr._collector is None:
        return
    try:
        items, workers = rr.worker_items(rr.gather())
        _ray_workers_items.extend(items)
        _ray_workers.extend(workers)
    except Exception:
        pass


_TARGETS = {
    "threading": _patch_threading,
    "subprocess": _patch_subprocess,
    "multiprocessing.process": _patch_mp_process,
    "concurrent.futures.thread": _patch_cf_thread,
    "concurrent.futures.process": _patch_cf_process,
    "asyncio.base_events": _patch_asyncio,
    "torch.distributed.distributed_c10d": _patch_c10d,
    "ray.actor": _patch_ray_actor,
    "ray.remote_function": _patch_ray_remote_function,
    "ray._private.worker": _patch_ray_worker,
    "uvloop": _patch_uvloop,
}
_pending: Dict[str, Any] = {}


class _PatchOnImport:
    """A ``sys.meta_path`` finder that answers only for the modules above: it lets the other
    finders find the module, and patches it right after it has run (before its importer sees it)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        patch = _pending.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            find = getattr(finder, "find_spec", None)
            if find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or isinstance(loader, type) or not hasattr(loader, "exec_module"):
            return spec  # builtin/frozen: patched at exit of install() if ever seen; never here
        exec_module = loader.exec_module

        def exec_and_patch(module: Any) -> None:
            exec_module(module)
            try:
                del loader.exec_module  # the loader object is the module's __loader__: leave it as it was
            except AttributeError:
                pass
            _pending.pop(name, None)
            try:
                patch(module)
            except Exception:
                pass

        try:
            loader.exec_module = exec_and_patch
        except (AttributeError, TypeError):
            pass
        return spec


_finder = _PatchOnImport()


def _patch_loaded_and_hook() -> None:
    for name, patch in _TARGETS.items():
        module = sys.modules.get(name)
        if module is not None:
            try:
                patch(module)
            except Exception:
                pass
        else:
            _pending[name] = patch
    if _pending and _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)


# ---------------------------------------------------------------------------------------------
# SIGTERM (only over the default action) and fork


#: Who reports a SIGTERM: the handler, or the helper thread that heard it at delivery when the
#: main thread is blocked in C (``signals.HandlerOrHelper``); made at install.
_sigterm_race: Any = None


#: Marks the handler's run that is reporting (``signals.NestedRun``; made at install). A SIGTERM that arrives
#: while it reports runs the handler again, nested, at the next bytecode: that run died of SIGTERM
#: at once (the report was marked made), so the report was lost (measured: a second SIGTERM
#: 0.5 ms after the first lost it in 1 of 10 processes; a burst of 20, in 6 of 10). The nested run
#: now returns and the first one dies of SIGTERM when it has reported; after
#: ``_NESTED_SIGTERM_BOUND`` s a SIGTERM acts again (a report that hangs must not keep us alive).
_sigterm_nested: Any = None
_NESTED_SIGTERM_BOUND = 10.0


def _on_sigterm(signum: int, frame: Any) -> None:
    if _sigterm_nested is not None and _sigterm_nested.nested():
        return  # nested in the run that is reporting: it dies of SIGTERM when done
    from .signals import die_of

    if _sigterm_race is not None:
        _sigterm_race.handler_acts(bound=10.0)  # returns unless the helper thread reports
    _report_sigterm()
    die_of(signum)  # dies of SIGTERM as it would have: status -15, no atexit


def _report_sigterm(**detail: Any) -> None:
    global _ray_items
    try:
        if _ray_items is None:
            _ray_items = []  # no call into Ray from a signal handler: it may be what was interrupted
        report({"kind": "SIGTERM", **detail})
    except BaseException:
        pass


def _on_sigterm_in_c() -> None:
    """Helper thread (``signals.HandlerOrHelper``): the main thread is blocked in a C call and has
    not started ``_on_sigterm``: report and die of SIGTERM from here, as the default action would
    have ended the process at once."""
    _report_sigterm(detail="the main thread was blocked in a C call")
    signals = sys.modules["runtime_guard.signals"]
    signals.die_of(signals._signal.SIGTERM)


def _install_sigterm() -> None:
    """Only over the default action, through ``runtime_guard.signals`` (the one owner of handlers
    that stand in for ``SIG_DFL``: ``signal.getsignal`` answers ``SIG_DFL`` for it, a handler
    installed later replaces it, a forked child gets the default back)."""
    global _sigterm_handler_installed, _sigterm_race, _sigterm_nested
    if _sigterm_handler_installed:
        return
    from . import signals

    if _sigterm_nested is None:
        _sigterm_nested = signals.NestedRun(_NESTED_SIGTERM_BOUND)

    sigterm = signals._signal.SIGTERM
    if not signals.is_default(sigterm):
        return  # ignored, a Python handler, or one from outside Python: its owner decides
    try:
        signals.install_owned(sigterm, _on_sigterm, stands_for_default=True)
    except ValueError:  # not the main thread
        return
    _sigterm_handler_installed = True
    _sigterm_race = signals.HandlerOrHelper(sigterm)
    _sigterm_race.hear(_on_sigterm, _on_sigterm_in_c)  # after install_owned: faulthandler chains to it


def _uninstall_sigterm() -> None:
    global _sigterm_handler_installed
    if not _sigterm_handler_installed:
        return
    _sigterm_handler_installed = False
    signals = sys.modules.get("runtime_guard.signals")
    if signals is not None:
        signals.forget_delivery(signals._signal.SIGTERM)
        signals.uninstall_owned(signals._signal.SIGTERM, _on_sigterm)


def _patch_signal(mod: Any) -> None:
    """``signal`` imported after install: it answers ``SIG_DFL`` for our stand-in, and -1 for our
    wakeup fd (``signals._hide_slot``)."""
    signals = sys.modules.get("runtime_guard.signals")
    if signals is not None and signals._hidden:
        signals.hide(mod)
    if signals is not None and signals._wake:
        signals._hide_slot(mod)


_TARGETS["signal"] = _patch_signal


def _after_fork_in_child() -> None:
    global _enabled
    if not _enabled:
        return
    _enabled = False  # the child runs none of the program's main: no report, no recording
    _child_sites.clear()
    if _sigterm_nested is not None:
        _sigterm_nested.reset()
    # runtime_guard.signals' own fork hook gives SIGTERM's default back and drops the C hook
    global _sigterm_handler_installed
    _sigterm_handler_installed = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


# ---------------------------------------------------------------------------------------------
# Install


def is_installed() -> bool:
    return _enabled


def install(json_file: Optional[str] = None, *, sigterm: bool = True, at_exit: bool = True,
            worker: bool = False) -> bool:
    """Record creation sites from now on and report what is left when the process ends.

    ``json_file``: also write the report there as JSON (written even when nothing is left).
    ``sigterm``: observe a SIGTERM ending (only where SIGTERM has its default action).
    ``at_exit``: report from ``atexit`` (the pytest plugin reports at the end of the session
    instead). ``worker``: a Ray worker answering its driver's report (``setup_worker``): only
    what user code made is reported. Returns True once installed; never raises."""
    global _enabled, _installed, _json_file, _reported, _worker_mode, _at_exit_wanted
    try:
        _worker_mode = _worker_mode or worker
        _json_file = json_file
        if json_file:
            import json  # noqa: F401  (now, not inside a signal handler at exit)
        if _enabled:
            return True
        if not _installed and at_exit:
            _at_exit_wanted = True  # threading's exit hook: registered by _patch_threading
        _patch_loaded_and_hook()
        _enabled = True
        _reported = False
        if not _installed:
            _installed = True
            if at_exit:
                atexit.register(_at_exit)
        if sigterm:
            _install_sigterm()
        return True
    except Exception:
        return False


def uninstall() -> None:
    """Undo every patch and the SIGTERM handler; no report at exit."""
    global _enabled
    _enabled = False
    if _finder in sys.meta_path:
        try:
            sys.meta_path.remove(_finder)
        except ValueError:
            pass
    _pending.clear()
    while _patched:
        owner, name, original = _patched.pop()
        try:
            if original is _INHERITED:
                delattr(owner, name)
                continue
            setattr(owner, name, original)
        except (AttributeError, TypeError):
            pass
    _uninstall_sigterm()


def note_ending(exc: Optional[BaseException], detail: Optional[str] = None) -> None:
    """The launcher (or the pytest plugin) says how the program ended (``None``: it returned)."""
    global _ending
    _ending = _ending_of(exc)
    if detail:
        _ending["detail"] = detail


def _ending_of(exc: Optional[BaseException]) -> Dict[str, Any]:
    if exc is None:
        return {"kind": "return"}
    if isinstance(exc, SystemExit):
        return {"kind": "exit", "detail": f"sys.exit({exc.code!r})"}
    if isinstance(exc, KeyboardInterrupt):
        return {"kind": "SIGINT", "detail": "KeyboardInterrupt"}
    return {"kind": "exception", "detail": f"{type(exc).__name__}: {exc}"}


def _at_exit() -> None:
    if not _enabled or _reported:
        return
    ending = _ending
    if ending is None:
        last = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
        ending = _ending_of(last) if last is not None else {"kind": "return"}
        if last is None:
            ending["detail"] = "return or sys.exit"
    try:
        report(ending)
    except Exception:
        pass


def _before_threads_joined() -> None:
    global _ray_items
    if _enabled and not _reported:
        try:
            _ray_items = _ray_work()
        except Exception:
            _ray_items = None
        if not _worker_mode:
            _gather_ray_workers()


# ---------------------------------------------------------------------------------------------
# Collecting what is left


RULES = {
    "task": (["SHD102", "SHD106"], "task-not-retained / unobserved-task-exception: a task nobody awaits or cancels"),
    "main-task": (["SHD402"], "asyncio-run-without-sigterm: SIGTERM ends asyncio.run without cancelling its tasks"),
    "loop-thread": (["SHD407"], "event-loop-in-daemon-thread"),
    "thread": ([], "no static rule yet for a plain thread left running"),
    "child": (["SHD602"], "child-process-never-stopped"),
    "executor": (["SHD503"], "executor-without-shutdown"),
    "process-group": (["SHD502"], "process-group-without-teardown"),
    "ray": (["SHD403", "SHD501"], "ray-get-orphans-on-interrupt / cancel-without-cleanup-wait"),
}


def _item(kind: str, rule_key: str, what: str, site: Optional[Site], verb: str, **detail: Any) -> Dict[str, Any]:
    rules, rule_text = RULES[rule_key]
    return {
        "kind": kind, "what": what, "verb": verb,
        "file": site[0] if site else None, "line": site[1] if site else None,
        "owner": site[2] if site else "unknown",
        "rules": rules, "rule_text": rule_text, "detail": detail,
    }


def _snapshot(weakset: Any) -> List[Any]:
    for _ in range(100):
        try:
            return list(weakset)
        except RuntimeError:  # changed size: another thread made or ended one
            continue
    return []


def _threads_running_loops() -> Dict[int, bool]:
    out: Dict[int, bool] = {}
    for ident, frame in sys._current_frames().items():
        n = 0
        while frame is not None and n < 256:
            code = frame.f_code
            if code.co_name in ("run_forever", "_run_once") and "asyncio" in code.co_filename:
                out[ident] = True
                break
            frame = frame.f_back
            n += 1
    return out


def _tasks() -> List[Dict[str, Any]]:
    tasks_mod = sys.modules.get("asyncio.tasks")
    if tasks_mod is None:
        return []
    found: List[Any] = []
    for name in ("_all_tasks", "_scheduled_tasks"):
        registry = getattr(tasks_mod, name, None)
        if registry is not None:
            found.extend(_snapshot(registry))
    eager = getattr(tasks_mod, "_eager_tasks", None)
    if eager is not None:
        found.extend(_snapshot(eager))
    names = {t.ident: t.name for t in list(_threads_by_ident().values())}
    items = []
    seen = set()
    for task in found:
        if id(task) in seen:
            continue
        seen.add(id(task))
        try:
            if task.done():
                continue
            site = getattr(task, "_runtime_guard_site", None)
            if site is not None and site[2] == "guard":
                continue
            loop = task.get_loop()
            coro = task.get_coro()
            code = getattr(coro, "cr_code", None) or getattr(coro, "gi_code", None)
            frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
            state = "closed" if loop.is_closed() else ("running" if loop.is_running() else "not running")
            thread_id = getattr(loop, "_thread_id", None)
            detail: Dict[str, Any] = {
                "name": task.get_name(),
                "coroutine": getattr(code, "co_qualname", None) or getattr(code, "co_name", repr(coro)),
                "waiting_at": f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else None,
                "loop": state,
                "thread": names.get(thread_id) if thread_id else None,
            }
            if site is None and code is not None:
                detail["defined_at"] = f"{code.co_filename}:{code.co_firstlineno}"
            main = getattr(task, "_runtime_guard_main", False)
            items.append(_item("task", "main-task" if main else "task", f"task {task.get_name()!r} "
                               f"({detail['coroutine']}) pending, loop {state}", site, "created", **detail))
        except Exception:
            continue
    return items


def _threads_by_ident() -> Dict[int, Any]:
    threading = sys.modules.get("threading")
    if threading is None:
        return {}
    active = getattr(threading, "_active", None)
    if not isinstance(active, dict):
        return {}
    for _ in range(100):
        try:
            return dict(active)  # no lock: the report may run in a signal handler
        except RuntimeError:
            continue
    return {}


def _threads() -> List[Dict[str, Any]]:
    threading = sys.modules.get("threading")
    if threading is None:
        return []
    main = threading.main_thread()
    current = threading.current_thread()
    dummy = getattr(threading, "_DummyThread", ())
    loops = _threads_running_loops()
    pooled = set()  # an executor's workers: reported with their executor
    for ex in (_snapshot(_executors) if _executors is not None else ()):
        try:
            pooled.update(id(t) for t in (ex.__dict__.get("_threads") or ()))
        except Exception:
            continue
    items = []
    for ident, thread in _threads_by_ident().items():
        try:
            if id(thread) in pooled or thread is main or thread is current or isinstance(thread, dummy) or not thread.is_alive():
                continue
            site = thread.__dict__.get("_runtime_guard_site")
            if site is not None and site[2] == "guard":
                continue
            runs_loop = loops.get(ident, False)
            kind = "daemon thread" if thread.daemon else "thread"
            what = f"{kind} {thread.name!r} alive" + (" running an event loop" if runs_loop else "")
            items.append(_item("thread", "loop-thread" if runs_loop else "thread", what, site, "started",
                               name=thread.name, daemon=thread.daemon, runs_event_loop=runs_loop))
        except Exception:
            continue
    return items


_INFRA = ("multiprocessing.resource_tracker", "multiprocessing.forkserver")


def _live_children() -> List[int]:
    pids: List[int] = []
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        tasks = []
    ok = False
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.extend(int(p) for p in f.read().split())
            ok = True
        except (OSError, ValueError):
            continue
    if ok:
        return sorted(set(pids))
    # no /proc children lists: the children we saw being made and have not been reaped
    alive = []
    for pid in list(_child_sites):
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                alive.append(pid)
        except (ChildProcessError, OSError, AttributeError):
            continue
    return alive


def _proc_info(pid: int) -> "tuple[Optional[str], Optional[str]]":
    state = None
    cmdline = None
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        pass
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = " ".join(a.decode(errors="replace") for a in f.read().split(b"\0") if a)
    except OSError:
        pass
    return state, cmdline


def _children() -> List[Dict[str, Any]]:
    items = []
    for pid in _live_children():
        state, cmdline = _proc_info(pid)
        if state in ("Z", "X"):
            continue  # ended, not yet reaped: nothing left running
        site, args = _child_sites.get(pid, (None, None))
        if not cmdline and args is not None:
            # /proc gives no command line (unreadable), or an empty one: a process whose memory is
            # being torn down as it exits, or one started with an empty argv (``exec -a ''``). The
            # spawn's arguments still say what it is
            cmdline = args if isinstance(args, str) else " ".join(str(a) for a in args)
        if site is None and cmdline and any(s in cmdline for s in _INFRA):
            continue  # multiprocessing's helper: it ends when this process does
        if site is not None and site[2] == "guard":
            continue
        items.append(_item("child", "child", f"child process {pid} alive: {cmdline or '?'}", site, "spawned",
                           pid=pid, cmdline=cmdline))
    return items


def _executors_left() -> List[Dict[str, Any]]:
    items = []
    for ex in (_snapshot(_executors) if _executors is not None else ()):
        try:
            d = ex.__dict__
            # shutdown() called (also by `with`); the executor's own flags are no use here: at
            # interpreter exit concurrent.futures stops the workers and they set `_shutdown`
            if d.get("_runtime_guard_shut"):
                continue
            site = d.get("_runtime_guard_site")
            if site is not None and site[2] == "guard":
                continue
            threads = [t for t in (d.get("_threads") or ()) if t.is_alive()]
            procs = list((d.get("_processes") or {}).values())
            items.append(_item("executor", "executor", f"{type(ex).__name__} never shut down "
                               f"({len(threads) + len(procs)} workers alive)", site, "created",
                               type=type(ex).__name__, workers_alive=len(threads) + len(procs)))
        except Exception:
            continue
    return items


def _process_groups() -> List[Dict[str, Any]]:
    dist = sys.modules.get("torch.distributed")
    c10d = sys.modules.get("torch.distributed.distributed_c10d")
    if dist is None or c10d is None:
        return []
    items = []
    try:
        if not (dist.is_available() and dist.is_initialized()):
            return []
        default = c10d._get_default_group() if hasattr(c10d, "_get_default_group") else None
        backend = dist.get_backend()
        items.append(_item("process-group", "process-group",
                           f"torch.distributed default process group ({backend}, rank {dist.get_rank()} of "
                           f"{dist.get_world_size()}) never destroyed", _default_pg_site, "initialised",
                           backend=str(backend), rank=dist.get_rank(), world_size=dist.get_world_size()))
        world = getattr(c10d, "_world", None)
        for pg in list(getattr(world, "pg_map", {}) or {}):
            if pg is default:
                continue
            site = _pg_sites.get(id(pg))
            items.append(_item("process-group", "process-group", "torch.distributed process group never destroyed",
                               site, "created"))
    except Exception:
        pass
    return items


def _ray_work() -> Optional[List[Dict[str, Any]]]:
    """Best effort, only if ray is imported and connected: object refs this driver owns whose
    tasks have not finished (Ray's own reference table; no call to the cluster but ``ray.wait``
    with a zero timeout)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return None
    try:
        if not ray.is_initialized():
            return None
        worker = ray._private.worker.global_worker
        counts = worker.core_worker.get_all_reference_counts()
        refs = []
        for oid in list(counts)[:10000]:
            try:
                text = oid.decode() if isinstance(oid, bytes) else str(oid)  # the id in hex
                refs.append(ray.ObjectRef(bytes.fromhex(text)))
            except Exception:
                continue
        if not refs:
            return []
        _, pending = ray.wait(refs, num_returns=len(refs), timeout=0, fetch_local=False)
        items = []
        for ref in pending:
            site = _ray_sites.get(ref.binary())
            if site is not None and site[2] == "guard":
                continue  # the exit report's own calls (on Ray: the workers' collector)
            call_site = None
            try:
                call_site = ref.call_site() if hasattr(ref, "call_site") else None
            except Exception:
                call_site = None
            items.append(_item("ray", "ray", f"Ray object {ref.hex()[:16]}... still pending", site, "submitted",
                               object_id=ref.hex(), call_site=call_site or None))
        return items
    except Exception:
        return None


def collect() -> List[Dict[str, Any]]:
    """Everything left right now (the report's items)."""
    items: List[Dict[str, Any]] = []
    for part in (_tasks, _threads, _children, _executors_left, _process_groups):
        try:
            items.extend(part())
        except Exception:
            continue
    ray_items = _ray_items if _ray_items is not None else (_ray_work() or [])
    items.extend(ray_items or [])
    if _worker_mode:  # a Ray worker: Ray's own threads and tasks are not the program's leftovers
        items = [i for i in items if i["file"] is not None and _kind(i["file"]) == "user"]
    items.extend(_ray_workers_items)
    return items


# ---------------------------------------------------------------------------------------------
# Report


def _where(item: Dict[str, Any]) -> str:
    if item["file"] is None:
        return f"{item['verb']} at: unknown (before the report was installed, or not through a recorded call)"
    where = f"{item['verb']} at {item['file']}:{item['line']}"
    if item["owner"] == "lib":
        where += " (inside a library)"
    return where


def format_report(ending: Dict[str, Any], items: List[Dict[str, Any]]) -> str:
    how = ending.get("kind", "?") + (f" ({ending['detail']})" if ending.get("detail") else "")
    lines = [f"runtime_guard exit report: the program ended by {how} and left {len(items)} "
             f"thing{'s' if len(items) != 1 else ''} running:"]
    for item in items:
        rules = "/".join(item["rules"]) or "no rule"
        lines.append(f"  - {item['what']}")
        lines.append(f"      {_where(item)}  [{rules}: {item['rule_text']}]")
        d = item["detail"]
        if d.get("waiting_at"):
            lines.append(f"      waiting at {d['waiting_at']}" + (f" in thread {d['thread']!r}" if d.get("thread") else ""))
        if d.get("defined_at"):
            lines.append(f"      coroutine defined at {d['defined_at']}")
        if item.get("process"):
            lines.append(f"      in {_process_text(item['process'])}")
    silent = [w for w in _ray_workers if not w.get("answered")]
    if silent:
        lines.append(f"  ({len(silent)} Ray worker{'s' if len(silent) != 1 else ''} did not answer: "
                     + "; ".join(_process_text(w) for w in silent[:10]) + ")")
    return "\n".join(lines) + "\n"


def _process_text(p: Dict[str, Any]) -> str:
    node = p.get("node_ip") or "?"
    if p.get("node_id"):
        node += f" (node {str(p['node_id'])[:12]})"
    where = f"Ray worker pid {p.get('pid', '?')} on {node}"
    if p.get("actor_id"):
        actor = p.get("actor_class") or "actor"
        if p.get("actor_name"):
            actor += f" {p['actor_name']!r}"
        where += f", actor {actor} ({str(p['actor_id'])[:12]})"
    return where


def report(ending: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """Collect now, print (when something is left) and write the JSON file; once per process."""
    global _reported
    if _reported or not _enabled:
        return []
    _reported = True
    ending = ending or {"kind": "return"}
    items = collect()
    if items:
        text = format_report(ending, items)
        try:
            data = text.encode("utf-8", "replace")
            while data:
                n = os.write(2, data)
                data = data[n:]
        except OSError:
            pass
    if _json_file:
        try:
            import json

            with open(_json_file, "w") as f:
                data_out: Dict[str, Any] = {"version": 1, "pid": os.getpid(), "ending": ending, "items": items}
                if _ray_workers:
                    data_out["ray_workers"] = _ray_workers
                json.dump(data_out, f, indent=1, default=str)
        except Exception:
            pass
    return items


def install_from_env() -> bool:
    """``RUNTIME_GUARD_EXIT_REPORT=1``: install, JSON to ``$RUNTIME_GUARD_EXIT_REPORT_FILE`` if set."""
    if os.environ.get("RUNTIME_GUARD_EXIT_REPORT", "").strip().lower() not in _TRUE:
        return False
    return install(os.environ.get("RUNTIME_GUARD_EXIT_REPORT_FILE") or None)
