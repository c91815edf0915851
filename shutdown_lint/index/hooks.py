"""The engine's hooks for the project index (``index/project.py``), kept in one place.

``start`` builds the run's index (roots from the paths given, the discovered files, the
summary cache) and installs it before the pool forks, so workers share it for free;
``finish`` stores the summaries the run computed. ``SHUTDOWN_LINT_NO_INDEX=1`` turns the
index off (for benchmarks: with and without).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional, Sequence


def enabled() -> bool:
    return os.environ.get("SHUTDOWN_LINT_NO_INDEX", "") in ("", "0")


_stores: dict = {}


def _store(cache_dir: Optional[str]):
    """The summary cache of ``cache_dir``, loaded once per run."""
    if cache_dir not in _stores:
        from .store import SummaryStore

        _stores[cache_dir] = SummaryStore(cache_dir)
    return _stores[cache_dir]


def start(paths: Sequence[str], files: Optional[list[str]], cache_dir: Optional[str]):
    """Install the run's project index; returns its summary store (or None)."""
    if not enabled():
        return None
    from .project import ProjectIndex, set_current

    store = _store(cache_dir)
    set_current(ProjectIndex(list(paths), files, store))
    return store


def deps_changed(hit: dict, abspath: str, cache, cache_dir: str, memo: Optional[dict] = None) -> bool:
    """Warm run: True when a module ``hit`` (a cached result) depended on changed its
    summary. When only its stat changed, the cached result gets the new stamps. ``memo``: a
    dict that lives for ONE run (the project's files are walked once per run; a long-lived
    caller, the language server, passes none: its files change between lints)."""
    from .store import stale

    known = None
    if memo is not None:
        def known() -> list:  # the run's discovered files, with their stats (``Cache.count_clean``)
            return getattr(cache, "seen", [])
    # the snapshot of the project's folders lives in the cache folder; a run's folders: see Cache.folders
    changed, refreshed = stale(hit.get("deps"), _stores.get(cache_dir), lambda: _store(cache_dir), memo, known,
                               cache_dir, getattr(cache, "folders", None) if memo is not None else None)
    if not changed and refreshed is not None:
        entry = cache.entry(abspath)
        if entry is not None:
            cache.store(abspath, entry[0], entry[1], entry[2], {**entry[3], "deps": refreshed})
    return changed


def finish(store, outcomes, cache_dir: Optional[str] = None) -> Optional[str]:
    """Cache the summaries computed in this process and in the workers; a warning or None."""
    if store is None:
        store = _stores.get(cache_dir)  # a warm run that re-checked a dependency
    if store is None:
        return None
    from .project import current, set_current

    index = current()
    if index is not None:
        store.add(index.new_entries)
    for o in outcomes:
        if getattr(o, "summaries", None):
            store.add(o.summaries)
    set_current(None)
    return store.save()
