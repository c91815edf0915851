"""Running the per-file work, serially or in a process pool.

``process_file`` is the whole job for one file: read, lint (or fix and lint what is
left), write atomically, and return a serialisable ``Outcome``. The pool runs it with
the settings installed once per worker. Results come back in job order, so output does
not depend on ``--jobs``.

A worker that dies (a segfault in a C extension, ``os._exit`` in a plugin, the OOM
killer) breaks the whole ``ProcessPoolExecutor``: we recreate the pool, re-run the
files that were in flight one at a time in their own process to find the culprit,
report that file, and go on with the rest.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from . import interrupt
from .cache import restore_path, sha256
from .diagnostic import FileResult
from .settings import Settings

#: Up to this many files to (re)analyse, the pool is not worth starting.
SERIAL_THRESHOLD = 8


@dataclass(frozen=True)
class Mode:
    fix: bool = False
    unsafe: bool = False
    #: compute the fixes but write nothing; FileResult.diff holds the unified diff
    diff: bool = False
    #: render each fix's text edits (json/sarif print them; rendering costs a module transform)
    edits: bool = False
    #: give each outcome its ``stamp`` (the content's sha256 among it): False when no cache stores
    #: them (``--no-cache``): ray+torch's 75 MB hashed for nothing, 0.046 CPU-s
    stamps: bool = True
    #: the process is the command line's own and exits after this run: what the runner freezes
    #: (``gc.freeze``) may stay frozen. Any other caller (a test session, the language server, a
    #: program calling ``cli.main``) gets its collector back as it was: ``run`` freezes only when
    #: nothing was frozen before it and unfreezes at its end (``gc.unfreeze`` thaws everything:
    #: it cannot give back a caller's own freeze)
    own_process: bool = False

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff


@dataclass(frozen=True)
class Job:
    path: str  # display path, used in messages
    abspath: str
    #: (sha256, stored result dict) of a cache entry whose stat no longer matches
    known: Optional[tuple[str, dict]] = None
    #: the file's size when discovery stat'ed it (the pool orders its work by it); None: unknown
    size: Optional[int] = None


@dataclass
class Outcome:
    result: FileResult
    #: (mtime_ns, size, sha256) of the on-disk content ``result`` describes; None: do not cache
    stamp: Optional[tuple[int, int, str]] = None
    #: module summaries a worker computed for the project index (the parent caches them)
    summaries: Optional[dict] = None


def has_applicable_fix(result: dict, unsafe: bool) -> bool:
    for d in result.get("diagnostics", []):
        fix = d.get("fix")
        if fix and (unsafe or fix.get("applicability") == "safe"):
            return True
    return False


def decode(data: bytes) -> str:
    """Source bytes to text the way Python would (BOM, coding cookie), never failing."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace")


