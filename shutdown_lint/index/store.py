"""Module summaries in the cache (``index-<version>.json`` in the cache folder), and the
check that tells a warm run which cached results depend on a module that changed.

An entry is ``abspath -> [mtime_ns, size, sha256, summary]``: an unchanged stat is trusted,
a changed stat with the same content hash reuses the summary. A result's dependencies are
``abspath -> [mtime_ns, size, summary digest]`` of the other modules its analysis read;
``stale`` checks them on a warm run (this package imports neither libcst nor the rules).

A dependency on a module's *text* (``[mtime_ns, size, TEXT + sha256 of the content]``) is
recorded where a search decided from the module's bytes, without its summary, that it holds
nothing the search needs (``ProjectIndex.no_match_in``): any change of content re-lints.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

# ``.summary`` (ast, hashlib, json) is imported where a module is summarised or a store is
# read: a warm run's dependency check (``stale``) only stats the dependencies


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


def stale(deps: object, store: "SummaryStore | None", get_store) -> tuple[bool, Optional[dict]]:
    """Did a module a cached result depended on change its summary (or, for a dependency on
    its text, its content)? ``(changed, refreshed)``.

    A dependency whose stat is unchanged costs one ``stat()``. One whose stat changed is
    summarised again (``ast``; from ``get_store()``, the summary cache, when its content hash
    is known): an edit that leaves its summary alone (a comment, a function body the summary
    does not describe) does not re-lint the dependents; ``refreshed`` then holds the new
    stamps to store, so the next run is back to a ``stat()``."""
    if not isinstance(deps, dict):
        return True, None
    refreshed: Optional[dict] = None
    for path, stamp in deps.items():
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
