"""Event-loop stall watchdog.

Mechanism: every watched loop runs a tiny heartbeat callback every ``interval`` seconds
(``threshold / 10``). One daemon monitor thread for all loops sleeps until the earliest moment a
heartbeat could be ``threshold`` late; if the beat has not run by then, the loop is stalled: the
monitor samples the loop thread's stack with ``sys._current_frames()``, reports once, keeps
sampling while the stall lasts, and records the final duration when the heartbeat resumes.

A Python monitor cannot run while a C call holds the GIL, so a second layer arms
``faulthandler.dump_traceback_later`` (a C watchdog thread, process-global: only one timer) with a
larger ``hard_threshold``, re-armed both by the heartbeat of one "owner" loop and by every pass of
the monitor thread; if neither has run for ``1.25 * hard_threshold`` (at least 1 s), no thread could run Python
(a C call holds the GIL) and CPython dumps every thread's stack to stderr (or
``$RUNTIME_GUARD_HARD_FILE``) without needing the GIL. The monitor's re-arm is what keeps the dump
from firing during a stall in Python code: the dump walks every thread's frames without the GIL,
and with a thread running Python meanwhile it crashed the process (SIGSEGV; measured: 1 of 3
processes with 2 s stalls in Python, hard_threshold 1 s and 3 busy threads, every stall dumped;
6 of 7 with 0.15 s stalls and hard_threshold 0.05; tests/runtime_guard/test_watchdog_hard_layer.py).
Stalls that the monitor could not sample are still reported, without a stack, from the heartbeat's
own lateness once the GIL is released.

Nothing here raises into the program: every hook and the monitor swallow their own errors.

Signals: no handler installed, no mask changed (faulthandler's timer writes stacks; it is armed
with ``exit=False``). Threads: one daemon monitor thread (``runtime_guard-watchdog``), which calls
``on_stall`` with the mask of the thread that first watched a loop, and faulthandler's C timer
thread. Children: none. Process-wide patches: the loop classes' ``run_forever`` (``install``).
"""
from __future__ import annotations

import asyncio
import atexit
import faulthandler
import itertools
import json
import linecache
import logging
import os
import sys
import sysconfig
import threading
import time
import weakref
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, Callable, Dict, List, Optional, Union

from ._rules_hints import match_hint
from ._threads import daemon_thread

__all__ = [
    "StallReport", "LoopWatch", "watch_loop", "install", "uninstall", "is_installed", "summary",
    "check_now", "DEFAULT_THRESHOLD",
]

log = logging.getLogger("runtime_guard.watchdog")

DEFAULT_THRESHOLD = 0.1
HEARTBEATS_PER_THRESHOLD = 10
_monotonic = time.monotonic
_get_ident = threading.get_ident


class _Auto:
    def __repr__(self) -> str:
        return "AUTO"


AUTO: Any = _Auto()
OnStall = Callable[["StallReport"], Any]

# ---------------------------------------------------------------------------------------------
# Frame classification


def _dir(path: Optional[str]) -> Optional[str]:
    return os.path.normcase(os.path.abspath(path)) + os.sep if path else None


_PKG_DIR = _dir(os.path.dirname(__file__))
_INTERNAL_DIRS = tuple(d for d in (_PKG_DIR, _dir(os.path.dirname(asyncio.__file__))) if d)
_INTERNAL_MODULES = {"threading", "selectors", "asyncio", "uvloop", "concurrent.futures", "contextvars"}
_LIB_DIRS = tuple(sorted({d for d in (_dir(sysconfig.get_paths().get(k)) for k in
                                       ("stdlib", "platstdlib", "purelib", "platlib")) if d}, key=len, reverse=True))


@lru_cache(maxsize=4096)
def _kind(filename: str) -> str:
    """'internal' (asyncio, runtime_guard, loop plumbing), 'lib' (stdlib/site-packages) or 'user'."""
    if filename.startswith("<"):
        return "lib" if filename.startswith("<frozen") else "user"
    path = os.path.normcase(os.path.abspath(filename))
    if path.startswith(_INTERNAL_DIRS) or os.sep + "uvloop" + os.sep in path:
        return "internal"
    base = os.path.basename(path)
    if base in ("threading.py", "selectors.py", "runners.py") and path.startswith(_LIB_DIRS):
        return "internal"
    if path.startswith(_LIB_DIRS):
        return "lib"
    return "user"


# ---------------------------------------------------------------------------------------------
# Reports


