"""The result cache under ``.shutdown_lint_cache/`` in the project root.

One index file per (tool version, effective settings), ``results-<key>.bin``, maps an
absolute path to ``(mtime_ns, size, sha256, result)``. A warm run only ``stat()``s each
file; a file whose stat changed but whose content hash did not (a ``touch``, a checkout) is
re-hashed by the worker and still served from the cache. Results are stored without their
display path, which depends on the working directory of the run.

The index is what a warm run spends its time loading, so it is compact: ``marshal`` data
(no code objects: dicts, tuples, strings, bytes, ints), the digest as 32 bytes, and a
result with nothing to report (most files) as just its stage string instead of a dict; a
warm run makes no object for such a file. The payload is framed by a magic line, its length
and its CRC-32: a truncated, torn or otherwise damaged file is detected before ``marshal``
reads it. A corrupt or unreadable cache is a warning and is ignored (the run re-lints and
rewrites it); writes are atomic (a temporary file renamed over the index), so a concurrent
run sees the old index or the new one, never a mix.

A second frame after the entries holds the run record of the run that wrote the index
(``_run_record``): its discovered files (paths and stats, as one string and one ``marshal``
string) and what ``count_clean`` gives for them against the entries written beside it (the
counts by stage, the positions of the other files and their entries). A warm run that
discovered the same files with the same stats gets the same answer from the record, and reads
the entries frame only if something asks for another file (``entries`` is loaded on first use).
"""

from __future__ import annotations

import os
from operator import itemgetter
from sys import intern as sys_intern

from . import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Optional

CACHE_DIR_NAME = ".shutdown_lint_cache"
_FORMAT = 2
#: the first bytes of an index file; then the payload's CRC-32 and length (4 + 8 bytes, little endian)
_MAGIC = b"SHDLINT-CACHE\x02\n"
_HEADER = len(_MAGIC) + 12

#: the keys a stored result dict has when it has nothing to report (see ``_compact``)
_CLEAN = {"path": "", "diagnostics": [], "error": None, "warnings": [], "cached": False, "parsed": False,
          "deps": {}}


def write_json_atomic(path: str, data: Any, cache_dir: str) -> Optional[str]:
    """Write ``data`` as JSON to ``path`` atomically; returns a warning or None."""
    import json

    return write_atomic(path, json.dumps(data, separators=(",", ":")).encode(), cache_dir)


def ensure_dir(cache_dir: str) -> None:
    if os.path.isdir(cache_dir):
        return
    os.makedirs(cache_dir, exist_ok=True)
    # keep the cache out of version control and backups
    with open(os.path.join(cache_dir, ".gitignore"), "w") as fh:
        fh.write("# created by shutdown-lint\n*\n")
    with open(os.path.join(cache_dir, "CACHEDIR.TAG"), "w") as fh:
        fh.write("Signature: 8a477f597d28d172789f06886806bc55\n# shutdown-lint cache\n")


def pack(data: Any) -> bytes:
    """``data`` (plain values only) as a framed ``marshal`` payload."""
    import marshal
    import zlib

    payload = marshal.dumps(data)
    return _MAGIC + zlib.crc32(payload).to_bytes(4, "little") + len(payload).to_bytes(8, "little") + payload


def unpack(raw: bytes) -> Any:
    """The inverse of ``pack``; ValueError for anything that is not an intact frame."""
    import marshal
    import zlib

    if len(raw) < _HEADER or not raw.startswith(_MAGIC):
        raise ValueError("not a shutdown-lint cache file")
    crc = int.from_bytes(raw[len(_MAGIC):len(_MAGIC) + 4], "little")
    size = int.from_bytes(raw[len(_MAGIC) + 4:_HEADER], "little")
    payload = memoryview(raw)[_HEADER:]
    if len(payload) != size:
        raise ValueError(f"truncated ({len(payload)} of {size} bytes)")
    if zlib.crc32(payload) != crc:
        raise ValueError("checksum mismatch")
    try:
        return marshal.loads(payload)
    except (EOFError, TypeError) as e:  # cannot happen for an intact frame written by pack
        raise ValueError(str(e)) from None


def write_atomic(path: str, data: bytes, cache_dir: str) -> Optional[str]:
    """Write ``data`` to ``path`` atomically; returns a warning or None."""
    from .source import replace_atomically

    try:
        ensure_dir(cache_dir)
        # no fsync: a cache lost to a power cut is only a slower next run
        replace_atomically(path, data, fsync=False)
    except OSError as e:
        return f"cache not written ({path}): {e.strerror or e}"
    return None


def settings_key(fingerprint: str) -> str:
    """What an index is for: the format, the tool's version and the settings' fingerprint."""
    return f"{_FORMAT}|{__version__}|{fingerprint}"


