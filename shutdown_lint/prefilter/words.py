"""Candidate tier 1: a cheap, conservative test on a file's identifier words.

The text pre-filter (``Rule.triggers``, substrings) passes 70% of the lines of a large
code base (``get``, ``run(``, ``remote`` are everywhere); parsing that with libcst is
~27x ruff before any rule runs. Most of those files cannot produce a finding:
``SystemExit`` appears, but in no coroutine or thread target; ``ray`` and ``get``
appear, but never ``ray.get``. A candidate declaration states a *necessary* condition
for a rule to report anything in a file, as a formula over the file's identifier
words (``Word``, ``qualified``/``ModuleAttr``, ``WordThen``, ``All``, ``AnyOf``),
checked with ``bytes.find`` plus a boundary test: ~1/100 of a libcst parse.

Soundness argument (why no finding is lost): the facts resolve names only through the
module's own imports and attribute chains, so every qualified name a rule can see ends
with an identifier written literally in the file (at the use site, or in the
``import`` that binds an alias), and a module-level name ``pkg.f`` also needs ``pkg``
spelled out or aliased (``ModuleAttr``). Words inside comments do not count (a ``#``
with no quote before it on the line: the word is in a comment, or in a string that
cannot have closed; neither resolves to a name). Words inside strings do count, which
only makes the test more permissive.

Declarations live on the rule they belong to: ``candidate = All(...)`` (tier 1, this
module) and ``candidate_tree`` (tier 2, ``prefilter.ast_tree``: the same idea on Python's ``ast``,
for conditions words cannot state). A rule that declares nothing is always a candidate.
A rule whose options are set explicitly in the settings is always a candidate too: its
vocabulary may name words the declaration does not know.

Disable both tiers with ``SHUTDOWN_LINT_CANDIDATES=0`` or ``with select.disabled():``;
tests/perf/test_candidates.py and ``bench/bench_speed.py --check-candidates`` compare
both ways and must get identical diagnostics.

This module must stay cheap to import: no libcst.
"""

from __future__ import annotations

import itertools
import re
from typing import Iterable, Iterator, Optional, Sequence

def _is_ident_byte(b: int) -> bool:
    return b == 95 or 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122  # _ 0-9 A-Z a-z


#: what Python lets an author write between two tokens of one statement: whitespace (line breaks
#: too, as inside brackets), a backslash continuation, a comment (inside brackets). A condition that
#: reads more than one token spells the gap with ``gap()``, not ``\s*``: ``except \`` + newline + ``:``
#: is a bare ``except:``, ``ray.\`` + newline + ``get`` is ``ray.get``. Over-reading (a break outside
#: brackets) only keeps a file. (``_GAP``: the same, one piece, for short strings.)
_GAP = rb"(?:\s|\\(?:\r\n|\r|\n)|#[^\r\n]*)"
_gaps = itertools.count()


def gap() -> str:
    r"""A regex for a gap between two tokens (``_GAP``, zero or more), matched atomically: each
    run of whitespace is taken whole (a lookahead and a backreference, as 3.10 has no possessive
    quantifiers), so a failing match does not give it back a byte at a time. A group of ``_GAP``
    repeated cost 14x ``\s*`` on the long blank runs of a file's code view (``InCode``).
    A comment, given back, ends only at its line's end or before a byte that is neither
    whitespace nor ``#``: the other ends lead where one of these does (or to a ``#``, which no
    pattern reads after a gap), and trying them was exponential in the comment lines after a
    word (4.3 s for four blanked comment lines after ``import ray``). Each reading is tried once:
    a comment does not end before a backslash either (a continuation then leads where the
    line's end does; else the gap ends at the ``\``, which no pattern reads after a gap), and
    a continuation takes one line-break byte, the whitespace run the rest (``\r\n`` read as
    ``\r`` then ``\n`` was a second way); each was a factor 2 per line, ``#\`` + CRLF lines 3
    (18 of them after ``except``: 70 s)."""
    i = next(_gaps)
    return (rf"(?:(?![\s\\#])|(?=(?P<gw{i}>\s*))(?P=gw{i})"  # (no gap: the common case, decided at once)
            rf"(?:(?:\\[\r\n]|#[^\r\n]*(?=[\r\n]|\Z|[^\s#\\]))(?=(?P<gv{i}>\s*))(?P=gv{i}))*)")


#: byte value -> 1 for ``_ 0-9 A-Z a-z`` (``_is_ident_byte`` as a table: no call per test)
IDENT_BYTES = bytes(_is_ident_byte(b) for b in range(256))


def _in_comment(src: bytes, i: int) -> bool:
    """Offset ``i`` is certainly not code: a ``#`` precedes it on its line, and no quote and
    no ``{`` come between the line's start (the ``#``) and ``i``. Then either the ``#`` opens
    a comment, or the line is inside a multi-line string that cannot have closed before
    ``i``, where names never resolve, unless the string is an f-string and ``i`` is in a
    replacement field: ``f\"\"\"`` newline ``#{dist.init_process_group()}`` is a call.
    A field's expression opened on this line follows a ``{`` after the ``#``; one opened on
    an earlier line reaches a ``#`` here only inside a string (a quote) or as a comment of
    its own (3.12), after which the line is not code."""
    start = src.rfind(b"\n", 0, i) + 1
    cr = src.rfind(b"\r", start, i)  # "\r" alone ends a line too (searched on this line only)
    if cr >= 0:
        start = cr + 1
    hash_at = src.find(b"#", start, i)
    return (hash_at >= 0 and src.find(b'"', start, i) < 0 and src.find(b"'", start, i) < 0
            and src.find(b"{", hash_at, i) < 0)