@dataclass
class StallReport:
    """One loop stall. ``duration``: from the loop's last heartbeat before the stall to the latest
    sample while ``ongoing``, then (``measured_end``) to its first heartbeat after the stall or its
    stop: at most one heartbeat interval (threshold/10) longer than the blocking call itself."""

    loop: str
    thread_name: str
    thread_id: int
    threshold: float
    started_at: float  # wall-clock estimate (time.time())
    duration: float
    ongoing: bool = True
    filename: Optional[str] = None
    lineno: Optional[int] = None
    function: Optional[str] = None
    source_line: str = ""
    running: str = ""
    stack: List[str] = field(default_factory=list)  # outermost first, "file:line in func"
    rule: Optional[str] = None
    fix: Optional[str] = None
    hint: Optional[str] = None
    samples: int = 0
    sampled: bool = True  # False: the monitor could not run during the stall (C code held the GIL)
    stall_id: int = 0  # per process, in detection order: pairs a JSON "stall" record with its "stall_end"
    measured_end: bool = False  # True: duration runs to the loop's first beat after the stall (or its stop)

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno}" if self.filename else "<unknown>"

    def format(self) -> str:
        state = "ongoing" if self.ongoing else "ended"
        lines = [
            f"event loop blocked for {self.duration:.3f}s ({state}, threshold {self.threshold:.3f}s) "
            f"in thread {self.thread_name!r}",
            f"  blocking frame: {self.location} in {self.function}" + (f": {self.source_line}" if self.source_line else ""),
        ]
        if self.running:
            lines.append(f"  running: {self.running}")
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        if not self.sampled:
            lines.append("  stack: not sampled (the loop thread held the GIL; see faulthandler output if enabled)")
        elif self.stack:
            lines.append("  stack (most recent call last):")
            lines.extend("    " + s for s in self.stack)
        return "\n".join(lines)

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["location"] = self.location
        return d


# ---------------------------------------------------------------------------------------------
# Per-loop state


