"""The map's data: nodes (what the program starts), each with how it stops on four endings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

#: the four ways a program ends, in the order every output shows them
ENDINGS = ("normal", "exception", "ctrl_c", "sigterm")
ENDING_TITLES = {"normal": "normal exit", "exception": "exception", "ctrl_c": "Ctrl+C", "sigterm": "SIGTERM"}

#: what happens to a node on one ending
#: stopped: it is ended in order (its cleanup runs); killed: it ends without its cleanup (the process
#: dies under it, a daemon thread frozen at exit); left_running: it outlives the program (a child
#: process, Ray work) or keeps the program from ending; runs / skipped: a hook (atexit, finally) runs
#: or does not; unknown: the map cannot tell (never guessed); not_applicable: the ending cannot
#: reach it (a signal handler's own removal, for one)
STATES = ("stopped", "killed", "left_running", "runs", "skipped", "unknown", "not_applicable")
#: states that are a gap a person should look at
GAPS = frozenset({"killed", "left_running", "skipped"})

KINDS = ("process", "module", "event_loop", "task", "task_group", "gather", "thread", "executor", "child_process",
         "ray_cluster", "ray_actor", "ray_task", "process_group", "signal_handler", "atexit_hook", "resource")


@dataclass
class Ending:
    state: str = "unknown"
    #: what stops it (or why not), in words
    by: Optional[str] = None
    #: where that happens, ``file:line``
    at: Optional[str] = None
    #: the rule that reports the gap on this ending (a finding attached to the node)
    rule: Optional[str] = None

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "by": self.by, "at": self.at, "rule": self.rule}


@dataclass
class Finding:
    code: str
    message: str
    at: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "at": self.at}


@dataclass
class Node:
    kind: str
    label: str
    #: ``file:line`` where it starts
    at: str
    path: str = ""
    line: int = 0
    details: dict[str, Any] = field(default_factory=dict)
    endings: dict[str, Ending] = field(default_factory=lambda: {e: Ending() for e in ENDINGS})
    findings: list[Finding] = field(default_factory=list)
    children: list["Node"] = field(default_factory=list)
    #: the (path, first line, last line) spans of code that runs as part of this node (not of a
    #: child): a finding inside one is attached to it
    spans: list[tuple[str, int, int]] = field(default_factory=list, repr=False)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()

    def to_dict(self, ids: dict[int, str]) -> dict[str, Any]:
        return {
            "id": ids[id(self)],
            "kind": self.kind,
            "label": self.label,
            "at": self.at,
            "details": {k: v for k, v in self.details.items() if not k.startswith("_")},  # "_": the builder's own
            "endings": {e: self.endings[e].to_dict() for e in ENDINGS},
            "findings": [f.to_dict() for f in self.findings],
            "children": [c.to_dict(ids) for c in self.children],
        }


@dataclass
class MapResult:
    entry: str
    #: how the entry was given: script, module, console_script
    entry_kind: str
    root: Node
    #: start points in the project's modules that the walk from the entry did not reach
    unreached: list[Node] = field(default_factory=list)
    #: findings in the files involved that no node owns
    unattached: list[Finding] = field(default_factory=list)
    #: what the map could not follow (a call it could not resolve, a file it could not read)
    notes: list[str] = field(default_factory=list)
    #: ``--against REPORT``: the exit report's leftovers matched to the nodes (``against.compare``)
    against: Optional[dict[str, Any]] = None

    def nodes(self):
        yield from self.root.walk()
        for n in self.unreached:
            yield from n.walk()

    def ids(self) -> dict[int, str]:
        return {id(n): f"n{i}" for i, n in enumerate(self.nodes())}

    def to_dict(self) -> dict[str, Any]:
        ids = self.ids()
        out = {
            "schema": "shutdown-lint-map/1",
            "entry": {"given": self.entry, "kind": self.entry_kind},
            "endings": list(ENDINGS),
            "root": self.root.to_dict(ids),
            "unreached": [n.to_dict(ids) for n in self.unreached],
            "unattached_findings": [f.to_dict() for f in self.unattached],
            "notes": list(self.notes),
        }
        if self.against is not None:
            out["against"] = self.against
        return out
