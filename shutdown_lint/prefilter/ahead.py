"""The candidate tiers of a file judged ahead, on the project index's parse of it (serial runs).

A rule's search of the project (an importer's teardown, a callee elsewhere) summarises modules
the run has not linted yet: their summary costs an ``ast`` parse, and when the run reaches one of
them the candidate tier parses it again. On ray+torch at ``-j1``, 28 of the 190 modules summarised
were parsed again so (41k lines), and tier 2 then ruled 22 of them out (33k lines).

So when the index parses a module that is a file of this run not reached yet, the file's candidate
tiers run there (``judge``): the same steps as ``analyzer.select_rules`` (trigger words, tier 1,
then tier 2 on that tree) with the run's settings and the file's own path. What they decided is
remembered with the file's content hash (``known``): when the run reaches the file with the same
bytes, ``select_rules`` takes the rules after tier 1 from there (the text tiers are not run twice:
over the ~90 modules a ray+torch run summarises ahead they cost more than the parses saved), and a
file tier 2 ruled out is not parsed again. That is the answer ``select_rules`` would give: every
step is a function of the text, the path and the settings, and the tree of the same bytes is the
same tree. Tier 2 is judged ahead only for rules whose condition reads the tree alone: a condition
that asks the project index (``candidate_tree_project``) records what it read as the file's own
dependencies, which belong to the file's lint (tier 2 runs there, on the rules judged ahead).

Only a serial run judges ahead (``runner.run``). A pool lints the largest files first, so most
modules a search summarises were linted already, by this worker or the other, which a worker
cannot see: sharing the verdicts through the index's log, the wheels at ``-j2`` took 0.6-0.8%
more instructions than without (cachegrind), for 7-16 files ruled out.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:
    from ..rule import Rule
    from ..settings import Settings


class _Run:
    def __init__(self, paths: dict[str, str], settings: "Settings") -> None:
        #: absolute path -> the path the run lints it as (per-file ignores match that one)
        self.paths = paths
        self.settings = settings
        #: display path -> (sha1 of the text, the codes of its rules after tier 1, the stage that
        #: ruled it out or None): what the candidate tiers decided ahead
        self.judged: dict[str, tuple[str, tuple[str, ...], Optional[str]]] = {}
        #: display paths this process has reached (nothing to judge ahead for them)
        self.reached: set[str] = set()
        self.counts = {"judged": 0, "ruled_out": 0, "used": 0}


_run: Optional[_Run] = None

#: off: every file's candidate tiers are judged on its own text and parse, as before (tests
#: compare the two)
enabled = True
#: ``{"judged": files judged ahead, "ruled_out": of them by tier 2, "used": files whose lint took
#: a verdict}`` of this process's last run (None before the first one)
last_run: Optional[dict] = None


def begin(jobs: Sequence[Any], settings: "Settings") -> None:
    """A serial run of ``jobs`` (``runner.Job``: ``path``, ``abspath``) with ``settings`` starts."""
    global _run
    # (the index names a module by the absolute path discovery gives its file: no normpath per file,
    # ~40 ms over the 8,670 files of the wheels)
    _run = _Run({j.abspath: j.path for j in jobs}, settings) if enabled else None


def end() -> None:
    global _run, last_run
    if _run is not None:
        last_run = dict(_run.counts)
    _run = None


def _tiers_on(settings: "Settings") -> bool:
    from . import select

    return settings.prefilter and select.enabled and select.tree_enabled


def judge(path: str, source: bytes, module: Any) -> None:
    """``module``: the ``ast.Module`` of ``source``, the text of ``path`` (absolute), which the
    project index parsed. If ``path`` is a file of the run not reached yet, judge its candidate
    tiers now and remember what they decide."""
    run = _run
    if run is None:
        return
    display = run.paths.get(path)
    if display is None or display in run.reached or display in run.judged or not _tiers_on(run.settings):
        return
    from ..analyzer import STAGE_TEXT, STAGE_TREE, rules_for, text_tiers
    from . import select
    from .ast_tree import tree_of

    settings = run.settings
    candidates = text_tiers(source, rules_for(display, settings), settings)
    stage: Optional[str] = None if candidates else STAGE_TEXT
    # (a rule with no tree condition, or with options set, is kept whatever the tree: no walk then)
    if candidates and all(select.tree_declaration(rule) is not None and not settings.rule_options.get(rule.code)
                          and not getattr(rule, "candidate_tree_project", False) for rule in candidates):
        try:
            if not select.filter_rules_by_tree(tree_of(module, source), candidates, settings):
                stage = STAGE_TREE
                run.counts["ruled_out"] += 1
        except Exception:  # the file's own lint meets it and reports it; this file's must not
            pass
    run.judged[display] = (hashlib.sha1(source).hexdigest(), tuple(r.code for r in candidates), stage)
    run.counts["judged"] += 1


def known(path: str, source: bytes, settings: "Settings") -> Optional[tuple[list["type[Rule]"], Optional[str]]]:
    """What the candidate tiers decided ahead for ``source`` (the text of ``path``, as the run
    names it) with ``settings``: (its rules after tier 1, the stage that ruled it out or None),
    or None when nothing was judged for these bytes. ``path`` is reached from now on."""
    run = _run
    if run is None or settings is not run.settings or not _tiers_on(settings):
        return None
    run.reached.add(path)
    verdict = run.judged.get(path)
    if verdict is None:
        return None
    sha, codes, stage = verdict
    if sha != hashlib.sha1(source).hexdigest():
        return None
    from .. import registry

    run.counts["used"] += 1
    by_code = registry.rules_by_code()
    return [by_code[c] for c in codes], stage