class FileText:
    """One file's bytes with per-file memos: each check runs once per file, whatever
    the number of rules that ask.

    Words are found with ``bytes.find`` plus a boundary test in Python: a regex that
    starts with a look-behind or ``\\b`` loses the C literal-prefix scan and is 10-15x
    slower on this workload (measured: 0.27 s vs 2.8 s for ``get`` over the corpus).
    """

    __slots__ = ("source", "_positions", "_partial", "_memo", "_code", "_absent")

    def __init__(self, source: bytes, present=None) -> None:
        self.source = source
        #: ``present.Present.absent`` of the file's one-pass scan, or None: a name it scanned for and
        #: did not find has no position, with no search (the scan's words are substrings of the
        #: source: a whole identifier outside comments is one)
        self._absent = present.absent if present is not None else None
        #: name -> every offset (``positions``)
        self._positions: dict[bytes, list[int]] = {}
        #: name -> [offsets found so far, offset to search on from] (``iter_positions`` stopped early)
        self._partial: dict[bytes, list] = {}
        self._memo: dict[object, bool] = {}
        self._code: Optional[FileText] = None

    def code(self) -> "FileText":
        """The file's code (``prefilter.code.code_only``: comments and the insides of string
        literals blanked), built on first use; the whole text when it cannot be read for sure."""
        found = self._code
        if found is None:
            from .code import code_only

            blanked = code_only(self.source)
            # (the code blanks bytes to spaces: a word absent from the source is absent from it)
            found = self._code = self if blanked is None or blanked == self.source else FileText(blanked)
            found._absent = self._absent
        return found

    def positions(self, name: bytes, first_only: bool = False) -> list[int]:
        """Offsets where ``name`` occurs as a whole identifier, outside comments (with
        ``first_only``, at most the first one)."""
        found = self._positions.get(name)
        if found is not None:
            return found
        if first_only:
            for i in self.iter_positions(name):
                return [i]
            return []
        for _ in self.iter_positions(name):
            pass
        return self._positions[name]

    def iter_positions(self, name: bytes) -> Iterator[int]:
        """``positions(name)``, found as they are asked for: a caller that stops at the first
        one that suits it does not pay for the search of the others (the search goes on from
        where it stopped when a later caller asks for more)."""
        found = self._positions.get(name)
        if found is not None:
            yield from found
            return
        part = self._partial.get(name)
        if part is None:
            if self._absent is not None and self._absent(name):
                self._positions[name] = []
                return
            part = self._partial[name] = [[], 0]
        out = part[0]
        k = 0
        src, n, ident = self.source, len(name), IDENT_BYTES
        end = len(src)
        while True:
            if k < len(out):  # found already (by this caller or an earlier one)
                yield out[k]
                k += 1
                continue
            if part[1] < 0:
                break
            i = src.find(name, part[1])
            while i >= 0:
                if ((i == 0 or not ident[src[i - 1]]) and (i + n >= end or not ident[src[i + n]])
                        and not _in_comment(src, i)):
                    out.append(i)
                    break
                i = src.find(name, i + n)
            part[1] = i + n if i >= 0 else -1
        self._positions[name] = out
        self._partial.pop(name, None)

    def has_word(self, name: bytes) -> bool:
        found = self._positions.get(name)
        if found is not None:
            return bool(found)
        part = self._partial.get(name)
        if part is not None:
            if part[0]:
                return True
            for _ in self.iter_positions(name):
                return True
            return False
        # the first search for ``name``: ``iter_positions``' first step, with no generator
        if self._absent is not None and self._absent(name):
            self._positions[name] = []
            return False
        src, n, ident = self.source, len(name), IDENT_BYTES
        end = len(src)
        i = src.find(name)
        while i >= 0:
            if ((i == 0 or not ident[src[i - 1]]) and (i + n >= end or not ident[src[i + n]])
                    and not _in_comment(src, i)):
                self._partial[name] = [[i], i + n]
                return True
            i = src.find(name, i + n)
        self._positions[name] = []
        return False

    def memo(self, key: object, compute) -> bool:
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = bool(compute(self))
        return hit

    def line_at(self, pos: int) -> bytes:
        start = self.source.rfind(b"\n", 0, pos) + 1
        end = self.source.find(b"\n", pos)
        return self.source[start:] if end < 0 else self.source[start:end]


# --------------------------------------------------------------------------- formulas


class Cond:
    """A necessary condition on a file's text."""

    #: some part is an ``InCode``: ``holds`` may read the file's code (``FileText.code``)
    reads_code = False

    def holds(self, text: FileText) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def searched_names(self) -> frozenset:
        """Names this condition looks up with ``FileText``'s word search (``has_word``,
        ``iter_positions``): the one-pass scan (``prefilter.present``) looks for them too, and a
        name it did not find is answered at once. Leaving one out costs only its search."""
        return frozenset()

    def holds_on_text(self, text: FileText) -> bool:
        """``holds`` with every ``InCode`` part checked on the whole text only (a weaker
        condition, cheaper: ``select.filter_rules`` asks the code only when it decides)."""
        return self.holds(text)

    def __and__(self, other: "Cond") -> "Cond":
        return All(self, other)

    def __or__(self, other: "Cond") -> "Cond":
        return AnyOf(self, other)


