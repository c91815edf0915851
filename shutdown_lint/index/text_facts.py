"""What the project index decides from a module's bytes alone, sparing its summary (an ``ast``
parse, 1-60 ms): the file readers (``_file_bytes``, ``_stat_and_read``), the scans that
``ProjectIndex`` asks (``no_teardown_path``: ``_registers``, ``_indented_clause``, ``_def_names``;
``no_function_in``: ``may_import``, ``may_define``; ``_plain_names``, ``_may_hold_instance``), and
the gates of ``tails.py`` (process tails, SHD202) and ``classes.made_remote`` (a subclass made a
Ray actor elsewhere, read by ``_Execution._inherit_remote`` for SHD403, SHD501, SHD201).

Each answer is the stamp of the module's text (``store.stamp_text``: the dependency the caller
records, in place of the summary's) when the text proves that the summary cannot change the
caller's answer, else None. Answers are kept in the index's memo of text decisions
(``ProjectIndex._no_match``: a run's files do not change).

The reading of a callee written ``a.b.word`` starts from the occurrences of ``word`` in the
bytes (strings and comments included: a superset) and walks back over the chain of names before
it (``chain_firsts``). Unlike ``_chain_firsts`` a chain is also followed across a line
break: inside brackets, or after a backslash, ``a.`` at the end of one line and ``word`` on the
next are one attribute (``(ray.\\n remote)(Cls)``); where a line break, a backslash or a comment
may sit between a name and its dot, the chain is not read (None).
"""

from __future__ import annotations

import keyword
import os
import re
from typing import Optional


# ------------------------------------------------------------------ reading a module's bytes
def _file_bytes(path: str) -> bytes:
    """The file's bytes; empty when it cannot be read (then nothing in it can match)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return b""
    try:
        return _read_fd(fd, os.fstat(fd).st_size)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _stat_and_read(path: str) -> tuple:
    """``(its stat, its bytes)``, the stat taken first so the text stamp is never newer
    than the text; ``(None, None)`` when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None, None
    try:
        st = os.fstat(fd)
        return st, _read_fd(fd, st.st_size)
    except OSError:
        return None, None
    finally:
        os.close(fd)


def _read_fd(fd: int, size: int) -> bytes:
    """The rest of file ``fd``, ``size`` the expected length: ``os.read`` until the end, as
    ``open(path, "rb").read()`` reads it, without its two file objects (4,864 files of
    ray+torch: 0.058 -> 0.042 CPU-s)."""
    data = os.read(fd, size + 1)
    if not data:
        return data
    more = os.read(fd, 65536)
    if not more:
        return data  # (the usual case: one read, then the end)
    parts = [data, more]
    while more:
        more = os.read(fd, 65536)
        parts.append(more)
    return b"".join(parts)


# ------------------------------------------------------------------ the index's scans (``ProjectIndex``)
#: a star import (``from x import *``; the text between may hold a backslash continuation)
#: ``\bimport[\s\\]*\*`` written with the word first: a pattern that starts with a literal lets
#: the regex engine jump to its occurrences; one that starts with ``\b`` (or a look-behind)
#: is tried at every byte, 10x slower (0.60 -> 0.06 CPU-s over the 75 MB of ray+torch)
_STAR_IMPORT = re.compile(rb"import(?<![A-Za-z0-9_]import)[\s\\]*\*")
_LINE_END = re.compile(rb"\r\n?|\n")
_IDENT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_BLANK = b" \t\f\v"
_SPACE = b" \t\f\v\\\r\n"


def _plain_names(data: bytes) -> bool:
    """The identifiers of ``data`` are its bytes as ASCII reads them: no encoding declaration
    (PEP 263: ``coding`` in the first two lines), and no non-ASCII text that Python's NFKC normalisation of names
    could turn into an ASCII name (``ast_tree``'s test, a superset)."""
    end = 0
    for _ in range(2):  # the first two lines (a line ends at "\r", "\n" or both)
        m = _LINE_END.search(data, end)
        if m is None:
            end = len(data)
            break
        end = m.end()
    if b"coding" in data[:end]:
        return False
    if data.isascii():
        return True
    from ..prefilter.ast_tree import _normalises_a_name

    return not _normalises_a_name(data)


