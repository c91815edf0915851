"""The engine's hooks for the project index (``facts/project.py``), kept in one place.

``start`` builds the run's index (roots from the paths given, the discovered files, the
summary cache) and installs it before the pool forks, so workers share it for free;
``finish`` stores the summaries the run computed. ``SHUTDOWN_LINT_NO_INDEX=1`` turns the
index off (for benchmarks: with and without).
"""

from __future__ import annotations

import os
from typing import Optional, Sequence


def enabled() -> bool:
    return os.environ.get("SHUTDOWN_LINT_NO_INDEX", "") in ("", "0")


def start(paths: Sequence[str], files: Optional[list[str]], cache_dir: Optional[str]):
    """Install the run's project index; returns its summary store (or None)."""
    if not enabled():
        return None
    from .facts.project import ProjectIndex, set_current
    from .facts.project_store import SummaryStore

    store = SummaryStore(cache_dir)
    set_current(ProjectIndex(list(paths), files, store))
    return store


def finish(store, outcomes) -> Optional[str]:
    """Cache the summaries computed in this process and in the workers; a warning or None."""
    if store is None:
        return None
    from .facts.project import current, set_current

    index = current()
    if index is not None:
        store.add(index.new_entries)
    for o in outcomes:
        if getattr(o, "summaries", None):
            store.add(o.summaries)
    set_current(None)
    return store.save()