class Word(Cond):
    """At least one of ``names`` occurs as a whole identifier."""

    def __init__(self, *names: str) -> None:
        if not names:
            raise ValueError("Word() needs at least one name")
        self.names = tuple(sorted({n.encode() for n in names}))

    def holds(self, text: FileText) -> bool:
        has_word = text.has_word
        for n in self.names:
            if has_word(n):
                return True
        return False

    def searched_names(self) -> frozenset:
        return frozenset(self.names)

    def __repr__(self) -> str:
        return f"Word({', '.join(sorted(n.decode() for n in self.names))})"


class WordThen(Cond):
    """Some whole-word occurrence of ``word`` is followed by the regex ``tail``
    (``WordThen("except", gap() + ":")`` is a bare ``except:``; spell a gap between tokens with
    ``gap()``)."""

    def __init__(self, word: str, tail: str) -> None:
        self.word = word.encode()
        self.tail = re.compile(tail.encode())
        self.key = ("WordThen", self.word, tail)

    def holds(self, text: FileText) -> bool:
        return text.memo(self.key, self._scan)

    def _scan(self, text: FileText) -> bool:
        n, match, src = len(self.word), self.tail.match, text.source
        for p in text.iter_positions(self.word):
            if match(src, p + n):
                return True
        return False

    def __repr__(self) -> str:
        return f"WordThen({self.word.decode()!r}, {self.tail.pattern!r})"

    def searched_names(self) -> frozenset:
        return frozenset((self.word,))


class All(Cond):
    def __init__(self, *parts: Cond) -> None:
        self.parts = parts
        self.reads_code = any(p.reads_code for p in parts)

    def holds(self, text: FileText) -> bool:
        for p in self.parts:
            if not p.holds(text):
                return False
        return True

    def holds_on_text(self, text: FileText) -> bool:
        for p in self.parts:
            if not p.holds_on_text(text):
                return False
        return True

    def __repr__(self) -> str:
        return f"All({', '.join(map(repr, self.parts))})"

    def searched_names(self) -> frozenset:
        return frozenset().union(*(p.searched_names() for p in self.parts))


class AnyOf(Cond):
    def __init__(self, *parts: Cond) -> None:
        self.parts = parts
        self.reads_code = any(p.reads_code for p in parts)

    def holds(self, text: FileText) -> bool:
        for p in self.parts:
            if p.holds(text):
                return True
        return False

    def holds_on_text(self, text: FileText) -> bool:
        for p in self.parts:
            if p.holds_on_text(text):
                return True
        return False

    def __repr__(self) -> str:
        return f"AnyOf({', '.join(map(repr, self.parts))})"

    def searched_names(self) -> frozenset:
        return frozenset().union(*(p.searched_names() for p in self.parts))


class _WordsScanned(Cond):
    """One of ``names`` occurs as a word and the subclass's ``_scan`` of the text (memoised per
    file) accepts one of its occurrences."""

    def __init__(self, *names: str) -> None:
        if not names:
            raise ValueError(f"{type(self).__name__}() needs at least one name")
        self.names = tuple(sorted({n.encode() for n in names}))
        self.key = (type(self).__name__, self.names)

    def holds(self, text: FileText) -> bool:
        has_word = text.has_word
        for n in self.names:
            if has_word(n):
                return text.memo(self.key, self._scan)
        return False

    def _scan(self, text: FileText) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(n.decode() for n in self.names)})"

    def searched_names(self) -> frozenset:
        return frozenset(self.names)


class BareWord(_WordsScanned):
    """At least one of ``names`` occurs as a whole identifier not written as an attribute
    (``x.name``): after a ``.`` on the same line, spaces between, counts as an attribute only
    when the ``.`` does not end a number (``1.``) nor an ``...``. A name the facts resolve to
    ``builtins.<name>`` is such a bare name (unbound, or bound to one: ``f = exit``, ``from
    builtins import exit``), unless reached through the module itself (``builtins.exit``:
    ``builtin``). The name a ``def`` or a ``class`` statement gives (``def exit(self):``, the
    keyword and spaces before it on its line) is no reference: it does not count."""

    def _scan(self, text: FileText) -> bool:
        src = text.source
        for name in self.names:
            for p in text.iter_positions(name):
                k = p - 1
                while k >= 0 and src[k] in b" \t\f":
                    k -= 1
                if k < p - 1 and ends_with_definition_keyword(src, k):
                    continue  # ``def exit(``, ``class SystemExit(``: a definition's name
                if k < 0 or src[k] != 46:  # 46: "."
                    return True
                if k > 0 and (src[k - 1] == 46 or 48 <= src[k - 1] <= 57):
                    return True  # ``1.`` / ``...`` then the name: not surely an attribute
        return False


#: the keyword of a ``def``/``class`` statement ending where a scan back from a name stopped
_DEFINES = re.compile(rb"(?<![A-Za-z0-9_])(?:def|class)\Z")


def ends_with_definition_keyword(src: bytes, k: int) -> bool:
    """``src[:k + 1]`` ends with the whole word ``def`` or ``class``: a scan back from a name
    (over the spaces before it) stopped at the keyword of the statement that gives the name."""
    return _DEFINES.search(src, max(0, k - 5), k + 1) is not None


