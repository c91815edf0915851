"""Tier 2 without the parse of a big literal table: a reduced source for ``ast_tree.parse_reduced``.

Generated tables (``torch/sparse/_triton_ops_meta.py``: one 466 KB dict display, 80k constants)
cost tier 2 most of a file's parse while holding nothing a condition looks for. ``hollow``
finds each top-level statement ``NAME = <display>`` / ``NAME: <annotation> = <display>`` whose
value spans at least ``THRESHOLD`` bytes and is *inert*, and gives the source in which, inside
that value, every bracketed group that holds no name (``(16384, 32, 1)``, a whole inner dict of
numbers) is replaced by the constant ``0`` (the rest of the group's bytes blanked, its line ends
kept): same length, same lines, the same offsets for every byte kept. A value is hollowed only when
at least half of its bytes go (a flat list of strings keeps them all: its reduced parse would cost
the whole one again where a rule is kept).

*Inert*, decided on ``code.code_only(source)`` (strings and comments blanked) and checked to be
valid Python so that the reduced source parses exactly when the whole one does: the value is a
bracketed display built only of strings (plain, raw, bytes; no ``f``/``t`` prefix; a run of
adjacent ones all bytes or all not), numbers (Python's literal grammar), ``...``, names and
attribute chains over names (no keyword but ``True``/``False``/``None``), unary minus, and the
displays ``()``/``(x)``/tuples, lists, sets and dicts (no ``*``/``**``), nested at most
``MAX_DEPTH`` deep. No call, subscript, operator, comprehension, lambda, ``await``, ``yield``,
walrus, conditional or f-string can be in it: the characters they need (``=``, ``*``, ``+`` ...,
a keyword) are refused, and a bracket right after an operand (a call, a subscript) leaves the
grammar's reduction stuck. Its strings' escapes must be ones no parser rejects, its bytes ASCII.

What the reduced tree differs in (``ast_tree.parse_reduced`` asserts the statements' places):
only some subtrees of those values, each made of ``Constant``, ``Tuple``, ``List``, ``Set``,
``Dict`` and ``UnaryOp(USub)`` nodes with no ``Name``/``Attribute`` under it, each now one
``Constant(0)`` at the same start. Every other node is the same: every ``Name`` and
``Attribute`` (with its ``ctx``), each with the same parent, ancestors and position; every
container holding one keeps its type and its number of elements; the statement keeps its type,
target, annotation and the type of its value. Why each ``Tree`` fact and condition is then
unchanged or only loses what could make a condition hold is in ``ast_tree.parse_reduced``.

This module must stay cheap to import: no libcst.
"""

from __future__ import annotations

import keyword
import re
from typing import Optional

from .code import BLANK, code_only

#: the least size (bytes) of a statement's value worth the reduced parse: a file with one pays the
#: scan (``code_only`` and the reductions, ~4% of the parse it saves) and, when a rule is kept
#: after all, one more parse of the reduced source (small: the table is gone)
THRESHOLD = 64 * 1024
#: deeper displays are left whole (the tokenizer refuses 200 open brackets)
MAX_DEPTH = 64

#: a line that starts at column 0 with something that may start a statement (not a blank, a
#: comment, a closing bracket: those continue the statement above when it is a display)
_STARTS = re.compile(rb"^[^ \t\f\r\n#)\]}]", re.M)
#: a line at column 0 that may start ``NAME = (`` (led by ``\n``: ``re`` skips to them; a table on
#: the first line, or after a lone ``\r``, is not looked for)
_HEADS = re.compile(rb"\n[A-Za-z_][A-Za-z0-9_]*[ \t]*(?::[^=\r\n#;\\]*)?=[ \t]*[(\[{]")
#: the next line (after a line end) that starts at column 0 as ``_STARTS`` reads it
_NEXT_START = re.compile(rb"[\r\n][^ \t\f\r\n#)\]}]")
#: ``NAME = `` / ``NAME: annotation = `` at a statement's start (the annotation on its line)
_HEADER = re.compile(rb"([A-Za-z_][A-Za-z0-9_]*)[ \t]*(?::([^=\r\n#;\\]*))?=[ \t]*(?=[(\[{])")
#: a byte no inert value holds in its code (strings blanked): operators, ``=``, ``;``, ``\``, ``@``,
#: ``*``, a vertical tab, anything not ASCII ...
_REFUSED = re.compile(rb"[^A-Za-z0-9_ \t\f\r\n()\[\]{},:.\-'\"#]")
#: a bracket that opens a call or a subscript (after an operand: a name, a number, a string, a
#: bracket): refused before ``_valid`` reads the whole value (a list of calls: at its first)
_APPLIED = re.compile(rb"[A-Za-z0-9_)\]}'\"][ \t\f\r\n]*[(\[]")
#: escapes that a parser may refuse (``\N{...}``, ``\x``/``\u``/``\U`` with too few digits, any ``\U``)
_RISKY_ESCAPE = re.compile(rb"\\(?:N|U|x(?![0-9a-fA-F]{2})|u(?![0-9a-fA-F]{4}))")
#: a comment (its text blanked by ``code_only``)
_COMMENT = re.compile(rb"#[ \t\f]*")
# (A pattern that starts with a look-behind starts with a look-ahead at the bytes it may start with:
# ``re`` then skips to those bytes, ~10x faster over a table than trying every position.)
_Q = rb"""(?:"\"\"[ \t\f\r\n]*\"\"\"|'''[ \t\f\r\n]*'''|"[ \t\f]*"|'[ \t\f]*')"""
#: a run of adjacent string literals, all bytes or all not (a prefix right after a word byte is
#: no prefix: not matched, its quote stays and refuses the value)
_STRINGS = re.compile(
    rb"(?=[bBrRuU'\"])(?<![A-Za-z0-9_])(?:(?:[bB][rR]?|[rR][bB])" + _Q + rb"(?:[ \t\f\r\n]*(?:[bB][rR]?|[rR][bB])" + _Q + rb")*"
    rb"|(?:[rRuU]?)" + _Q + rb"(?:[ \t\f\r\n]*(?<![A-Za-z0-9_])[rRuU]?" + _Q + rb")*)")
