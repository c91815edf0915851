"""The index's whole-file text scans (``index/project.py``), rewritten for speed, against the
patterns they replaced, kept here as the oracle: ``_STAR_IMPORT`` and ``_DEF_NAME`` with
the word before its look-behind, ``_registers`` for ``_REGISTRATION.search``, and
``_indented_clause`` over one pattern per clause word. A pattern that starts with ``\\b``, a
look-behind or an alternation is tried at every byte; one that starts with a literal jumps to
its occurrences (ray+torch: ~10x less CPU for each)."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from shutdown_lint.index import project as P
from shutdown_lint.index import text_facts as TF

_OLD_STAR = re.compile(rb"\bimport[\s\\]*\*")
_OLD_DEF_NAME = re.compile(rb"(?<![A-Za-z0-9_\x80-\xff])def[\s\\]+([A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*)")
_OLD_CLAUSE_WORD = re.compile(rb"(?<![A-Za-z0-9_\x80-\xff])(?:except|finally)(?![A-Za-z0-9_\x80-\xff])")


def _old_indented_clause(data: bytes) -> bool:
    for m in _OLD_CLAUSE_WORD.finditer(data):
        i = k = m.start()
        while k > 0 and data[k - 1] in b" \t\f\v":
            k -= 1
        if k > 0 and data[k - 1] not in b"\r\n":
            continue
        if k < i:
            return True
        j = k - 1
        if j > 0 and data[j] == 0x0A and data[j - 1] == 0x0D:
            j -= 1
        if j > 0 and data[j - 1] == 0x5C:
            return True
    return False


# pieces that make the scans' edge cases: words glued to identifier bytes (ASCII and not),
# blanks, line ends, backslashes, the star
_PIECES = [b"import", b"def", b"except", b"finally", b"register", b"signal", b"add_signal_handler",
           b"_", b"x", b"9", b"\xc3\xa9", b"\x80", b" ", b"\t", b"\n", b"\r", b"\r\n", b"\x0c", b"\x0b",
           b"\\", b"*", b"(", b".", b"#", b"'", b":", b"un", b"ed", b"s"]
# (each example draws from a few of the pieces: dense enough that ``x`` + ``import`` + `` *`` occurs)
_SOUP = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6).flatmap(
    lambda few: st.lists(st.sampled_from(few), max_size=16)).map(b"".join)


@settings(max_examples=1500, deadline=None)
@given(_SOUP)
def test_the_scans_answer_as_the_patterns_they_replaced(data):
    assert bool(TF._STAR_IMPORT.search(data)) == bool(_OLD_STAR.search(data))
    assert TF._DEF_NAME.findall(data) == _OLD_DEF_NAME.findall(data)
    assert TF._registers(data) == bool(TF._REGISTRATION.search(data))
    assert TF._indented_clause(data) == _old_indented_clause(data)


def _soup(*pieces):
    return st.lists(st.sampled_from(pieces), max_size=12).map(b"".join)


_NAME_BYTES = (b"x", b"_", b"9", b"\xc3\xa9", b"\x80")


@settings(max_examples=600, deadline=None)
@given(_soup(b"import", b" ", b"\t", b"\n", b"\\", b"*", *_NAME_BYTES),
       _soup(b"def", b" ", b"\n", b"\\", b"(", b"a", *_NAME_BYTES),
       _soup(b"register", b"signal", b"add_signal_handler", b"(", b".", b" ", *_NAME_BYTES),
       _soup(b"except", b"finally", b" ", b"\t", b"\x0c", b"\n", b"\r", b"\r\n", b"\\", b":", *_NAME_BYTES))
def test_each_scan_around_its_words(star, defs, registrations, clauses):
    assert bool(TF._STAR_IMPORT.search(star)) == bool(_OLD_STAR.search(star))
    assert TF._DEF_NAME.findall(defs) == _OLD_DEF_NAME.findall(defs)
    assert TF._registers(registrations) == bool(TF._REGISTRATION.search(registrations))
    assert TF._indented_clause(clauses) == _old_indented_clause(clauses)


def test_the_scans_on_written_cases():
    assert TF._STAR_IMPORT.search(b"from x import *")
    assert TF._STAR_IMPORT.search(b"import \\\n *") and TF._STAR_IMPORT.search(b"import*")
    assert not TF._STAR_IMPORT.search(b"reimport *") and not TF._STAR_IMPORT.search(b"_import *")
    assert TF._STAR_IMPORT.search(b"\xc3\xa9import *")  # \b: a non-ASCII byte is no word byte for bytes
    assert TF._DEF_NAME.findall(b"def a(): pass\nundef b\nasync def\\\n c(): pass\n\xc3def d") == [b"a", b"c"]
    assert TF._registers(b"atexit.register(f)") and TF._registers(b"loop.add_signal_handler(s, f)")
    assert not TF._registers(b"self.register_buffer(x)") and not TF._registers(b"signals = 1")
    assert TF._indented_clause(b"def f():\n    try:\n        pass\n    finally:\n        g()\n")
    assert not TF._indented_clause(b"try:\n    pass\nexcept E:\n    pass\n")
    assert not TF._indented_clause(b" except\x80") and not TF._indented_clause(b"\tfinally\xc3\xa9 = 1")
    assert not TF._indented_clause(b" x\xc3\xa9except:")


def test_the_readers_read_what_open_reads(tmp_path):
    """``_file_bytes`` and ``_stat_and_read`` read with ``os.read``: the whole file, as
    ``open(path, "rb").read()``, and nothing for what cannot be read."""
    import os

    for size in (0, 1, 4095, 65536, 300_001):
        f = tmp_path / f"m{size}.py"
        f.write_bytes(bytes(range(256)) * (size // 256) + b"x" * (size % 256))
        assert TF._file_bytes(str(f)) == f.read_bytes()
        st, data = TF._stat_and_read(str(f))
        assert data == f.read_bytes() and st.st_size == size and st.st_mtime_ns == os.stat(f).st_mtime_ns
    for unreadable in (str(tmp_path), str(tmp_path / "missing.py")):
        assert TF._file_bytes(unreadable) == b""
        assert TF._stat_and_read(unreadable) == (None, None)
    if os.path.exists("/proc/self/cmdline"):  # a size of 0 and a text: read on to the end
        with open("/proc/self/cmdline", "rb") as fh:
            assert TF._file_bytes("/proc/self/cmdline") == fh.read() != b""


_STATEMENT = _soup(b"from", b"import", b"as", b"a", b"B", b"_", b"0", b"9", b"x1", b" ", b"\t", b".", b",",
                   b"(", b")", b"\n", b"\\", b"#", b"*", b"\xc3\xa9", b"\x80", b"\x7f", b"-")


@settings(max_examples=800, deadline=None)
@given(st.lists(_STATEMENT, max_size=6))
def test_the_import_words_are_the_regex_words(statements):
    """The importer table's words of a file (``_import_words``: ``translate`` and ``split``)
    are ``_WORD``'s words of its import statements: a run of identifier bytes without its
    leading digits."""
    assert P._import_words(statements) == {w for st in statements for w in P._WORD.findall(st)}


def test_the_import_words_on_written_cases():
    assert P._import_words([b"from a.b import (c as d,\n  e9)  # 3rd x\xc3\xa9y", b"import 12, _1"]) == {
        b"from", b"a", b"b", b"import", b"c", b"as", b"d", b"e9", b"rd", b"x", b"y", b"_1"}
    assert P._import_words([]) == set() and P._import_words([b"9 99"]) == set()
    assert P._import_words([b"3a a"]) == {b"a"}


def _old_import_statements(data: bytes) -> list[bytes]:
    """``import_statements`` before session 12 (one sorted set of line starts), the oracle."""
    starts = set()
    for word in (b"import", b"from"):
        i = data.find(word)
        while i >= 0:
            starts.add(data.rfind(b"\n", 0, i) + 1)
            i = data.find(word, i + len(word))
    out: list[bytes] = []
    end = 0
    for start in sorted(starts):
        if start < end:
            continue
        m = P._IMPORT_STATEMENT.match(data, start)
        if m:
            out.append(m.group())
            end = m.end()
    return out


_SOURCE = _soup(b"from", b"import", b"fromimport", b"importfrom", b" ", b"\t", b"\n", b"\r\n", b"(", b")",
                b"a", b".", b",", b"#", b"\\", b"'", b'"""', b"*", b"x", b"\xc3\xa9", b"as")


@settings(max_examples=1500, deadline=None)
@given(_SOURCE)
def test_import_statements_are_the_old_ones(data):
    """``import_statements`` walks the occurrences of both words in order and skips those
    inside the statement it found last: the statements of the old reading, which are
    ``_IMPORT_STATEMENT.findall``'s."""
    assert P.import_statements(data) == _old_import_statements(data) == P._IMPORT_STATEMENT.findall(data)


def test_import_statements_on_written_cases():
    src = (b"import a\nfrom b import (c,\n  d)  # from e import f\n  from g import h\nx = 'import y'\n"
           b"    import z.w as v\nfrom the docs\nfromage\nfrom\timport\n")
    assert P.import_statements(src) == _old_import_statements(src) == [
        b"import a", b"from b import (c,\n  d)  # from e import f", b"  from g import h",
        b"    import z.w as v", b"from the docs", b"from\timport"]
    for inside in (b"from a import (b,\nimport c)\nimport d\n", b"from a import (b,\n  from c)\n",
                   b"import a  # (\nfrom b import (c\n,import d)"):  # a line inside the parentheses: not its own
        assert P.import_statements(inside) == _old_import_statements(inside) == P._IMPORT_STATEMENT.findall(inside)