#: the name after each ``def`` (blanks, line ends and backslashes between)
#: (the word first, its look-behind after it: see ``_STAR_IMPORT``)
_DEF_NAME = re.compile(rb"def(?<![A-Za-z0-9_\x80-\xff]def)[\s\\]+([A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*)")
#: an ``except``/``finally`` word (not part of a longer name: non-ASCII bytes continue one),
#: one pattern per word: an alternation that starts the pattern is tried at every byte
_CLAUSE_WORDS = tuple(re.compile(w + rb"(?<![A-Za-z0-9_\x80-\xff]" + w + rb")(?![A-Za-z0-9_\x80-\xff])")
                      for w in (rb"except", rb"finally"))
#: a name that may be the last of a registration's callee (``summary._registration``: it ends
#: in ``register``, ``signal.signal``, ``add_signal_handler``; ``ProjectView.registered``: it
#: is ``register``, ``signal`` or ``add_signal_handler``): a word ending in one of them.
#: ``_registers`` searches it 9x faster, one word at a time.
_REGISTRATION = re.compile(rb"(?:register|signal)(?![A-Za-z0-9_\x80-\xff])|add_signal_handler")
_REGISTER_WORDS = tuple(re.compile(w + rb"(?![A-Za-z0-9_\x80-\xff])") for w in (rb"register", rb"signal"))


def _registers(data: bytes) -> bool:
    """``_REGISTRATION.search(data)`` is not None (0.84 -> 0.09 CPU-s over ray+torch)."""
    return b"add_signal_handler" in data or any(p.search(data) for p in _REGISTER_WORDS)


def _indented_clause(data: bytes) -> bool:
    """An ``except``/``finally`` word of ``data`` may be a clause of a ``try`` inside a function
    (a superset: strings and comments count). A clause starts a logical line, so the word is
    first on its physical line (after blanks only) and that line is indented, or starts at
    column 0 after a line that ends in a backslash (``\\`` alone on a line joins the next one
    to its indentation). A word after other text on its line (prose: ``all ranks except``) or
    at column 0 of a line that starts a logical line (a module-level ``try``) is not one."""
    for m in (m for p in _CLAUSE_WORDS for m in p.finditer(data)):  # (any order: one is enough)
        i = k = m.start()
        while k > 0 and data[k - 1] in _BLANK:
            k -= 1
        if k > 0 and data[k - 1] not in b"\r\n":
            continue  # other text before it on its line
        if k < i:
            return True  # indented (a form feed counts: a superset)
        j = k - 1  # the line end before, if any; a backslash before it continues that line
        if j > 0 and data[j] == 0x0A and data[j - 1] == 0x0D:
            j -= 1
        if j > 0 and data[j - 1] == 0x5C:
            return True
    return False


def _def_names(data: bytes) -> tuple[str, ...]:
    """Every name written after ``def`` in ``data`` (a superset of its functions' names)."""
    return tuple({m.decode("utf-8", "replace") for m in _DEF_NAME.findall(data)})


def may_import(data: bytes, name: str) -> bool:
    """An import statement of ``data`` may bind ``name`` (a superset, from the bytes: every
    occurrence of the word is looked at, in strings and comments too).

    An import binds a name written after ``import``, ``as``, ``,`` or ``(`` or first on a
    (continued) line, and followed on its line by ``,``, ``)``, ``;``, ``#``, a backslash, the
    line's end, ``as``, or by ``.`` after ``import``, ``,`` or the start of a line that
    continues one ending in a backslash (``import pkg.mod`` binds ``pkg``). Any other occurrence is not such a name: after ``.``, ``=``, ``def``, a
    word, an operator; before ``(``, ``=``, ``:``, ``[``, an operator, a word."""
    word = name.encode()
    n = len(data)
    i = data.find(word)
    while i >= 0:
        j = i + len(word)
        if (i == 0 or data[i - 1] not in _IDENT) and (j >= n or data[j] not in _IDENT) \
                and _may_bind(data, i, j):
            return True
        i = data.find(word, j)
    return False