class AttrWord(_WordsScanned):
    """At least one of ``names`` may be reached as an attribute or imported by name: it occurs
    as a whole identifier after a ``.`` (spaces, backslashes and line ends between; a line end
    after a line with a ``#`` counts too: a comment may be in between), or some ``import`` is
    followed by a list (``_from_import_names``) that names it or ``*``, or that cannot be read.

    For a method of a type (``concurrent.futures.ThreadPoolExecutor.map``): the facts name a
    callee so only through an attribute (``pool.map(...)``, ``m = pool.map``,
    ``ThreadPoolExecutor.map(pool, ...)``) or through a name imported from the type's dotted name
    (``from ...ThreadPoolExecutor import map``, ``*``); a bare ``map(...)`` is the builtin, or a
    name bound in the module to one of these (which spells it so)."""

    def _scan(self, text: FileText) -> bool:
        src = text.source
        for name in self.names:
            for p in text.iter_positions(name):
                k = p - 1
                while k >= 0 and src[k] in b" \t\f\r\n\\":
                    if src[k] in b"\r\n" and src.find(b"#", src.rfind(b"\n", 0, k) + 1, k) >= 0:
                        return True  # a line with a ``#`` above: not read back past a comment
                    k -= 1
                if k >= 0 and src[k] == 46:  # 46: "."
                    return True
        for p in text.iter_positions(b"import"):
            imported = _from_import_names(src, p + 6)
            if imported is None or b"*" in imported or not imported.isdisjoint(self.names):
                return True
        return False

    def searched_names(self) -> frozenset:
        return frozenset((*self.names, b"import"))



def builtin(*names: str) -> Cond:
    """The facts may resolve a name to ``builtins.<one of names>``: it is written bare
    (``BareWord``), or the module spells ``builtins`` (``builtins.exit``, ``import builtins as
    b``) and the name. Sound on a file's code (``InCode``); ``qualified("builtins.X")`` is
    ``Word("X")``, which is this without the bare test."""
    return AnyOf(BareWord(*names), All(Word("builtins"), Word(*names)))


class InCode(Cond):
    """``cond`` holds on the file's code too (``FileText.code``: comments and the insides of
    string literals blanked, formatted strings kept whole).

    For a condition whose words the rule can only see in code: every name the facts resolve
    (``qualified_name``, ``call_name``, decorators, contexts) is an identifier written in code.
    Not for words the facts read inside strings: ``"__main__"`` (``context("driver")``) and
    string annotations (types: ``f: "io.TextIOWrapper"``). The whole text is checked first
    (cheap, and most files fail there); the code is built only when it holds."""

    reads_code = True

    def __init__(self, cond: Cond) -> None:
        self.cond = cond

    def holds(self, text: FileText) -> bool:
        return self.cond.holds(text) and self.cond.holds(text.code())

    def holds_on_text(self, text: FileText) -> bool:
        return self.cond.holds(text)

    def __repr__(self) -> str:
        return f"InCode({self.cond!r})"

    def searched_names(self) -> frozenset:
        return self.cond.searched_names()


