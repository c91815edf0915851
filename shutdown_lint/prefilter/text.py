"""The text pre-filter, the first and cheapest stage: a rule runs on a file only if one of
its trigger substrings (``Rule.triggers``) occurs in the file's bytes (or it declares none).
A trigger that spells more than one token (``async def``, ``except:``, ``run(``) occurs in
any of the spellings Python reads as those tokens (``async  def``, ``except :``, ``run (``).

This module must stay cheap to import: no libcst.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Callable, Optional, Sequence, Union

if TYPE_CHECKING:
    from ..rule import Rule
    from .present import Present


def prefilter(source: bytes, rules: Sequence[type[Rule]], present: Optional[Present] = None) -> list[type[Rule]]:
    """Rules whose trigger substrings occur in the file (or that declare none). ``present``: the
    words of ``rules``' triggers that the file contains, found in one pass (``present.scan``);
    without it each word is searched here."""
    if present is not None:
        return _prefilter_present(source, rules, present.found)
    out = []
    seen: dict[_Search, bool] = {}  # rules share triggers (``cancel``, ``create_task``): search each once
    known = seen.get
    plan, scans = _plan(tuple(rules))
    for rule, alternatives in plan:
        if alternatives is None:
            out.append(rule)
            continue
        for words in alternatives:  # a trigger's gate words, then the trigger
            for word in words:
                found = known(word)
                if found is None:
                    scan = scans.get(word)
                    if scan is None:
                        found = seen[word] = (word in source if word.__class__ is bytes
                                              else word.search(source) is not None)  # a spelled trigger
                    else:  # one pass answers every word of its group
                        matched = set(scan[0](source))
                        for w, inside in scan[1]:
                            seen[w] = not matched.isdisjoint(inside)
                        found = seen[word]
                if not found:
                    break
            else:
                out.append(rule)
                break
    return out


def _prefilter_present(source: bytes, rules: Sequence[type[Rule]], found: set) -> list[type[Rule]]:
    """``prefilter`` with the words the file contains known (``found``): a rule stays when all the
    searches of one of its triggers succeed (``_present_plan``), as word by word."""
    out = []
    searched: dict = {}  # a spelled trigger's regex, searched once per file
    for rule, alternatives in _present_plan(tuple(rules)):
        if alternatives is None:
            out.append(rule)
            continue
        for searches in alternatives:
            for s in searches:
                if s.__class__ is bytes:
                    if s not in found:
                        break
                else:
                    hit = searched.get(s)
                    if hit is None:
                        hit = searched[s] = s.search(source) is not None
                    if not hit:
                        break
            else:
                out.append(rule)
                break
    return out


@functools.lru_cache(maxsize=64)
def _present_plan(rules: tuple[type[Rule], ...]) -> tuple[tuple[type[Rule], Optional[tuple[tuple[_Search, ...], ...]]], ...]:
    """Per rule (in order): None when it declares no trigger, else each trigger's searches: a word
    alone (its gate words are inside it), a spelled trigger's ``_searches`` (its first token's gates,
    the token, then its regex)."""
    return tuple((rule, tuple((t,) if _SPELLED.search(t) is None else _searches(t) for t in ts)
                        if (ts := _encoded_triggers(rule)) else None)
                 for rule in rules)


def plan_words(rules: tuple[type[Rule], ...]) -> frozenset:
    """The words ``_prefilter_present`` asks about for ``rules`` (``present.scan`` finds them)."""
    return frozenset(s for _rule, alternatives in _present_plan(rules) if alternatives is not None
                     for searches in alternatives for s in searches if s.__class__ is bytes)


@functools.lru_cache(maxsize=64)
def _plan(rules: tuple[type[Rule], ...]) -> tuple[tuple[tuple[type[Rule], Optional[tuple[tuple[_Search, ...], ...]]], ...],
                                                  dict[bytes, tuple[Callable[[bytes], list], tuple[tuple[bytes, frozenset], ...]]]]:
    """Per rule (in order): None when it declares no trigger, else for each trigger its gate
    words (``_gates``) and then the trigger (a spelled one: its first word, then its regex,
    ``_searches``, unless its group's pass finds it), the triggers with a regex last; the
    searches ``prefilter`` makes, with no call per search (a file asks ~40); and the words and
    spelled triggers searched in groups (``_scans``)."""
    triggers = {rule: _encoded_triggers(rule) for rule in rules}
    every = {t for ts in triggers.values() for t in ts}
    scans = _scans(frozenset(w for t in every if _SPELLED.search(t) is None for w in _searches(t)),
                   frozenset(t for t in every if _SPELLED.search(t) is not None))
    plan = tuple((rule, tuple((t,) if t in scans else _searches(t) for t in ts) if (ts := triggers[rule]) else None)
                 for rule in rules)
    return plan, scans


#: First bytes rare in Python code (each < 0.4% of the bytes of ray+torch): a regex whose words all
#: start with one of them runs the C loop of ``re``'s literal-prefix search to that byte and tries
#: the words there, one pass at ~30 ms over the 75 MB of ray+torch where ``bytes.__contains__``
#: takes 30-60 ms per word (``Pool``, ``Popen``, ``Process``: 150 ms; one regex: 32). A regex of
#: one word with a common first byte is slower than ``in`` (``exit``: 62 vs 48 ms).
_RARE_FIRST = frozenset(b"BCEKPSTkq")
#: The commonest first bytes (``e`` is 7% of the bytes of ray+torch, ``t`` 5%): words that share
#: one of them are still searched one by one (``exit``, ``except:``, ``ensure_future``: 129 ms in
#: one regex, 116 apart). Two or more words that share another first byte are found in one pass:
#: the prefix loop stops at each ``r`` (4% of the bytes) and compares a few bytes in C, cheaper
#: than a search per word (``remote``, ``run(``, ``run_``: 75 vs 126 ms; ``cancel``,
#: ``create_task``, ``create_subprocess``: 48 vs 87 ms).
_COMMON_FIRST = frozenset(b"et")


def _scans(words: frozenset, spelled: frozenset = frozenset()) -> dict:
    """word -> (its group's ``findall``, the group's (word, matches that contain it)): the words
    that start with the same byte of ``_RARE_FIRST``, or two or more that share another first byte
    not in ``_COMMON_FIRST``, found in one pass.

    A word is in the text exactly when it is inside one of ``findall``'s matches: the
    alternatives go longest first, so a match at a position is the longest word there, and the
    others there are its prefixes. A word skipped because it starts inside an earlier match
    would be inside that match too, unless the match ends inside the word (a suffix of one word
    that begins another: ``run_forever`` then ``r...``): of two words that overlap so, one is
    searched on its own, the one in the most such overlaps first (``run_forever``, not the four
    words that start with its last ``r``). A word that overlaps itself is found at its first
    occurrence: no matter.

    A spelled trigger (``_spelled``: ``run(``) whose first token ``W`` starts with the byte of a
    group joins it as ``W(?=the rest)``: the match is ``W``, which no other alternative yields;
    unless a word of the group could hide it (``_hides``)."""
    groups: dict[int, list[bytes]] = {}
    for w in sorted(words):
        groups.setdefault(w[0], []).append(w)
    out: dict = {}
    for first, group in groups.items():
        rare = first in _RARE_FIRST
        if not rare and (len(group) < 2 or first in _COMMON_FIRST):
            continue
        while True:  # each round, the word in the most overlaps goes (of equals, one that starts inside others)
            clashes = {w: (sum(_overlap(u, w) or _overlap(w, u) for u in group), sum(_overlap(u, w) for u in group), w)
                       for w in group}
            worst = max(group, key=clashes.__getitem__)
            if not clashes[worst][0]:
                break
            group.remove(worst)
        if not group or (not rare and len(group) < 2):
            continue
        heads = {}  # spelled trigger -> its first token, the text its alternative matches
        for t in sorted(spelled):
            head = _TOKEN.match(t).group()  # type: ignore[union-attr]
            if head[0] == first and head != t and head not in heads.values() \
                    and not any(_hides(u, head, t) for u in group):
                heads[t] = head
        alternatives = sorted([(w, re.escape(w)) for w in group]
                              + [(head, re.escape(head) + b"(?=" + _spelled(t).pattern[len(re.escape(head)):] + b")")
                                 for t, head in heads.items()], key=lambda a: (-len(a[0]), a[0]))
        findall = re.compile(b"|".join(a[1] for a in alternatives)).findall
        contains = tuple((w, frozenset(u for u in (*group, *heads.values()) if w in u)) for w in group) \
            + tuple((t, frozenset((head,))) for t, head in heads.items())
        for w in (*group, *heads):
            out[w] = (findall, contains)
    return out


def _hides(u: bytes, head: bytes, trigger: bytes) -> bool:
    """The group's word ``u`` may hide an occurrence of the spelled ``trigger`` (first token
    ``head``): ``u`` is ``head`` (the same match), ``trigger`` may start inside a match of ``u``
    (``head`` inside ``u`` after its first byte, or a suffix of ``u`` begins ``head``), ``head``
    contains a word that begins inside it and runs past, or ``u`` starts with ``head`` and is tried
    first there, unless its next byte is a word's and ``trigger``'s next token a punctuation
    (``run_`` and ``run(``: never both at one place)."""
    if u == head or _overlap(head, u) or any(u[k:].startswith(head) or head.startswith(u[k:]) for k in range(1, len(u))):
        return True
    if not u.startswith(head):
        return False
    rest = trigger[len(head):].lstrip()
    return not (_WORD_BYTE.match(u, len(head)) and rest and not _WORD_BYTE.match(rest))


def _overlap(u: bytes, w: bytes) -> bool:
    """``w`` (another word with the same first byte) may start inside a match of ``u`` and run
    past its end: it begins with a suffix of ``u``."""
    first = w[0]
    return u != w and any(u[k] == first and w.startswith(u[k:]) and len(w) > len(u) - k for k in range(1, len(u)))


#: Short words inside several triggers: one search that fails rules out all of them (most
#: files have no ``SIG``, ``kill`` or ``process_``). Each search of a trigger that is absent
#: reads the whole file: ~0.06 CPU-s per trigger over a 150 MB corpus.
_GATE_WORDS = (b"SIG", b"kill", b"process_", b"run_", b"exit")


@functools.lru_cache(maxsize=None)
def _gates(trigger: bytes) -> tuple[bytes, ...]:
    """The gate words inside ``trigger`` (``_exit`` needs ``exit``), shortest first."""
    return tuple(sorted((g for g in _GATE_WORDS if g in trigger and g != trigger), key=len))


@functools.lru_cache(maxsize=None)
def _encoded_triggers(rule: type[Rule]) -> tuple[bytes, ...]:
    """The rule's triggers, encoded; the spelled ones (``_spelled``: slower, a regex) last."""
    return tuple(sorted((t.encode() for t in rule.triggers), key=lambda t: _SPELLED.search(t) is not None))


#: A search of the text tier: a word (``in``) or a spelled trigger's regex (``search``).
_Search = Union[bytes, "re.Pattern[bytes]"]
#: A trigger with a byte other than a word's (``async def``, ``except:``, ``run(``) spells
#: tokens that Python lets the author separate otherwise: ``async  def``, ``async\t\\``
#: newline ``def``, ``except :``, ``asyncio.run (main())``, ``run`` backslash-newline ``(``.
_SPELLED = re.compile(rb"[^A-Za-z0-9_]")
#: What may separate two tokens on one logical line: spaces, tabs, form feeds, a backslash
#: continuation (``\\`` then ``\r\n``, ``\n`` or ``\r``).
_LINE_GAP = rb"(?:[ \t\f]|\\(?:\r\n?|\n))"
#: Inside brackets, also line ends and comments (``(asyncio.run`` newline ``# c`` newline
#: ``(main()))``): allowed unless a token of the trigger only starts a statement, never inside
#: brackets (``def``, ``class``, ``except``).
_BRACKET_GAP = rb"(?:[ \t\f\r\n]|\\(?:\r\n?|\n)|#[^\r\n]*(?![^\r\n]))"
_STATEMENT_ONLY = frozenset((b"def", b"class", b"except"))


@functools.lru_cache(maxsize=None)
def _searches(trigger: bytes) -> tuple[_Search, ...]:
    """The searches that must all succeed for ``trigger`` to count: its gate words
    (``_gates``), then the trigger; a spelled trigger (``_SPELLED``): its first token, a word,
    (and that word's gates) then ``_spelled(trigger)``, its regex."""
    if _SPELLED.search(trigger) is None:
        return (*_gates(trigger), trigger)
    first = _TOKEN.match(trigger).group()  # type: ignore[union-attr]
    return (*_gates(first), first, _spelled(trigger)) if first != trigger else (first,)


_TOKEN = re.compile(rb"[A-Za-z0-9_]+|[^A-Za-z0-9_\s]")
_WORD_BYTE = re.compile(rb"[A-Za-z0-9_]")


def _spelled(trigger: bytes) -> re.Pattern[bytes]:
    """``trigger``'s tokens (words and single punctuation bytes; its spaces only part them)
    with any legal gap between two (``_LINE_GAP``, ``_BRACKET_GAP``); two words need one.
    It matches every spelling Python reads as those tokens, and ``trigger`` itself. No token
    starts with a gap's byte and a gap's comment runs to its line's end, so a comment is never
    read back for the next token; backtracking stays linear (no possessive quantifiers: Python
    3.10 has none)."""
    tokens = _TOKEN.findall(trigger)
    gap = _LINE_GAP if _STATEMENT_ONLY.intersection(tokens) else _BRACKET_GAP
    out = re.escape(tokens[0])
    for before, token in zip(tokens, tokens[1:]):
        words = before[-1:].isalnum() or before[-1:] == b"_", token[:1].isalnum() or token[:1] == b"_"
        out += gap + (b"+" if all(words) else b"*") + re.escape(token)
    return re.compile(out)
