"""Module summaries in the cache (``index-<version>.json`` in the cache folder), and the
check that tells a warm run which cached results depend on a module that changed.

An entry is ``abspath -> [mtime_ns, size, sha256, summary]``: an unchanged stat is trusted,
a changed stat with the same content hash reuses the summary. A result's dependencies are
``abspath -> [mtime_ns, size, summary digest]`` of the other modules its analysis read;
``stale`` checks them on a warm run (this package imports neither libcst nor the rules).

A dependency on a module's *text* (``[mtime_ns, size, TEXT + sha256 of the content]``) is
recorded where a search decided from the module's bytes, without its summary, that it holds
nothing the search needs (``ProjectIndex.no_match_in``): any change of content re-lints.

A search of a module's *importers* (``ProjectIndex.importers``) depends on every project file:
any file may gain or lose an import of the module, or the words the search asks of its text.
It records one dependency on the project's files (``project_key``: the roots walked ->
``[0, 0, PROJECT_DIGEST + digest of each file's path, mtime and size]``): a file added, removed,
renamed or edited under those roots re-lints the results that searched importers. The warm run
checks it only when a result has such a dependency, once per run (``memo``), through a snapshot
of the walk kept in the cache folder (``_Snapshot``; the cold run that takes the stamp writes it, so
the first warm run lists no folder either): while every folder walked has its stamp
(inode, mtime and ctime: any entry added, removed or renamed changes it), the files are the
snapshot's and only their stats are compared, most of them with the stats the run's discovery
took; a folder whose stamp changed is listed again.
"""

from __future__ import annotations

import os
from itertools import repeat
from operator import attrgetter, itemgetter

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# ``.summary`` (ast, hashlib, json) is imported where a module is summarised or a store is
# read: a warm run's dependency check (``stale``) only stats the dependencies


#: folders not walked for project files (unless they are packages: ``app/dist/__init__.py``)
SKIP_DIRS = {"__pycache__", "node_modules", "build", "dist", "site-packages", "venv", ".venv"}
#: The index never reads more project files than this to find a module's importers.
MAX_SCAN = 20000


def walk_roots(roots: list) -> list[str]:
    """The project's ``.py`` files under ``roots`` (``(folder, top-level names or None)``), sorted:
    ``ProjectIndex.project_files``, and the warm run's check of a dependency on them."""
    return [f[0] for f in scan_roots(roots)]


def scan_roots(roots: list, stats: bool = False, known: Optional[dict] = None, lister=None) -> list:
    """``walk_roots`` as ``(path, mtime_ns, size)`` (0, 0 without ``stats``; -1, -1 for a file
    that cannot be stat'ed), in one pass of ``os.scandir``: the folders ``os.walk`` would visit
    (symbolic links to folders not followed, unreadable folders skipped), in its order.
    ``known``: path -> a tuple ending in (mtime_ns, size) this run has stat'ed already (its
    discovered files). ``lister``: folder -> its listing (see ``_list_dir``; a ``_Listings``
    serves the unchanged folders of a snapshot)."""
    return _scan_roots(roots, stats, known, lister or _list_dir)[0]


def _scan_roots(roots: list, stats: bool, known: Optional[dict], lister) -> tuple[list, bool]:
    """``scan_roots``, and whether a root had more than ``MAX_SCAN`` files (its walk was cut)."""
    found: list = []
    cut = False
    for root, tops in roots:
        try:
            _scan(root, tops, found, stats, True, known or {}, lister)
        except _Full:
            cut = True
    found.sort()
    out: list = []
    last = None
    for f in found:  # the files of roots that overlap are met twice
        if f[0] != last:
            out.append(f)
            last = f[0]
    return out[:MAX_SCAN], cut


class _Full(Exception):
    """More than ``MAX_SCAN`` files found under one root: that root's walk ends."""


