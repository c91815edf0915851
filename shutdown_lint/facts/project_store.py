"""Module summaries in the cache (``index-<version>.json`` in the cache folder), and the
check that tells a warm run which cached results depend on a module that changed.

An entry is ``abspath -> [mtime_ns, size, sha256, summary]``: an unchanged stat is trusted,
a changed stat with the same content hash reuses the summary. A result's dependencies are
``abspath -> [mtime_ns, size, summary digest]`` of the other modules its analysis read;
``cache.deps_changed`` checks them on a warm run (it lives there so a warm run imports
neither libcst nor this package).
"""

from __future__ import annotations

import json
import os
from typing import Optional

from .summary import SUMMARY_VERSION, digest, summarize


class SummaryStore:
    def __init__(self, cache_dir: Optional[str]) -> None:
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


def load_summary(path: str, store: Optional[SummaryStore], new: dict) -> tuple[Optional[dict], list]:
    """(summary, dependency stamp) of one file, from the store when its content is unchanged."""
    from ..cache import sha256

    try:
        st = os.stat(path)
    except OSError:
        return None, []
    entry = store.entries.get(path) if store is not None else None
    if entry is not None and entry[0] == st.st_mtime_ns and entry[1] == st.st_size:
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
