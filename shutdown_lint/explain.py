"""``--explain CODE`` (a rule's documentation page) and ``--list-rules``."""

from __future__ import annotations

import json
from typing import IO


def find_rule(selector: str):
    from . import registry

    sel = selector.strip()
    for rule in registry.all_rules():
        if rule.code == sel.upper() or rule.name == sel.lower():
            return rule
    return None


def explain(selector: str, out: IO[str], fmt: str = "full") -> bool:
    rule = find_rule(selector)
    if rule is None:
        return False
    if fmt == "json":
        json.dump({"code": rule.code, "name": rule.name, "summary": rule.summary, "fixable": rule.has_fix(),
                   "options": {k: {"default": o.default, "doc": o.doc} for k, o in rule.options.items()},
                   "documentation": rule.documentation()}, out, indent=2, default=str)
        out.write("\n")
        return True
    from rich.console import Console
    from rich.markdown import Markdown

    Console(file=out, soft_wrap=False).print(Markdown(page_markdown(rule)))
    return True


def page_markdown(rule) -> str:
    """A rule's documentation page as Markdown (``--explain`` and the language server's hover)."""
    fix = "a fix is available (see Fix safety)" if rule.has_fix() else "no automatic fix"
    page = f"# {rule.code} `{rule.name}`\n\n{rule.summary}.\n\n*{fix}*\n\n{rule.documentation()}\n"
    if rule.options:
        page += "\n## Options\n\n" + "\n".join(
            f"- `{key}` (default `{opt.default!r}`): {opt.doc}" for key, opt in rule.options.items()
        ) + "\n"
    return page


#: the sections a hover shows (the first paragraph of each prose section, the whole example)
HOVER_SECTIONS = ("What it does", "Why is this bad?", "Example")


def _sections(doc: str) -> dict[str, str]:
    """A rule's documentation split at its ``## `` headings: heading -> body."""
    out: dict[str, str] = {}
    heading = None
    body: list[str] = []
    for line in doc.splitlines():
        if line.startswith("## "):
            if heading is not None:
                out[heading] = "\n".join(body).strip()
            heading, body = line[3:].strip(), []
        elif heading is not None:
            body.append(line)
    if heading is not None:
        out[heading] = "\n".join(body).strip()
    return out


def _first_paragraph(text: str) -> str:
    """Up to the first blank line outside a code block."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced and lines:
            break
        lines.append(line)
    return "\n".join(lines).strip()


def hover_markdown(rule) -> str:
    """The editor's hover: the summary, the first paragraph of "What it does" and "Why is this
    bad?", the example, and where the whole page is (``shutdown-lint rule CODE``); a few hundred
    to ~2,000 characters instead of the page's up to ~14,000."""
    fix = "a fix is available" if rule.has_fix() else "no automatic fix"
    parts = [f"# {rule.code} `{rule.name}`", f"{rule.summary}. *({fix})*"]
    sections = _sections(rule.documentation())
    for title in HOVER_SECTIONS:
        body = sections.get(title)
        if body:
            parts.append(f"## {title}\n{body if title == 'Example' else _first_paragraph(body)}")
    parts.append(f"The whole page (fix safety, options, references): `shutdown-lint rule {rule.code}`")
    return "\n\n".join(parts) + "\n"


def list_rules(out: IO[str], fmt: str = "full") -> None:
    from . import registry

    rules = registry.all_rules()
    if fmt == "json":
        json.dump([{"code": r.code, "name": r.name, "summary": r.summary, "fixable": r.has_fix()} for r in rules],
                  out, indent=2)
        out.write("\n")
        return
    if fmt == "concise":
        for r in rules:
            out.write(f"{r.code}\t{r.name}\t{'fix' if r.has_fix() else '-'}\t{r.summary}\n")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title="shutdown-lint rules")
    table.add_column("Code", style="bold red", no_wrap=True)
    table.add_column("Name", no_wrap=True)
    table.add_column("Fix", justify="center")
    table.add_column("Summary")
    for r in rules:
        table.add_row(r.code, r.name, "yes" if r.has_fix() else "", r.summary)
    Console(file=out, width=max(120, 0)).print(table)