def _list_dir(d: str) -> Optional[tuple]:
    """``(names, folders, exact)`` of folder ``d`` now, in its listing's order: the names of its
    ``.py`` entries that are not folders, the names of its folders that are not symbolic links,
    and whether that is a function of ``d``'s own entries alone (False when a ``.py`` entry is a
    symbolic link, whose target may turn into a folder, or an entry's type could not be read).
    None: ``d`` cannot be listed (as ``os.walk``: the folder is skipped)."""
    try:
        it = os.scandir(d)
    except OSError:
        return None
    names: list = []
    dirs: list = []
    exact = True
    with it:
        while True:
            try:
                e = next(it)
            except StopIteration:
                break
            except OSError:
                return None
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
                exact = False
            if is_dir:
                try:
                    if e.is_symlink():
                        continue  # as os.walk: listed, not followed
                except OSError:
                    exact = False
                    continue
                dirs.append(e.name)
            elif e.name.endswith(".py"):
                names.append(e.name)
                if exact:
                    try:
                        exact = not e.is_symlink()
                    except OSError:
                        exact = False
    return names, dirs, exact


def _scan(d: str, tops, found: list, stats: bool, top: bool, known: dict, lister) -> None:
    got = lister(d)
    if got is None:
        return
    names, dirs = got[0], got[1]
    pre = d if not d or d.endswith(os.sep) else d + os.sep  # os.path.join(d, name) is pre + name
    if names and not (top and tops is not None):
        if stats:
            get = known.get
            for name in names:
                p = pre + name
                seen = get(p)
                if seen is not None and seen[-2] is not None:
                    found.append((p, seen[-2], seen[-1]))
                    continue
                try:
                    st = os.stat(p)
                    found.append((p, st.st_mtime_ns, st.st_size))
                except OSError:
                    found.append((p, -1, -1))
        else:
            found += [(pre + name, 0, 0) for name in names]
    if len(found) > MAX_SCAN:
        raise _Full
    for name in dirs:
        if top and tops is not None and name not in tops:
            continue
        # `build/`, `dist/` are artefacts, unless they are packages (`app/dist/__init__.py`)
        if name.startswith(".") or (name in SKIP_DIRS and not _is_package(lister, pre + name + os.sep + "__init__.py")):
            continue
        _scan(pre + name, tops, found, stats, False, known, lister)


#: a folder's stamp in a snapshot: its identity and the times its entries' changes set
_STAMP = attrgetter("st_ino", "st_dev", "st_mtime_ns", "st_ctime_ns")


def _is_package(lister, init: str) -> bool:
    probe = getattr(lister, "probe", None)
    return probe(init) if probe is not None else os.path.isfile(init)


#: A folder's listing is kept in a snapshot only when its stat is older than this (ns) at the
#: start of the walk that listed it. A folder's mtime and ctime are set by a clock that ticks
#: in steps (the kernel's coarse clock; whole seconds on some file systems, 2 s on FAT): an
#: entry added in the same step as the listing would leave the stamp as listed. Once the stamp
#: is older than any step, every later change of the folder's entries gives it another stamp.
RACY_NS = 3_000_000_000


class _Listings:
    """The lister of a walk that reuses a snapshot of the folders' listings (``{folder: (stamp,
    names, folders)}``, stamp: the folder's ``(st_ino, st_dev, st_mtime_ns, st_ctime_ns)``): a
    folder whose stat is the snapshot's is not listed again. Adding, removing or renaming an
    entry sets the folder's mtime and ctime (ctime also when the mtime is set back, a chmod, a
    folder replaced: another inode), so an unchanged stamp is an unchanged listing, provided
    the listing was taken after the stamp's clock step (``RACY_NS``). ``new``: the snapshot
    for this walk's folders, in the order first met; ``complete``: it holds every folder the
    walk listed; ``probes``: the ``(path, isfile)`` of the ``__init__.py`` files the walk
    looked for (``SKIP_DIRS``)."""

    def __init__(self, old: dict, now_ns: int) -> None:
        self.old = old
        self.new: dict = {}
        self.limit = now_ns - RACY_NS
        self.complete = True
        self.fresh = False  # a listing was stored that the old snapshot did not have
        self.listed = 0  # folders listed (not served by the snapshot)
        self.probes: list = []

    def __call__(self, d: str) -> Optional[tuple]:
        try:
            st = os.stat(d)  # before the listing: a change after it gives another stamp
        except OSError:
            st = None
        else:
            stamp = _STAMP(st)
            old = self.new.get(d) or self.old.get(d)
            if old is not None and old[0] == stamp:
                self.new[d] = old
                return old[1], old[2]
        self.listed += 1
        got = _list_dir(d)
        if got is not None and got[2] and st is not None and st.st_mtime_ns < self.limit \
                and st.st_ctime_ns < self.limit:
            self.new[d] = (stamp, tuple(got[0]), tuple(got[1]))
            self.fresh = True
        else:
            self.complete = False
        return got

    def probe(self, path: str) -> bool:
        found = os.path.isfile(path)
        self.probes.append((path, found))
        return found