def may_define(data: bytes, name: str) -> bool:
    """A ``def`` of ``data`` may define ``name``: an occurrence of the word comes after the
    word ``def`` with only blanks, backslashes and line ends between (a superset)."""
    word = name.encode()
    n = len(data)
    i = data.find(word)
    while i >= 0:
        j = i + len(word)
        if (i == 0 or data[i - 1] not in _IDENT) and (j >= n or data[j] not in _IDENT):
            p = i - 1
            while p >= 0 and data[p] in _SPACE:
                p -= 1
            if p >= 2 and data[p - 2:p + 1] == b"def" and (p == 2 or data[p - 3] not in _IDENT):
                return True
        i = data.find(word, j)
    return False


def _words_at(data: bytes, word: bytes):
    """Start and end of each occurrence of ``word`` as a whole identifier."""
    n = len(data)
    i = data.find(word)
    while i >= 0:
        j = i + len(word)
        if (i == 0 or data[i - 1] not in _IDENT) and (j >= n or data[j] not in _IDENT):
            yield i, j
        i = data.find(word, j)


def _chain_firsts(data: bytes, word: str) -> Optional[set[str]]:
    """The first names of the chains ``a.b.word`` that end at each occurrence of ``word``
    (``word`` itself when no ``.`` precedes it on its line); None when one is not a chain of
    names on one line (``f(x).word``, ``x[0].word``, a dot at a line's end). No gate reads it
    now (``text_facts.chain_firsts`` also follows a chain over lines): the tests keep it as the
    reading that loses a broken chain."""
    out: set[str] = set()
    for i, _ in _words_at(data, word.encode()):
        start = i
        p = i - 1
        while True:
            while p >= 0 and data[p] in _BLANK:
                p -= 1
            if p < 0 or data[p] != 0x2E:  # "."
                break
            p -= 1
            while p >= 0 and data[p] in _BLANK:
                p -= 1
            if p < 0 or data[p] not in _IDENT:
                return None
            while p >= 0 and data[p] in _IDENT:
                p -= 1
            start = p + 1
        j = start
        while j < len(data) and data[j] in _IDENT:
            j += 1
        out.add(data[start:j].decode())
    return out


def _may_hold_instance(data: bytes, name: str) -> bool:
    """An assignment may give ``name`` a class by convention (``name = pkg.Cls(...)``, ``name =
    await Cls(...)``, ``a = name = Cls(...)``, ``name: T = Cls(...)``, ``(name) = Cls(...)``): what
    the summary's local types read (``summary._local_types``). A superset: every occurrence of
    the word is looked at; one that may be a target and whose value is not plainly readable on
    its line counts."""
    n = len(data)
    for i, j in _words_at(data, name.encode()):
        k = _skip_blank(data, j)
        nxt = data[k] if k < n else None
        if nxt is None or nxt in b")#\r\n":
            # ``(name) = ...``: a parenthesised target, perhaps over several lines (not the
            # parenthesis of a call or a subscript: ``f(name)``)
            p = i - 1
            while p >= 0 and data[p] in _BLANK:
                p -= 1
            if p < 0 or data[p] in b"\r\n":
                return True
            if data[p] == 0x28:  # "("
                p -= 1
                while p >= 0 and data[p] in _BLANK:
                    p -= 1
                if p < 0 or not (data[p] in _IDENT or data[p] in b")]"):
                    return True
            continue
        if nxt == 0x5C:  # a backslash: the statement goes on
            return True
        if nxt == 0x3A:  # ":": an annotation (or a slice, a dict, a lambda's parameter)
            end = _LINE_END.search(data, k)
            line = data[k + 1:end.start() if end else n]
            if any(c in line for c in (b"(", b"[", b"{", b"\\")):
                return True  # it may go on past this line
            eq = re.search(rb"(?<![=<>!:])=(?!=)", line)
            if eq is None:
                continue
            k = k + 1 + eq.start()
        elif nxt != 0x3D or data[k + 1:k + 2] == b"=":  # not "=", or "=="
            continue
        if _value_may_be_instance(data, k + 1):
            return True
    return False


def _skip_blank(data: bytes, k: int) -> int:
    n = len(data)
    while k < n and data[k] in _BLANK:
        k += 1
    return k