def unified_diff(path: str, old: bytes, new: bytes) -> str:
    import difflib

    a = decode(old).splitlines(keepends=True)
    b = decode(new).splitlines(keepends=True)
    lines = difflib.unified_diff(a, b, fromfile=f"a/{path}", tofile=f"b/{path}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def process_file(job: Job, settings: Settings, mode: Mode) -> Outcome:
    from .source import SourceError, read, write_atomic

    try:
        snap = read(job.abspath)
    except SourceError as e:
        message = str(e)
        if message.startswith(job.abspath):
            message = job.path + message[len(job.abspath):]
        return Outcome(FileResult(job.path, error=message))
    digest = sha256(snap.data) if mode.stamps or job.known is not None else None
    stamp = (snap.mtime_ns, snap.size, digest) if mode.stamps and digest is not None else None
    if job.known is not None and job.known[0] == digest:
        if not (mode.fixing and has_applicable_fix(job.known[1], mode.unsafe)):
            return Outcome(FileResult.from_dict(restore_path(job.known[1], job.path)), stamp)

    from .analyzer import AnalysisError, lint_source

    # a file that no rule can examine is not compiled just to look for syntax errors: the
    # candidate tiers decided without it (docs/cli.md, "Syntax errors")
    result = lint_source(snap.data, job.path, settings, fix_edits=mode.edits)
    if not mode.fixing or result.error or not has_applicable_fix(result.to_dict(), mode.unsafe):
        return Outcome(result, stamp)

    from .fixer import fix_source

    try:
        fixed = fix_source(snap.data, job.path, settings, unsafe=mode.unsafe)
    except AnalysisError as e:  # pragma: no cover - lint_source parsed it a moment ago
        return Outcome(FileResult(job.path, error=str(e)))
    if fixed.source == snap.data:
        result.warnings.extend(fixed.warnings)
        return Outcome(result, None)
    after = lint_source(fixed.source, job.path, settings, fix_edits=mode.edits)
    after.fixed = fixed.applied
    after.warnings = fixed.warnings + after.warnings
    if mode.diff:
        after.diff = unified_diff(job.path, snap.data, fixed.source)
        return Outcome(after, None)
    try:
        with interrupt.deferred():  # a stop lands before the write or after it, and it is counted
            write_atomic(job.abspath, fixed.source, snap)
            _note_written()
    except (SourceError, OSError) as e:
        result.error = f"{job.path}: fixes not written: {e}"
        return Outcome(result, None)
    after.written = True
    if not mode.stamps:
        return Outcome(after, None)
    try:
        st = os.stat(job.abspath)
        return Outcome(after, (st.st_mtime_ns, st.st_size, sha256(fixed.source)))
    except OSError:
        return Outcome(after, None)


# ---------------------------------------------------------------- the pool

_worker_settings: Optional[Settings] = None
_worker_mode: Optional[Mode] = None
#: in a pool worker: the pool's shared count of files written (``interrupt.written`` in the parent)
_worker_written: Any = None


def _note_written() -> None:
    if _worker_written is None:
        interrupt.count_written()
    else:
        with _worker_written.get_lock():
            _worker_written.value += 1


def _init_worker(settings: Settings, mode: Mode, written: Any = None) -> None:
    global _worker_settings, _worker_mode, _worker_written, _trimmed_at_kb
    _worker_settings, _worker_mode, _worker_written = settings, mode, written
    # Ctrl+C reaches the whole process group: a worker ignores it and the parent stops it with
    # SIGTERM (which ends it at once, or right after the file it is writing)
    interrupt.worker_signals(start_threads=_exit_with_parent)
    gc.freeze()  # the engine and rules imported before the fork (libcst too, if a file needed it): never garbage
    _collect_less()
    _trimmed_at_kb = _peak_rss_kb()  # this process's own peak so far (the fork's pages)


#: The cyclic collector's first threshold while files are analysed. An analysis frees its
#: tree by reference counting (``Analysis.release``) and leaves few cycles behind, yet each
#: collection walks every object still young (the project index's tables, the last
#: ``ast`` trees): at the default 700 that came to ~1.2 CPU-s of a cold ``-j1`` run over the
#: reference corpus; at 100,000, ~0.4 s in a few collections.
FEW_COLLECTIONS = 100_000


def _collect_less() -> tuple[int, int, int]:
    """Set the first threshold to ``FEW_COLLECTIONS``; returns the thresholds it replaced."""
    old = gc.get_threshold()
    gc.set_threshold(FEW_COLLECTIONS, *old[1:])
    return old


@contextlib.contextmanager
def _few_collections():
    old = _collect_less()
    try:
        yield
    finally:
        gc.set_threshold(*old)


def _exit_with_parent(interval: float = 1.0) -> None:
    """A worker whose parent is killed (SIGKILL, OOM killer) would wait on the pool's queue
    forever: its siblings keep the queue's pipe open, so it never sees EOF. A daemon thread
    notices the parent is gone and ends the worker."""
    import threading
    import time

    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="shutdown-lint-parent-watch", daemon=True).start()


def _work(job: Job) -> Outcome:
    assert _worker_settings is not None and _worker_mode is not None
    return _one_file(job, _worker_settings, _worker_mode, worker=True)