class ModuleAttr(Cond):
    """A module-level name ``pkg.mod.func`` may be referenced.

    Looks at each whole-word occurrence of ``pkg``: true when one spells the name out
    (``pkg.mod.func``, whitespace allowed around the dots, or a spelling the facts
    canonicalise to it such as ``asyncio.tasks.gather``), or could bind an alias to it
    (``from pkg[.mod] import ...``, ``import pkg[.mod] as x``, or a bare ``pkg`` or
    ``pkg.mod`` used other than by a plain ``import pkg[.mod]`` line: ``r = pkg``,
    ``d = pkg.mod``). Always needs the last word.

    The questions are those of five regexes per condition (listed above ``_skip_gap``; the
    rules' 40 conditions' 200 patterns cost ~0.2 s to compile, serial before a run's workers
    fork). They are answered without them: the dotted name at an occurrence is read once
    (``_chain``; a gap without a comment has one reading) and looked up in the spellings; where
    a comment is in a gap read, ``_first`` replays the patterns' backtracking (``_ends``: a
    gap's ends in the order the regex tries them), so the first match and its end are the
    regex's (tests/perf/test_s13_regex_module_attr.py compares them with the patterns).
    """

    def __init__(self, name: str, spellings: Sequence[str] = ()) -> None:
        self.name = name
        self.spellings = tuple(spellings)
        parts = name.split(".")
        self.last = Word(parts[-1])
        self.root = parts[0].encode()
        split = [tuple(w.encode() for w in sp.split(".")) for sp in (name, *spellings)]
        prefixes = {sp[:i] for sp in split for i in range(1, len(sp))}  # pkg, pkg.mod (not the name)
        #: prefix (dotted, no spaces) -> the names a ``from <prefix> import`` must bind to
        #: lead to the name (``from ray import init``; ``from asyncio import tasks``)
        self.binders: dict[bytes, set[bytes]] = {}
        for sp in split:
            for i in range(1, len(sp)):
                self.binders.setdefault(b".".join(sp[:i]), set()).add(sp[i])
        # the alternatives of each question, in the order the patterns tried them (sorted as dotted
        # strings; '.' sorts before every identifier byte, so as tuples too)
        #: the spellings: ``literal`` (``pkg.mod.func`` not followed by an identifier byte)
        self._spelled = tuple(sorted(set(split)))
        self._spelled_set = frozenset(self._spelled)
        self._spelled_lengths = tuple(sorted({len(sp) for sp in split}))
        #: the module prefixes: ``aliased`` (``<prefix> import``/``as``) and ``plain_import``
        self._prefixes = tuple(sorted(prefixes))
        self._prefix_set = frozenset(prefixes)
        #: the dotted prefixes used as a value (``dist = torch.distributed``): the facts follow the
        #: binding, so an alias may follow, as for the bare root (``prefix_value``)
        self._inner = tuple(p for p in self._prefixes if len(p) > 1)
        self._inner_set = frozenset(self._inner)
        #: the most words any question reads (``_chain`` stops there)
        self._depth = max(self._spelled_lengths)
        #: the words that may follow ``root.`` in a spelling (``_scan``'s quick test), or None
        #: (no quick test) when a spelling does not start with the root
        self._seconds: Optional[tuple[bytes, ...]] = (
            tuple(sorted({sp[1] for sp in split})) if all(sp[0] == self.root for sp in split) else None)
        self.key = ("ModuleAttr", name)

    def searched_names(self) -> frozenset:
        return frozenset((self.root,)) | self.last.searched_names()

    def holds(self, text: FileText) -> bool:
        if not text.has_word(self.root) or not self.last.holds(text):  # the root first: qualified names share it
            return False
        return text.memo(self.key, self._scan)

    def _scan(self, text: FileText) -> bool:
        src = text.source
        n, seconds, ident, end = len(self.root), self._seconds, IDENT_BYTES, len(text.source)
        gapb, ws_run, word_run = _GAP_BYTES, _WS_RUN.match, _IDENT_RUN.match
        depth, spelled, lengths = self._depth, self._spelled_set, self._spelled_lengths
        for p in text.iter_positions(self.root):
            q = p + n + 1
            if seconds is not None and q < end and src[q - 1] == 46 and ident[src[q]]:
                # ``root.word`` with no gap, ``word`` none of the spellings' next parts: every
                # question below needs a next part there (or a gap, ``import``/``as``, or no ``.``)
                for second in seconds:
                    k = q + len(second)
                    if src.startswith(second, q) and (k >= end or not ident[src[k]]):
                        break
                else:
                    continue
            # the dotted name at p (``_chain``, inlined): its words, the end of the last (q) and
            # of the gap after it (g: -1 when not read, ``depth`` words read)
            words = [self.root]
            q = p + n
            while True:
                if len(words) == depth:
                    g = -1
                    break
                g = q
                if g < end and gapb[src[g]]:
                    g = _skip_gap(src, g)
                    if g < 0:
                        g = -2  # a comment: the slow reading
                        break
                if g >= end or src[g] != 46:  # 46: "."
                    break
                h = g + 1
                if h < end and gapb[src[h]]:
                    h = _skip_gap(src, h)
                    if h < 0:
                        g = -2
                        break
                m = word_run(src, h)
                if m is None:
                    break  # a "." and no word: g stays on the "."
                words.append(m.group())
                q = m.end()
            if g < -1:
                if self._scan_slowly(text, p):
                    return True
                continue
            chain = tuple(words)
            k = len(chain)
            for length in lengths:  # literal: a spelling starts the chain
                if length > k:
                    break
                if chain[:length] in spelled:
                    return True
            # aliased: the chain is a prefix, then a gap and ``import``/``as``
            if g > q and chain in self._prefix_set and g < end:
                if src.startswith(b"import", g) and (g + 6 >= end or not ident[src[g + 6]]):
                    if self._binds(src, b".".join(chain), g + 6):
                        return True
                    continue
                if src.startswith(b"as", g) and (g + 2 >= end or not ident[src[g + 2]]):
                    return True  # ``import pkg as x``: x.func
            if p != 0 and src[p - 1] == 46:  # 46: "."; ``x.pkg`` is another name
                continue
            f = ws_run(src, p + n).end()
            if (f >= end or src[f] != 46  # ``pkg`` not followed by a "."
                    or (chain in self._inner_set and (g >= end or src[g] != 46))):  # ``pkg.mod``, no "." next
                if not self._plain_import(text.line_at(p)):
                    return True  # ``r = pkg``, ``d = pkg.mod``, ``import os, pkg``, ``f(pkg)``: an alias may follow
        return False

    def _scan_slowly(self, text: FileText, p: int) -> bool:
        """``_scan``'s questions at ``p`` when a gap read holds a comment: the patterns' first
        matches (``_first``)."""
        src = text.source
        if _first_of(src, p, self._spelled, _after_name) is not None:
            return True
        stop = _first_of(src, p, self._prefixes, _import_or_as)
        if stop is not None:
            return src.endswith(b"as", p, stop) or self._binds(src, _GAPS.sub(b"", src[p:stop - 6]), stop)
        if p != 0 and src[p - 1] == 46:
            return False
        f = _WS_RUN.match(src, p + len(self.root)).end()
        if f >= len(src) or src[f] != 46 or _first_of(src, p, self._inner, _not_dotted) is not None:
            return not self._plain_import(text.line_at(p))
        return False

    def _plain_import(self, line: bytes) -> bool:
        """``line`` is ``import <prefix>`` and nothing else (a comment, a ``\\r`` after it)."""
        m = _IMPORT_HEAD.match(line)
        if m is None:
            return False
        i = m.end()
        m = _IDENT_RUN.match(line, i)
        if m is None:
            return False
        found = _chain(line, m.end(), [m.group()], self._depth)
        if found is None:  # a comment in a gap read
            return _first_of(line, i, self._prefixes, _rest_of_line) is not None
        words, q, _ = found
        return tuple(words) in self._prefix_set and _LINE_TAIL.fullmatch(line, q) is not None

    def _binds(self, src: bytes, prefix: bytes, stop: int) -> bool:
        """``<prefix> import`` ends at ``stop``: can the statement bind a name that leads to
        ``self.name``? (``import pkg as x`` can: ``x.func``.) ``from pkg import a, b`` only when
        it imports the next part of the name or ``*``. ``from ray import remote`` says nothing
        about ``ray.init``. Unreadable lists count as binding."""
        wanted = self.binders.get(prefix)
        if wanted is None:
            return True
        names = _from_import_names(src, stop)
        return names is None or b"*" in names or not wanted.isdisjoint(names)

    def __repr__(self) -> str:
        return f"ModuleAttr({self.name})"


