"""Issue 30, session 5: the word tier reads code only where the facts do (``prefilter.code``,
``words.InCode``/``BareWord``/``builtin``), so that a file whose rule words are only in strings,
comments or attributes never reaches ``ast``.

Two kinds of checks:

- ``code_only`` against Python's tokenizer over real files (the standard library and this
  repository): no identifier, number or operator byte is ever blanked, formatted strings are
  kept whole; and against libcst (which reads 3.12's formatted strings, PEP 701) on snippets;
- near misses for SHD201, SHD403 and SHD404: each states whether the rule's tier-1 declaration
  keeps the file and how many findings the rule reports with the tiers off; with the tiers on
  linting must find the same. Each ruled-out case has a kept neighbour with a finding that an
  unsound variant of the condition (a word counted in code when it is in a string, an attribute
  taken for a bare name) would lose.
"""

from __future__ import annotations

import asyncio
import io
import textwrap
import tokenize
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from shutdown_lint import registry
from shutdown_lint.prefilter import select
from shutdown_lint.prefilter.code import code_only
from shutdown_lint.prefilter.words import FileText
from tests.perf.test_candidates import _tiers_agree

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------- code_only vs tokenize
def _real_files() -> list[Path]:
    stdlib = Path(asyncio.__file__).resolve().parents[1]
    files = sorted((stdlib / "asyncio").glob("*.py")) + sorted((stdlib / "email").glob("*.py"))
    files += sorted((stdlib / "concurrent").rglob("*.py")) + sorted((stdlib / "logging").glob("*.py"))
    files += [stdlib / n for n in ("argparse.py", "typing.py", "inspect.py", "dataclasses.py", "string.py")]
    for d in ("shutdown_lint", "rules", "runtime_guard", "tests/perf", "examples"):
        files += sorted((REPO / d).rglob("*.py"))
    return [f for f in files if f.is_file()]


def _offsets(src: bytes):
    starts = [0]
    lines = src.splitlines(keepends=True)
    for line in lines:
        starts.append(starts[-1] + len(line))

    def at(row: int, col: int, enc: str) -> int:
        if row - 1 >= len(lines):
            return starts[-1]
        return starts[row - 1] + len(lines[row - 1].decode(enc)[:col].encode(enc))
    return at


def test_code_only_blanks_no_code_token():
    """Over real files: the same length, every NAME/NUMBER/OP token intact, every formatted string
    intact, and some string or comment blanked (it is not the identity)."""
    checked = blanked = 0
    for path in _real_files():
        src = path.read_bytes()
        out = code_only(src)
        assert out is not None, path
        assert len(out) == len(src), path
        toks = list(tokenize.tokenize(io.BytesIO(src).readline))
        enc = toks[0].string
        at = _offsets(src)
        for tk in toks:
            if tk.type in (tokenize.NAME, tokenize.NUMBER, tokenize.OP) or (
                    tk.type == tokenize.STRING and "f" in tk.string.split(tk.string[-1])[0].lower()):
                a, b = at(*tk.start, enc), at(*tk.end, enc)
                assert out[a:b] == src[a:b], (path, tk)
                checked += 1
        blanked += out != src
    assert checked > 100_000 and blanked > 100


def _names_kept(source: str) -> None:
    """Every name libcst reads in ``source`` (3.12's formatted strings included) is intact in
    ``code_only``."""
    src = source.encode()
    out = code_only(src)
    assert out is not None and len(out) == len(src)
    lines = src.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    wrapper = MetadataWrapper(cst.parse_module(src))
    positions = wrapper.resolve(PositionProvider)
    seen = 0
    for node, pos in positions.items():
        if isinstance(node, cst.Name):
            a = starts[pos.start.line - 1] + pos.start.column
            assert out[a:a + len(node.value)] == node.value.encode(), (source, node.value)
            seen += 1
    assert seen