#: a dependency on the project's files: its key starts with this (a path never does), then the roots
PROJECT = "\x00project\x00"
#: its stamp's digest starts with this; ``PROJECT_UNKNOWN``: a file list the warm run cannot rebuild
PROJECT_DIGEST = "#"
PROJECT_UNKNOWN = "!"


def project_key(roots: list) -> str:
    """The dependency key of the files walked from ``roots`` (``(folder, top names or None)``)."""
    return PROJECT + "\x1f".join(d + "\x1e" + ("*" if only is None else ",".join(sorted(only)))
                                  for d, only in roots)


def _roots_of(key: str) -> list:
    roots = []
    for item in key[len(PROJECT):].split("\x1f") if key != PROJECT else ():
        d, _, only = item.partition("\x1e")
        roots.append((d, None if only == "*" else frozenset(only.split(",")) if only else frozenset()))
    return roots


def files_digest(files: list) -> str:
    """``PROJECT_DIGEST`` + a checksum of ``scan_roots(..., stats=True)``: each file's path,
    mtime and size. Two 32-bit checksums (CRC-32 and Adler-32): no hashlib on the warm path."""
    import marshal
    import zlib

    # version 0: no back-references or interning marks, which depend on the objects, not the values
    data = marshal.dumps(files, 0)
    return f"{PROJECT_DIGEST}{len(files)}:{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def project_digest(key: str, memo: Optional[dict] = None, known=None, snap_dir: Optional[str] = None,
                   folders: Optional[dict] = None, hold: bool = True) -> str:
    """The digest of the files under the roots of ``key`` now (``memo``: a run's, keyed by ``key``;
    ``known()``: the stats the run took of its discovered files, as ``path -> (mtime_ns, size)``
    or as the run's ``discovery.SourceFile`` tuples). ``snap_dir``: a cache folder that keeps a
    snapshot of the walk (``_Snapshot``): while no folder's stamp changed the files are the
    snapshot's and only their stats are compared, else the folders whose stamp is unchanged are
    not listed again. ``folders``: folder -> the ``os.stat_result`` this run took of it (its
    discovery's walk), compared instead of a new ``stat``. ``hold``: the snapshot stays in this
    process's memory for its next check (False: a run that takes the stamp once, the cold run's
    worker, writes the snapshot for the next run and keeps nothing: about 2 MB for 4,864 files)."""
    if memo is not None and key in memo:
        return memo[key]
    found = _digest(key, known() if known is not None else None, snap_dir, folders)
    if not hold and snap_dir is not None:
        _snapshots.pop((snap_dir, key), None)
    if memo is not None:
        memo[key] = found
    return found


_ABSPATH = itemgetter(1)  # discovery.SourceFile: (display, abspath, mtime_ns, size)


def _known_dict(seen) -> Optional[dict]:
    """``known()``'s answer as ``path -> (mtime_ns, size)``."""
    if seen is None or isinstance(seen, dict):
        return seen
    return dict(zip(map(_ABSPATH, seen), map(itemgetter(2, 3), seen)))