# --- ModuleAttr's reading of a dotted name; the patterns it answers for (``gap()`` at each
# ``G``, one alternative per spelling or prefix, tried in ``ModuleAttr``'s order):
#   literal       spelling(?![A-Za-z0-9_])            spelling: w0 (G \. G w)*
#   aliased       prefix(?=[\s\\#]) G (?:import|as)\b  (the first match's end is used)
#   prefix_value  inner(?![A-Za-z0-9_])(?!G\.)         (an inner prefix has a dot)
#   plain_import  [ \t]*import[ \t]+prefix[ \t]*(?:#.*)?\r?   (fullmatch of the line)
#   not_attr      root\s*[^.\s]|root\s*$
# A gap without a comment has one end that a "." or a word can follow (whitespace taken whole,
# a backslash continuation whole); a comment can end at its line's end or before any byte that
# is neither whitespace nor "#", and the patterns then try each such end in turn.

_WS_RUN = re.compile(rb"\s*")
_IDENT_RUN = re.compile(rb"[A-Za-z0-9_]+")
_IMPORT_HEAD = re.compile(rb"[ \t]*import[ \t]+")
_LINE_TAIL = re.compile(rb"[ \t]*(?:#.*)?\r?")
_GAPS = re.compile(_GAP + b"+")
#: a gap read as far as it goes (nothing follows: no backtracking)
_GAP_RUN = re.compile(_GAP + b"*")
_LINE_BREAK = re.compile(rb"[\r\n]")
#: byte value -> 1 where a gap may start: ``\s`` (of a bytes pattern), ``\``, ``#``
_GAP_BYTES = bytes(b in b" \t\n\r\f\v\\#" for b in range(256))


def _skip_gap(src: bytes, i: int) -> int:
    """The end of the gap at ``i`` (whitespace and backslash continuations), or -1 when a
    comment starts in it."""
    end = len(src)
    while i < end:
        c = src[i]
        if c == 92 and i + 1 < end and (src[i + 1] == 10 or src[i + 1] == 13):  # a continuation
            i = _WS_RUN.match(src, i + 2).end()
        elif c == 35:  # "#"
            return -1
        elif c in b" \t\n\r\f\v":
            i = _WS_RUN.match(src, i).end()
        else:
            return i
    return i


def _chain(src: bytes, q: int, words: list, depth: int) -> Optional[tuple[list, int, int]]:
    """The dotted name whose first word (``words``) ends at ``q``, read up to ``depth``
    words: (its words, the end of the last, the end of the gap after it or -1 when not read),
    or None when a gap read holds a comment (``ModuleAttr._scan`` inlines it)."""
    end = len(src)
    while len(words) < depth:
        g = q
        if g < end and _GAP_BYTES[src[g]]:
            g = _skip_gap(src, g)
            if g < 0:
                return None
        if g >= end or src[g] != 46:
            return words, q, g
        h = g + 1
        if h < end and _GAP_BYTES[src[h]]:
            h = _skip_gap(src, h)
            if h < 0:
                return None
        m = _IDENT_RUN.match(src, h)
        if m is None:
            return words, q, g
        words.append(m.group())
        q = m.end()
    return words, q, -1


def _ends(src: bytes, i: int, tokens: tuple[bytes, ...], within: int = -1) -> list[int]:
    """The ends of ``gap()`` at ``i`` that one of ``tokens`` (each starting with a byte that is
    neither whitespace nor ``#``) follows, in the order the regex tries them: its longest
    reading first, then the places in its comments, from the last back (a comment given back
    ends before any such byte: every one of them in the gap is in a comment). ``within``: as
    for ``_gap_end``."""
    if i >= len(src) or not _GAP_BYTES[src[i]]:  # no gap
        return [i] if src.startswith(tokens, i) else []
    last = _gap_end(src, i, within)
    out = [last] if src.startswith(tokens, last) else []
    found = []
    for token in tokens:
        j = src.rfind(token, i, last)
        while j >= i:
            found.append(j)
            j = src.rfind(token, i, j + len(token) - 1)
    found.sort(reverse=True)
    return out + found