@pytest.mark.parametrize("source", [
    'x = f"{a["k"]}" + g("#")  # "\n',
    'x = f"{ {"k": sys.exit}["k"] }"\n',
    "x = f'{a:{b}>{w}}' + f'{c!r:>10}' + f'{d=}'\n",
    "x = f\"{a:'>10}\" 'q' \"{b}\"\n",
    'x = f"""{\n    a  # a comment with " and \'\n}""" + y\n',
    'x = rf"\\{a}" + fr"{b}\\\\" + "\\N{DASH}" + f"\\N{EM DASH} {y}"\n',
    'x = f"{f"{f"{deep}"}"}"\n',
    "if'a'in x: exit('b')\nmatch\"s\":\n    case\"s\": quit()\n",
    "x = b'\\'' + rb\"\\\"\" + u'''a''b''' + '''\\'''' + \"a\\\nb\"\n",
    't = t"{name}" + t"{other!r:>{w}}"\n',
])
def test_code_only_keeps_every_name(source):
    _names_kept(source)


@pytest.mark.parametrize("source,expected", [
    (b'x = "exit" # exit\n', b'x = "    " #     \n'),
    (b"y = '''a\n'b'\n''' + r'\\'' \n", b"y = ''' \n   \n''' + r'  ' \n"),
    (b'z = f"exit {exit}" + "{x}"\n', b'z = f"exit {exit}" + "   "\n'),
])
def test_code_only_blanks_strings_and_comments(source, expected):
    assert code_only(source) == expected


@pytest.mark.parametrize("source", [
    b'x = "open\n',  # unterminated
    b"x = '''open\n",
    b'x = f"{a\n',
    b'x = f"a } b"\n',
    b'x = 1if"a"else 2\n',  # a number right before a quote: not read
    b'x = zz"a"\n',  # not a prefix, not a keyword
    b'x = f"{a:"}"\n',  # the closing quote inside a spec
    b"# -*- coding: shift_jis -*-\nx = '\x83\x5c'\n",  # a backslash byte inside a character
    b"#!/usr/bin/env python\n# coding: utf-7\nx = 1\n",
    b"x = '\xff'\n",  # not UTF-8 and no encoding declared
    b"x = 'a'\x00\n",
])
def test_code_only_gives_up_when_unsure(source):
    assert code_only(source) is None


def test_latin1_declared_is_read():
    src = b"# -*- coding: latin-1 -*-\nx = '\xe9' # \xe9\n"
    assert code_only(src) == b"#" + b" " * 24 + b"\nx = ' ' #  \n"


def test_file_text_code_is_the_whole_text_when_unsure():
    text = FileText(b'x = "open\n')
    assert text.code() is text


# ---------------------------------------------------------------- near misses
CASES: list[tuple[str, str, bool, int]] = []  # (code, source, candidate at tier 1, findings with the tiers off)


def case(code: str, candidate: bool, findings: int, source: str) -> None:
    CASES.append((code, textwrap.dedent(source), candidate, findings))


# SHD201: the exit in a docstring, a comment or a plain string: out; in code, in an f-string's field,
# bare after a float or an ellipsis line, through ``builtins``: kept and reported
case("SHD201", False, 0, '''
    import asyncio
    async def work():
        """Ends the loop; never calls sys.exit() nor exit()."""
        log("exit now")  # exit
        await asyncio.sleep(1)
    ''')
case("SHD201", True, 1, '''
    import asyncio, sys
    async def work():
        """Ends the loop."""
        await asyncio.sleep(1)
        sys.exit(1)
    ''')
case("SHD201", True, 1, '''
    import sys
    async def work():
        print(f"{sys.exit(1)}")
    ''')
case("SHD201", False, 0, '''
    async def work(block):
        block.exit(1)
        block . quit()
    ''')
case("SHD201", True, 1, '''
    async def work(block):
        x = 1.
        exit(1)
    ''')
case("SHD201", True, 1, '''
    async def work(block):
        x = ...
        quit()
    ''')
case("SHD201", True, 1, '''
    import builtins
    async def work():
        builtins.exit(2)
    ''')
case("SHD201", True, 1, '''
    from builtins import exit as leave
    async def work():
        leave(2)
    ''')
case("SHD201", True, 1, '''
    async def work():
        raise SystemExit(3)
    ''')
case("SHD201", False, 0, '''
    import threading
    def target():
        raise ValueError("SystemExit is not raised here")
    threading.Thread(target=target).start()
    ''')