def _value_may_be_instance(data: bytes, k: int) -> bool:
    """The value written from ``data[k]`` (after an assignment's ``=``) may be ``[await]
    a.b.Cls(...)`` with a capitalised last name, or is not plainly readable on its line."""
    n = len(data)
    while True:
        k = _skip_blank(data, k)
        if data[k:k + 5] == b"await" and (k + 5 >= n or data[k + 5] not in _IDENT):
            k = _skip_blank(data, k + 5)
        last = b""
        while True:
            m = k
            while k < n and data[k] in _IDENT:
                k += 1
            if k == m:
                # a call of a chain of names starts with a name (or ``(``); a backslash, a line's
                # end (in brackets), a comment: not plainly readable
                return k >= n or data[k] in b"(\\\r\n#"
            last = data[m:k]
            k = _skip_blank(data, k)
            if k < n and data[k] == 0x2E:  # "."
                k = _skip_blank(data, k + 1)
                continue
            break
        if k >= n:
            return False
        if data[k] == 0x3D and data[k + 1:k + 2] != b"=":  # ``a = name = Cls()``: the value is further
            k += 1
            continue
        if data[k] == 0x5C:  # a backslash
            return True
        return data[k] == 0x28 and last[:1].isupper()  # "(" after a capitalised name


def _may_bind(data: bytes, i: int, j: int) -> bool:
    """The word at ``data[i:j]`` may be a name an import statement binds (``may_import``)."""
    p = i - 1
    while p >= 0 and data[p] in _BLANK:
        p -= 1
    start = p < 0 or data[p] in b"\r\n\\"  # first on its line
    if not (start or data[p] in b",("):
        q = p
        while q >= 0 and data[q] in _IDENT:
            q -= 1
        if data[q + 1:p + 1] not in (b"import", b"as"):
            return False
    n = len(data)
    k = j
    while k < n and data[k] in _BLANK:
        k += 1
    if k >= n:
        return True
    nxt = data[k]
    if nxt in b",);#\\\r\n":
        return True
    if nxt == 0x61 and data[k:k + 2] == b"as" and (k + 2 >= n or data[k + 2] not in _IDENT):  # "as"
        return True
    if nxt == 0x2E:  # "." (``import pkg.mod``: no parentheses, a continued line ends in a backslash)
        if p >= 0 and data[p] in b"\r\n":
            e = p - 1 if data[p] == 0x0A and p > 0 and data[p - 1] == 0x0D else p
            return e > 0 and data[e - 1] == 0x5C
        return p >= 0 and (data[p] in b",\\" or data[p - 5:p + 1] == b"import")
    return False


# ------------------------------------------------------------------ tails and Ray actors
_KEYWORDS = frozenset(k.encode() for k in keyword.kwlist + keyword.softkwlist)
_QUOTES_OR_HASH = (b"'", b'"', b"#")


def _line_may_end_in(line: bytes, token: bytes) -> bool:
    """The code of ``line`` (one physical line) may end with ``token`` (``.``, or the word
    ``as``): its last bytes before blanks, a backslash and the line end are it, or they are
    before a ``#`` (a comment starts at one of them, if any)."""
    def ends(text: bytes) -> bool:
        return text.endswith(token) and (token == b"." or len(text) == len(token)
                                         or text[-len(token) - 1] not in _IDENT)
    body = line.rstrip(b" \t\f\v\\\r\n")
    if ends(body):
        return True
    h = body.find(b"#")
    while h >= 0:
        if ends(body[:h].rstrip(b" \t\f\v")):
            return True
        h = body.find(b"#", h + 1)
    return False


def _before_break(data: bytes, p: int, token: bytes) -> bool:
    """``data[p]`` is a line end or a backslash before a name: may the code before end with
    ``token`` (``_line_may_end_in``)? Blank lines and lines whose first byte not blank is ``#``
    and that hold no quote, comments, are looked through (such a line in a string leaves the
    string open: a name after it is in the string too)."""
    while True:
        e = p
        if data[e] == 0x0A and e > 0 and data[e - 1] == 0x0D:
            e -= 1  # "\r\n"
        line_end = e if data[e] in b"\r\n" else e + 1  # a backslash is part of its line
        start = max(data.rfind(b"\n", 0, e), data.rfind(b"\r", 0, e)) + 1
        line = data[start:line_end]
        text = line.strip(b" \t\f\v\\")
        comment = text.startswith(b"#") and b"'" not in text and b'"' not in text
        if not comment and _line_may_end_in(line, token):
            return True
        if start == 0 or (text and not comment):
            return False
        p = start - 1


