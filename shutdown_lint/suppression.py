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


#: what a suppression comment must spell (``_NOQA``, ``_OURS``), with their case folding
_MARK = re.compile(r"noqa|shutdown-lint", re.I)


def _comments(text: str, tree=None) -> list[tuple[int, str]]:
    """(line, comment) of the comments that may be suppressions: every comment, or with
    ``tree`` (Python's ``ast`` of ``text``) those of the top-level statements and lines
    that spell a mark (``_marked_comments``)."""
    if tree is not None:
        found = _marked_comments(text, tree)
        if found is not None:
            return found
    return _all_comments(text)


def _marked_comments(text: str, tree) -> "list[tuple[int, str]] | None":
    """The comments of the lines that spell ``noqa`` or ``shutdown-lint``, tokenizing only
    the innermost statement that holds such a line (or the line alone, between statements)
    instead of the whole file: ``tokenize`` costs ~10 ms per 1,000 lines, paid for every file
    with a finding. A statement that starts its line starts where the tokenizer has no open
    bracket or string, so its tokens are those the whole file's tokenization gives there
    (indentation aside, which decides no comment). None (tokenize the whole file) when a
    line ends in a lone carriage return (the ``ast`` counts it as a line end, ``readline``
    does not) or a region does not tokenize (it did not start or end cleanly)."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):
        return None
    marked: list[int] = []
    line, at = 1, 0
    for m in _MARK.finditer(text):
        line += text.count("\n", at, m.start())
        at = m.start()
        if not marked or marked[-1] != line:
            marked.append(line)
    if not marked:
        return []
    lines = io.StringIO(text).readlines()
    top: list[tuple[int, int, list]] = []  # top-level regions: (first, last, statements)
    for stmt in tree.body:
        first, last = _first_line(stmt), stmt.end_lineno or stmt.lineno
        if top and first <= top[-1][1]:  # ``a = 1; b = 2``: one region
            top[-1] = (top[-1][0], max(top[-1][1], last), top[-1][2] + [stmt])
        else:
            top.append((first, last, [stmt]))
    out: list[tuple[int, str]] = []
    done = 0  # the last line tokenized
    for line in marked:
        if line <= done:
            continue
        first, last = _region(top, line, lines)
        region = iter(lines[first - 1:last])
        try:
            for tok in tokenize.generate_tokens(lambda: next(region, "")):
                if tok.type == tokenize.COMMENT:
                    out.append((tok.start[0] + first - 1, tok.string))
        except (tokenize.TokenError, SyntaxError, IndentationError):
            return None
        done = last
    return out


def _region(top: list, line: int, lines: list[str]) -> tuple[int, int]:
    """The lines to tokenize for the comment of ``line`` (see ``_marked_comments``)."""
    for first, last, stmts in top:
        if first <= line <= last:
            break
    else:
        return line, line  # between top-level statements: a comment or blank line
    if len(stmts) > 1:
        return first, last
    node = stmts[0]
    while True:
        children = _children(node)
        if not children or line < _first_line(children[0]):
            # a simple statement, or the header of a compound one (and comments under it)
            return first, (last if not children else _first_line(children[0]) - 1)
        for child in children:
            c_first, c_last = _first_line(child), child.end_lineno or child.lineno
            if c_first <= line <= c_last:
                break
        else:
            return line, line  # between the children: a comment, blank, ``else:``/``finally:`` line
        if not _starts_line(child, c_first, lines):
            return first, last  # ``if x: y`` or ``a; b``: the line starts with something else
        node, first, last = child, c_first, c_last


def _first_line(node) -> int:
    decorators = getattr(node, "decorator_list", None)
    return min(node.lineno, *(d.lineno for d in decorators)) if decorators else node.lineno


def _children(node) -> list:
    """The statements (and ``except`` handlers, ``case`` blocks) directly under ``node``."""
    out = []
    for name in ("body", "handlers", "orelse", "finalbody", "cases"):
        value = getattr(node, name, None)
        if type(value) is list:
            out += value
    for i, c in enumerate(out):
        if not hasattr(c, "lineno"):  # a ``case``: its pattern starts it, its body ends it
            out[i] = _Span(c.pattern.lineno, c.pattern.col_offset, c.body[-1].end_lineno, c.body)
    return sorted(out, key=_first_line)


class _Span:
    __slots__ = ("lineno", "col_offset", "end_lineno", "body")

    def __init__(self, lineno: int, col_offset: int, end_lineno: int, body: list) -> None:
        self.lineno, self.col_offset, self.end_lineno, self.body = lineno, col_offset, end_lineno, body


def _starts_line(node, first: int, lines: list[str]) -> bool:
    """Nothing but indentation (or a decorator's ``@``, a ``case``) before ``node`` on its first line."""
    if not 0 < first <= len(lines):
        return False
    decorators = getattr(node, "decorator_list", None)
    col = min([d for d in decorators if d.lineno == first], key=lambda d: d.col_offset).col_offset \
        if decorators and first != node.lineno else node.col_offset
    before = lines[first - 1].encode("utf-8", "surrogatepass")[:col].strip()
    return before in (b"", b"@") or (isinstance(node, _Span) and before == b"case")


def _all_comments(text: str) -> list[tuple[int, str]]:
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


def parse(text: str, known_codes: set[str], names_to_codes: dict[str, str], tree=None) -> Suppressions:
    """The file's suppressions; ``tree``, Python's ``ast`` of ``text`` when at hand, spares
    tokenizing the parts of the file without one (``_marked_comments``)."""
    sup = Suppressions()
    if "noqa" not in text.lower() and "shutdown-lint" not in text.lower():
        return sup
    for line, comment in _comments(text, tree):
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