def _one_file(job: Job, settings: Settings, mode: Mode, worker: bool = False, freeze: bool = True) -> Outcome:
    """``process_file`` and ``after_file``, with no cyclic collection in between (the analysis
    pauses it too: ``analyzer.gc_paused``), then the collection that became due, if one did.

    A collection due when the analysis ended walked the file's ``ast`` tree that ``after_file``
    releases a moment later (the allocation count falls again as it is freed), and each young
    object the project index keeps (its tables, the summaries) again in every gen1 collection.
    Now the survivors of the due collection are frozen: the index's tables and the outcomes
    live to the end of the run, no later collection walks them. ``gc.callbacks``, CPU-s spent
    collecting while files ran: ray+torch -j1 0.22-0.25 (5 gen0 of 90-130k objects, sometimes a
    gen1 of 120k) -> 0.10 (3 gen0); the reference corpus -j1 0.25 (6) -> 0.18 (4); its -j2
    workers 0.13-0.15 -> 0.07-0.08 together. The same peak RSS."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        try:
            outcome = process_file(job, settings, mode)
        except Exception as e:  # a rule bug must not end the run
            outcome = Outcome(FileResult(job.path, error=f"{job.path}:1:1: internal error: {type(e).__name__}: {e}"))
        if worker:
            outcome.summaries = _new_summaries()
        after_file()
    finally:
        if paused:
            gc.enable()
    if paused and gc.get_count()[0] > gc.get_threshold()[0]:
        gc.collect(0)
        if freeze:  # a pool worker's process is ours; a serial run's, only as ``run`` says
            gc.freeze()
    return outcome


# ---------------------------------------------------------------- memory between files

#: After a file, the ``ast`` trees the candidate tier keeps for reuse (``ast_tree.parse``: the
#: project index summarises a module from the tree of its last lint) are cut to the newest ones
#: spanning at most this many lines together. A tree costs ~75 bytes of memory per byte of
#: source: a big file's tree (``torch/sparse/_triton_ops_meta.py``, 500 KB: 38 MB) stayed alive
#: for the next files, and under it the next big libcst parse (``rpc_test.py``, 226 KB: +115 MB):
#: the largest ray+torch -j2 worker peaked at 235 MB when it took both, 195 when the other worker
#: took one (scheduling); with this release 167-172 either way (bench/memory_peak.py). Over the
#: ray+torch corpus at -j1 the index reused a tree of an earlier file 8 times (240 KB of source,
#: ~30 KB each): small trees are kept for that.
KEEP_TREE_LINES = 2000

#: ... and once this process's peak RSS has grown by this much since the last time, the C
#: allocator is asked to give its free memory back (``malloc_trim``, glibc): a libcst parse frees
#: tens of MB into the C heap, where Python's own object arenas (``mmap``) cannot reuse them, so
#: the index's tables and the next file's trees grew on top of memory no longer used. The pages
#: given back cost a fault each when used again: a step of 8 MB made ~37k more minor faults than
#: none over ray+torch at -j1 (peak 214 MB), 32 MB ~20k (same peak); -j2 trims 1-2 times a worker.
TRIM_STEP_KB = 32 * 1024

_trim_fn: Any = None  # libc's malloc_trim once looked up; False where there is none
_trimmed_at_kb = 0


def after_file() -> None:
    """Memory a file's analysis no longer needs, given back before the next file (see
    ``KEEP_TREE_LINES`` and ``TRIM_STEP_KB``). Changes no result: caches only."""
    from .prefilter.ast_tree import release_trees

    release_trees(KEEP_TREE_LINES)
    _give_back_memory()


def _trim_from_here() -> None:
    """Count ``TRIM_STEP_KB`` from this process's peak so far (as a pool worker does from its
    fork's): a serial run counted from 0, so its first file, whatever its size, asked for a
    trim (and imported ctypes: ~3 ms of a one-file run) of memory that was all in use."""
    global _trimmed_at_kb
    _trimmed_at_kb = max(_trimmed_at_kb, _peak_rss_kb())


def _peak_rss_kb() -> int:
    try:
        import resource
    except ImportError:  # pragma: no cover - not on POSIX
        return 0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KB on Linux


def _give_back_memory() -> None:
    global _trim_fn, _trimmed_at_kb
    if _trim_fn is False:
        return
    peak = _peak_rss_kb()
    if peak - _trimmed_at_kb < TRIM_STEP_KB:
        return
    _trimmed_at_kb = peak
    if _trim_fn is None:
        _trim_fn = _malloc_trim()
        if _trim_fn is False:
            return
    _trim_fn(0)


def _malloc_trim() -> Any:
    """glibc's ``malloc_trim``, or False (another C library, another system)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return getattr(ctypes.CDLL(None), "malloc_trim", None) or False
    except (ImportError, OSError, TypeError):  # pragma: no cover - no ctypes, no libc handle
        return False


