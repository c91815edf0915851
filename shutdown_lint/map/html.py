"""The map as one self-contained HTML page: no script, no external asset.

At the top, an inline SVG grid (one row per node, indented by depth; one column per ending;
each cell coloured by what happens: green stopped/runs, red killed/skipped, orange left running,
yellow unknown), then the tree as nested cards with the same colours, each ending's reason,
place and rule, and the findings attached to the node.
"""

from __future__ import annotations

from html import escape
from typing import Iterator

from .model import ENDING_TITLES, ENDINGS, MapResult, Node
from .tree import KIND_TITLES

COLOURS = {
    "stopped": "#2e9d57", "runs": "#2e9d57", "killed": "#d63b3b", "skipped": "#d63b3b",
    "left_running": "#ef8a17", "unknown": "#e2c23c", "not_applicable": "#c9ccd1",
}
WORDS = {
    "stopped": "stopped", "runs": "runs", "killed": "killed", "skipped": "skipped",
    "left_running": "left running", "unknown": "unknown", "not_applicable": "n/a",
}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;background:#f6f7f9}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px}
.sub{color:#5b6472;margin-bottom:14px}code,.at{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px}
.legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:12px;height:12px;border-radius:3px;
vertical-align:-1px;margin-right:5px}
.counts{display:flex;gap:12px;margin:12px 0 18px;flex-wrap:wrap}.count{background:#fff;border:1px solid #dde1e7;
border-radius:8px;padding:8px 14px}.count b{font-size:20px;display:block}
ul.tree{list-style:none;padding-left:22px;margin:0;border-left:2px solid #dde1e7}ul.tree.top{border-left:none;padding-left:0}
li.node{margin:10px 0}.card{background:#fff;border:1px solid #dde1e7;border-radius:10px;padding:10px 12px;
box-shadow:0 1px 2px rgba(0,0,0,.04);max-width:1100px}
.card.gap{border-left:5px solid #d63b3b}.card.unk{border-left:5px solid #e2c23c}.card.ok{border-left:5px solid #2e9d57}
.kind{display:inline-block;font-size:11.5px;font-weight:600;text-transform:uppercase;letter-spacing:.04em;
background:#e8edf6;color:#34476b;border-radius:4px;padding:1px 6px;margin-right:6px}
.label{font-weight:600}.at{color:#3d62b3;margin-left:8px}.extra{color:#5b6472;margin-left:6px;font-size:12.5px}
.ends{display:grid;grid-template-columns:repeat(4,minmax(0,1fr));gap:6px;margin-top:8px}
.end{border-radius:7px;padding:6px 8px;color:#1d2330;background:#f1f3f6;border-top:4px solid #c9ccd1;font-size:12.5px}
.end .t{font-weight:600;font-size:11.5px;text-transform:uppercase;letter-spacing:.04em;color:#5b6472}
.end .st{font-weight:700}.rule{display:inline-block;background:#7a3fb0;color:#fff;border-radius:4px;padding:0 5px;
font-size:11px;font-weight:700;margin-left:4px}
.findings{margin:8px 0 0;padding-left:18px;color:#4a3560;font-size:12.5px}
.notes{color:#7a5b00}
"""


def _walk(nodes: list[Node], depth: int = 0) -> Iterator[tuple[Node, int]]:
    for n in nodes:
        yield n, depth
        yield from _walk(n.children, depth + 1)


def _class(node: Node) -> str:
    states = {node.endings[e].state for e in ENDINGS}
    if states & {"killed", "left_running", "skipped"}:
        return "gap"
    if "unknown" in states:
        return "unk"
    return "ok"


def render_svg(result: MapResult, ids: dict[int, str]) -> str:
    """The grid: one row per node, one column per ending, as an inline SVG."""
    rows = list(_walk([result.root, *result.unreached]))
    row_h, label_w, col_w, top = 24, 560, 150, 34
    width = label_w + col_w * len(ENDINGS) + 10
    height = top + row_h * len(rows) + 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" id="map-grid" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="endings of every node">',
           '<style>text{font:12px system-ui,sans-serif;fill:#1d2330}.h{font-weight:700;fill:#5b6472}'
           '.m{font-family:ui-monospace,monospace;fill:#3d62b3;font-size:11px}</style>']
    for i, e in enumerate(ENDINGS):
        x = label_w + i * col_w + col_w / 2
        out.append(f'<text class="h" x="{x:.0f}" y="20" text-anchor="middle">{escape(ENDING_TITLES[e])}</text>')
    for r, (node, depth) in enumerate(rows):
        y = top + r * row_h
        if r % 2 == 0:
            out.append(f'<rect x="0" y="{y}" width="{width}" height="{row_h}" fill="#eef0f4"/>')
        label = node.label if node.kind == "module" else f"{KIND_TITLES.get(node.kind, node.kind)}: {node.label}"
        if len(label) > 62 - depth * 2:
            label = label[: 59 - depth * 2] + "..."
        nid = ids[id(node)]
        out.append(f'<g class="row" data-node="{nid}" data-kind="{node.kind}">')
        weight = ' style="font-weight:700"' if node.kind in ("module", "process") else ""
        out.append(f'<text x="{8 + depth * 14}" y="{y + 16}"{weight}>{escape(label)}</text>')
        out.append(f'<text class="m" x="{label_w - 6}" y="{y + 16}" text-anchor="end">{escape(node.at)}</text>')
        for i, e in enumerate(ENDINGS):
            end = node.endings[e]
            if node.kind == "module":
                break  # a group's header row: no endings of its own
            x = label_w + i * col_w + 4
            tip = f"{ENDING_TITLES[e]}: {WORDS[end.state]}" + (f" ({end.rule})" if end.rule else "") + \
                  (f" - {end.by}" if end.by else "")
            out.append(f'<rect class="cell" data-ending="{e}" data-state="{end.state}" x="{x}" y="{y + 3}" '
                       f'width="{col_w - 8}" height="{row_h - 6}" rx="4" fill="{COLOURS[end.state]}">'
                       f'<title>{escape(tip)}</title></rect>')
            word = WORDS[end.state] + (f" {end.rule}" if end.rule else "")
            colour = "#1d2330" if end.state in ("unknown", "not_applicable") else "#ffffff"
            out.append(f'<text x="{x + (col_w - 8) / 2:.0f}" y="{y + 16}" text-anchor="middle" '
                       f'style="fill:{colour};font-size:11px;font-weight:600">{escape(word)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out)


def _card(node: Node, ids: dict[int, str]) -> str:
    extra = []
    if node.kind == "thread" and node.details.get("daemon") is not None:
        extra.append("daemon" if node.details["daemon"] else "non-daemon")
    if node.details.get("resources"):
        extra.append(", ".join(f"{k}={v}" for k, v in node.details["resources"].items()))
    if node.details.get("runs"):
        extra.append(f"runs {node.details['runs']}")
    parts = [f'<li class="node" id="{ids[id(node)]}" data-kind="{node.kind}">',
             f'<div class="card {_class(node)}"><span class="kind">{escape(KIND_TITLES.get(node.kind, node.kind))}'
             f'</span><span class="label">{escape(node.label)}</span><span class="at">{escape(node.at)}</span>']
    if extra:
        parts.append(f'<span class="extra">{escape("; ".join(extra))}</span>')
    if any(node.endings[e].state != "not_applicable" for e in ENDINGS):
        parts.append('<div class="ends">')
        for e in ENDINGS:
            end = node.endings[e]
            rule = f'<span class="rule">{escape(end.rule)}</span>' if end.rule else ""
            at = f' <span class="at">{escape(end.at)}</span>' if end.at else ""
            parts.append(f'<div class="end" data-ending="{e}" data-state="{end.state}" '
                         f'style="border-top-color:{COLOURS[end.state]}"><div class="t">{escape(ENDING_TITLES[e])}'
                         f'</div><span class="st" style="color:{COLOURS[end.state] if end.state != "unknown" else "#8a6d00"}">'
                         f'{escape(WORDS[end.state])}</span>{rule}<div>{escape(end.by or "")}{at}</div></div>')
        parts.append("</div>")
    if node.findings:
        parts.append('<ul class="findings">')
        for f in node.findings:
            parts.append(f'<li><span class="rule">{escape(f.code)}</span> {escape(f.message)} '
                         f'<span class="at">{escape(f.at)}</span></li>')
        parts.append("</ul>")
    parts.append("</div>")
    if node.children:
        parts.append('<ul class="tree">')
        parts.extend(_card(c, ids) for c in node.children)
        parts.append("</ul>")
    parts.append("</li>")
    return "".join(parts)


def _against(against: dict) -> str:
    def items(rows: list, text) -> str:
        return "".join(f"<li>{text(x)}</li>" for x in rows) or "<li>none</li>"

    return "".join([
        f'<h2>Against the exit report <code>{escape(against["report"])}</code></h2>',
        f'<div class="sub">The program ended: {escape(against["ending"] or "unknown")}.</div>',
        f'<div class="counts"><div class="count"><b>{len(against["happened"])}</b>predicted and seen at exit</div>'
        f'<div class="count"><b>{len(against["not_predicted"])}</b>left at exit, not predicted (rule gaps)</div>'
        f'<div class="count"><b>{len(against["predicted_not_seen"])}</b>predicted, not in the report</div></div>',
        '<h2>Not predicted</h2><ul id="not-predicted">',
        items(against["not_predicted"], lambda x: f'{escape(x["what"] or "")} <span class="at">{escape(x["at"] or "?")}'
              f'</span>: {escape(x["why"])}; the report names {escape(", ".join(x["rules"]) or "no rule")}'),
        '</ul><h2>Predicted and seen</h2><ul id="happened">',
        items(against["happened"], lambda x: f'<a href="#{x["node"]}">{escape(x["what"] or "")}</a> '
              f'<span class="at">{escape(x["at"] or "?")}</span>: predicted {escape(x["predicted"])}'),
        "</ul>",
    ])


def render_html(result: MapResult) -> str:
    ids = result.ids()
    nodes = list(result.nodes())
    starts = [n for n in nodes if n.kind not in ("process", "module")]
    gaps = sum(1 for n in nodes for e in ENDINGS if n.endings[e].state in ("killed", "left_running", "skipped"))
    unknown = sum(1 for n in nodes for e in ENDINGS if n.endings[e].state == "unknown")
    rules = sorted({f.code for n in nodes for f in n.findings})
    legend = "".join(f'<span><i class="sw" style="background:{COLOURS[s]}"></i>{escape(WORDS[s])}</span>'
                     for s in ("stopped", "killed", "left_running", "unknown", "not_applicable"))
    body = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>shutdown map: {escape(result.entry)}</title>",
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<style>{_CSS}</style></head><body>",
        f"<h1>What <code>{escape(result.root.label)}</code> starts, and how each piece stops</h1>",
        '<div class="sub">shutdown-lint map: every start point the walk from the entry found, with what happens '
        "to it on a normal exit, an exception, Ctrl+C and SIGTERM, and the rule that reports each gap.</div>",
        '<div class="counts">'
        f'<div class="count"><b>{len(starts)}</b>start points</div>'
        f'<div class="count"><b>{gaps}</b>gaps (killed, left running, skipped)</div>'
        f'<div class="count"><b>{unknown}</b>endings unknown</div>'
        f'<div class="count"><b>{len(rules)}</b>rules with findings: {escape(", ".join(rules)) or "none"}</div>'
        "</div>",
        f'<div class="legend">{legend}</div>',
        "<h2>At a glance</h2>", render_svg(result, ids),
        "<h2>From the entry</h2>", '<ul class="tree top">', _card(result.root, ids), "</ul>",
    ]
    if result.unreached:
        body += ["<h2>Not reached from the entry</h2>",
                 '<div class="sub">Start points in the project\'s other code, each mapped as if its own '
                 "process's main thread ran it.</div>", '<ul class="tree top">',
                 *(_card(n, ids) for n in result.unreached), "</ul>"]
    if result.against is not None:
        body.append(_against(result.against))
    if result.unattached or result.notes:
        body.append('<h2>Notes</h2><ul class="notes">')
        body += [f"<li>{escape(f.code)} {escape(f.message)} ({escape(f.at)}): on no node</li>"
                 for f in result.unattached]
        body += [f"<li>{escape(n)}</li>" for n in result.notes]
        body.append("</ul>")
    body.append("</body></html>\n")
    return "\n".join(body)