def index_name(key: str) -> str:
    """The index file of ``key``: named by a 64-bit checksum of it (CRC-32 and Adler-32; not a
    digest, whose hashlib import would cost a warm run more than reading the index). The file
    holds ``key`` itself and is used only when it matches: two keys with the same name (vanishingly
    unlikely) would take turns with the file, never read each other's results."""
    import zlib

    data = key.encode()
    return f"results-{zlib.crc32(data):08x}{zlib.adler32(data):08x}.bin"


def sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


class Cache:
    """The result index of one configuration. ``entries`` maps an absolute path to
    ``(mtime_ns, size, sha256 digest bytes, result)``, ``result`` being a stage string (a
    file with nothing to report) or the stored result dict (see ``_compact``)."""

    def __init__(self, cache_dir: str, fingerprint: str) -> None:
        self.dir = cache_dir
        self.key = settings_key(fingerprint)
        self.path = os.path.join(cache_dir, index_name(self.key))
        #: the entries (``entries``), None until read: the entries frame not read yet (``_frame``)
        self._entries: Optional[dict[str, Any]] = {}
        self._frame: Optional[memoryview] = None
        #: the index's run record (``_run_record``), and the entries it holds once it served a run
        self._record: Optional[tuple] = None
        self._hits: Optional[dict] = None
        #: count_clean found no record: the next save writes one (even with no new entry)
        self.record_stale = False
        self.warnings: list[str] = []
        self.dirty = False
        #: the project digests a warm run computed (``index.store.project_digest``); only a
        #: run's own Cache holds it (the language server's caches live across edits)
        self.digests: dict[str, str] = {}
        #: the files ``count_clean`` was given (``discovery.SourceFile``: their stats), with their
        #: ``files_key`` (``Seen.key``: the project snapshot compares it too, ``index.store``)
        self.seen: list = []
        #: the folders discovery walked, with their stats (``discovery.Discovery.folders``)
        self.folders: dict = {}
        self._load()

    @property
    def entries(self) -> dict[str, Any]:
        """path -> entry; the entries frame is read here the first time it is needed."""
        if self._entries is None:
            self._entries = {}
            frame, self._frame = self._frame, None
            data = _unframe(frame) if frame is not None else None  # its checksum was checked by _load
            if isinstance(data, dict) and data.get("format") == _FORMAT and isinstance(data.get("files"), dict) \
                    and data.get("key") == self.key:
                self._entries = data["files"]
        return self._entries

    @entries.setter
    def entries(self, value: dict[str, Any]) -> None:
        self._entries, self._frame, self._hits = value, None, None

    def _load(self) -> None:
        try:
            with open(self.path, "rb") as fh:
                raw = fh.read()
        except FileNotFoundError:
            return
        except OSError as e:
            self.warnings.append(f"warning: ignoring unreadable cache {self.path}: {e.strerror or e}")
            return
        try:
            first, record = _frames(raw)
            data = unpack(raw) if record is None else None
        except ValueError as e:
            self.warnings.append(f"warning: ignoring unreadable cache {self.path}: {e}")
            return
        if record is not None:  # the entries frame is read when needed (``entries``)
            got = _record_of(record, self.key)
            if got is None:
                self.warnings.append(f"warning: ignoring corrupt cache {self.path}")
                return
            if got is not False:  # (False: another configuration's index under the same name)
                self._entries, self._frame, self._record = None, first, got
            return
        if (not isinstance(data, dict) or data.get("format") != _FORMAT
                or not isinstance(data.get("files"), dict)):
            self.warnings.append(f"warning: ignoring corrupt cache {self.path}")
            return
        if data.get("key") != self.key:
            return  # another configuration's index under the same name: start afresh (see index_name)
        self.entries = data["files"]

    def _entry(self, abspath: str) -> Any:
        """The stored entry of ``abspath`` (the run record's, while the entries are not read)."""
        if self._entries is None and self._hits is not None:
            entry = self._hits.get(abspath)
            if entry is not None:
                return entry
        return self.entries.get(abspath)

    def hit(self, abspath: str, mtime_ns: int, size: int) -> Any:
        """The stored result when the file's stat matches: a stage string (nothing to report)
        or the result dict; None on a miss (or an entry of the wrong shape)."""
        entry = self._entry(abspath)
        if (type(entry) is tuple and len(entry) == 4 and entry[0] == mtime_ns and entry[1] == size
                and type(entry[3]) in (str, dict)):
            return entry[3]
        return None

    def count_clean(self, files: list, counts: dict[str, int]) -> list:
        """The warm path in bulk: ``files`` are ``(display, abspath, mtime_ns, size, ...)``
        tuples (``discovery.SourceFile``). A file whose stamp matches an entry with nothing to
        report is only counted, by stage, in ``counts``; the others are returned, in order."""
        seen = self.seen = Seen(files)  # their stats serve a dependency on the project's files (``index.store``)
        record = self._record
        if record is not None and self._entries is None:
            # the run that wrote the index discovered the same files with the same stats: the entries
            # beside its record are the ones it counted them against, so the answer is its answer
            rest = record[3]
            if seen.key == (record[0], record[1]) and (not rest or (rest[0] >= 0 and rest[-1] < len(files))):
                for stage, n in record[2].items():
                    counts[stage] = counts.get(stage, 0) + n
                self._hits = record[4]
                return [files[i] for i in rest]
        # an index with no record gets one (an index another run's files wrote keeps theirs until it changes)
        self.record_stale = record is None
        clean, rest = _clean_and_rest(files, self.entries)
        for stage, n in clean.items():
            counts[stage] = counts.get(stage, 0) + n
        return [files[i] for i in rest]

    def lookup(self, abspath: str, st: os.stat_result) -> Optional[dict]:
        """The stored result dict when the file's stat matches, else None."""
        result = self.hit(abspath, st.st_mtime_ns, st.st_size)
        return _expand(result) if result is not None else None

    def entry(self, abspath: str) -> Optional[list]:
        """``[mtime_ns, size, sha256 hex digest, result dict]`` whatever the file's stat, or None."""
        entry = self._entry(abspath)
        if not _valid(entry):
            return None
        return [entry[0], entry[1], entry[2].hex(), _expand(entry[3])]

    def store(self, abspath: str, mtime_ns: int, size: int, digest: str, result: dict) -> None:
        self.entries[abspath] = (mtime_ns, size, bytes.fromhex(digest), _compact(result))
        self.dirty = True

    def save(self, live: Optional[set[str]] = None, seen: Optional[list] = None) -> Optional[str]:
        """Write the index if it changed, or if ``seen`` is given and the run record did not serve
        (``record_stale``). ``live``: paths known to exist (seen by this run); the others are
        checked, so the index forgets files that are gone. ``seen``: the run's files, as given to
        ``count_clean``: the run record written beside the entries is theirs."""
        if not (self.dirty or (seen is not None and self.record_stale)):
            return None
        live = live or set()
        files = {p: e for p, e in self.entries.items() if p in live or os.path.exists(p)}
        try:
            data = pack({"format": _FORMAT, "version": __version__, "key": self.key, "files": files})
            if seen is not None:
                data += pack(_run_record(self.key, seen, files))
        except ValueError as e:  # a value marshal cannot write (a result is plain data: should not happen)
            return f"cache not written ({self.path}): {e}"
        return write_atomic(self.path, data, self.dir)


