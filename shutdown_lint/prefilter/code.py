"""A file's bytes with the insides of its string literals and comments blanked: what the
candidate tiers call *code*.

The word tier (``prefilter.words``) counts a word found in a string as present: a docstring
that says "exit" keeps SHD201's words, and the file is then parsed with ``ast`` only to learn
that no code calls ``exit``. Names that the facts resolve are identifiers written in code; a
condition whose words the facts read only from code (not from string annotations, nor from
``"__main__"``) may be checked on ``code_only(source)`` instead (``words.InCode``).

``code_only`` keeps every byte of code and blanks (spaces, line ends kept) only:

- a comment's text after its ``#``;
- the text between the quotes of a string literal whose prefix has no ``f``/``t`` (plain,
  raw, bytes; single- or triple-quoted);

and it keeps formatted strings (``f``/``t`` prefix) whole: their replacement fields are
code. Their end is found as Python 3.12's tokenizer finds it (PEP 701: a field may hold
strings with the same quotes, nested fields, comments), which for a file that Python 3.11
accepts is where 3.11 ends them too. Anything it does not read for sure (an unterminated
string, a single ``}`` in a formatted string, an identifier right before a quote that is
neither a string prefix nor a keyword, the closing quotes inside a format spec) gives None:
the caller then uses the whole text. The result has the length of the source, so offsets and
line ends are the same.

``tests/perf/test_s5_text_code.py`` compares it with Python's ``tokenize`` (3.11, and 3.12's
where installed) over real files: no identifier token is ever blanked.

This module must stay cheap to import: no libcst.
"""

from __future__ import annotations

import keyword
import re
from typing import Optional

#: in code, the next comment (``c``: its text) or string literal (``t1``/``t2``: a triple-quoted
#: one's text, ``s1``/``s2``: a single-quoted one's), read as a plain string (its prefix is looked
#: at after); ``u``, or no group: a quote that opens no string that closes
#: (Loops are unrolled, ``x*(?:y x*)*``, where one alternative never starts another: linear without
#: the possessive quantifiers of Python 3.11, which 3.10 cannot compile.)
_TOKEN = re.compile(
    rb"#(?P<c>[^\r\n]*)"
    rb"|'''(?P<t1>[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*)'''"
    rb'|"""(?P<t2>[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*)"""'
    rb"|(?P<u>'''|\"\"\")"
    rb"|'(?P<s1>[^'\\\r\n]*(?:\\(?:\r\n|[\s\S])[^'\\\r\n]*)*)'"
    rb'|"(?P<s2>[^"\\\r\n]*(?:\\(?:\r\n|[\s\S])[^"\\\r\n]*)*)"'
    rb"|['\"]")
#: where the next ``_TOKEN`` starts
_NEXT = re.compile(rb"[#'\"]")
#: the end of a comment's line (in a replacement field)
_EOL = re.compile(rb"[\r\n]")
#: bytes that may end a string prefix or a keyword before a quote
_IDENT_BYTES = frozenset(b"_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz" + bytes(range(128, 256)))
#: from just after the opening quote(s) of a plain string, its text and closing quote(s)
_PLAIN_END = {
    b'"': re.compile(rb'[^"\\\r\n]*(?:\\(?:\r\n|[\s\S])[^"\\\r\n]*)*"'),
    b"'": re.compile(rb"[^'\\\r\n]*(?:\\(?:\r\n|[\s\S])[^'\\\r\n]*)*'"),
    b'"""': re.compile(rb'[^"\\]*(?:(?:\\[\s\S]|"(?!""))[^"\\]*)*"""'),
    b"'''": re.compile(rb"[^'\\]*(?:(?:\\[\s\S]|'(?!''))[^'\\]*)*'''"),
}
#: in the literal part of a formatted string: what ends a run of plain text
_F_SPECIAL = {
    b'"': re.compile(rb'[\\{}"\r\n]'),
    b"'": re.compile(rb"[\\{}'\r\n]"),
    b'"""': re.compile(rb'[\\{}"]'),
    b"'''": re.compile(rb"[\\{}']"),
}
#: inside a replacement field (code): what the scanner acts on
_FIELD_SPECIAL = re.compile(rb"[\"'#()\[\]{}:!\\]")
_PLAIN_PREFIXES = frozenset({b"r", b"u", b"b", b"br", b"rb"})
_FORMAT_PREFIXES = frozenset({b"f", b"fr", b"rf", b"t", b"tr", b"rt"})
#: words that may stand right before a string (``if"a"in x``, ``case"x":``)
_KEYWORDS = frozenset(w.encode() for w in (*keyword.kwlist, *keyword.softkwlist))
#: every byte but a line end becomes a space
BLANK = bytes(b if b in (10, 13) else 32 for b in range(256))

