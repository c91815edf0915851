"""The text tier (``prefilter.text``) with its grouped searches (``_scans``: a regex pass per rare
first byte, or per first byte that several words share) must keep exactly the rules that a plain
``trigger in source`` per trigger keeps: on texts made of the real triggers' pieces, and on words
that overlap (``run_forever`` then ``run(`` from its last ``r``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shutdown_lint import registry
from shutdown_lint.prefilter import text as text_tier

_RULES = tuple(registry.all_rules())
_PIECES = sorted({piece for rule in _RULES for t in rule.triggers
                  for piece in (t, t[:len(t) // 2], t[len(t) // 2:], t[1:], t[:-1])} | {" ", "\n", "(", "_"})


def _plain(source: bytes) -> list:
    return [r for r in _RULES if not r.triggers or any(_written(t.encode(), source) for t in r.triggers)]


@settings(max_examples=800, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=12).map(lambda ps: "".join(ps).encode()))
def test_the_rules_kept_are_those_a_plain_search_keeps(source):
    assert text_tier.prefilter(source, _RULES) == _plain(source)


def _answers(source: bytes, words: frozenset) -> dict:
    scans = text_tier._scans(words)
    out = {}
    for w in words:
        scan = scans.get(w)
        out[w] = w in source if scan is None else not set(scan[0](source)).isdisjoint(dict(scan[1])[w])
    return out


#: ``r`` is shared by several words and not rare, ``e`` is in ``_COMMON_FIRST``, ``S`` is rare
_WORD = st.text("reSx", min_size=1, max_size=6).map(str.encode)


@settings(max_examples=800, deadline=None)
@given(st.frozensets(_WORD, min_size=1, max_size=8), st.text("reSx", max_size=40).map(str.encode))
def test_words_sharing_a_common_first_byte_are_found_exactly(words, source):
    assert _answers(source, words) == {w: w in source for w in words}


def test_a_word_that_ends_in_the_first_byte_is_the_one_searched_alone():
    words = frozenset({b"remote", b"run(", b"run_", b"run_forever", b"run_until_complete"})
    scans = text_tier._scans(words)
    assert set(scans) == words - {b"run_forever"}
    assert _answers(b"x.run_forevemote", words) == {w: w in b"x.run_forevemote" for w in words}
    assert _answers(b"run_foreverun(", words)[b"run("]


def test_a_common_or_lone_first_byte_is_searched_with_in():
    scans = text_tier._scans(frozenset({b"exit", b"except:", b"signal", b"async def"}))
    assert scans == {}


def _written(trigger: bytes, source: bytes) -> bool:
    """The trigger occurs in ``source``: as a substring, or, for one that spells more than one
    token (``run(``), in any spacing Python reads as those tokens (``prefilter.text._spelled``)."""
    from shutdown_lint.prefilter import text as _text

    if _text._SPELLED.search(trigger) is None:
        return trigger in source
    return _text._spelled(trigger).search(source) is not None