def _digest(key: str, seen, snap_dir: Optional[str], folders: Optional[dict] = None) -> str:
    roots = _roots_of(key)
    if snap_dir is None:
        return files_digest(scan_roots(roots, True, _known_dict(seen)))
    import time

    now = time.time_ns()  # before any folder is stat'ed or listed (see ``RACY_NS``)
    snap = _snapshot(snap_dir, key)
    if snap.whole is not None:
        found = snap.check(seen, snap_dir, key, folders)
        if found is not None:
            return found
    known = _known_dict(seen)
    old = snap.listings(snap_dir, key)
    lister = _Listings(old, now)
    files, cut = _scan_roots(roots, True, known, lister)
    if cut:  # which files a cut walk keeps depends on the listings' order: as it is now
        return files_digest(scan_roots(roots, True, known))
    found = files_digest(files)
    folders = None
    if lister.complete:  # every folder's listing is proven by its stamp: the files are a function of the stamps
        # roots that overlap (a package named on the command line: it and its parent) walk the same
        # folders again, asking the same probes: each (path, answer) is kept once, a warm run checks
        # each path once (ray+torch walked: 1,494 probes, 773 paths)
        folders = ("\0".join(lister.new), [v[0] for v in lister.new.values()], list(dict.fromkeys(lister.probes)))
    kept = snap.whole is not None and snap.files is not None and snap.files[0] == snap.whole[0]
    if lister.fresh or len(lister.new) != len(old) or (
            folders is not None and not (kept and folders == snap.whole[1:4])):
        snap.dirs = lister.new
        snap.keep(snap_dir, key, folders, files, seen, known, found)
    return found


def _stats_bytes(stats: list) -> Optional[bytes]:
    """``(mtime_ns, size)`` pairs as one array of 64-bit integers (compared in one go), or None
    for a value that is not one."""
    import struct

    try:
        return struct.pack(f"{2 * len(stats)}q", *[n for st in stats for n in st])
    except (struct.error, TypeError):
        return None


def _seen_key(seen: list) -> tuple[str, bytes]:
    """The discovered files' ``cache.files_key`` (taken once a run: ``cache.Seen``)."""
    key = getattr(seen, "key", None)
    if key is None:
        from ..cache import files_key

        key = files_key(seen)
    return key


def _file_stat(path: str) -> tuple:
    try:
        st = os.stat(path)
    except OSError:
        return -1, -1
    return st.st_mtime_ns, st.st_size