class _Watched:
    def __init__(self, loop: asyncio.AbstractEventLoop, threshold: Optional[float], interval: float,
                 sinks: List[OnStall], hard_threshold: Optional[float]) -> None:
        try:
            self.loop_ref: Callable[[], Optional[asyncio.AbstractEventLoop]] = weakref.ref(loop, _forget_ref)
        except TypeError:  # loop type without weakref support: hold it, forget it once closed
            self.loop_ref = lambda _l=loop: _l  # type: ignore[misc]
        self.key = id(loop)
        self.loop_desc = f"{type(loop).__module__}.{type(loop).__qualname__} at {id(loop):#x}"
        self.threshold = threshold  # None: heartbeat only (keeps the loop ticking), no reports
        self.interval = interval
        self.sinks = sinks
        self.hard_threshold = hard_threshold
        self.thread_id: Optional[int] = None
        self.due: Optional[float] = None  # monotonic time the next heartbeat is due
        self.state = (0, 0.0)  # (beat sequence, lateness of that beat): one attribute so reads are atomic
        self.big = (0, 0.0, 0.0)  # (seq, lateness, monotonic time) of the last beat >= `threshold` late
        self.stopped_at = 0.0  # monotonic time the loop last left run_forever (hooked) or was unwatched
        self.late_mark = threshold if threshold is not None else float("inf")
        self.consumed_big = 0
        self.handle: Any = None
        self.active = True
        self.stall: Optional[StallReport] = None
        self.stall_seq = 0
        self.stall_t0 = 0.0
        self.stall_locations: Dict[str, int] = {}
        self.stop_grace = 0  # monitor passes spent waiting for the stop time of a loop seen stopped

    def beat(self) -> None:
        # Runs on the loop every `interval`: keep it tiny. Catches Exception only, so a
        # KeyboardInterrupt from _thread.interrupt_main() (ray.cancel) still reaches the program.
        try:
            if not self.active:
                return
            now = _monotonic()
            due = self.due
            seq = self.state[0] + 1
            late = (now - due) if due is not None else 0.0
            if late >= self.late_mark:
                self.big = (seq, late, now)  # written before `state` so the monitor never misses it
            self.state = (seq, late)
            self.thread_id = _get_ident()
            self.due = now + self.interval
            loop = self.loop_ref()
            if loop is not None:
                self.handle = loop.call_later(self.interval, self.beat)
            if self.hard_threshold is not None and now >= _hard.next_arm:
                _hard.rearm(self, now)
        except Exception:
            pass

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Schedule the first beat; call from the loop thread or before the loop runs."""
        self.due = _monotonic() + self.interval
        if self.handle is None:
            self.handle = loop.call_later(self.interval, self.beat)

    def cancel(self) -> None:
        self.stopped_at = _monotonic()
        self.active = False
        loop = self.loop_ref()
        handle = self.handle
        if loop is not None and handle is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(handle.cancel)
            except Exception:
                pass
        _hard.release(self)


# ---------------------------------------------------------------------------------------------
# faulthandler layer (process-global timer: one owner loop at a time)


#: the faulthandler timer's shortest timeout (s), whatever ``hard_threshold`` asks
HARD_FLOOR = 1.0


class _Hard:
    def __init__(self) -> None:
        self.owner: Optional[_Watched] = None
        self.next_arm = 0.0
        self.file: Any = None
        self.forking = False

    def _target(self) -> Any:
        path = os.environ.get("RUNTIME_GUARD_HARD_FILE")
        if path and self.file is None:
            self.file = open(path, "a")  # kept open: faulthandler writes to the fd later
        return self.file or sys.stderr or sys.__stderr__

    def rearm(self, w: _Watched, now: float) -> None:
        if self.forking:
            return  # between _before_fork and the fork: the timer must not be armed at the fork
        owner = self.owner
        if owner is not w:
            if owner is not None and owner.active and owner.due is not None:
                return  # another running loop owns the timer
            self.owner = w
        # Fires when neither the heartbeat nor the monitor re-armed it for 0.8-1x `timeout`. At
        # least 1 s: with other threads running Python, the monitor can wait for the GIL longer
        # than a short timeout (hard_threshold 0.05: dumps during Python stalls, and crashes).
        timeout = max((w.hard_threshold or 0.0) * 1.25, HARD_FLOOR)
        self.next_arm = now + timeout / 5
        try:
            faulthandler.dump_traceback_later(timeout, repeat=False, file=self._target(), exit=False)
        except Exception:
            w.hard_threshold = None  # no usable fd (stderr replaced by a StringIO...): stop trying

    def release(self, w: _Watched) -> None:
        if self.owner is w:
            self.owner = None
            self.next_arm = 0.0
            try:
                faulthandler.cancel_dump_traceback_later()
            except Exception:
                pass


_hard = _Hard()

# ---------------------------------------------------------------------------------------------
# Monitor thread


class _Monitor:
    MAX_SLEEP = 0.5

    def __init__(self) -> None:
        self.watched: Dict[int, _Watched] = {}
        self.lock = threading.RLock()
        self.wake = threading.Event()
        self.stopping = False
        self.ending: List[_Watched] = []  # unwatched while stalled: closed on the next pass
        self.thread: Optional[threading.Thread] = None

    def ensure_thread(self) -> None:
        # Under the lock: loops in several threads start watching at once, and each must not
        # see "no monitor yet" and start its own.
        with self.lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = daemon_thread(self.run, "runtime_guard-watchdog")
                self.thread.start()

    def add(self, w: _Watched) -> None:
        with self.lock:
            self.watched[w.key] = w
            if w.threshold is not None:
                self.ensure_thread()
        if w.threshold is not None:
            self.wake.set()

    def get(self, loop: Any) -> Optional[_Watched]:
        w = self.watched.get(id(loop))
        if w is not None and w.loop_ref() is loop:
            return w
        return None

    def forget(self, w: _Watched) -> None:
        with self.lock:
            if self.watched.get(w.key) is w:
                del self.watched[w.key]
            if w.stall is not None and w not in self.ending:
                self.ending.append(w)  # the monitor closes it (sinks run there, not in this thread)
                self.wake.set()
        w.active = False
        _hard.release(w)

    def run(self) -> None:
        while not self.stopping:
            try:
                delay = self.check()
            except Exception:
                delay = self.MAX_SLEEP
            self.wake.wait(max(delay, 0.001))
            self.wake.clear()

    def check(self) -> float:
        with self.lock:
            now = _monotonic()
            next_in = self.MAX_SLEEP
            try:
                self._end_forgotten()
            except Exception:
                pass
            for w in list(self.watched.values()):
                try:
                    next_in = min(next_in, self._check_one(w, now))
                except Exception:
                    pass
            return min(next_in, self._rearm_hard(now))

    @staticmethod
    def _rearm_hard(now: float) -> float:
        """Push the faulthandler timer back from this thread: it runs Python, so no C call holds
        the GIL, and a stall of the owner loop in Python code (its heartbeat does not run) must not
        reach the dump, which reads the running thread's frames without the GIL. Returns how soon
        the monitor must pass again to keep doing so."""
        owner = _hard.owner
        if owner is None or not owner.active or owner.hard_threshold is None:
            return _Monitor.MAX_SLEEP
        if now >= _hard.next_arm:
            _hard.rearm(owner, now)
        return max(_hard.next_arm - now, 0.001)

    def _check_one(self, w: _Watched, now: float) -> float:
        if w.threshold is None or not w.active:
            return self.MAX_SLEEP
        loop = w.loop_ref()
        if loop is None or loop.is_closed():
            if w.stall is not None:
                w.consumed_big = w.big[0]
                self._end_stall(w, self._stop_time(w))
            self.forget(w)
            return self.MAX_SLEEP
        seq = w.state[0]
        big_seq, big_late, _ = w.big
        running = loop.is_running()
        if w.stall is not None:
            if big_seq > w.stall_seq:
                # The first beat after the stall (w.big) ran when the loop was back.
                w.consumed_big = big_seq
                self._end_stall(w, self._stop_time(w))
                return 0.0
            if seq != w.stall_seq or not running:
                # The loop left run_forever (or was restarted, which resets the beat's schedule)
                # before a late beat could measure the end: the stop time does, when the
                # run_forever hook or LoopWatch.stop has stamped it. The hook stamps it just after
                # is_running() turns False, so give it a few ms before settling for the last sample.
                end = self._stop_time(w)
                if end is None and not running and w.stop_grace < 3:
                    w.stop_grace += 1
                    return 0.002
                w.consumed_big = big_seq
                self._end_stall(w, end)
                return 0.0
            self._sample(w, now, update=True)
            return min(w.threshold / 2, self.MAX_SLEEP)
        if big_seq > w.consumed_big:
            # A stall the monitor did not see while it lasted (it could not get the GIL).
            w.consumed_big = big_seq
            self._missed_stall(w, big_late)
        if not running:
            w.due = None
            _hard.release(w)
            return self.MAX_SLEEP
        due = w.due
        if due is None:
            return self.MAX_SLEEP
        overdue = now - due
        if overdue >= w.threshold:
            w.stall_seq = seq
            # The stall began after the last beat, which ran at due - interval: the duration is the
            # gap between that beat and the first one after the stall (or the loop's stop), at
            # most one interval longer than the blocking call itself.
            w.stall_t0 = due - w.interval
            w.stall_locations = {}
            w.stop_grace = 0
            report = self._sample(w, now, update=False)
            if report is not None:
                report.stall_id = next(_stall_ids)
                w.stall = report
                _emit(w, report, "stall")
            return min(w.threshold / 2, self.MAX_SLEEP)
        return due + w.threshold - now

    def _sample(self, w: _Watched, now: float, update: bool) -> Optional[StallReport]:
        frame = sys._current_frames().get(w.thread_id or -1)
        duration = now - w.stall_t0
        if update:
            report = w.stall
            assert report is not None
            report.duration = duration
            report.samples += 1
            if frame is not None:
                loc = _blocking_location(frame)
                w.stall_locations[loc] = w.stall_locations.get(loc, 0) + 1
            return report
        report = _build_report(w, frame, duration)
        if frame is not None:
            w.stall_locations[report.location] = 1
        return report

    @staticmethod
    def _stop_time(w: _Watched) -> Optional[float]:
        """When w's stall ended, if known: its first beat after the stall, else its loop's stop."""
        big_seq, _, big_at = w.big
        if big_seq > w.stall_seq:
            return big_at
        stopped = w.stopped_at
        return stopped if stopped > w.stall_t0 else None

    def _end_stall(self, w: _Watched, end: Optional[float]) -> None:
        """Close w's stall. ``end``: monotonic time the loop was back (its first beat after the stall)
        or stopped; None when neither was seen, and the last sample's duration stays (a lower bound)."""
        report = w.stall
        w.stall = None
        if report is None:
            return
        if end is not None:
            report.duration = max(report.duration, end - w.stall_t0)
            report.measured_end = True
        report.ongoing = False
        _finish(w, report)

    def _end_forgotten(self) -> None:
        """Close the stalls of loops unwatched (LoopWatch.stop, collected) while they were stalled."""
        while self.ending:
            w = self.ending.pop()
            self._end_stall(w, self._stop_time(w))

    def _missed_stall(self, w: _Watched, late: float) -> None:
        report = StallReport(
            loop=w.loop_desc, thread_name=_thread_name(w.thread_id), thread_id=w.thread_id or 0,
            threshold=w.threshold or 0.0, started_at=time.time() - late - w.interval, duration=late + w.interval,
            ongoing=False, sampled=False, stall_id=next(_stall_ids), measured_end=True,
        )
        _emit(w, report, "stall")
        _finish(w, report)


