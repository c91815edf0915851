"""``--against REPORT``: the map's predictions checked against a real exit report.

The report is the JSON ``python -m runtime_guard --exit-report --json FILE`` writes
(``runtime_guard/exit_report.py``: ``{"version": 1, "ending": {"kind": ...}, "items": [...]}``,
each item with ``kind``, ``what``, ``file``, ``line`` and ``rules``). Each item left at exit is
matched to the node of the same kind that starts at its line (for threads and processes, also
where ``.start()`` is called). Then:

* ``happened``: a leftover the map predicted (the node's state on the report's ending is a gap:
  killed, left running, skipped);
* ``not_predicted``: a leftover the map did not predict: no node (a start the walk does not
  see), or a node it said stops, or one it said it could not tell (unknown). These are the
  rule gaps: the report names the rule that should have found each;
* ``predicted_not_seen``: nodes the map says are left on that ending that the report does not
  list (the code did not run that far, or it stopped after all).
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

from .entry import EntryError
from .model import GAPS, MapResult, Node

#: the report's ending -> the map's
ENDING_OF_REPORT = {"return": "normal", "exit": "normal", "exception": "exception", "SIGINT": "ctrl_c",
                    "SIGTERM": "sigterm"}
#: the report's item kinds -> the map's node kinds
KINDS_OF_ITEM = {"task": ("task",), "thread": ("thread",), "child": ("child_process",),
                 "executor": ("executor",), "process-group": ("process_group",), "ray": ("ray_task", "ray_actor")}


def load_report(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise EntryError(f"map: --against: cannot read {path}: {e.strerror or e}") from None
    except ValueError as e:
        raise EntryError(f"map: --against: {path} is not JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("items"), list) or data.get("version") != 1:
        raise EntryError(f"map: --against: {path} is not an exit report (python -m runtime_guard --exit-report "
                         "--json FILE writes one: version 1 with items)")
    return data


def _same_file(reported: str, node_path: str, cwd: str) -> bool:
    if not reported:
        return False
    if os.path.isabs(reported):
        return os.path.normpath(reported) == os.path.normpath(node_path)
    if os.path.normpath(os.path.join(cwd, reported)) == os.path.normpath(node_path):
        return True
    # a relative name from another working directory: the longest tail decides
    return node_path.endswith(os.sep + os.path.normpath(reported))


def _lines(node: Node) -> set[int]:
    lines = {node.line}
    for place in node.details.get("started_at", []):
        lines.add(int(place.rsplit(":", 1)[1]))
    return lines


def compare(result: MapResult, report: dict, report_path: str, cwd: Optional[str] = None) -> dict[str, Any]:
    cwd = cwd or os.getcwd()
    ending = ENDING_OF_REPORT.get((report.get("ending") or {}).get("kind", ""))
    nodes = [n for n in result.root.walk()]
    happened, not_predicted = [], []
    matched: set[int] = set()
    for item in report["items"]:
        kinds = KINDS_OF_ITEM.get(item.get("kind"), ())
        line = item.get("line")
        found = [n for n in nodes if n.kind in kinds and isinstance(line, int) and line in _lines(n)
                 and _same_file(item.get("file") or "", n.path, cwd)]
        entry = {"kind": item.get("kind"), "what": item.get("what"),
                 "at": f"{item.get('file')}:{line}" if item.get("file") else None,
                 "rules": list(item.get("rules") or [])}
        if not found:
            not_predicted.append({**entry, "node": None, "why": "no node: the map does not see this start"})
            continue
        node = found[0]
        matched.add(id(node))
        entry["node"] = result.ids()[id(node)]
        state = node.endings[ending].state if ending else "unknown"
        entry["predicted"] = state
        node.details["exit_report"] = {"ending": ending, "left": True, "what": item.get("what")}
        if state in GAPS:
            entry["rule"] = node.endings[ending].rule
            happened.append(entry)
        else:
            why = ("the map said it stops" if state in ("stopped", "runs") else
                   f"the map said {state}: {node.endings[ending].by}")
            not_predicted.append({**entry, "why": why})
    not_seen = []
    if ending:
        ids = result.ids()
        for n in nodes:
            observable = any(n.kind in k for k in KINDS_OF_ITEM.values())
            if observable and id(n) not in matched and n.endings[ending].state in ("left_running", "killed"):
                not_seen.append({"node": ids[id(n)], "kind": n.kind, "at": n.at, "predicted": n.endings[ending].state,
                                 "rule": n.endings[ending].rule})
    return {"report": report_path, "ending": ending, "happened": happened, "not_predicted": not_predicted,
            "predicted_not_seen": not_seen}