class _Snapshot:
    """What a warm run keeps of a walk of the project's roots, in the cache folder: two files a
    project key, each read only when needed.

    ``whole`` (the first file), when every folder the walk listed has its listing in ``dirs``:
    ``(id, folders, their stamps, probes, seen, extra, digest)``. While every folder has its
    stamp and every probe (``_Listings.probes``) its answer, the walk would list the same
    folders and find the same files: only the files' stats are left to compare. ``seen``: the
    discovered files (``cache.files_key``: their paths and stats) of the run that wrote it: when
    this run discovered the same files with the same stats, the files among them have theirs,
    and ``extra``, the other files' ``(path, mtime_ns, size)``, are stat'ed.

    ``dirs``, ``files`` (the second file): the folders' listings proven by their stamps
    (``_Listings``), and ``(id, files, their stats)``, the files of ``whole`` (the same ``id``):
    compared one by one when this run's discovered files are others."""

    __slots__ = ("whole", "dirs", "files")

    def __init__(self, whole: Optional[tuple] = None) -> None:
        self.whole = whole
        self.dirs: Optional[dict] = None
        self.files: Optional[tuple] = None

    def listings(self, snap_dir: str, key: str) -> dict:
        if self.dirs is None:
            got = _read_snapshot(snap_dir, key, ".dirs")
            self.dirs, self.files = {}, None
            if type(got) is tuple and len(got) == 2 and isinstance(got[0], dict) \
                    and all(map(_listing_entry, got[0].values())):
                self.dirs = got[0]
                if type(got[1]) is tuple and len(got[1]) == 3 and type(got[1][1]) is str \
                        and type(got[1][2]) is bytes:
                    self.files = got[1]
        return self.dirs

    def check(self, seen, snap_dir: str, key: str, stats: Optional[dict] = None) -> Optional[str]:
        """The digest when the walk would find the snapshot's files (see the class), else None."""
        try:
            return self._check(seen, snap_dir, key, stats)
        except (TypeError, ValueError, IndexError):  # an item of another shape (only read, never trusted)
            return None

    def _check(self, seen, snap_dir: str, key: str, stats: Optional[dict]) -> Optional[str]:
        wid, folders, stamps, probes, seen_rec, extra, digest = self.whole
        walked = folders.split("\0") if folders else []
        try:
            if stats:  # the run's discovery stat'ed (most of) them
                now = list(map(stats.get, walked))
                if None in now:
                    now = [st if st is not None else os.stat(d) for d, st in zip(walked, now)]
                if list(map(_STAMP, now)) != stamps:
                    return None
            elif list(map(_STAMP, map(os.stat, walked))) != stamps:
                return None
        except OSError:
            return None
        # an __init__.py that was no file (mostly __pycache__'s): a file now only if the path is there
        # (``os.access``: no stat result made; isfile implies it, whatever links are on the way)
        absent = [path for path, was in probes if not was]
        if any(map(os.access, absent, repeat(os.F_OK))) and any(map(os.path.isfile, absent)):
            return None
        if not all(map(os.path.isfile, [path for path, was in probes if was])):
            return None
        listed = seen is not None and not isinstance(seen, dict)
        if seen_rec is not None and listed:
            if _seen_key(seen) == seen_rec and all(_file_stat(f[0]) == (f[1], f[2]) for f in extra):
                return digest
        # other discovered files (or stats): the snapshot's files one by one
        self.listings(snap_dir, key)
        if self.files is None or self.files[0] != wid:
            return None
        paths = self.files[1].split("\0") if self.files[1] else []
        known = _known_dict(seen)
        now = list(map(known.get, paths)) if known else [None] * len(paths)
        for i, st in enumerate(now):
            if st is None or st[-2] is None:
                now[i] = _file_stat(paths[i])
        files = [(p, st[-2], st[-1]) for p, st in zip(paths, now)]
        found = digest if _stats_bytes(now) == self.files[2] else files_digest(files)
        if found != digest or listed:  # keep this run's files and stats for the next run
            self.keep(snap_dir, key, self.whole[1:4], files, seen, known, found)
        return found

    def keep(self, snap_dir: str, key: str, folders: Optional[tuple], files: list, seen, known: Optional[dict],
             digest: str) -> None:
        """Store this walk: ``folders`` (``(joined folders, stamps, probes)``, None when a folder's
        listing could not be kept), its ``files`` and ``digest``; ``seen``, ``known``: the run's
        discovered files. A write that fails only costs the next run a walk; a snapshot another
        run writes is as good (every part is proven by the stamps it holds, and the two files
        by their common id)."""
        import time

        from ..cache import pack, write_atomic

        self.whole = self.files = None
        if folders is not None:
            wid = f"{os.getpid()}:{time.time_ns()}"
            seen_rec, extra = None, []
            # not with a file discovery could not stat (None) or an odd value: the walk stat'ed those
            if seen is not None and not isinstance(seen, dict) \
                    and all(type(f[2]) is int and type(f[3]) is int for f in seen):
                seen_rec = _seen_key(seen)
                extra = [f for f in files if f[0] not in known]  # stat'ed by the walk
            stats = _stats_bytes([f[1:] for f in files])
            if stats is not None:
                self.whole = (wid, *folders, seen_rec, extra, digest)
                self.files = (wid, "\0".join(f[0] for f in files), stats)
        if not os.path.isdir(snap_dir):  # only the cache folder of a run that stores its results
            return
        write_atomic(_snapshot_path(snap_dir, key, ".dirs"),
                     pack((_snapshot_rules(), key, (self.dirs or {}, self.files))), snap_dir)
        write_atomic(_snapshot_path(snap_dir, key, ""), pack((_snapshot_rules(), key, self.whole)), snap_dir)


#: (cache folder, project key) -> the snapshot of the walk (a process's latest)
_snapshots: dict = {}
_SNAPSHOT_FORMAT = 3


def _snapshot_rules() -> tuple:
    """What else a snapshot's walk depended on: a snapshot written under other rules is not read."""
    return _SNAPSHOT_FORMAT, tuple(sorted(SKIP_DIRS)), MAX_SCAN, os.sep