def _call_before(data: bytes, close: int) -> Optional[bytes]:
    """``data[close]`` is ``)`` before the ``.`` of a chain: the name just before its ``(``
    when the parentheses are a call's (``name(...)``: the name, ``b""`` for ``f(x)(...)`` or
    ``x[0](...)``), None when that cannot be told (a quote or a ``#`` between the parentheses or
    before the ``(`` on its line: a string's or a comment's parenthesis may be matched; a line
    break or a keyword before the ``(``: ``await (a.b).c``, a new statement ``(a).c``)."""
    depth = 0
    q = close
    while q >= 0:
        c = data[q]
        if c == 0x29:  # ")"
            depth += 1
        elif c == 0x28:  # "("
            depth -= 1
            if depth == 0:
                break
        elif c in b"'\"#":
            return None
        q -= 1
    if q < 0:
        return None
    line_start = max(data.rfind(b"\n", 0, q), data.rfind(b"\r", 0, q)) + 1
    if any(ch in data[line_start:q] for ch in _QUOTES_OR_HASH):
        return None
    k = q - 1
    while k >= 0 and data[k] in _BLANK:
        k -= 1
    if k < 0:
        return None
    if data[k] in b")]":
        return b""
    if data[k] not in _IDENT:
        return None
    e = k + 1
    while k >= 0 and data[k] in _IDENT:
        k -= 1
    name = data[k + 1:e]
    if name in _KEYWORDS or name[:1].isdigit():
        return None
    return name


def _ends_no_name(data: bytes, close: int) -> bool:
    """``data[close]`` is a ``)`` of the code: what it closes does not end in a name (the last
    token before it is a string, a comma, a bracket, an operator), so it is no parenthesised
    chain of names (``(a.b)``, whose last token is a name). Line ends are looked through when the
    line before holds no ``#`` (a comment ends at its line end, in any byte)."""
    k = close - 1
    while k >= 0 and data[k] in _BLANK:
        k -= 1
    while k >= 0 and data[k] in b"\r\n\\":
        start = max(data.rfind(b"\n", 0, k), data.rfind(b"\r", 0, k)) + 1
        if b"#" in data[start:k]:
            return False
        k -= 1
        while k >= 0 and data[k] in _SPACE:
            k -= 1
    # (not after a ")" either: ``((a.b)).word``)
    return k >= 0 and data[k] not in _IDENT and data[k] not in b".)" and data[k] < 0x80


def may_alias(data: bytes, name: str) -> bool:
    """An import may bind ``name`` as an alias (``import a.b as name``, ``from a import b as
    name``; a superset: ``with a as name, b as c:`` and prose count): an occurrence of the word
    comes after the word ``as`` (blanks between, or the code before a line break may end with it:
    ``_before_break``), and is followed by what may end an
    import's name on its line (``may_import``'s ends: ``,``, ``)``, ``;``, ``#``, a backslash, a
    line end or the end of the text), not ``:`` (``except E as name:``) nor ``.``."""
    n = len(data)
    for i, j in _words_at(data, name.encode()):
        k = j
        while k < n and data[k] in _BLANK:
            k += 1
        if k < n and data[k] not in b",);#\\\r\n":
            continue
        p = i - 1
        while p >= 0 and data[p] in _BLANK:
            p -= 1
        if p >= 0 and data[p] in b"\r\n\\":
            if _before_break(data, p, b"as"):
                return True
        elif p >= 1 and data[p - 1:p + 1] == b"as" and (p < 2 or data[p - 2] not in _IDENT):
            return True
    return False