def _new_summaries() -> Optional[dict]:
    """Summaries this worker's project index computed since the last job, sent to the parent
    for its summary cache; None when that cache has no file to save them in (``--no-cache``,
    no cache folder): over ray+torch at -j2, 2.5 of the 3.8 MB of pickled outcomes were such
    summaries, pickled by the workers and unpickled by the parent for nothing."""
    from .index.project import current

    index = current()
    if index is None or not index.new_entries:
        return None
    new, index.new_entries = index.new_entries, {}
    if getattr(index.store, "path", None) is None:
        return None
    return new


def _work_batch(batch: list[Job]) -> list[Outcome]:
    return [_work(job) for job in batch]


#: A batch of files goes to a worker as one task: most files cost ~0.1 ms once the
#: candidate tiers rule them out, less than one task's round trip through the pool (the pool
#: keeps only max_workers + 1 tasks queued, so a worker waits on the parent between tasks).
#: 64 KB / 32-file batches made 1,592 tasks of the reference corpus (now 130), and -j2 spent 0.85 s
#: more than -j1 on a run where every file stops at the words; 1 MB / 256 files: 0.3 s.
#: Files go largest first, so the last tasks are batches of small, cheap files.
BATCH_BYTES = 1024 * 1024
BATCH_FILES = 256


#: The last files (the smallest) go in tasks of at most this many: a small file can still
#: cost a second (a project-index search), and a big last task would leave a worker idle.
TAIL_FILES = 1000
TAIL_BATCH = 16


def _batches(order: list[int], sizes: dict[int, int], most: int = BATCH_FILES) -> list[list[int]]:
    """``order`` (largest first) cut into tasks of at most ``most`` files: a big file alone,
    small ones together, the last ``TAIL_FILES`` in small tasks."""
    out: list[list[int]] = []
    cur: list[int] = []
    total = 0
    tail_from = len(order) - TAIL_FILES
    for n, i in enumerate(order):
        if n == tail_from and cur:
            out.append(cur)
            cur, total = [], 0
        cur.append(i)
        total += sizes[i]
        if total >= BATCH_BYTES or len(cur) >= (most if n < tail_from else min(most, TAIL_BATCH)):
            out.append(cur)
            cur, total = [], 0
    if cur:
        out.append(cur)
    return out


def _context():
    import multiprocessing

    # fork: workers start in milliseconds and inherit the imported engine
    if sys.platform.startswith("linux"):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


#: After SIGTERM, a worker gets this long to finish the file it is writing before SIGKILL.
KILL_AFTER = 2.0