def _snapshot_path(snap_dir: str, key: str, part: str) -> str:
    import zlib

    data = key.encode("utf-8", "surrogateescape")
    return os.path.join(snap_dir, f"project-{zlib.crc32(data):08x}{zlib.adler32(data):08x}{part}.bin")


def _read_snapshot(snap_dir: str, key: str, part: str) -> object:
    """The payload of a snapshot file, or None (none, damaged, another key's or rules')."""
    from ..cache import unpack

    try:
        with open(_snapshot_path(snap_dir, key, part), "rb") as fh:
            data = unpack(fh.read())
    except (OSError, ValueError):
        return None
    if isinstance(data, tuple) and len(data) == 3 and data[0] == _snapshot_rules() and data[1] == key:
        return data[2]
    return None


def _snapshot(snap_dir: str, key: str) -> _Snapshot:
    """The snapshot of ``key``'s walk in ``snap_dir`` (its ``whole`` read; empty when none)."""
    got = _snapshots.get((snap_dir, key))
    if got is None:
        whole = _read_snapshot(snap_dir, key, "")
        got = _snapshots[(snap_dir, key)] = _Snapshot(whole if _whole_record(whole) else None)
    return got


def _listing_entry(v: object) -> bool:
    return (type(v) is tuple and len(v) == 3 and type(v[0]) is tuple and len(v[0]) == 4
            and type(v[1]) is tuple and type(v[2]) is tuple)


def _whole_record(w: object) -> bool:
    return (type(w) is tuple and len(w) == 7 and type(w[0]) is str and type(w[1]) is str and type(w[2]) is list
            and type(w[3]) is list and (w[4] is None or (type(w[4]) is tuple and len(w[4]) == 2
                                                         and type(w[4][0]) is str and type(w[4][1]) is bytes))
            and type(w[5]) is list and type(w[6]) is str)  # (the items: see ``_Snapshot.check``)


class SummaryStore:
    def __init__(self, cache_dir: Optional[str]) -> None:
        import json

        from .summary import SUMMARY_VERSION

        self.dir = cache_dir
        self.path = os.path.join(cache_dir, f"index-v{SUMMARY_VERSION}.json") if cache_dir else None
        #: the content hashes are computed (``load_summary``) only when something may keep them:
        #: a store without a folder saves nothing, and the run that uses it (``--no-cache``)
        #: caches no result whose dependencies they would stamp. Over ray+torch they cost
        #: 0.1 CPU-s (215 summaries: a sha256 of the text, a JSON dump and a sha256 of the summary)
        self.stamped = bool(cache_dir)
        self.entries: dict[str, list] = {}
        self.dirty = False
        if self.path:
            try:
                with open(self.path, encoding="utf-8") as fh:
                    data = json.load(fh)
                if isinstance(data, dict):
                    self.entries = {k: v for k, v in data.items() if isinstance(v, list) and len(v) == 4}
            except (OSError, ValueError):
                self.entries = {}

    def add(self, new: dict[str, list]) -> None:
        if new:
            self.entries.update(new)
            self.dirty = True

    def save(self) -> Optional[str]:
        if not (self.dirty and self.path and self.dir):
            return None
        from ..cache import write_json_atomic

        live = {p: e for p, e in self.entries.items() if os.path.exists(p)}
        return write_json_atomic(self.path, live, self.dir)


#: the digest of a dependency on a module's text starts with this (summary digests are hex)
TEXT = "="


def text_stamp(path: str) -> Optional[list]:
    """``[mtime_ns, size, TEXT + sha256]`` of the file now, or None when it cannot be read."""
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return stamp_text(st, data)


def stamp_text(st: os.stat_result, data: bytes) -> list:
    """The dependency stamp of a module's text ``data`` (read after ``st``)."""
    from ..cache import sha256

    return [st.st_mtime_ns, st.st_size, TEXT + sha256(data)[:32]]


def current(entry: Optional[list], st: os.stat_result) -> bool:
    """A stored summary entry (``[mtime_ns, size, sha256, summary]``) is trusted while the file's
    stat is the one summarised."""
    return entry is not None and entry[0] == st.st_mtime_ns and entry[1] == st.st_size