_QUOTE_DOUBLE, _QUOTE_SINGLE, _HASH, _BACKSLASH = 34, 39, 35, 92
_OPEN, _CLOSE = frozenset(b"([{"), frozenset(b")]}")


class _Unsure(Exception):
    """The scanner cannot tell where a literal ends: the whole text counts as code."""


def code_only(source: bytes) -> Optional[bytes]:
    """``source`` with comments and the insides of non-formatted string literals blanked
    (same length), or None when some literal cannot be read for sure, or the bytes may not
    be what Python reads (a NUL byte; an encoding other than UTF-8, ASCII or a one-byte
    Latin one: in Shift-JIS a backslash byte can end a character inside a string)."""
    if b"\0" in source or not _read_as_written(source):
        return None
    try:
        return _blank(source)
    except _Unsure:
        return None


#: PEP 263's encoding declaration (on one of the first two lines)
_COOKIE = re.compile(rb"[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_LINE_BREAK = re.compile(rb"\r\n|\r|\n")
#: declared encodings whose bytes below 128 are always the ASCII characters (utf-7 and utf-16 are not)
_SAFE_ENCODINGS = (b"utf-8", b"utf8", b"utf_8", b"ascii", b"us-ascii", b"latin", b"iso-8859", b"iso8859", b"iso_8859",
                   b"cp125", b"windows-125")


def _read_as_written(source: bytes) -> bool:
    """Python reads the file's bytes below 128 as the ASCII characters: no encoding declared,
    or one of ``_SAFE_ENCODINGS``, and the text is UTF-8 unless a one-byte encoding is declared."""
    pos = 0
    for _ in range(2):
        brk = _LINE_BREAK.search(source, pos)
        m = _COOKIE.match(source, pos, len(source) if brk is None else brk.start())
        if m is not None:
            name = m.group(1).lower()
            if not name.startswith(_SAFE_ENCODINGS):
                return False
            if not name.startswith((b"utf", b"ascii", b"us-ascii")):
                return True  # one byte per character
            break
        if brk is None:
            break
        pos = brk.end()
    if source.isascii():
        return True
    try:
        source.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _blank(src: bytes) -> bytes:
    pieces: list[bytes] = []
    done = 0  # src[:done] is in pieces
    i = 0
    search, match = _NEXT.search, _TOKEN.match
    ident = _IDENT_BYTES
    while True:
        m = search(src, i)
        if m is None:
            break
        m = match(src, m.start())
        group = m.lastgroup
        if group is None or group == "u":
            raise _Unsure()  # a quote that opens no string this line (or file) closes
        j = m.start()
        if group != "c" and j and src[j - 1] in ident and _prefix_is_formatted(src, j):
            delim = _delimiter(src, j)
            i = _formatted_end(src, j + len(delim), delim)
            continue
        a, b = m.span(group)
        pieces += (src[done:a], src[a:b].translate(BLANK))
        done = b
        i = m.end()
    if not pieces:
        return src
    pieces.append(src[done:])
    return b"".join(pieces)


def _delimiter(src: bytes, j: int) -> bytes:
    q = src[j:j + 1]
    return q * 3 if src[j:j + 3] == q * 3 else q


def _prefix_is_formatted(src: bytes, j: int) -> bool:
    """The string whose quote is at ``j``: True when its prefix makes it formatted (``f``,
    ``t``, with or without ``r``); False for no prefix, a plain one, or a keyword before it."""
    k = j
    while k > 0:
        b = src[k - 1]
        if b == 95 or 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 or b >= 128:
            k -= 1
        else:
            break
    if k == j:
        return False
    word = src[k:j]
    low = word.lower()
    if low in _PLAIN_PREFIXES:
        return False
    if low in _FORMAT_PREFIXES:
        return True
    if word in _KEYWORDS:
        return False
    raise _Unsure()


def _string_end(src: bytes, j: int) -> int:
    """The end of the string literal whose (first) quote is at ``j``: the offset after its
    closing quote(s)."""
    delim = _delimiter(src, j)
    start = j + len(delim)
    if _prefix_is_formatted(src, j):
        return _formatted_end(src, start, delim)
    end_m = _PLAIN_END[delim].match(src, start)
    if end_m is None:
        raise _Unsure()
    return end_m.end()


def _formatted_end(src: bytes, i: int, delim: bytes) -> int:
    """From just after a formatted string's opening ``delim``: the offset after its closing one."""
    special = _F_SPECIAL[delim].search
    q = delim[0]
    triple = len(delim) == 3
    while True:
        m = special(src, i)
        if m is None:
            raise _Unsure()
        j = m.start()
        c = src[j]
        if c == q:
            if not triple:
                return j + 1
            if src[j:j + 3] == delim:
                return j + 3
            i = j + 1
        elif c == _BACKSLASH:
            i = _after_escape(src, j)
        elif c == 123:  # {
            if src[j + 1:j + 2] == b"{":
                i = j + 2
            else:
                i = _field_end(src, j + 1, delim)
        elif c == 125:  # }
            if src[j + 1:j + 2] != b"}":
                raise _Unsure()
            i = j + 2
        else:  # a line end in a single-quoted string: unterminated
            raise _Unsure()


def _after_escape(src: bytes, j: int) -> int:
    """After the backslash at ``j`` in a formatted string's text: the escaped character is
    skipped, except a brace (3.12's tokenizer reads ``\\{`` as a backslash and a field)."""
    nxt = src[j + 1:j + 2]
    if nxt in (b"{", b"}"):
        return j + 1
    if nxt == b"\r" and src[j + 2:j + 3] == b"\n":
        return j + 3
    return j + 2


def _field_end(src: bytes, i: int, delim: bytes) -> int:
    """From just after a replacement field's ``{``: the offset after its closing ``}``."""
    depth = 0
    search = _FIELD_SPECIAL.search
    while True:
        m = search(src, i)
        if m is None:
            raise _Unsure()
        j = m.start()
        c = src[j]
        if c == _QUOTE_DOUBLE or c == _QUOTE_SINGLE:
            i = _string_end(src, j)
        elif c == _HASH:
            e = _EOL.search(src, j)
            if e is None:
                raise _Unsure()
            i = e.start()
        elif c in _OPEN:
            depth += 1
            i = j + 1
        elif c in _CLOSE:
            if depth == 0:
                if c != 125:
                    raise _Unsure()
                return j + 1
            depth -= 1
            i = j + 1
        elif c == 58 and depth == 0:  # ``:`` at the field's level: the format spec follows
            return _spec_end(src, j + 1, delim)
        elif c == _BACKSLASH:
            i = j + 2
        else:  # ``!`` (a conversion or ``!=``), or ``:`` inside brackets: code goes on
            i = j + 1


def _spec_end(src: bytes, i: int, delim: bytes) -> int:
    """From just after a field's format-spec ``:``: the offset after the field's ``}``."""
    special = _F_SPECIAL[delim].search
    q = delim[0]
    while True:
        m = special(src, i)
        if m is None:
            raise _Unsure()
        j = m.start()
        c = src[j]
        if c == 123:  # a nested field: ``{x:{width}}``
            i = _field_end(src, j + 1, delim)
        elif c == 125:
            return j + 1
        elif c == _BACKSLASH:
            i = _after_escape(src, j)
        elif c == q:
            if len(delim) == 1 or src[j:j + 3] == delim:
                raise _Unsure()  # the string's end inside a spec: not read for sure
            i = j + 1
        else:
            raise _Unsure()