def _thread_name(ident: Optional[int]) -> str:
    for t in threading.enumerate():
        if t.ident == ident:
            return t.name
    return f"thread {ident}"


def _blocking_location(frame: Any) -> str:
    frames = _frames(frame)
    idx = _user_index(frames)
    f = frames[idx]
    return f"{f.f_code.co_filename}:{f.f_lineno}"


def _frames(frame: Any) -> List[Any]:
    out = []
    while frame is not None and len(out) < 256:
        out.append(frame)
        frame = frame.f_back
    return out  # innermost first


def _launcher_or_guard(frame: Any) -> bool:
    """A frame of runtime_guard itself or of runpy (``python -m``, ``runpy.run_path``)."""
    filename = frame.f_code.co_filename
    if filename == "<frozen runpy>":
        return True
    try:
        if frame.f_globals.get("__name__") == "runpy":
            return True
    except Exception:
        pass
    return bool(_PKG_DIR) and os.path.normcase(os.path.abspath(filename)).startswith(_PKG_DIR)  # type: ignore[arg-type]


def _user_index(frames: List[Any]) -> int:
    kinds = [_kind(f.f_code.co_filename) for f in frames]
    for wanted in ("user", "lib"):
        for i, k in enumerate(kinds):
            if k == wanted:
                return i
    return 0