class StoppablePool:
    """A ``ProcessPoolExecutor`` of ``_init_worker`` workers that stops at once when the block
    it opens is left by an exception (Ctrl+C, SIGTERM as ``interrupt.Interrupted``, a bug).

    The executor's own ``with`` block would call ``shutdown(wait=True)`` there, which runs every
    queued task to its end first: the hazard SHD503 reports. Here the queued tasks are cancelled,
    the workers get SIGTERM (they die at once, or right after the file they are writing: see
    ``interrupt.deferred``) and SIGKILL after ``KILL_AFTER``, and the files they wrote are added
    to ``interrupt.written()``. A normal exit shuts down and waits, as the ``with`` block would
    (every task is done by then)."""

    def __init__(self, max_workers: int, settings: Settings, mode: Mode) -> None:
        from concurrent.futures import ProcessPoolExecutor

        ctx = _context()
        self.written = ctx.Value("q", 0)
        self.executor = ProcessPoolExecutor(max_workers=max_workers, mp_context=ctx, initializer=_init_worker,
                                            initargs=(settings, mode, self.written))
        self._started = False

    def submit(self, fn: Callable[..., Any], *args: Any):  # type: ignore[no-untyped-def]
        if self._started:
            return self.executor.submit(fn, *args)
        # the first submit forks every worker (fork context): no signal may reach a worker before
        # it has set its own handling, so the forks happen with SIGINT and SIGTERM blocked
        with interrupt.blocked():
            future = self.executor.submit(fn, *args)
        self._started = True
        return future

    def __enter__(self) -> "StoppablePool":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if exc_type is None:
                self.executor.shutdown(wait=True)
            else:
                self.stop()
        except BaseException:
            self.stop()  # an interrupt while a normal shutdown waits
            raise
        finally:
            self._count()

    def _count(self) -> None:
        if self.written is not None:
            interrupt.count_written(self.written.get_obj().value)  # the workers are gone: no lock
            self.written = None

    def stop(self) -> None:
        from multiprocessing.connection import wait

        executor = self.executor
        procs = list((getattr(executor, "_processes", None) or {}).values())
        manager = getattr(executor, "_executor_manager_thread", None)
        results = getattr(executor, "_result_queue", None)
        executor.shutdown(wait=False, cancel_futures=True)  # queued tasks: never started
        for p in procs:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                p.terminate()
        live = {p.sentinel: p for p in procs if getattr(p, "_popen", None) is not None}
        deadline = time.monotonic() + KILL_AFTER
        while live and time.monotonic() < deadline:
            for sentinel in wait(list(live), timeout=max(0.0, deadline - time.monotonic())):
                live.pop(sentinel)
        for p in live.values():  # stuck past the grace period (never seen): no more waiting
            with contextlib.suppress(OSError, ValueError, AttributeError):
                p.kill()
        if live:
            wait(list(live), timeout=1.0)
        # a worker stopped in the middle of sending a result would leave the pool's thread
        # reading half a message forever: our copy of the pipe's write end is the last one
        writer = getattr(results, "_writer", None)
        if writer is not None:
            with contextlib.suppress(OSError):
                writer.close()
        if manager is not None:
            manager.join(KILL_AFTER)  # it sees the workers gone, fails what is left, and ends
        for p in procs:
            with contextlib.suppress(OSError, ValueError, AssertionError, AttributeError):
                p.join(0)  # reap


def run(jobs: Sequence[Job], settings: Settings, mode: Mode, n_jobs: int,
        on_done: Optional[Callable[[Outcome], None]] = None) -> list[Outcome]:
    """Process ``jobs``; the outcomes are in the same order as ``jobs``."""
    tick = on_done or (lambda _o: None)
    if mode.fix and not mode.diff:
        interrupt.expect_writes()
    # freezing is ours to undo only when nothing was frozen before the run (``Mode.own_process``)
    thaw = not mode.own_process and gc.get_freeze_count() == 0
    may_freeze = mode.own_process or thaw
    if n_jobs <= 1 or len(jobs) <= SERIAL_THRESHOLD:
        from .prefilter import ahead

        out = []
        _trim_from_here()
        # the project index's parses of files not reached yet decide their candidate tiers
        ahead.begin(jobs, settings)
        with _few_collections():
            try:
                for job in jobs:
                    outcome = _one_file(job, settings, mode, freeze=may_freeze)
                    tick(outcome)
                    out.append(outcome)
            finally:
                ahead.end()
                if thaw and gc.get_freeze_count():
                    # what ``_one_file`` froze is collectable again once the run is over (a process
                    # that runs again, a test session): a cycle among it no longer kept is garbage
                    gc.unfreeze()
        return out
    # the pool's modules are imported only here: a fully cached run never needs them
    from . import analyzer  # noqa: F401  - imported once here, inherited by forked workers

    # the engine and the rules, imported: never garbage (libcst is imported only when a file needs
    # it: ``lazy_libcst``). Frozen, the parent's own
    # collections while it gathers the workers' results no longer walk them (three full ones
    # over ray+torch at -j2: ~0.17 CPU-s), and the forks share their pages untouched
    if may_freeze:
        gc.freeze()
    try:
        with _shared_index(_context()):
            return _run_pool(jobs, settings, mode, n_jobs, tick)
    finally:
        if thaw:
            gc.unfreeze()