case("SHD201", True, 1, '''
    import threading
    def target():
        raise SystemExit("stop")
    threading.Thread(target=target).start()
    ''')

# SHD403: ray.get in a string only: out; in code with the driver known only from "__main__" (a string
# the facts read): kept and reported
case("SHD403", False, 0, '''
    import ray
    def main():
        print("call ray.get(refs) or ray.wait(refs) here")
    if __name__ == "__main__":
        main()
    ''')
case("SHD403", True, 1, '''
    import ray
    def main():
        print(ray.get(work.remote()))
    if __name__ == "__main__":
        main()
    ''')
case("SHD403", True, 1, '''
    import ray
    def run():
        print(ray.get(work.remote()))
    if __name__ == "__main__":
        run()
    ''')
# the driver's main() and ray.init in code only: in a docstring they make no driver; in code they do
case("SHD403", False, 0, '''
    import ray
    def fetch(refs):
        """Called from def main(): after ray.init(), returns ray.get(refs)."""
        return ray.get(refs)
    ''')
case("SHD403", True, 1, '''
    import ray
    def fetch(refs):
        return ray.get(refs)
    def main():
        fetch([work.remote()])
    ''')
case("SHD403", True, 1, '''
    import ray
    def run():
        ray.init()
        return ray.get(work.remote())
    ''')

# SHD404: ray.remote in a docstring only, or a class with no bases and no coroutine: out; an actor
# with bases (its async methods inherited) or with a coroutine: kept
case("SHD404", False, 0, '''
    class Pool:
        """Use @ray.remote on it to make an actor."""
        async def run(self):
            try:
                await self.conn.fetch()
            finally:
                await self.conn.close()
    ''')
case("SHD404", False, 0, '''
    import ray
    @ray.remote
    class Counter:
        def run(self):
            return 1
    ''')
case("SHD404", True, 1, '''
    import ray
    class Base:
        async def run(self):
            try:
                await self.conn.fetch()
            finally:
                await self.conn.close()
    @ray.remote
    class Counter(Base):
        def other(self):
            return 1
    ''')
# no coroutine here: the async methods may come from a base in another module (the project index;
# linted alone the rule has no index and reports nothing)
case("SHD404", True, 0, '''
    import ray
    from pools import Base
    @ray.remote
    class Counter(Base):
        def other(self):
            return 1
    ''')
case("SHD404", True, 1, '''
    import ray
    @ray.remote
    class Pool:
        async def run(self):
            try:
                await self.conn.fetch()
            finally:
                await self.conn.close()
    ''')


@pytest.mark.parametrize("code,source,candidate,findings", CASES)
def test_near_miss(code, source, candidate, findings):
    rule = registry.rules_by_code()[code]
    assert select.declaration(rule).holds(FileText(source.encode())) is candidate
    assert _tiers_agree(code, source) == [code] * findings


# ---------------------------------------------------------------- exact names from the code
@pytest.mark.parametrize("source,exact", [
    ('x = "took 2\u00b5s"  # \ufb01le\nasync def f():\n    pass\n', True),  # in a string and a comment only
    ('"""\u2460 docstring"""\nimport sys\n', True),
    ('\ufb01le = 1\n', False),  # an identifier: the ast reads "file"
    ('x.\ufb01le = 1\n', False),
    ('x = f"{\ufb01le}"\n', False),  # a replacement field is code
    ('x = f"\u00b5s {y}"\n', False),  # a formatted string is kept whole: not decided
])
def test_exact_names_read_from_the_code(source, exact):
    from shutdown_lint.prefilter import ast_tree

    tree = ast_tree.parse(source.encode())
    assert tree is not None and tree.exact_names is exact


def test_exact_names_from_the_code_keep_findings():
    """A micro sign in a string no longer turns tier 2 off; the findings are those of the tiers off."""
    for source, findings in [
        ('import sys\nasync def work():\n    log("took 2\u00b5s")\n    sys.exit(1)\n', 1),
        ('import sys\nasync def work():\n    log("took 2\u00b5s")\ndef main():\n    sys.exit(1)\n', 0),
    ]:
        assert _tiers_agree("SHD201", source) == ["SHD201"] * findings
