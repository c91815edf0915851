"""The map as a terminal tree (rich): each node, where it starts, and one line per ending."""

from __future__ import annotations

import io
from typing import IO, Optional

from .model import ENDING_TITLES, ENDINGS, MapResult, Node

#: (mark, style) of each state
STATE_STYLE = {
    "stopped": ("ok", "green"),
    "runs": ("ok", "green"),
    "killed": ("KILLED", "bold red"),
    "left_running": ("LEFT RUNNING", "bold red"),
    "skipped": ("SKIPPED", "bold red"),
    "unknown": ("unknown", "yellow"),
    "not_applicable": ("-", "dim"),
}
KIND_TITLES = {
    "process": "process", "module": "module", "event_loop": "event loop", "task": "task",
    "task_group": "task group", "gather": "gather", "thread": "thread", "executor": "executor",
    "child_process": "child process", "ray_cluster": "Ray cluster", "ray_actor": "Ray actor",
    "ray_task": "Ray task", "process_group": "process group", "signal_handler": "signal handler",
    "atexit_hook": "atexit hook", "resource": "resource",
}


def _node_text(node: Node) -> str:
    from rich.markup import escape

    extra = []
    if node.kind == "thread" and node.details.get("daemon") is not None:
        extra.append("daemon" if node.details["daemon"] else "non-daemon")
    res = node.details.get("resources")
    if res:
        extra.append(", ".join(f"{k}={v}" for k, v in res.items()))
    tail = f" [dim]({escape('; '.join(extra))})[/]" if extra else ""
    lines = [f"[bold cyan]{KIND_TITLES.get(node.kind, node.kind)}[/] [bold]{escape(node.label)}[/]{tail}  "
             f"[blue]{escape(node.at)}[/]"]
    for e in ENDINGS:
        end = node.endings[e]
        if end.state == "not_applicable":
            continue
        mark, style = STATE_STYLE[end.state]
        rule = f" [bold magenta]{end.rule}[/]" if end.rule else ""
        at = f" [blue]({escape(end.at)})[/]" if end.at else ""
        lines.append(f"  [dim]{ENDING_TITLES[e] + ':':<12}[/] [{style}]{mark}[/]{rule} {escape(end.by or '')}{at}")
    listed = {end.rule for end in node.endings.values() if end.rule}
    for f in node.findings:
        if f.code not in listed:
            lines.append(f"  [dim]{'finding:':<12}[/] [magenta]{f.code}[/] {escape(f.message[:120])} "
                         f"[blue]({escape(f.at)})[/]")
    return "\n".join(lines)


def _add(tree, node: Node) -> None:
    branch = tree.add(_node_text(node))
    for c in node.children:
        _add(branch, c)


def _against(console, against: dict) -> None:
    from rich.markup import escape

    ending = against["ending"] or "unknown ending"
    console.print(f"[bold]Against {escape(against['report'])}[/] (the program ended: {escape(ending)})")
    console.print(f"  [green]predicted and seen at exit[/]: {len(against['happened'])}")
    for x in against["happened"]:
        console.print(f"    {escape(x['what'] or '')} ({escape(x['at'] or '?')}): predicted {x['predicted']}"
                      + (f" [magenta]{x['rule']}[/]" if x.get("rule") else ""))
    console.print(f"  [bold red]left at exit, not predicted (rule gaps)[/]: {len(against['not_predicted'])}")
    for x in against["not_predicted"]:
        rules = ", ".join(x["rules"]) or "no rule"
        console.print(f"    {escape(x['what'] or '')} ({escape(x['at'] or '?')}): {escape(x['why'])}; "
                      f"the report names {escape(rules)}")
    console.print(f"  [yellow]predicted, not in the report[/]: {len(against['predicted_not_seen'])}")
    for x in against["predicted_not_seen"]:
        console.print(f"    {x['kind']} {escape(x['at'])}: predicted {x['predicted']}")


def render_tree(result: MapResult, out: Optional[IO[str]] = None, color: bool = True,
                width: Optional[int] = None) -> str:
    """Prints the tree to ``out`` (or returns it as plain text when ``out`` is None)."""
    from rich.console import Console
    from rich.markup import escape
    from rich.tree import Tree

    buf = io.StringIO() if out is None else out
    tty = out is not None and hasattr(out, "isatty") and out.isatty()
    # a terminal wraps at its width; a file or pipe gets whole lines (tests, grep, less -S)
    console = Console(file=buf, highlight=False, emoji=False, no_color=not color or out is None,
                      width=width or (None if tty else 1000), force_terminal=None if out is not None else False)
    root = Tree(_node_text(result.root), guide_style="dim")
    for c in result.root.children:
        _add(root, c)
    console.print(root)
    if result.unreached:
        other = Tree("[bold]Not reached from the entry[/] [dim](each mapped as if its own process's main "
                     "thread ran it)[/]", guide_style="dim")
        for n in result.unreached:
            _add(other, n)
        console.print(other)
    gaps = [(n, e) for n in result.nodes() for e in ENDINGS if n.endings[e].state in ("killed", "left_running",
                                                                                         "skipped")]
    unknown = sum(1 for n in result.nodes() for e in ENDINGS if n.endings[e].state == "unknown")
    starts = sum(1 for n in result.nodes() if n.kind not in ("process", "module"))
    console.print(f"{starts} start points; {len(gaps)} gaps (killed, left running or skipped on an ending); "
                  f"{unknown} endings unknown")
    if result.against is not None:
        _against(console, result.against)
    for f in result.unattached:
        console.print(f"[dim]finding on no node:[/] [magenta]{f.code}[/] {escape(f.message[:120])} ({escape(f.at)})")
    for note in result.notes:
        console.print(f"[yellow]note:[/] {escape(note)}")
    if out is None:
        return buf.getvalue()
    return ""