def _describe_running(w: _Watched, frames: List[Any]) -> str:
    loop = w.loop_ref()
    try:
        task = asyncio.current_task(loop) if loop is not None else None
    except Exception:
        task = None
    if task is not None:
        coro = task.get_coro()
        name = getattr(coro, "__qualname__", None) or type(coro).__name__
        return f"task {task.get_name()!r} running coroutine {name}()"
    for f in frames:  # a plain callback: asyncio's Handle._run holds it as `self`
        if f.f_code.co_name == "_run" and f.f_code.co_filename.endswith(os.path.join("asyncio", "events.py")):
            try:
                return f"callback {f.f_locals.get('self')!r}"
            except Exception:
                break
    outer = [f for f in frames if _kind(f.f_code.co_filename) != "internal"]
    return f"callback {outer[-1].f_code.co_name}()" if outer else ""


def _build_report(w: _Watched, frame: Any, duration: float) -> StallReport:
    report = StallReport(
        loop=w.loop_desc, thread_name=_thread_name(w.thread_id), thread_id=w.thread_id or 0,
        threshold=w.threshold or 0.0, started_at=time.time() - duration, duration=duration, samples=1,
    )
    if frame is None:
        report.sampled = False
        return report
    frames = _frames(frame)
    idx = _user_index(frames)
    f = frames[idx]
    report.filename = f.f_code.co_filename
    report.lineno = f.f_lineno
    report.function = f.f_code.co_name
    report.source_line = linecache.getline(report.filename, report.lineno or 0).strip()
    inner_modules = [str(fr.f_globals.get("__name__", "")) for fr in frames[:idx]]
    hint = match_hint(report.source_line, inner_modules)
    if hint is not None:
        report.rule, report.fix, report.hint = hint.rule, hint.fix, hint.text()
    report.running = _describe_running(w, frames)
    stack = []
    for i in range(len(frames) - 1, -1, -1):
        fr = frames[i]
        if i > idx and _launcher_or_guard(fr):
            continue  # outside the blocking frame: runpy, python -m runtime_guard, the run_forever hook
        line = linecache.getline(fr.f_code.co_filename, fr.f_lineno or 0).strip()
        stack.append(f"{fr.f_code.co_filename}:{fr.f_lineno} in {fr.f_code.co_name}" + (f"  | {line}" if line else ""))
    report.stack = stack
    return report


# ---------------------------------------------------------------------------------------------
# Sinks and history

_history_lock = threading.Lock()
_count = 0
_total = 0.0
_worst: List[StallReport] = []
_WORST_KEPT = 10
#: Stalls grouped by blocking location: location -> [count, total s, longest s, function, rule, hint].
_by_location: Dict[str, List[Any]] = {}
_LOCATIONS_KEPT = 500  # beyond this many distinct locations, further ones are counted under _OTHER
_OTHER = "<other locations>"
_SUMMARY_LOCATIONS_SHOWN = 10
_stall_ids = itertools.count(1)
_jsonl_lock = threading.Lock()


#: Reports being handed to sinks right now; interpreter exit waits (bounded) for them.
_emitting = 0
_emit_done = threading.Condition()
_EXIT_REPORT_WAIT = 3.0


def _emit(w: _Watched, report: StallReport, event: str) -> None:
    global _emitting
    with _emit_done:
        _emitting += 1
    try:
        for sink in list(w.sinks):
            try:
                sink(report)
            except Exception:
                log.debug("runtime_guard: stall sink failed", exc_info=True)
    finally:
        with _emit_done:
            _emitting -= 1
            _emit_done.notify_all()


def _wait_for_reports(timeout: float) -> None:
    """At exit: let a report that is being written reach its sinks, but never hang the exit."""
    deadline = time.monotonic() + timeout
    with _emit_done:
        while _emitting:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            _emit_done.wait(left)


def _finish(w: _Watched, report: StallReport) -> None:
    global _count, _total
    with _history_lock:
        _count += 1
        _total += report.duration
        _worst.append(report)
        _worst.sort(key=lambda r: r.duration, reverse=True)
        del _worst[_WORST_KEPT:]
        key = report.location
        if key not in _by_location and len(_by_location) >= _LOCATIONS_KEPT:
            key = _OTHER
        group = _by_location.get(key)
        if group is None:
            info = (None, None, None) if key == _OTHER else (report.function, report.rule, report.hint)
            group = _by_location[key] = [0, 0.0, 0.0, *info]
        group[0] += 1
        group[1] += report.duration
        group[2] = max(group[2], report.duration)
    for sink in list(w.sinks):
        end = getattr(sink, "stall_ended", None)
        if end is not None:
            try:
                end(report)
            except Exception:
                pass


class _LogSink:
    def __call__(self, report: StallReport) -> None:
        log.warning("%s", report.format())

    def stall_ended(self, report: StallReport) -> None:
        if report.sampled:
            log.info("event loop stall ended after %.3fs at %s", report.duration, report.location)


class _JsonlSink:
    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self.path = os.fspath(path)

    def _write(self, event: str, report: StallReport) -> None:
        record = {"event": event, "pid": os.getpid(), "time": time.time(), **report.to_dict()}
        with _jsonl_lock, open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=str) + "\n")

    def __call__(self, report: StallReport) -> None:
        self._write("stall", report)

    def stall_ended(self, report: StallReport) -> None:
        self._write("stall_end", report)