def _gap_end(src: bytes, i: int, within: int = -1) -> int:
    """The end of the longest reading of the gap at ``i``. ``within``: the end of an enclosing
    gap's longest reading, ``i`` being in one of its comments: a reading that gets to the end
    of ``i``'s line goes on as the enclosing one does (read once, not once per place in it)."""
    if i < within:
        m = _LINE_BREAK.search(src, i, within)
        if m is not None:
            stop = m.start()
            reach = _GAP_RUN.match(src, i, stop).end()
            if reach == stop or (reach == stop - 1 and src[reach] == 92):  # 92: a continuation's "\"
                return within
            return reach
    return _GAP_RUN.match(src, i).end()


def _first(src: bytes, q: int, rest: tuple[bytes, ...], tail, failed: set) -> Optional[int]:
    """The end of the first match, in the regex's order, of ``(G \\. G word)`` for each word
    of ``rest`` from ``q`` and then ``tail(src, offset)`` (an end, or None). ``failed``: the
    (offset, rest) already tried without a match (the regex tries them again, each time in
    vain: cubic in the comment lines after a name whose words they repeat)."""
    if not rest:
        return tail(src, q)
    if (q, rest) in failed:
        return None
    word = rest[0]
    dots = _ends(src, q, (b".",))
    if dots:
        last = _gap_end(src, q) if q < len(src) and _GAP_BYTES[src[q]] else q
        for e in dots:
            for e2 in _ends(src, e + 1, (word,), last):
                found = _first(src, e2 + len(word), rest[1:], tail, failed)
                if found is not None:
                    return found
    failed.add((q, rest))
    return None


def _first_of(src: bytes, p: int, alternatives: Sequence[tuple[bytes, ...]], tail) -> Optional[int]:
    """``_first`` of the first alternative (in order) that matches at ``p``."""
    failed: set = set()
    for alt in alternatives:
        if src.startswith(alt[0], p):
            found = _first(src, p + len(alt[0]), alt[1:], tail, failed)
            if found is not None:
                return found
    return None


def _after_name(src: bytes, q: int) -> Optional[int]:
    """``(?![A-Za-z0-9_])``"""
    return q if q >= len(src) or not IDENT_BYTES[src[q]] else None


def _import_or_as(src: bytes, q: int) -> Optional[int]:
    """``(?=[\\s\\\\#]) G (?:import|as)\\b``"""
    if q >= len(src) or not _GAP_BYTES[src[q]]:
        return None
    for e in _ends(src, q, (b"import", b"as")):
        k = e + (6 if src.startswith(b"import", e) else 2)
        if k >= len(src) or not IDENT_BYTES[src[k]]:
            return k
    return None


def _not_dotted(src: bytes, q: int) -> Optional[int]:
    """``(?![A-Za-z0-9_])(?!G\\.)``"""
    if q < len(src) and IDENT_BYTES[src[q]]:
        return None
    return None if _ends(src, q, (b".",)) else q


def _rest_of_line(line: bytes, q: int) -> Optional[int]:
    """``[ \\t]*(?:#.*)?\\r?`` to the end"""
    return q if _LINE_TAIL.fullmatch(line, q) is not None else None


_IMPORTED_NAME = re.compile(rb"\s*([A-Za-z_][A-Za-z0-9_]*|\*)")


def _from_import_names(src: bytes, i: int) -> Optional[set[bytes]]:
    """The names a ``from x import`` statement imports, its list starting at offset ``i``
    (parenthesised over lines, or to the end of the line with backslash continuations); None
    when the list cannot be read."""
    j = i
    while j < len(src) and src[j] in b" \t":
        j += 1
    if j < len(src) and src[j] == 40:  # "("
        end = src.find(b")", j)
        if end < 0:
            return None
        chunk = src[j + 1:end]
    else:
        end = j
        while True:
            nl = src.find(b"\n", end)
            line_end = len(src) if nl < 0 else nl
            if src[end:line_end].rstrip(b"\r").endswith(b"\\") and nl >= 0:
                end = nl + 1
                continue
            chunk = src[j:line_end].replace(b"\\\r\n", b" ").replace(b"\\\n", b" ")
            break
    out: set[bytes] = set()
    for line in chunk.splitlines():
        code = line.split(b"#", 1)[0]
        if b";" in code:
            code = code.split(b";", 1)[0]  # another statement follows on the line
        for item in code.split(b","):
            if not item.strip():
                continue
            m = _IMPORTED_NAME.match(item)
            if m is None:
                return None
            out.add(m.group(1))
    return out


def qualified(*names: str) -> Cond:
    """Some of the qualified names ``names`` may be referenced in the file.

    ``pkg.mod.func`` is a ``ModuleAttr``; a name whose middle is a type
    (``asyncio.AbstractEventLoop.create_task``: the object may come from
    ``uvloop.new_event_loop()``), ``builtins.X`` and a one-word name need only their
    last word.
    """
    alternatives: list[Cond] = []
    for name in names:
        parts = name.split(".")
        if len(parts) == 1 or parts[0] == "builtins" or _a_type_member(name):
            alternatives.append(Word(parts[-1]))
        else:
            alternatives.append(ModuleAttr(name, _spellings(name)))
    return alternatives[0] if len(alternatives) == 1 else AnyOf(*alternatives)


def _a_type_member(name: str) -> bool:
    """A part before the last is capitalised: ``name`` is a type's member
    (``asyncio.AbstractEventLoop.create_task``, ``concurrent.futures.ThreadPoolExecutor.map``)."""
    return any(p[:1].isupper() for p in name.split(".")[:-1])


