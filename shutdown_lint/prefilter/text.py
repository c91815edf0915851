"""The text pre-filter, the first and cheapest stage: a rule runs on a file only if one of
its trigger substrings (``Rule.triggers``) occurs in the file's bytes (or it declares none).

This module must stay cheap to import: no libcst.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Callable, Optional, Sequence

if TYPE_CHECKING:
    from ..rule import Rule


def prefilter(source: bytes, rules: Sequence[type[Rule]]) -> list[type[Rule]]:
    """Rules whose trigger substrings occur in the file (or that declare none)."""
    out = []
    seen: dict[bytes, bool] = {}  # rules share triggers (``cancel``, ``create_task``): search each once
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
                        found = seen[word] = word in source
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


@functools.lru_cache(maxsize=64)
def _plan(rules: tuple[type[Rule], ...]) -> tuple[tuple[tuple[type[Rule], Optional[tuple[tuple[bytes, ...], ...]]], ...],
                                                  dict[bytes, tuple[Callable[[bytes], list], tuple[tuple[bytes, frozenset], ...]]]]:
    """Per rule (in order): None when it declares no trigger, else for each trigger its gate
    words (``_gates``) and then the trigger: the searches ``prefilter`` makes, with no call per
    search (a file asks ~40); and the words searched in groups (``_scans``)."""
    plan = tuple((rule, tuple((*_gates(t), t) for t in triggers) if (triggers := _encoded_triggers(rule)) else None)
                 for rule in rules)
    return plan, _scans(frozenset(w for _, alts in plan for words in alts or () for w in words))


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


def _scans(words: frozenset) -> dict:
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
    occurrence: no matter."""
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
        by_length = sorted(group, key=lambda w: (-len(w), w))
        findall = re.compile(b"|".join(re.escape(w) for w in by_length)).findall
        contains = tuple((w, frozenset(u for u in group if w in u)) for w in group)
        for w in group:
            out[w] = (findall, contains)
    return out


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
    return tuple(t.encode() for t in rule.triggers)