def read_index(path: str) -> dict[str, list]:
    """Every entry of an index file as ``[mtime_ns, size, sha256 hex digest, result dict]``
    (for tests and debugging). Raises ValueError for a damaged file, OSError."""
    with open(path, "rb") as fh:
        raw = fh.read()
    first, record = _frames(raw)
    data = unpack(raw) if record is None else _unframe(first)
    return {p: [e[0], e[1], e[2].hex(), _expand(e[3])] for p, e in data["files"].items() if _valid(e)}


_ABSPATH = itemgetter(1)  # discovery.SourceFile: (display, abspath, mtime_ns, size)
_MTIME = itemgetter(2)
_SIZE = itemgetter(3)
_RECORD_FORMAT = 2


class Seen(list):
    """A run's files as ``count_clean`` was given them, with their ``files_key`` (``key``), taken
    once: the run record and the project snapshot's record of the discovered files compare it.
    A copy of the caller's list, never changed."""

    __slots__ = ("key",)

    def __init__(self, files: list) -> None:
        super().__init__(files)
        self.key = files_key(self)


def files_key(files: list) -> tuple[str, bytes]:
    """``discovery.SourceFile`` tuples as ``(their absolute paths joined by NUL, their stats)``:
    equal for two lists exactly when the paths and the stats are the same, in the same order (a
    path holds no NUL). The stats are ``marshal`` version 0 (no references, whose marks depend on
    the objects, not the values) of the mtimes, then the sizes."""
    import marshal

    return "\0".join(map(_ABSPATH, files)), marshal.dumps((list(map(_MTIME, files)), list(map(_SIZE, files))), 0)