#: The content hashes of a summary a run keeps nowhere (``SummaryStore.stamped`` false): its
#: store entry's ``sha256`` and its dependency stamp's digest.
UNSTAMPED = ""


def load_summary(path: str, store: Optional[SummaryStore], new: dict) -> tuple[Optional[dict], list]:
    """(summary, dependency stamp) of one file, from the store when its content is unchanged.

    With a store that keeps nothing (``SummaryStore.stamped`` false: a ``--no-cache`` run) the
    hashes are ``UNSTAMPED``: no cached result will carry the stamp, no store the entry."""
    from .summary import digest, summarize

    try:
        st = os.stat(path)
    except OSError:
        return None, []
    stamped = store is None or store.stamped
    entry = store.entries.get(path) if store is not None else None
    if current(entry, st):
        return entry[3], [st.st_mtime_ns, st.st_size, digest(entry[3]) if stamped else UNSTAMPED]
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None, []
    if stamped:
        from ..cache import sha256

        sha = sha256(data)
    else:
        sha = UNSTAMPED
    if stamped and entry is not None and entry[2] == sha:
        summary = entry[3]
    else:
        summary = summarize(data, path)
    new[path] = [st.st_mtime_ns, st.st_size, sha, summary]
    return summary, [st.st_mtime_ns, st.st_size, digest(summary) if stamped else UNSTAMPED]


def stale(deps: object, store: "SummaryStore | None", get_store, memo: Optional[dict] = None, known=None,
          snap_dir: Optional[str] = None, folders: Optional[dict] = None) -> tuple[bool, Optional[dict]]:
    """Did a module a cached result depended on change its summary (or, for a dependency on
    its text, its content)? ``(changed, refreshed)``.

    A dependency whose stat is unchanged costs one ``stat()``. One whose stat changed is
    summarised again (``ast``; from ``get_store()``, the summary cache, when its content hash
    is known): an edit that leaves its summary alone (a comment, a function body the summary
    does not describe) does not re-lint the dependents; ``refreshed`` then holds the new
    stamps to store, so the next run is back to a ``stat()``.

    A dependency on the project's files (``project_key``) walks its roots and stats their files
    (once per key when ``memo``, a dict that lives for one run, is given; ``known``, ``snap_dir``,
    ``folders``: see ``project_digest``). ``memo`` also keeps each module's stat, ``path ->
    (mtime_ns, size)``: the run's other results that depend on it compare the same stat."""
    if not isinstance(deps, dict):
        return True, None
    refreshed: Optional[dict] = None
    for path, stamp in deps.items():
        if path.startswith(PROJECT):
            if not (isinstance(stamp, list) and len(stamp) == 3 and isinstance(stamp[2], str)
                    and stamp[2].startswith(PROJECT_DIGEST)
                    and project_digest(path, memo, known, snap_dir, folders) == stamp[2]):
                return True, None
            continue
        now = memo.get(path) if memo is not None else None
        if now is None:
            try:
                st = os.stat(path)
            except OSError:
                return True, None
            now = (st.st_mtime_ns, st.st_size)
            if memo is not None:  # the run's other results that depend on it (a warm ray+torch run: 373 -> 256 stats)
                memo[path] = now
        if not (isinstance(stamp, list) and len(stamp) == 3):
            return True, None
        if now[0] == stamp[0] and now[1] == stamp[1]:
            continue
        if isinstance(stamp[2], str) and stamp[2].startswith(TEXT):
            # the result depended on this module's text: the same content, or re-lint
            now = text_stamp(path)
            if now is None or now[2] != stamp[2]:
                return True, None
            refreshed = dict(deps) if refreshed is None else refreshed
            refreshed[path] = now
            continue
        store = store if store is not None else get_store()
        new: dict = {}
        summary, now = load_summary(path, store, new)
        if store is not None:
            store.add(new)
        if not now or now[2] != stamp[2]:
            return True, None
        refreshed = dict(deps) if refreshed is None else refreshed
        refreshed[path] = now
    return False, refreshed