def chain_firsts(data: bytes, word: str, called: bool = False, dotted_only: bool = False) -> Optional[set[str]]:
    """The first names of the chains of names ``a.b.word`` (``word`` itself when no ``.``
    precedes it) that end at the occurrences of ``word``; None when one may not be read
    (a line break between a name and a dot, a comment between, ``Cls(x).word``).

    ``called``: only the occurrences that may end the callee of a call, those followed (after
    blanks, backslashes and line ends) by ``(``, ``)`` (``(a.word)(x)``) or ``#``: a call's
    callee is its name chain, perhaps in parentheses, then its arguments.

    An occurrence whose chain holds something other than names before a dot (a subscript, a
    string, a backtick of prose) is no chain of names: ``summary.dotted`` is None there and the
    summary records no callee; it is skipped. A ``)`` before a dot may close a parenthesised
    chain (``(ray).remote``: ``dotted`` reads through parentheses) or a call's arguments: with
    ``dotted_only`` (the reader uses ``dotted`` alone) a call's (``f(...).word``, or a ``)``
    after a token that is no name: ``_ends_no_name``) is skipped, without it only a call of a
    name not capitalised (``summary._callee_written`` reads ``Cls(...).word`` as ``Cls.word``,
    ``f(...).word`` as nothing); else the chain is not read."""
    out: set[str] = set()
    n = len(data)
    for i, j in _words_at(data, word.encode()):
        if called:
            k = j
            while k < n and data[k] in _SPACE:
                k += 1
            if k >= n or data[k] not in b"()#":
                continue
        start = i
        p = i - 1
        skip = False
        while True:
            while p >= 0 and data[p] in _BLANK:
                p -= 1
            if p >= 0 and data[p] in b"\r\n\\":
                if _before_break(data, p, b"."):
                    return None  # ``a.`` ends the line before: perhaps one chain
                break
            if p < 0 or data[p] != 0x2E:  # "."
                break
            p -= 1
            while p >= 0 and data[p] in _BLANK:
                p -= 1
            if p < 0 or data[p] in b"\r\n\\":
                return None  # a line break between a name and its dot
            if data[p] == 0x29 and dotted_only and _ends_no_name(data, p):
                skip = True  # ``f(x, "s").word``: a call's result, no chain of names
                break
            if data[p] == 0x29:  # ")"
                name = _call_before(data, p)
                if name is None or not (dotted_only or not name[:1].isupper()):
                    return None
                skip = True  # a call's result: no chain of names
                break
            if data[p] not in _IDENT:
                skip = True  # a subscript, a literal, prose: no chain of names
                break
            while p >= 0 and data[p] in _IDENT:
                p -= 1
            start = p + 1
        if skip:
            continue
        e = start
        while e < n and data[e] in _IDENT:
            e += 1
        if start == e or data[start] in b"0123456789":
            return None
        out.add(data[start:e].decode())
    return out


#: bytes an import statement may hold between its ``import`` and a name it binds (names,
#: dots, commas, ``as``, blanks, backslashes, the ``(`` of a name list; non-ASCII names)
_IN_IMPORT = frozenset(_IDENT) | frozenset(b" \t\f\v.,(\\") | frozenset(range(0x80, 0x100))


def may_import_strictly(data: bytes, name: str) -> bool:
    """``may_import`` (an import statement may bind ``name``), asked of the occurrences where the
    word ``import`` comes before it with only what an import statement holds there between
    (``_IN_IMPORT``; line ends too, a comment's line taken as one: ``from m import (a,  # x``):
    ``f(log)`` and ``g(a,\n log)`` are then no binding. A superset: the bound name of ``import
    a.b as n, m``, ``from p import (a,\n n)`` or ``from p import \\\n n`` is reached from
    its ``import`` over names, dots, commas, ``as``, ``(``, blanks and line ends; a comment
    can only end a line there, and a line with a ``#`` counts as a binding."""
    word = name.encode()
    for i, j in _words_at(data, word):
        if not _may_bind(data, i, j):
            continue
        p = i - 1
        while p >= 0:
            c = data[p]
            if c in b"\r\n":
                start = max(data.rfind(b"\n", 0, p), data.rfind(b"\r", 0, p)) + 1
                if b"#" in data[start:p]:
                    return True  # a comment may end that line
                p -= 1
                continue
            if c not in _IN_IMPORT:
                break
            if c in _IDENT:
                e = p + 1
                while p >= 0 and data[p] in _IDENT:
                    p -= 1
                if data[p + 1:e] == b"import" and (p < 0 or data[p] < 0x80):
                    return True
                continue
            p -= 1
    return False