@contextlib.contextmanager
def _shared_index(ctx):
    """The project index's log shared by this run's pool workers (``index/shared.py``): a
    module summarised by one worker is not summarised again by another; and its roots,
    settled before the workers fork."""
    from .index.project import current

    index = current()
    if index is None or index.shared is not None:
        yield
        return
    from .index.shared import SharedLog

    index.shared = SharedLog(ctx.Lock())
    # the roots are settled once here rather than in each worker (the project's files are
    # walked and each folder's package root found: 0.06 CPU-s per worker on ray+torch, 0.36
    # on c28); the same roots either way (``ProjectIndex._settle``)
    index.settle()
    try:
        yield
    finally:
        shared, index.shared = index.shared, None
        shared.close()


def _run_pool(jobs: Sequence[Job], settings: Settings, mode: Mode, n_jobs: int,
              tick: Callable[[Outcome], None]) -> list[Outcome]:
    from concurrent.futures.process import BrokenProcessPool

    results: dict[int, Outcome] = {}
    # largest files first: per-file cost is very skewed (a big candidate file with findings
    # costs seconds, a file the candidate tiers rule out ~0.2 ms), and starting a big one
    # last leaves the other workers idle at the end
    sizes = {i: _job_size(jobs[i]) for i in range(len(jobs))}
    # (files, most files per task): a crash breaks the pool, and the batches in flight then
    # are the first unfinished ones (workers take tasks in order); their files run again one
    # per task in a new pool, and if that breaks too, each suspect in a process of its own
    queue: list[tuple[list[int], int]] = [(sorted(range(len(jobs)), key=lambda i: -sizes[i]), BATCH_FILES)]
    suspects = 2 * n_jobs + 2
    while queue:
        pending, per_task = queue.pop(0)
        if per_task == 0:  # suspects of a crash in single-file tasks
            for i in pending:
                results[i] = _run_isolated(jobs[i], settings, mode)
                tick(results[i])
            continue
        broken: list[list[int]] = []
        with StoppablePool(min(n_jobs, len(pending)), settings, mode) as pool:
            futures = [(batch, pool.submit(_work_batch, [jobs[i] for i in batch]))
                       for batch in _batches(pending, sizes, per_task)]
            for batch, fut in futures:
                try:
                    for i, outcome in zip(batch, fut.result()):
                        results[i] = outcome
                        tick(outcome)
                except BrokenProcessPool:
                    broken.append(batch)
        if broken:
            in_flight = [i for batch in broken[:suspects] for i in batch]
            rest = [i for batch in broken[suspects:] for i in batch]
            queue[:0] = [(in_flight, 1 if per_task > 1 else 0)] + ([(rest, per_task)] if rest else [])
    return [results[i] for i in range(len(jobs))]


def _job_size(job: Job) -> int:
    """The size that orders ``job`` in the pool's work: discovery's (``Job.size``), or a stat of
    the file now. Discovery's stat may be a moment old: the order only spreads the work, the
    outcomes do not depend on it. (Ray+torch, 4,864 files: 0.011-0.015 CPU-s of stats before
    the fork, where nothing runs in parallel.)"""
    if job.size is not None:
        return job.size
    try:
        return os.stat(job.abspath).st_size
    except OSError:
        return 0


def _run_isolated(job: Job, settings: Settings, mode: Mode) -> Outcome:
    from concurrent.futures.process import BrokenProcessPool

    try:
        with StoppablePool(1, settings, mode) as pool:
            return pool.submit(_work, job).result()
    except BrokenProcessPool:
        return Outcome(FileResult(job.path, error=f"{job.path}:1:1: the analysis crashed its worker process; "
                                                  "file skipped"))