class _CallbackSink:
    def __init__(self, fn: OnStall) -> None:
        self.fn = fn

    def __call__(self, report: StallReport) -> None:
        self.fn(report)


def _make_sinks(on_stall: Optional[OnStall], report_file: Any) -> List[OnStall]:
    sinks: List[OnStall] = []
    # the file first: a durable record must not wait behind a slow callback
    if report_file:
        sinks.append(_JsonlSink(report_file))
    if on_stall is None:
        sinks.append(_LogSink())
    else:
        sinks.append(_CallbackSink(on_stall) if not hasattr(on_stall, "stall_ended") else on_stall)
    return sinks


def summary() -> Dict[str, Any]:
    """Stalls that ended so far in this process: ``count``, ``total`` (s), ``locations`` (one entry per
    blocking location: ``count``, ``total``, ``longest``, most total time first) and ``worst`` (the
    longest single stalls). Durations are final: each runs to the loop's first beat after the stall."""
    with _history_lock:
        groups = sorted(_by_location.items(), key=lambda kv: (-kv[1][1], kv[0]))
        return {
            "count": _count,
            "total": round(_total, 4),
            "locations": [{"location": loc, "function": g[3], "count": g[0], "total": round(g[1], 4),
                           "longest": round(g[2], 4), "rule": g[4], "hint": g[5]} for loc, g in groups],
            "worst": [{"duration": round(r.duration, 4), "location": r.location, "function": r.function,
                       "thread": r.thread_name, "hint": r.hint} for r in _worst],
        }


def reset_summary() -> None:
    """Forget the stalls counted so far (tests that plant stalls on purpose use this)."""
    global _count, _total
    with _history_lock:
        _count = 0
        _total = 0.0
        _worst.clear()
        _by_location.clear()


def format_summary(s: Optional[Dict[str, Any]] = None) -> str:
    """The exit summary: one line per blocking location (most total time first), '' when no stall."""
    s = summary() if s is None else s
    if not s["count"]:
        return ""
    groups = s["locations"]
    lines = [f"runtime_guard: {s['count']} event-loop stall(s) in this process, {s['total']:.3f}s in all, "
             f"at {len(groups)} location(s):"]
    for g in groups[:_SUMMARY_LOCATIONS_SHOWN]:
        where = g["location"] + (f" in {g['function']}" if g["function"] else "")
        rule = f" [{g['rule']}]" if g["rule"] else ""
        lines.append(f"  {g['count']} x {where}: {g['total']:.3f}s in all, longest {g['longest']:.3f}s{rule}")
    if len(groups) > _SUMMARY_LOCATIONS_SHOWN:
        rest = groups[_SUMMARY_LOCATIONS_SHOWN:]
        lines.append(f"  ... {len(rest)} more location(s): {sum(g['count'] for g in rest)} stall(s), "
                     f"{sum(g['total'] for g in rest):.3f}s in all")
    return "\n".join(lines)


def _log_summary() -> None:
    try:
        text = format_summary()
        if text:
            log.warning("%s", text)
    except Exception:
        pass


# ---------------------------------------------------------------------------------------------
# Public API

_monitor = _Monitor()


def _forget_ref(ref: Any) -> None:
    try:
        for w in list(_monitor.watched.values()):
            if w.loop_ref is ref:
                _monitor.forget(w)
    except Exception:
        pass


def _env_float(name: str, default: Optional[float]) -> Optional[float]:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        return default


def _resolve(threshold: Optional[float], hard_threshold: Any) -> "tuple[float, float, Optional[float]]":
    thr = threshold if threshold is not None else (_env_float("RUNTIME_GUARD_THRESHOLD", None) or DEFAULT_THRESHOLD)
    if thr <= 0:
        raise ValueError("threshold must be > 0")
    # Detection latency is at most interval + threshold (+ a few ms of thread wake-up): threshold/10
    # keeps a stall reported within 1.2 x threshold of its start at half the beats of threshold/20.
    interval = min(max(thr / HEARTBEATS_PER_THRESHOLD, 0.002), 0.25)
    if hard_threshold is AUTO:
        hard = _env_float("RUNTIME_GUARD_HARD_THRESHOLD", max(2.0, 20 * thr))
        hard_threshold = hard if hard and hard > 0 else None
    return thr, interval, hard_threshold


class LoopWatch:
    """Handle returned by :func:`watch_loop`; ``stop()`` (or leaving the ``with`` block) unwatches."""

    def __init__(self, watched: _Watched) -> None:
        self._w = watched

    @property
    def loop(self) -> Optional[asyncio.AbstractEventLoop]:
        return self._w.loop_ref()

    def stop(self) -> None:
        self._w.cancel()
        _monitor.forget(self._w)

    def __enter__(self) -> "LoopWatch":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _running_loop() -> Optional[asyncio.AbstractEventLoop]:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _watch(loop: asyncio.AbstractEventLoop, threshold: Optional[float], interval: float,
           sinks: List[OnStall], hard_threshold: Optional[float]) -> _Watched:
    existing = _monitor.get(loop)
    if existing is not None:
        if threshold is not None and existing.threshold is None:  # upgrade a tick-only watch
            existing.threshold, existing.sinks, existing.hard_threshold = threshold, sinks, hard_threshold
            existing.late_mark = threshold
            interval = min(interval, existing.interval)
            existing.interval = interval
            _monitor.add(existing)
        return existing
    w = _Watched(loop, threshold, interval, sinks, hard_threshold)
    _monitor.add(w)
    if _running_loop() is loop or not loop.is_running():
        w.start(loop)
    else:
        loop.call_soon_threadsafe(w.start, loop)
    return w


