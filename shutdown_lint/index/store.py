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
walks the roots again only when a result has such a dependency, once per run (``memo``).
"""

from __future__ import annotations

import os

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


def scan_roots(roots: list, stats: bool = False, known: Optional[dict] = None) -> list:
    """``walk_roots`` as ``(path, mtime_ns, size)`` (0, 0 without ``stats``; -1, -1 for a file
    that cannot be stat'ed), in one pass of ``os.scandir``: the folders ``os.walk`` would visit
    (symbolic links to folders not followed, unreadable folders skipped), in its order.
    ``known``: path -> (mtime_ns, size) this run has stat'ed already (its discovered files)."""
    found: list = []
    for root, tops in roots:
        try:
            _scan(root, tops, found, stats, True, known or {})
        except _Full:
            pass
    found.sort()
    out: list = []
    last = None
    for f in found:  # the files of roots that overlap are met twice
        if f[0] != last:
            out.append(f)
            last = f[0]
    return out[:MAX_SCAN]


class _Full(Exception):
    """More than ``MAX_SCAN`` files found under one root: that root's walk ends."""


def _scan(d: str, tops, found: list, stats: bool, top: bool, known: dict) -> None:
    try:
        it = os.scandir(d)
    except OSError:
        return
    dirs = []
    files: list = []
    with it:
        while True:
            try:
                e = next(it)
            except StopIteration:
                break
            except OSError:
                return  # as os.walk: the folder is skipped
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir:
                dirs.append(e)
            elif e.name.endswith(".py") and not (top and tops is not None):
                if stats:
                    seen = known.get(e.path)
                    if seen is not None:
                        files.append((e.path, seen[0], seen[1]))
                        continue
                    try:
                        st = e.stat()
                        files.append((e.path, st.st_mtime_ns, st.st_size))
                    except OSError:
                        files.append((e.path, -1, -1))
                else:
                    files.append((e.path, 0, 0))
    found += files
    if len(found) > MAX_SCAN:
        raise _Full
    for e in dirs:
        name = e.name
        if top and tops is not None and name not in tops:
            continue
        # `build/`, `dist/` are artefacts, unless they are packages (`app/dist/__init__.py`)
        if name.startswith(".") or (name in SKIP_DIRS and not os.path.isfile(os.path.join(e.path, "__init__.py"))):
            continue
        try:
            if e.is_symlink():
                continue  # as os.walk: listed, not followed
        except OSError:
            continue
        _scan(e.path, tops, found, stats, False, known)


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


def project_digest(key: str, memo: Optional[dict] = None, known=None) -> str:
    """The digest of the files under the roots of ``key`` now (``memo``: a run's, keyed by ``key``;
    ``known()``: the stats the run took of its discovered files, see ``scan_roots``)."""
    if memo is not None and key in memo:
        return memo[key]
    found = files_digest(scan_roots(_roots_of(key), True, known() if known is not None else None))
    if memo is not None:
        memo[key] = found
    return found


class SummaryStore:
    def __init__(self, cache_dir: Optional[str]) -> None:
        import json

        from .summary import SUMMARY_VERSION

        self.dir = cache_dir
        self.path = os.path.join(cache_dir, f"index-v{SUMMARY_VERSION}.json") if cache_dir else None
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


def load_summary(path: str, store: Optional[SummaryStore], new: dict) -> tuple[Optional[dict], list]:
    """(summary, dependency stamp) of one file, from the store when its content is unchanged."""
    from ..cache import sha256
    from .summary import digest, summarize

    try:
        st = os.stat(path)
    except OSError:
        return None, []
    entry = store.entries.get(path) if store is not None else None
    if current(entry, st):
        return entry[3], [st.st_mtime_ns, st.st_size, digest(entry[3])]
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None, []
    sha = sha256(data)
    if entry is not None and entry[2] == sha:
        summary = entry[3]
    else:
        summary = summarize(data, path)
    new[path] = [st.st_mtime_ns, st.st_size, sha, summary]
    return summary, [st.st_mtime_ns, st.st_size, digest(summary)]


def stale(deps: object, store: "SummaryStore | None", get_store,
          memo: Optional[dict] = None, known=None) -> tuple[bool, Optional[dict]]:
    """Did a module a cached result depended on change its summary (or, for a dependency on
    its text, its content)? ``(changed, refreshed)``.

    A dependency whose stat is unchanged costs one ``stat()``. One whose stat changed is
    summarised again (``ast``; from ``get_store()``, the summary cache, when its content hash
    is known): an edit that leaves its summary alone (a comment, a function body the summary
    does not describe) does not re-lint the dependents; ``refreshed`` then holds the new
    stamps to store, so the next run is back to a ``stat()``.

    A dependency on the project's files (``project_key``) walks its roots and stats their files
    (once per key when ``memo``, a dict that lives for one run, is given; ``known``: see
    ``project_digest``)."""
    if not isinstance(deps, dict):
        return True, None
    refreshed: Optional[dict] = None
    for path, stamp in deps.items():
        if path.startswith(PROJECT):
            if not (isinstance(stamp, list) and len(stamp) == 3 and isinstance(stamp[2], str)
                    and stamp[2].startswith(PROJECT_DIGEST) and project_digest(path, memo, known) == stamp[2]):
                return True, None
            continue
        try:
            st = os.stat(path)
        except OSError:
            return True, None
        if not (isinstance(stamp, list) and len(stamp) == 3):
            return True, None
        if st.st_mtime_ns == stamp[0] and st.st_size == stamp[1]:
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
