"""The text tier's grouped searches (``prefilter.text._scans``: the words that start with one rare
byte found by one regex pass) must say of every word exactly what ``word in text`` says, whatever
the words: overlapping ones (a word that starts inside another and runs past its end) included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from shutdown_lint.prefilter import text as text_tier

#: a tiny alphabet, so that words overlap and repeat often; ``P`` and ``S`` are in ``_RARE_FIRST``
_WORD = st.text("PSab", min_size=1, max_size=5).map(str.encode)


def _answers(source: bytes, words: frozenset) -> dict:
    scans = text_tier._scans(words)
    out = {}
    for w in words:
        scan = scans.get(w)
        if scan is None:
            out[w] = w in source
        else:
            matched = set(scan[0](source))
            out[w] = not matched.isdisjoint(dict(scan[1])[w])
    return out


@settings(max_examples=600, deadline=None)
@given(st.frozensets(_WORD, min_size=1, max_size=6), st.text("PSab", max_size=30).map(str.encode))
def test_grouped_words_are_found_exactly(words, source):
    assert _answers(source, words) == {w: w in source for w in words}


def test_an_overlapping_word_is_searched_alone():
    # ``PaP`` then ``Pb`` from its last byte: ``PaPb`` holds both, one findall match ``PaP`` only
    words = frozenset({b"PaP", b"Pb"})
    assert b"Pb" not in text_tier._scans(words)
    assert _answers(b"xPaPbx", words) == {b"PaP": True, b"Pb": True}


def test_the_rules_triggers_group_as_measured():
    from shutdown_lint import registry

    rules = tuple(registry.all_rules())
    _, scans = text_tier._plan(rules)
    assert {b"Pool", b"Popen", b"Process", b"SIG", b"SystemExit"} <= set(scans)
    # a rare first byte, or one that two grouped words share and that is not among the commonest
    shared = {w[0] for w in scans if sum(u[0] == w[0] for u in scans) >= 2}
    assert not {w for w in scans if w[0] not in text_tier._RARE_FIRST
                and (w[0] not in shared or w[0] in text_tier._COMMON_FIRST)}