#: the names an import binds to ``ray``, ``ray.actor``, ``ray.remote`` or ``ray.actor.remote``
#: without ``as`` (``import ray``, ``from ray import actor``, ``from ray[.actor] import remote``)
_RAY_NAMES = frozenset({"ray", "actor", "remote"})


def no_ray_remote(index, path: str) -> Optional[list]:
    """No callee the summary of ``path`` records in ``remote`` (``ray.remote(X)`` anywhere) or
    among a top-level class's decorators can be Ray's ``remote`` (``classes._is_ray_remote``):
    ``made_remote`` then finds nothing in that module and reads nothing more through it.

    ``_is_ray_remote`` holds only when the callee's first name F is bound by an import of the
    module (``s["imports"]``, filled by import statements only, the target as written) and the
    import's target plus the rest of the callee is ``ray.remote`` or ``ray.actor.remote``; the
    callee is ``summary.dotted`` of a chain of names (parentheses read through).

    - Its last name is ``remote``: a chain of names ending in an occurrence of the word
      ``remote`` (``chain_firsts(dotted_only=True)`` reads every first name of those), and F is
      bound to ``ray``, ``ray.actor`` or ``ray.remote``: by ``import ray[.x]`` (F ``ray``),
      ``from ray import actor``/``remote`` and ``from ray.actor import remote`` (F ``actor``,
      ``remote``), which ``may_import_strictly`` sees, or by ``... as F`` (``may_alias``).
    - Its last name is not ``remote``: it is F alone, bound to ``ray.remote`` or
      ``ray.actor.remote`` by an import that spells ``remote`` in a chain whose first name is
      ``remote`` (``from ray import remote as r``) or ``ray`` (``import ray.remote as r``), both
      bound by an import (``may_import_strictly``): the first case's test already fails.

    So it holds when the names are the bytes (``_plain_names``: no encoding declaration, no name
    that NFKC normalises) and every first name read is neither ``ray``/``actor``/``remote``
    bound by an import nor a name written after ``as``."""
    memo = index._no_match  # the index's memo of decisions from a text ("ray.remote": no name)
    key = (path, "ray.remote", ())
    if key in memo:
        return memo[key]
    found = None
    st, data = _stat_and_read(path)
    if data is not None and _plain_names(data):
        firsts = chain_firsts(data, "remote", dotted_only=True)
        if firsts is not None and not any(
                may_import_strictly(data, f) if f in _RAY_NAMES else may_alias(data, f) for f in firsts):
            from .store import stamp_text

            found = stamp_text(st, data)
    memo[key] = found
    return found


def no_tail_call_reaches_out(index, path: str, word: str) -> Optional[list]:
    """For the calls that end a function (``tails.py``): no
    CALL of module ``path`` whose callee ends in ``word`` can resolve to a module-level function
    of another module. Returns the stamp of the module's text, or None.

    The argument: a call resolves out of its module only through
    the first name of its callee as the summary records it, bound by an import (here
    ``may_import_strictly``, a narrower superset than ``may_import``) or a star import, or a
    submodule; a class, a variable, ``self``/``cls`` give methods, a
    function here is here, and a first name that may hold an instance (``_may_hold_instance``)
    is read as its class. Unlike the gate it replaced (``ProjectIndex.no_call_reaches_out``, removed),
    only the occurrences of ``word`` that may end a
    call's callee count (``chain_firsts(called=True)``: an attribute read, ``config.word``, is
    no call), and a chain broken over lines is read or not decided (``chain_firsts``)."""
    memo = index._no_match  # the index's memo of decisions from a text ("tail:": no name)
    key = (path, "tail:" + word, ())
    if key in memo:
        return memo[key]
    found = None
    # (a text known not plain or with a star import decides nothing: not read again)
    st, data = _stat_and_read(path) if index._plain_text.get(path) is not False else (None, None)
    if data is not None and index._plain_without_star(path, data) and not index._may_have_submodules(path):
        firsts = chain_firsts(data, word, called=True)
        if firsts is not None and not any(
                may_import_strictly(data, f) or _may_hold_instance(data, f) for f in firsts):
            from .store import stamp_text

            found = stamp_text(st, data)
    memo[key] = found
    return found
