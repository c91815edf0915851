"""In-line suppressions: ``# noqa``, ``# noqa: SHD201`` and
``# shutdown-lint: ignore[SHD201, sys-exit-in-task]`` on the line a finding starts.

Comments are found with ``tokenize`` so a ``# noqa`` inside a string does not count.
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

ALL = "*"
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?", re.I)
_OURS = re.compile(r"#\s*shutdown-lint\s*:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.I)
_OUR_CODE = re.compile(r"^SHD\d+$", re.I)


@dataclass
class Suppressions:
    #: line -> codes suppressed there (``ALL`` for a bare noqa)
    by_line: dict[int, set[str]] = field(default_factory=dict)
    #: (line, text) of suppressions naming codes or names that no rule has
    unknown: list[tuple[int, str]] = field(default_factory=list)
    #: line -> the comment text, for --add-noqa
    comments: dict[int, str] = field(default_factory=dict)

    def suppresses(self, line: int, code: str) -> bool:
        codes = self.by_line.get(line)
        return bool(codes) and (ALL in codes or code in codes)


def _comments(text: str) -> list[tuple[int, str]]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                out.append((tok.start[0], tok.string))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # fall back to a plain scan; it may see '#' inside strings, which only makes
        # suppression more permissive on files tokenize cannot read
        for i, line in enumerate(text.splitlines(), 1):
            pos = line.find("#")
            if pos >= 0:
                out.append((i, line[pos:]))
    return out


def parse(text: str, known_codes: set[str], names_to_codes: dict[str, str]) -> Suppressions:
    sup = Suppressions()
    if "noqa" not in text.lower() and "shutdown-lint" not in text.lower():
        return sup
    for line, comment in _comments(text):
        m = _NOQA.search(comment)
        if m:
            sup.comments[line] = comment
            codes = m.group("codes")
            if not codes:
                sup.by_line.setdefault(line, set()).add(ALL)
            else:
                for code in re.split(r"[\s,]+", codes.strip()):
                    code = code.upper()
                    sup.by_line.setdefault(line, set()).add(code)
                    # other tools' codes (E501, ASYNC100) are not ours to judge
                    if _OUR_CODE.match(code) and code not in known_codes:
                        sup.unknown.append((line, code))
        m = _OURS.search(comment)
        if m:
            raw = m.group("codes")
            if raw is None or not raw.strip():
                sup.by_line.setdefault(line, set()).add(ALL)
                continue
            for item in re.split(r"[\s,]+", raw.strip()):
                if not item:
                    continue
                code = names_to_codes.get(item.lower(), item.upper())
                if code not in known_codes:
                    sup.unknown.append((line, item))
                sup.by_line.setdefault(line, set()).add(code)
    return sup


def add_noqa(text: str, wanted: dict[int, set[str]]) -> str:
    """Return ``text`` with ``# noqa: CODES`` appended (or merged) on the given lines."""
    lines = text.splitlines(keepends=True)
    for line_no, codes in wanted.items():
        if not (1 <= line_no <= len(lines)):
            continue
        raw = lines[line_no - 1]
        body = raw.rstrip("\r\n")
        newline = raw[len(body):]
        m = _NOQA.search(body)
        if m and m.group("codes"):
            existing = [c.upper() for c in re.split(r"[\s,]+", m.group("codes").strip())]
            merged = existing + sorted(c for c in codes if c not in existing)
            body = body[: m.start()] + "# noqa: " + ", ".join(merged) + body[m.end():]
        elif m:
            continue  # a bare noqa already suppresses everything
        else:
            body = body + "  # noqa: " + ", ".join(sorted(codes))
        lines[line_no - 1] = body + newline
    return "".join(lines)
