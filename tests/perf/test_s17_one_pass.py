"""The text tiers' words found in one pass (``prefilter.present``, issue 30): an Aho-Corasick
automaton reports which of the trigger words and tier-1 names a file contains, and both tiers
answer from it. It must change nothing:

- the words it reports are exactly those ``word in source`` finds, overlapping words included;
- ``text.prefilter`` keeps the same rules with it as without (``_prefilter_present`` against the
  word-by-word search and its grouped regexes);
- tier 1's ``FileText`` gives the same positions, word tests and code view with the absent names
  answered at once;
- the whole text tier (``analyzer.text_tiers``) keeps the same rules on real files, and the
  command prints the same output with ``SHUTDOWN_LINT_ONE_PASS=0``, or with the package not
  importable at all (the fallback a platform without its wheel gets)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shutdown_lint import analyzer, registry
from shutdown_lint.prefilter import present, select
from shutdown_lint.prefilter import text as text_tier
from shutdown_lint.prefilter.words import FileText
from shutdown_lint.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
_RULES = tuple(registry.all_rules())
_FINDER = present._finder(_RULES)
#: the real words, pieces of them (prefixes, suffixes: words that overlap), and separators
_PIECES = sorted({w.decode() for w in _FINDER.words} | {p for t in _FINDER.words for p in (t[:2].decode(), t[-3:].decode())}
                 | {piece for rule in _RULES for t in rule.triggers for piece in (t, t[: len(t) // 2], t[len(t) // 2:])}
                 | {" ", "\n", "(", "_", ".", "#", '"', "'''", "x", ":", "\\\n", "\t", "async", "def", "except"})
_SOURCE = st.lists(st.sampled_from(_PIECES), max_size=16).map(lambda ps: "".join(ps).encode())


def test_the_linter_installs_the_automaton():
    # a dependency (pyproject.toml): the tests below would compare the fallback with itself
    assert present.available() and _FINDER is not None
    assert _FINDER.known >= text_tier.plan_words(_RULES)


#: few letters, so that words overlap, nest and share prefixes and suffixes often
_WORD = st.text("rnu_", min_size=1, max_size=5).map(str.encode)


@settings(max_examples=1000, deadline=None)
@given(st.frozensets(_WORD, min_size=1, max_size=8), st.text("rnu_x", max_size=40).map(str.encode))
def test_the_words_found_are_exactly_the_substrings(words, source):
    found = present.Finder(words)(source)
    assert found.found == {w for w in words if w in source}
    assert all(found.absent(w) == (w not in source) for w in words)


@settings(max_examples=1000, deadline=None)
@given(st.frozensets(_WORD, min_size=1, max_size=8), st.text("rnu_x", max_size=60).map(str.encode),
       st.integers(1, 9))
def test_a_long_file_scanned_in_pieces_finds_the_words_across_the_cuts(words, source, piece):
    # a piece as small as one byte: every word longer than that crosses a cut somewhere
    assert present.Finder(words, piece=piece)(source).found == {w for w in words if w in source}


def test_a_word_inside_or_across_another_is_found():
    words = [b"run", b"run_forever", b"forever", b"un_f", b"ever", b"n"]
    found = present.Finder(words)(b"loop.run_forever()")
    assert found.found == set(words)
    assert not found.absent(b"zzz")  # a word never scanned for is not known absent


@settings(max_examples=1500, deadline=None)
@given(_SOURCE)
def test_the_rules_the_trigger_tier_keeps_are_the_same(source):
    assert text_tier.prefilter(source, _RULES, _FINDER(source)) == text_tier.prefilter(source, _RULES)


@pytest.mark.parametrize("source", [b"asyncio.run (main())", b"asyncio.run\\\n(main())", b"try:\n    pass\nexcept :\n    pass\n",
                                    b"async  def f(): pass", b"async\\\ndef f(): pass", b"loop.run_forever()"])
def test_a_trigger_spelled_with_a_gap_is_searched_with_its_regex(source):
    kept = text_tier.prefilter(source, _RULES)
    assert text_tier.prefilter(source, _RULES, _FINDER(source)) == kept


def _tier1_view(make, names) -> list:
    """Each name's answers, each on a fresh ``FileText`` (the first search of a name takes
    another path in ``has_word`` than in ``positions``), and on its code view."""
    out = []
    for n in names:
        a, b = make(), make()
        out.append((n, a.positions(n), a.has_word(n), b.has_word(n), b.positions(n),
                    make().code().positions(n), make().code().has_word(n)))
    return out


@settings(max_examples=800, deadline=None)
@given(_SOURCE)
def test_tier_one_answers_the_same_with_the_absent_names_known(source):
    names = sorted(_FINDER.words) + [b"not_scanned_for"]
    found = _FINDER(source)
    assert _tier1_view(lambda: FileText(source, found), names) == _tier1_view(lambda: FileText(source), names)
    rules = text_tier.prefilter(source, _RULES)
    settings_ = Settings(tuple(registry.rules_by_code()))
    assert select.filter_rules(source, rules, settings_, _FINDER(source)) == select.filter_rules(source, rules, settings_)


def _real_files() -> list[Path]:
    """The standard library's modules and its asyncio, concurrent and multiprocessing packages
    (real code that holds the rules' words), the example project and the tests' programs."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    out = sorted(stdlib.glob("*.py"))
    out += [p for d in ("asyncio", "concurrent", "multiprocessing") for p in sorted((stdlib / d).rglob("*.py"))]
    out += sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "tests" / "data").rglob("*.py"))
    return out


def test_the_text_tiers_keep_the_same_rules_on_real_files(monkeypatch):
    settings_ = Settings(tuple(registry.rules_by_code()))
    files = _real_files()
    assert len(files) > 300
    kept = 0
    for path in files:
        source = path.read_bytes()
        rules = analyzer.rules_for(str(path), settings_)
        monkeypatch.setattr(present, "enabled", True)
        one_pass = analyzer.text_tiers(source, rules, settings_)
        monkeypatch.setattr(present, "enabled", False)
        assert analyzer.text_tiers(source, rules, settings_) == one_pass, path
        kept += bool(one_pass)
    assert 0 < kept < len(files)  # files both kept and ruled out: the comparison decides something


def _lint(*args: str, env_extra: dict, prelude: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, **env_extra}
    code = prelude + "import sys; from shutdown_lint.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "--no-cache", "--output-format", "concise", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)


@pytest.mark.timeout(300)
def test_the_command_prints_the_same_without_the_one_pass_scan_or_its_package():
    target = ["examples/rollout_project", "tests/data"]
    on = _lint(*target, env_extra={})
    off = _lint(*target, env_extra={"SHUTDOWN_LINT_ONE_PASS": "0"})
    # the package not importable at all: what a platform without its wheel gets
    missing = _lint(*target, env_extra={}, prelude="import sys; sys.modules['ahocorasick_rs'] = None; ")
    assert on.returncode == 1 and on.stdout.count("SHD") > 20, on.stderr
    assert (off.returncode, off.stdout) == (on.returncode, on.stdout)
    assert (missing.returncode, missing.stdout) == (on.returncode, on.stdout)
    assert "Traceback" not in on.stderr + off.stderr + missing.stderr


def test_without_the_package_the_scan_says_so_and_the_tiers_search_word_by_word():
    code = ("import sys; sys.modules['ahocorasick_rs'] = None\n"
            "from shutdown_lint import registry\n"
            "from shutdown_lint.prefilter import present\n"
            "rules = tuple(registry.all_rules())\n"
            "assert not present.available() and present.scan(b'asyncio.run(main())', rules) is None\n"
            "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