def watch_loop(loop: Optional[asyncio.AbstractEventLoop] = None, *, threshold: float = DEFAULT_THRESHOLD,
               on_stall: Optional[OnStall] = None, report_file: Any = None,
               hard_threshold: Any = AUTO) -> LoopWatch:
    """Watch ``loop`` (default: the running loop) and report every stall longer than ``threshold`` s.

    ``on_stall(report)`` is called from the monitor thread once per stall (default: a WARNING on the
    ``runtime_guard.watchdog`` logger); ``report_file`` appends JSON lines (``stall`` and
    ``stall_end`` events). ``hard_threshold`` (default ``max(2, 20*threshold)`` s, ``None`` = off)
    arms the faulthandler layer for GIL-holding stalls. Works for asyncio and uvloop loops, from any
    thread. Returns a :class:`LoopWatch`.
    """
    if loop is None:
        loop = _running_loop()
        if loop is None:
            raise RuntimeError("watch_loop() needs a loop: call it inside a coroutine or pass loop=")
    thr, interval, hard = _resolve(threshold, hard_threshold)
    return LoopWatch(_watch(loop, thr, interval, _make_sinks(on_stall, report_file), hard))


def check_now() -> None:
    """Run one monitor pass synchronously (used by the pytest plugin at the end of a test)."""
    try:
        _monitor.check()
    except Exception:
        pass


# ---------------------------------------------------------------------------------------------
# Hooking every loop the process starts

_config: Optional[Dict[str, Any]] = None
_patched: List[Any] = []  # (class, original run_forever)
_TICK_INTERVAL = 0.2


def _on_loop_start(loop: Any) -> Optional[_Watched]:
    try:
        cfg = _config
        if cfg is None:
            return None
        w = _monitor.get(loop)
        if w is None or (cfg["threshold"] is not None and w.threshold is None):
            w = _watch(loop, cfg["threshold"], cfg["interval"], cfg["sinks"], cfg["hard_threshold"])
        w.thread_id = _get_ident()
        w.due = _monotonic() + w.interval
        if w.handle is None:
            w.handle = loop.call_later(w.interval, w.beat)
        return w
    except Exception:
        return None


def _on_loop_stop(w: Optional[_Watched]) -> None:
    if w is None:
        return
    try:
        w.stopped_at = _monotonic()
        w.due = None
        _hard.release(w)
    except Exception:
        pass


def _patch_run_forever(cls: Any) -> None:
    orig = getattr(cls, "run_forever", None)
    if orig is None or getattr(orig, "_runtime_guard_orig", None) is not None:
        return

    def run_forever(self: Any, *args: Any, **kwargs: Any) -> Any:
        w = _on_loop_start(self)
        try:
            return orig(self, *args, **kwargs)
        finally:
            _on_loop_stop(w)

    run_forever._runtime_guard_orig = orig  # type: ignore[attr-defined]
    run_forever.__doc__ = orig.__doc__
    cls.run_forever = run_forever
    _patched.append((cls, orig))


def _patch_uvloop(module: Any) -> None:
    try:
        _patch_run_forever(module.Loop)
    except Exception:
        pass