_DIGITS = rb"[0-9](?:_?[0-9])*"
_POINT = rb"(?:(?:" + _DIGITS + rb")?\." + _DIGITS + rb"|" + _DIGITS + rb"\.)"
_EXP = rb"[eE][+\-]?" + _DIGITS
#: the commonest number first: a plain decimal integer, not glued to a word or a dot, nor the
#: exponent of a float (``1e-5``: ``_NUMBER`` reads it whole)
_INTEGER = re.compile(rb"(?=[0-9])(?<![A-Za-z0-9_.])(?<![eE][+\-])(?:[1-9][0-9]*|0)(?![A-Za-z0-9_.])")
#: a number (Python's grammar: no ``0777``, no ``1__0``), not glued to a word or a dot
_NUMBER = re.compile(
    rb"(?=[0-9.])(?<![A-Za-z0-9_.])(?:(?:" + _POINT + rb"|" + _DIGITS + rb")" + _EXP + rb"[jJ]?|" + _POINT + rb"[jJ]?|"
    + _DIGITS + rb"[jJ]|0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|[1-9](?:_?[0-9])*|0+(?:_?0)*)"
    rb"(?![A-Za-z0-9_.])")
_ELLIPSIS = re.compile(rb"(?=\.)(?<!\.)\.\.\.(?!\.)")
_IDENT = rb"[A-Za-z_][A-Za-z0-9_]*"
#: a name and the attributes read from it (blanks and line ends around the dots: in a display); not
#: a number's letters (``1e5``, ``0x1f``: after a digit), nor a string's prefix (before a quote)
_CHAIN = re.compile(rb"(?=[A-Za-z_])(?<![A-Za-z0-9_.$])(?!(?:True|False|None)(?![A-Za-z0-9_])(?![ \t\f\r\n]*\.))" + _IDENT + rb"(?:[ \t\f\r\n]*\.[ \t\f\r\n]*" + _IDENT
                    + rb")*(?![A-Za-z0-9_'\"])")
#: the same with ``True``/``False``/``None`` (operands too)
_OPERAND = re.compile(rb"(?=[A-Za-z_])(?<![A-Za-z0-9_.$])" + _IDENT + rb"(?:[ \t\f\r\n]*\.[ \t\f\r\n]*" + _IDENT + rb")*(?![A-Za-z0-9_])")
_WORD = re.compile(_IDENT)
_KEYWORDS = frozenset(w.encode() for w in keyword.kwlist) - {b"True", b"False", b"None"}
#: unary minus on an operand (a second ``-`` before it is refused: ``- -x`` nests the parser)
_MINUS = re.compile(rb"(?<!-)-\$")
#: a display whose elements are operands: ``()``, ``($)``, tuples, lists, sets, dicts
_DISPLAY = re.compile(
    rb"\((?:\$(?:,\$)*,?)?\)|\[(?:\$(?:,\$)*,?)?\]|\{\$(?:,\$)*,?\}|\{(?:\$:\$(?:,\$:\$)*,?)?\}")
_BRACKETS = re.compile(rb"[()\[\]{}]")