def _frames(raw: bytes) -> tuple[memoryview, Any]:
    """The entries frame of an index file (checked: magic, length, CRC-32; not read) and the
    payload of the run record's frame after it (None: the file has one frame, which ``unpack``
    checks). ValueError for anything else."""
    import zlib

    if len(raw) < _HEADER or not raw.startswith(_MAGIC):
        raise ValueError("not a shutdown-lint cache file")
    end = _HEADER + int.from_bytes(raw[len(_MAGIC) + 4:_HEADER], "little")
    if end >= len(raw):
        return memoryview(raw), None
    record = unpack(raw[end:])  # the record's frame: intact, and the last thing in the file
    view = memoryview(raw)
    if zlib.crc32(view[_HEADER:end]) != int.from_bytes(raw[len(_MAGIC):len(_MAGIC) + 4], "little"):
        raise ValueError("checksum mismatch")
    return view[:end], record


def _unframe(frame: memoryview) -> Any:
    """The payload of a frame ``_frames`` checked."""
    import marshal

    return marshal.loads(frame[_HEADER:])


def _clean_and_rest(files: list, entries: dict) -> "tuple[dict[str, int], list[int]]":
    """``count_clean``'s test, for ``_run_record`` too: the files (``(display, abspath,
    mtime_ns, size, ...)``) whose stamp matches an entry with nothing to report, counted by stage,
    and the positions of the others, in order. Inline per file: it runs over every discovered file."""
    counts: dict[str, int] = {}
    rest: list[int] = []
    get = entries.get
    for i, f in enumerate(files):
        entry = get(f[1])
        if type(entry) is tuple and len(entry) == 4 and type(entry[3]) is str and entry[0] == f[2] \
                and entry[1] == f[3]:
            stage = entry[3] or "unknown"
            counts[stage] = counts.get(stage, 0) + 1
        else:
            rest.append(i)
    return counts, rest


def _run_record(key: str, seen: list, entries: dict) -> tuple:
    """What ``count_clean(seen)`` gives against ``entries``, for the index written with them:
    ``(format, key, joined paths, stats, counts by stage, positions of the other files, their
    entries)`` (the same test as ``count_clean``'s, on the entries as written)."""
    counts, rest = _clean_and_rest(seen, entries)
    hits: dict = {}
    for i in rest:
        entry = entries.get(seen[i][1])
        if entry is not None:
            hits[seen[i][1]] = entry
    paths, stats = seen.key if isinstance(seen, Seen) else files_key(seen)
    return _RECORD_FORMAT, key, paths, stats, counts, rest, hits


def _record_of(data: Any, key: str) -> Any:
    """A run record's ``(joined paths, stats, counts, rest, hits)``; False for another key's; None
    for anything else."""
    if not (type(data) is tuple and len(data) == 7 and data[0] == _RECORD_FORMAT):
        return None
    if data[1] != key:
        return False
    _, _, paths, stats, counts, rest, hits = data
    if not (type(paths) is str and type(stats) is bytes and type(counts) is dict and type(rest) is list
            and type(hits) is dict and all(type(k) is str and type(n) is int for k, n in counts.items())
            and all(type(i) is int for i in rest)):
        return None
    return paths, stats, counts, rest, hits


def _valid(entry: Any) -> bool:
    return (type(entry) is tuple and len(entry) == 4 and type(entry[0]) is int and type(entry[1]) is int
            and type(entry[2]) is bytes and type(entry[3]) in (str, dict))


def _compact(result: dict) -> Any:
    """What the index stores for a (path-stripped) result dict: its stage alone when it has
    nothing else to say, else the dict."""
    stage = result.get("stage", "")
    if type(stage) is str and all(k == "stage" or (k in _CLEAN and v == _CLEAN[k]) for k, v in result.items()):
        return sys_intern(stage)
    return result


def _expand(result: Any) -> dict:
    return {**_CLEAN, "diagnostics": [], "warnings": [], "deps": {}, "stage": result} if type(result) is str \
        else result


def strip_path(result: dict, path: str) -> dict:
    """A FileResult dict made independent of the display path (for storing)."""
    out = dict(result)
    out["path"] = ""
    out["diagnostics"] = [{**d, "path": ""} for d in result.get("diagnostics", [])]
    out["warnings"] = [_unprefix(w, path) for w in result.get("warnings", [])]
    if out.get("error"):
        out["error"] = _unprefix(out["error"], path)
    for key in ("fixed", "diff", "written"):
        out.pop(key, None)
    out["cached"] = False
    return out


def restore_path(result: dict, path: str) -> dict:
    out = dict(result)
    out["path"] = path
    out["diagnostics"] = [{**d, "path": path} for d in result.get("diagnostics", [])]
    out["warnings"] = [_prefix(w, path) for w in result.get("warnings", [])]
    if out.get("error"):
        out["error"] = _prefix(out["error"], path)
    out["cached"] = True
    return out


_MARK = "\x00PATH\x00"


def _unprefix(text: str, path: str) -> str:
    return _MARK + text[len(path):] if text.startswith(path) else text


def _prefix(text: str, path: str) -> str:
    return path + text[len(_MARK):] if text.startswith(_MARK) else text