class _UvloopFinder:
    """Meta-path hook: patch uvloop.Loop as soon as uvloop is imported (without importing it ourselves)."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "uvloop":
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if spec is None or loader is None or not hasattr(loader, "exec_module"):
            return None
        orig_exec = loader.exec_module

        def exec_module(module: Any) -> None:
            orig_exec(module)
            _patch_uvloop(module)

        loader.exec_module = exec_module
        return spec


_finder = _UvloopFinder()


def install(threshold: Optional[float] = None, *, on_stall: Optional[OnStall] = None, report_file: Any = None,
            hard_threshold: Any = AUTO, tick_only: bool = False) -> None:
    """Watch every event loop this process runs from now on (asyncio.run, loops in threads, uvloop).

    Patches ``run_forever`` of asyncio's base loop and of ``uvloop.Loop`` (now, or when uvloop is
    imported). ``threshold`` defaults to ``$RUNTIME_GUARD_THRESHOLD`` or 0.1 s; ``report_file`` to
    ``$RUNTIME_GUARD_REPORT_FILE``. ``tick_only=True`` only keeps loops ticking (heartbeat every
    0.2 s, no reports), which ``runtime_guard.ray`` uses so ``ray.cancel`` reaches idle loops.
    Calling again updates the settings. A loop already running in the calling thread is watched now.
    """
    global _config
    if tick_only:
        if _config is not None and _config["threshold"] is not None:
            cfg = _config  # keep a full watchdog if one is installed
        else:
            cfg = {"threshold": None, "interval": _TICK_INTERVAL, "sinks": [], "hard_threshold": None}
    else:
        thr, interval, hard = _resolve(threshold, hard_threshold)
        if report_file is None:
            report_file = os.environ.get("RUNTIME_GUARD_REPORT_FILE") or None
        cfg = {"threshold": thr, "interval": interval, "sinks": _make_sinks(on_stall, report_file),
               "hard_threshold": hard}
    _config = cfg
    _patch_run_forever(asyncio.BaseEventLoop)
    uv = sys.modules.get("uvloop")
    if uv is not None:
        _patch_uvloop(uv)
    elif _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)  # type: ignore[arg-type]
    loop = _running_loop()
    if loop is not None:
        _on_loop_start(loop)


def uninstall() -> None:
    """Undo :func:`install` and stop watching every loop."""
    global _config
    _config = None
    while _patched:
        cls, orig = _patched.pop()
        try:
            cls.run_forever = orig
        except Exception:
            pass
    try:
        sys.meta_path.remove(_finder)  # type: ignore[arg-type]
    except ValueError:
        pass
    for w in list(_monitor.watched.values()):
        w.cancel()
        _monitor.forget(w)


def is_installed() -> bool:
    return _config is not None


def tracked_loops() -> List[asyncio.AbstractEventLoop]:
    """Loops currently watched or ticked (used by runtime_guard.ray to cancel tasks on SIGTERM)."""
    out = []
    for w in list(_monitor.watched.values()):
        loop = w.loop_ref()
        if loop is not None and not loop.is_closed():
            out.append(loop)
    return out


def loop_thread_id(loop: Any) -> Optional[int]:
    w = _monitor.get(loop)
    return w.thread_id if w is not None else None


def register_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Track (and tick, or watch if installed) a loop that is already running, e.g. a Ray async actor's."""
    cfg = _config or {"threshold": None, "interval": _TICK_INTERVAL, "sinks": [], "hard_threshold": None}
    w = _watch(loop, cfg["threshold"], cfg["interval"], cfg["sinks"], cfg["hard_threshold"])
    if _running_loop() is loop:
        w.thread_id = _get_ident()


# ---------------------------------------------------------------------------------------------
# Process lifecycle


def _before_fork() -> None:
    """The faulthandler timer is never armed at a fork. Its C thread is not in the child, and
    faulthandler waits for that thread whenever the timer is cancelled or armed again: the
    child's first cancel or re-arm (ours below, or its own loops' heartbeat) blocked forever
    (measured: every ``os.fork`` and ``multiprocessing`` fork child of a process with a watched
    loop running hung, 12 of 12; tests/runtime_guard/test_watchdog_fork.py). Cancelled here, in
    the parent, and armed again right after the fork (``_after_fork_parent``)."""
    _hard.forking = True
    if _hard.owner is not None:
        _hard.next_arm = 0.0
        try:
            faulthandler.cancel_dump_traceback_later()
        except Exception:
            pass


def _after_fork_parent() -> None:
    _hard.forking = False
    owner = _hard.owner
    if owner is not None and owner.active and owner.hard_threshold is not None:
        try:
            _hard.rearm(owner, _monotonic())
        except Exception:
            pass


def _after_fork_child() -> None:
    _hard.forking = False
    # The monitor thread does not exist in the child and the parent's loops are not running there:
    # forget them. The run_forever hooks stay, so loops the child starts are watched (new monitor).
    global _monitor, _history_lock, _jsonl_lock, _emit_done, _emitting, _stall_ids
    # Locks the parent's monitor thread may have held at the fork are replaced; the parent's stalls
    # are its own: the child's exit summary counts only the child's (reset_summary below).
    try:
        _history_lock = threading.Lock()
        _jsonl_lock = threading.Lock()
        _emit_done = threading.Condition()
        _emitting = 0
        _stall_ids = itertools.count(1)
        reset_summary()
        _monitor = _Monitor()
        _hard.owner = None
        _hard.next_arm = 0.0
        faulthandler.cancel_dump_traceback_later()
    except Exception:
        pass


def settle() -> None:
    """Let a report being written reach its sinks, and count a stall that was still open when its
    loop stopped (the monitor closes those on its next check, which may never come at exit)."""
    try:
        _wait_for_reports(_EXIT_REPORT_WAIT)
    except Exception:
        pass
    try:
        _monitor.check()
    except Exception:
        pass


def _at_exit() -> None:
    settle()
    try:
        _monitor.stopping = True
        _monitor.wake.set()
        if _hard.owner is not None:
            _hard.owner = None
            faulthandler.cancel_dump_traceback_later()
    except Exception:
        pass
    _log_summary()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_parent, after_in_child=_after_fork_child)
atexit.register(_at_exit)
