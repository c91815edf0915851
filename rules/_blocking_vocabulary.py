"""SHD301's vocabulary: what blocks the calling thread, grouped by family.

Each family can be switched off with the rule's ``blocking-families`` option, and has a
section on the rule's page (why it blocks, what to use instead). Names are qualified
(``subprocess.run``); methods are keyed by the type of their receiver
(``subprocess.Popen.wait``), which the rule infers from how a name was bound in the
function (``p = subprocess.Popen(...)``, ``with open(p) as f``, ``client: httpx.Client``)
or on ``self`` in any method. ``TYPE.*`` means every method of that type except
``NON_IO_METHODS``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Family:
    name: str
    #: Qualified functions and ``Type.method`` names that block.
    calls: tuple[str, ...]
    #: Of those, the ones that only block without a non-blocking argument: name ->
    #: (position of ``block``/``blocking`` or None, position of ``timeout`` or None).
    #: Positions count the arguments after the receiver.
    polls: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)
    #: Calls that are blocking but must not be moved to a thread by the fix (their
    #: result is an object used afterwards, or an iterator).
    no_fix: tuple[str, ...] = ()


# The types of values (file objects, paths, contexts) and their spellings are the shared
# facts' (``shutdown_lint.facts.types``): every rule that reads a receiver's type sees the same.
from shutdown_lint.facts.types import ATTRIBUTE_TYPES, FILE, MP_CONTEXT, RESULT_TYPES, TYPE_ALIASES  # noqa: E402,F401

_PATH_IO = (
    "exists", "is_file", "is_dir", "is_symlink", "is_mount", "is_socket", "is_fifo",
    "is_block_device", "is_char_device", "stat", "lstat", "owner", "group", "samefile",
    "read_text", "read_bytes", "write_text", "write_bytes", "open", "touch", "mkdir",
    "unlink", "rmdir", "rename", "replace", "chmod", "lchmod", "iterdir", "glob", "rglob",
    "walk", "resolve", "readlink", "symlink_to", "hardlink_to",
)
_URLLIB3_CLASSES = (
    "urllib3.PoolManager", "urllib3.ProxyManager", "urllib3.HTTPConnectionPool", "urllib3.HTTPSConnectionPool",
    "urllib3.poolmanager.PoolManager", "urllib3.poolmanager.ProxyManager",
    "urllib3.connectionpool.ConnectionPool", "urllib3.connectionpool.HTTPConnectionPool",
    "urllib3.connectionpool.HTTPSConnectionPool",
    "urllib3.request.RequestMethods", "urllib3._request_methods.RequestMethods",
)
_FILE_IO = ("read", "read1", "readinto", "readline", "readlines", "write", "writelines", "flush",
            "truncate")

FAMILIES: tuple[Family, ...] = (
    Family(
        "http",
        calls=(
            *(f"requests.{m}" for m in ("get", "post", "put", "patch", "delete", "head", "options", "request")),
            "requests.Session.*", "requests.sessions.Session.*",
            # httpx2: httpx's maintained continuation, same API
            *(f"{h}.{m}" for h in ("httpx", "httpx2") for m in ("get", "post", "put", "patch", "delete", "head",
                                                                "options", "request", "stream")),
            "httpx.Client.*", "httpx2.Client.*", "httpx._client.Client.*", "httpx2._client.Client.*",
            "urllib.request.urlopen", "urllib.request.urlretrieve",
            # every urllib3 class that sends requests, by each of its spellings
            "urllib3.request", *(f"{cls}.*" for cls in _URLLIB3_CLASSES),
            "http.client.HTTPConnection.request", "http.client.HTTPConnection.getresponse",
            "http.client.HTTPSConnection.request", "http.client.HTTPSConnection.getresponse",
        ),
    ),
    Family(
        "processes",
        calls=(
            "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
            "subprocess.getoutput", "subprocess.getstatusoutput",
            "subprocess.Popen", "subprocess.Popen.wait", "subprocess.Popen.communicate",
            "os.system", "os.popen", "os.posix_spawn", "os.posix_spawnp",
            *(f"os.spawn{s}" for s in ("l", "le", "lp", "lpe", "v", "ve", "vp", "vpe")),
            "os.wait", "os.wait3", "os.wait4", "os.waitid", "os.waitpid",
        ),
        polls={"subprocess.Popen.wait": (None, 0), "subprocess.Popen.communicate": (None, 1)},
        no_fix=("subprocess.Popen", "os.popen"),
    ),
    Family(
        "files",
        calls=(
            "builtins.open", "io.open", "io.open_code", "os.fdopen", "codecs.open",
            "gzip.open", "bz2.open", "lzma.open",
            "builtins.input",
            *(f"{FILE}.{m}" for m in _FILE_IO),
        ),
        no_fix=("builtins.open", "io.open", "io.open_code", "os.fdopen", "codecs.open", "gzip.open",
                "bz2.open", "lzma.open"),
    ),
    Family(
        "paths",
        calls=(
            *(f"os.path.{m}" for m in ("exists", "lexists", "isfile", "isdir", "islink", "ismount",
                                      "getsize", "getmtime", "getatime", "getctime", "samefile",
                                      "sameopenfile", "realpath")),
            *(f"os.{m}" for m in ("stat", "lstat", "listdir", "scandir", "walk", "makedirs", "mkdir",
                                  "remove", "unlink", "rmdir", "removedirs", "rename", "renames",
                                  "replace", "chmod", "chown", "access", "link", "symlink", "readlink",
                                  "truncate", "utime", "statvfs")),
            "glob.glob", "glob.iglob",
            *(f"pathlib.Path.{m}" for m in _PATH_IO),
        ),
        no_fix=("pathlib.Path.open", "os.scandir", "os.walk", "glob.iglob", "pathlib.Path.iterdir",
                "pathlib.Path.glob", "pathlib.Path.rglob", "pathlib.Path.walk"),
    ),
    Family("sleeps", calls=("time.sleep",)),
    Family(
        "waits",
        calls=(
            # ``put`` waits only on a bounded queue: the rule skips it when the queue was
            # built here without a ``maxsize``; ``SimpleQueue.put`` never waits
            *(f"{q}.{m}" for q in ("queue.Queue", "queue.LifoQueue", "queue.PriorityQueue",
                                   "multiprocessing.Queue", "multiprocessing.JoinableQueue",
                                   "multiprocessing.queues.Queue", "multiprocessing.queues.JoinableQueue")
              for m in ("get", "put", "join")),
            "queue.SimpleQueue.get", "multiprocessing.SimpleQueue.get",
            "threading.Event.wait", "threading.Condition.wait", "threading.Condition.wait_for",
            "threading.Barrier.wait",
            "threading.Lock.acquire", "threading.RLock.acquire", "threading.Semaphore.acquire",
            "threading.BoundedSemaphore.acquire", "threading.Condition.acquire",
            "threading.Thread.join", "multiprocessing.Process.join",
            "multiprocessing.Event.wait", "multiprocessing.Lock.acquire", "multiprocessing.RLock.acquire",
            "multiprocessing.Semaphore.acquire", "multiprocessing.Barrier.wait",
            "concurrent.futures.wait", "concurrent.futures.as_completed", "concurrent.futures.Future.result",
            *(f"multiprocessing.pool.Pool.{m}" for m in ("map", "starmap", "apply", "join")),
            *(f"multiprocessing.pool.ThreadPool.{m}" for m in ("map", "starmap", "apply", "join")),
            "multiprocessing.pool.AsyncResult.get", "multiprocessing.pool.AsyncResult.wait",
        ),
        polls={
            **{f"{q}.get": (0, 1) for q in ("queue.Queue", "queue.LifoQueue", "queue.PriorityQueue",
                                          "queue.SimpleQueue", "multiprocessing.Queue",
                                          "multiprocessing.JoinableQueue", "multiprocessing.queues.Queue",
                                          "multiprocessing.queues.JoinableQueue")},
            **{f"{q}.put": (1, 2) for q in ("queue.Queue", "queue.LifoQueue", "queue.PriorityQueue",
                                          "queue.SimpleQueue", "multiprocessing.Queue",
                                          "multiprocessing.JoinableQueue", "multiprocessing.queues.Queue",
                                          "multiprocessing.queues.JoinableQueue")},
            **{n: (None, 0) for n in ("threading.Event.wait", "threading.Condition.wait", "threading.Barrier.wait",
                                     "threading.Thread.join", "multiprocessing.Process.join",
                                     "multiprocessing.Event.wait", "multiprocessing.Barrier.wait",
                                     "concurrent.futures.Future.result", "multiprocessing.pool.AsyncResult.get",
                                     "multiprocessing.pool.AsyncResult.wait")},
            **{n: (0, 1) for n in ("threading.Lock.acquire", "threading.RLock.acquire",
                                  "threading.Semaphore.acquire", "threading.BoundedSemaphore.acquire",
                                  "threading.Condition.acquire", "multiprocessing.Lock.acquire",
                                  "multiprocessing.RLock.acquire", "multiprocessing.Semaphore.acquire")},
            "threading.Condition.wait_for": (None, 1),
            "concurrent.futures.wait": (None, 1),
        },
        no_fix=("concurrent.futures.as_completed",),
    ),
    Family(
        "saves",
        calls=(
            "torch.save", "torch.load", "torch.serialization.save", "torch.serialization.load",
            "safetensors.torch.save_file", "safetensors.torch.load_file", "safetensors.torch.save_model",
            "safetensors.numpy.save_file",
            "numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt", "numpy.load", "numpy.loadtxt",
            "pickle.dump", "pickle.load", "json.dump", "json.load",
            "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.move", "shutil.rmtree",
            "shutil.make_archive", "shutil.unpack_archive",
        ),
    ),
    Family(
        "ray",
        # runtime_guard's sync helpers (SHD403's fix in sync code) block exactly as ray.get does: a coroutine
        # that reaches one through a sync function still stalls its loop
        calls=("ray.get", "ray.wait", "ray.util.queue.Queue.get", "ray.util.queue.Queue.put",
               "runtime_guard.ray.interruptible_get", "runtime_guard.ray.interruptible_wait"),
        polls={"ray.get": (None, None), "ray.wait": (None, None),
               "runtime_guard.ray.interruptible_get": (None, None), "runtime_guard.ray.interruptible_wait": (None, None),
               "ray.util.queue.Queue.get": (0, 1), "ray.util.queue.Queue.put": (1, 2)},
    ),
)

FAMILY_NAMES: tuple[str, ...] = tuple(f.name for f in FAMILIES)

#: Generator functions: calling one does no I/O, iterating does. Flagged only where the
#: coroutine consumes the result itself (``for p in path.glob(...)``, ``list(...)``, ``next(...)``).
LAZY_CALLS = frozenset({"pathlib.Path.iterdir", "pathlib.Path.glob", "pathlib.Path.rglob", "pathlib.Path.walk",
                        "os.walk", "glob.iglob"})
#: Builtins that consume an iterable on the spot; and those that wrap it lazily.
CONSUMERS = frozenset({"builtins.list", "builtins.tuple", "builtins.set", "builtins.frozenset", "builtins.sorted",
                       "builtins.next", "builtins.any", "builtins.all", "builtins.sum", "builtins.min",
                       "builtins.max", "builtins.dict", "builtins.len"})
LAZY_WRAPPERS = frozenset({"builtins.enumerate", "builtins.zip", "builtins.map", "builtins.filter",
                           "builtins.reversed", "itertools.islice", "itertools.chain"})

#: Method names that save/export synchronously whatever the receiver, used when the
#: callee is not a function of this module ("saves" family).
SAVE_METHOD_NAMES = ("save_pretrained", "save_checkpoint", "save_checkpoints", "save_model", "save_models")

#: Methods of a ``TYPE.*`` entry that do no I/O.
NON_IO_METHODS = frozenset({"mount", "close", "__enter__", "__exit__", "headers", "auth", "build_request",
                            "clear", "connection_from_url", "connection_from_host"})

#: Calls that take something from a source shared with other threads or processes, and what
#: they take. Moved into a worker thread (``await asyncio.to_thread(q.get)``), such a call goes
#: on when the awaiting task is cancelled: the thread still takes the item, and since nobody
#: awaits the result any more, what it took is lost (a queue item, bytes of a pipe or socket,
#: a child's exit status) or never given back (a lock, a semaphore permit). SHD301 reports
#: them without a fix. Socket and ``multiprocessing.connection.Connection`` receives are not in
#: the vocabulary; they are listed for ``extra-blocking-calls``.
_QUEUE_GETS = ("queue.Queue", "queue.LifoQueue", "queue.PriorityQueue", "queue.SimpleQueue",
               "multiprocessing.Queue", "multiprocessing.JoinableQueue", "multiprocessing.SimpleQueue",
               "multiprocessing.queues.Queue", "multiprocessing.queues.JoinableQueue",
               "multiprocessing.queues.SimpleQueue", "ray.util.queue.Queue")
CONSUMING: dict[str, str] = {
    **{f"{q}.get": "the next item" for q in _QUEUE_GETS},
    **{f"{FILE}.{m}": "the data it reads" for m in ("read", "read1", "readinto", "readline", "readlines")},
    "builtins.input": "the line it reads",
    "subprocess.Popen.communicate": "the child's output",
    **{f"os.{w}": "the child's exit status" for w in ("wait", "wait3", "wait4", "waitpid", "waitid")},
    **{f"socket.socket.{m}": "the data it receives" for m in ("recv", "recv_into", "recvfrom", "recvfrom_into",
                                                              "recvmsg", "recvmsg_into")},
    "socket.socket.accept": "the connection it accepts",
    **{f"multiprocessing.connection.Connection.{m}": "the message it receives"
       for m in ("recv", "recv_bytes", "recv_bytes_into")},
    **{f"{t}.acquire": "the lock, never released" for t in (
        "threading.Lock", "threading.RLock", "threading.Condition", "multiprocessing.Lock", "multiprocessing.RLock")},
    **{f"{t}.acquire": "a permit, never released" for t in (
        "threading.Semaphore", "threading.BoundedSemaphore", "multiprocessing.Semaphore")},
}

#: flake8-async / ruff ``ASYNC`` codes that flag the same blocking calls, by family (old and
#: new numbering: ASYNC100-102 before the split, ASYNC210-251 after). ``# noqa: ASYNC251`` or
#: ``# type: ignore[ASYNC101]`` on a call's line says the block is meant: SHD301 honours it.
ASYNC_CODES: dict[str, frozenset[str]] = {
    "http": frozenset({"ASYNC100", "ASYNC210", "ASYNC211", "ASYNC212"}),
    "processes": frozenset({"ASYNC101", "ASYNC102", "ASYNC220", "ASYNC221", "ASYNC222"}),
    "files": frozenset({"ASYNC101", "ASYNC230", "ASYNC231", "ASYNC232", "ASYNC250"}),
    "paths": frozenset({"ASYNC240"}),
    "sleeps": frozenset({"ASYNC101", "ASYNC251"}),
}


def family_of(name: str) -> str | None:
    """The family whose vocabulary holds ``name`` (a qualified name or ``.method``), or None."""
    if name.startswith("."):
        return "saves" if name[1:] in SAVE_METHOD_NAMES else None
    for fam in FAMILIES:
        for call in fam.calls:
            if call == name or call.endswith(".*") and name.startswith(call[:-1]) and "." not in name[len(call) - 1:]:
                return fam.name
    return None