def _spellings(name: str) -> list[str]:
    """Other spellings that the facts canonicalise to ``name`` (``asyncio.tasks.gather``)."""
    from ..facts import _CANONICAL_PREFIXES

    return [prefix + name[len(repl):] for prefix, repl in _CANONICAL_PREFIXES if name.startswith(repl)]


def last_words(names: Iterable[str]) -> Word:
    """Any of the last segments of dotted ``names`` (``{"asyncio.to_thread": 0}`` -> to_thread)."""
    return Word(*sorted({n.rsplit(".", 1)[-1] for n in names}))


# --------------------------------------------------------------------------- contexts
# Where code runs comes from ``facts``' tables; derive the words from them so a new
# entry there widens the candidates here without an edit.


class AsyncDefStatement(Cond):
    """Tier 1: the file may define a coroutine (``ast.AsyncFunctionDef``: ``Function.is_async``).

    ``async def`` is a compound statement: it starts a logical line, never after a ``;`` or a
    ``:`` on the same line, never inside brackets. So its ``async`` is preceded on its physical
    line by indentation only (spaces, tabs, form feeds; a line ends at ``\\n`` or ``\\r``), or
    by the UTF-8 byte order mark at the file's start (a backslash continuation before it ends
    the physical line above: ``async`` still starts its own). Between ``async`` and ``def``
    come only whitespace and backslash continuations (no comment: no line end outside
    brackets); ``\\s`` also reads line ends, which only keeps files. A word in a string or a
    comment (``"async def"`` in a message, a docstring's mid-line example) is ruled out unless
    it also looks so; one at a line start inside a docstring is kept (tier 2 judges it). The
    scan reads the text only (no code view: SHD301 is in nearly every file that has an ``async
    def``, and building the code of those would cost more than the parses it saves). SHD301,
    SHD104, SHD105 and SHD106 ask the same instance (``ASYNC_DEF``): one scan per file
    (``FileText.memo``)."""

    _KEY = ("async def statement",)
    _TAIL = re.compile(rb"(?:\s|\\(?:\r\n|\r|\n))+def(?![A-Za-z0-9_])")

    def holds(self, text: FileText) -> bool:
        return text.has_word(b"async") and text.memo(self._KEY, self._scan)

    def _scan(self, text: FileText) -> bool:
        src, tail = text.source, self._TAIL.match
        for p in text.iter_positions(b"async"):
            k = p
            while k > 0 and src[k - 1] in b" \t\f":
                k -= 1
            if (k == 0 or src[k - 1] in b"\r\n" or (k == 3 and src.startswith(b"\xef\xbb\xbf"))) \
                    and tail(src, p + 5):
                return True
        return False

    def __repr__(self) -> str:
        return "AsyncDefStatement()"

    def searched_names(self) -> frozenset:
        return frozenset((b"async",))


#: the one instance the rules share (its memo key is the class's)
ASYNC_DEF = AsyncDefStatement()


class _Context(Cond):
    """Words of an execution context (``context("task")``), built on first use: the
    facts' tables are read lazily so that rules can declare this at import time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond: Optional[Cond] = None

    def holds(self, text: FileText) -> bool:
        if self._cond is None:
            self._cond = _context_words()[self.name]
        return self._cond.holds(text)

    def holds_on_text(self, text: FileText) -> bool:
        if self._cond is None:
            self._cond = _context_words()[self.name]
        return self._cond.holds_on_text(text)

    def __repr__(self) -> str:
        return f"context({self.name!r})"

    def searched_names(self) -> frozenset:
        if self._cond is None:
            self._cond = _context_words()[self.name]
        return self._cond.searched_names()


def context(name: str) -> Cond:
    """``coroutine``, ``task``, ``executor``, ``thread`` or ``driver``: words without
    which no code of the file can run there."""
    if name not in ("coroutine", "task", "executor", "thread", "driver"):
        raise ValueError(f"unknown context {name!r}")
    return _Context(name)


def _callee_words(names: Iterable[str]) -> Cond:
    """The last words of dotted callees: a module's function by its word (``to_thread``); a
    type's method (a capitalised part before the last: ``ThreadPoolExecutor.map``) only as an
    attribute or an imported name (``AttrWord``: the builtin ``map(...)`` is no executor's)."""
    plain = sorted({n.rsplit(".", 1)[-1] for n in names if not _a_type_member(n)})
    typed = sorted({n.rsplit(".", 1)[-1] for n in names if _a_type_member(n)})
    parts: list[Cond] = ([Word(*plain)] if plain else []) + ([AttrWord(*typed)] if typed else [])
    return parts[0] if len(parts) == 1 else AnyOf(*parts)


def _context_words() -> dict[str, Cond]:
    from .. import facts as F

    return {
        "coroutine": Word("async"),
        "task": last_words(F.TASK_SPAWNERS),
        "executor": _callee_words(F.EXECUTOR_SUBMITTERS),
        "thread": Word("Thread", "Timer"),
        # driver roots: the __main__ block, main(), functions calling ray.init; main() and ray.init
        # are names in code (``InCode``), "__main__" is a string (``is_main_guard``)
        "driver": AnyOf(InCode(AnyOf(WordThen("def", r"(?=[\s\\])" + gap() + "main" + gap() + r"\("), qualified("ray.init"))), Word("__main__")),
    }