def hollow(source: bytes) -> Optional[tuple[bytes, list[tuple[int, int, int]]]]:
    """(the reduced source, [(statement offset, value offset, value end) for each hollowed
    statement]) or None when no statement of ``source`` is hollowed (the common case: a file
    smaller than ``THRESHOLD`` costs one ``len``)."""
    if len(source) < THRESHOLD:
        return None
    # a statement of the code starts where the source has a line at column 0 (the code has fewer:
    # a string's lines are blank there), with the same bytes when it is ``NAME = (`` (no string,
    # no comment): such a header after which the source starts no line for ``THRESHOLD`` bytes
    heads = []
    for m in _HEADS.finditer(source):
        a = m.start() + 1
        nxt = _NEXT_START.search(source, m.end())
        if (nxt.start() + 1 if nxt is not None else len(source)) - a >= THRESHOLD:
            heads.append(a)
    if not heads:
        return None
    code = code_only(source)
    if code is None:
        return None
    spans = []
    for a in heads:
        m = _STARTS.search(code, a + 1)
        found = _inert_value(source, code, a, m.start() if m is not None else len(code))
        if found is not None:
            spans.append(found)
    if not spans:
        return None
    out: list[bytes] = []
    pos = 0
    done = []
    for stmt, v0, v1, groups in spans:
        for g0, g1 in groups:
            out.append(source[pos:g0])
            out.append(b"0" + source[g0 + 1:g1 + 1].translate(BLANK))
            pos = g1 + 1
        done.append((stmt, v0, v1))
    out.append(source[pos:])
    return b"".join(out), done


def _inert_value(source: bytes, code: bytes, a: int, b: int):
    """(statement offset, value offset, value end, [(first, last) offset of each group to
    replace]) when the statement of ``code[a:b]`` is an inert assignment, else None."""
    m = _HEADER.match(code, a, b)
    if m is None or m.group(1) in _KEYWORDS:
        return None
    v0 = m.end()
    v1 = v0 + len(_untailed(code[v0:b]))
    if v1 - v0 < THRESHOLD:
        return None
    region = code[v0:v1]
    if region[-1:] not in (b")", b"]", b"}") or _REFUSED.search(region) is not None \
            or _APPLIED.search(region) is not None:
        return None
    text = source[v0:v1]
    if not text.isascii() or b"\0" in text or (b"\\" in text and _RISKY_ESCAPE.search(text) is not None):
        return None
    if not _valid(region):
        return None
    # the names and attribute chains (``True``/``False``/``None`` alone are constants; a chain
    # broken by a comment is found by its first name, in the same group)
    groups = _name_free_groups(region, [c.span() for c in _CHAIN.finditer(region)])
    if groups is None or sum(g1 + 1 - g0 for g0, g1 in groups) * 2 < len(region):
        return None  # (less than half of it goes: the reduced parse would cost about the whole one)
    return a, v0, v1, [(v0 + g0, v0 + g1) for g0, g1 in groups]


def _untailed(text: bytes) -> bytes:
    """``text`` without the blanks and (blanked) comments at its end."""
    text = text.rstrip(b" \t\f\r\n")
    while text.endswith(b"#"):  # a comment's ``#`` (its text is blank; no string holds one)
        text = text[:-1].rstrip(b" \t\f\r\n")
    return text


def _valid(region: bytes) -> bool:
    """The (code of the) value is one inert display that Python's parser accepts."""
    r = _COMMENT.sub(b"", region)
    r = _STRINGS.sub(b"$", r)
    if b"'" in r or b'"' in r:
        return False  # a formatted string, a prefix glued to a word, bytes next to str...
    r = _NUMBER.sub(b"$", _INTEGER.sub(b"$", r))
    r = _ELLIPSIS.sub(b"$", r)
    for w in _WORD.findall(r):
        if w in _KEYWORDS:
            return False
    r = _OPERAND.sub(b"$", r)
    r = r.translate(None, b" \t\f\r\n")
    if b"--" in r:
        return False
    for _ in range(MAX_DEPTH):
        r = _MINUS.sub(b"$", r)
        r2 = _DISPLAY.sub(b"$", r)
        if r2 == b"$":
            # a display, not an operand alone nor in parentheses (``(x)``: no tuple)
            return r[:1] in (b"(", b"[", b"{") and r != b"($)"
        if r2 == r:
            return False
        r = r2
    return False


def _name_free_groups(region: bytes, chains: list[tuple[int, int]]) -> Optional[list[tuple[int, int]]]:
    """(first, last) offsets of the bracketed groups inside ``region`` (not ``region`` itself)
    that hold no chain while the group around them does, in order."""
    # per group: [open offset, close offset, parent index, holds a chain]
    groups: list[list] = []
    stack: list[int] = []
    ci = 0
    n = len(chains)
    for m in _BRACKETS.finditer(region):
        at = m.start()
        while ci < n and chains[ci][0] < at:
            if not stack:
                return None
            groups[stack[-1]][3] = True
            ci += 1
        if region[at] in b"([{":
            groups.append([at, -1, stack[-1] if stack else -1, False])
            stack.append(len(groups) - 1)
        else:
            if not stack:
                return None
            g = groups[stack.pop()]
            g[1] = at
            if g[3] and g[2] >= 0:
                groups[g[2]][3] = True
    if stack or ci < n or not groups or groups[0][1] != len(region) - 1:
        return None
    groups[0][3] = True  # the value itself is kept
    return [(g[0], g[1]) for g in groups if not g[3] and groups[g[2]][3]]
