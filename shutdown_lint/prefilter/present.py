"""Which of the text tiers' words a file's bytes contain, found in one pass.

The trigger words (``text.prefilter``) and the names tier 1 looks up (``words.FileText``) were
each found with a search of the whole file: ~40 ``bytes`` searches and grouped regexes per file,
most of them reading to the end because the word is absent (0.81 CPU-s over the 75 MB of
ray+torch, the largest single part of a cold run after the parses). An Aho-Corasick automaton over
all of them (``ahocorasick_rs``, compiled, a dependency of the linter) reads the file once and
reports every occurrence of every word: 0.15 CPU-s for the same files.

Exact: the search is overlapping (MatchKind "standard"), so every occurrence of every word is
reported, including words inside or overlapping others (``run`` in ``run_forever``); a word is in
``Present.found`` exactly when ``word in source``. Without the package (an interpreter or platform
it has no wheel for), or with ``SHUTDOWN_LINT_ONE_PASS=0``, ``scan`` gives None and each tier
searches word by word as before, with the same answers (``tests/perf/test_s17_one_pass.py`` runs
both ways).

This module must stay cheap to import: no libcst, and ``ahocorasick_rs`` only on first use.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from ..rule import Rule

#: ``SHUTDOWN_LINT_ONE_PASS=0`` turns the one-pass scan off (the tiers search word by word)
enabled: bool = os.environ.get("SHUTDOWN_LINT_ONE_PASS", "1") != "0"


class Present:
    """The words of one scan (``known``) and those the file contains (``found``)."""

    __slots__ = ("known", "found")

    def __init__(self, known: frozenset, found: set) -> None:
        self.known = known
        self.found = found

    def absent(self, word: bytes) -> bool:
        """``word`` was scanned for and does not occur in the file (not even inside another word)."""
        return word in self.known and word not in self.found


def scan(source: bytes, rules: Sequence["type[Rule]"]) -> Optional[Present]:
    """The words of ``rules``' text tiers (their trigger searches and their tier-1 names) that
    ``source`` contains; None when the one-pass scan is off or unavailable."""
    if not enabled:
        return None
    finder = _finder(tuple(rules))
    if finder is None:
        return None
    return finder(source)


#: A file longer than this is scanned in pieces of this many bytes (each with the longest word's
#: length less one of the next piece, so that an occurrence across the cut is inside one piece):
#: the automaton returns every occurrence at once, and a long generated file that spells a short
#: word millions of times would otherwise hold millions of matches in memory.
PIECE = 1 << 18


class Finder:
    """One automaton over ``words`` (non-empty ``bytes``): ``finder(source)`` is the ``Present``
    of ``source``."""

    __slots__ = ("words", "known", "piece", "_find", "_overlap")

    def __init__(self, words, piece: int = PIECE) -> None:
        from ahocorasick_rs import BytesAhoCorasick

        self.words = tuple(sorted(set(words)))
        self.known = frozenset(self.words)
        self.piece = piece
        self._find = BytesAhoCorasick(self.words).find_matches_as_indexes
        self._overlap = max(map(len, self.words)) - 1

    def __call__(self, source: bytes) -> Present:
        # overlapping: every occurrence of every word (the default, non-overlapping search moves
        # past a match and misses a word that starts inside it)
        find, piece = self._find, self.piece
        if len(source) <= piece:
            found = {m[0] for m in find(source, overlapping=True)}
        else:
            found = set()
            everything = len(self.words)
            for start in range(0, len(source), piece):
                found.update(m[0] for m in find(source[start:start + piece + self._overlap], overlapping=True))
                if len(found) == everything:
                    break
        words = self.words
        return Present(self.known, {words[i] for i in found})


@functools.lru_cache(maxsize=64)
def _finder(rules: tuple) -> Optional[Finder]:
    """The ``Finder`` of ``rules``' trigger words and tier-1 names; None without the package."""
    if not available():
        return None
    from .select import declaration
    from .text import plan_words

    words = set(plan_words(rules))
    for rule in rules:
        cond = declaration(rule)
        if cond is not None:
            words |= cond.searched_names()
    words.discard(b"")
    return Finder(words) if words else None


def available() -> bool:
    """The automaton's package can be imported here."""
    try:
        import ahocorasick_rs  # noqa: F401
    except ImportError:
        return False
    return True
