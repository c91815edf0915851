"""SHD201's tier-1 condition, sharpened in session 11 (issue 30): every near miss states whether
the declaration keeps the file and how many findings the rule reports with the tiers off; with
the tiers on, linting must find the same (``_tiers_agree``).

- no task words: ``_reason`` reports in a coroutine (``async`` in code: a task's coroutine is
  one) or in a sync function with the THREAD or EXECUTOR context, so ``wait``/``gather`` alone
  no longer keep a file whose only exit is in a sync function;
- the executor's methods (``ThreadPoolExecutor.map``/``submit``, ``run_in_executor``) count only
  as attributes or imported names (``words.AttrWord``): the builtin ``map(...)`` is no executor's;
- a ``def exit``/``def quit``/``class SystemExit`` name is no reference to the builtin
  (``words.BareWord``).

Each ruled-out case has a kept neighbour with a finding that a condition too sharp by one word
would lose (``test_too_sharp_loses_a_finding``)."""
from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter import select, words
from shutdown_lint.prefilter.words import FileText
from tests.perf.test_candidates import _tiers_agree

RULE = registry.rules_by_code()["SHD201"]
CASES: dict[str, tuple[bool, int, str]] = {}


def case(name: str, candidate: bool, findings: int, source: str) -> None:
    CASES[name] = (candidate, findings, textwrap.dedent(source))


# ---------------------------------------------------------------- executor: attributes, imports
case("pool.map", True, 1, '''
    import sys
    from concurrent.futures import ThreadPoolExecutor
    def job(x):
        sys.exit(x)
    with ThreadPoolExecutor() as pool:
        list(pool.map(job, [1]))
    ''')
case("pool.map over lines", True, 1, '''
    import sys
    from concurrent.futures import ThreadPoolExecutor
    def job(x):
        sys.exit(x)
    pool = ThreadPoolExecutor()
    results = (pool.  # the pool
               map(job, [1]))
    ''')
case("pool.submit", True, 1, '''
    import concurrent.futures as cf
    def job():
        exit(2)
    cf.ThreadPoolExecutor().submit(job)
    ''')
case("run_in_executor", True, 1, '''
    import asyncio, sys
    def job():
        sys.exit(1)
    loop = asyncio.new_event_loop()
    loop.run_in_executor(None, job)
    ''')
case("builtin map", False, 0, '''
    import sys
    def job(x):
        sys.exit(x)
    list(map(job, [1]))
    ''')
case("builtin map, a from-import of another map", False, 0, '''
    import sys
    from os import path
    def job(x):
        sys.exit(x)
    list(map(job, [1]))
    ''')
case("a star import may bind map", True, 0, '''
    import sys
    from helpers import *
    def job(x):
        sys.exit(x)
    list(map(job, [1]))
    ''')

# ---------------------------------------------------------------- no task words
case("asyncio.wait, no coroutine", False, 0, '''
    import sys
    from concurrent.futures import wait
    def check(fs):
        wait(fs)
        sys.exit(1)
    ''')
case("a task's coroutine", True, 1, '''
    import asyncio, sys
    async def work():
        sys.exit(1)
    def start():
        asyncio.get_event_loop().create_task(work())
    ''')
case("a thread target", True, 1, '''
    import sys
    from threading import Timer
    def tick():
        sys.exit(0)
    Timer(1.0, tick).start()
    ''')

# ---------------------------------------------------------------- a definition's name
case("def exit, def quit, class SystemExit", False, 0, '''
    class Session:
        def exit(self):
            pass
        def  quit(self):
            self.exit()
    class SystemExit(Exception):
        pass
    async def close(s):
        s.quit()
    ''')
case("def quit and the builtin called", True, 1, '''
    class Session:
        def quit(self):
            pass
    async def close(s):
        s.quit()
        quit()
    ''')
case("a class named like it, then raised", True, 1, '''
    async def close():
        raise SystemExit(1)
    class Shutdown(SystemExit):
        pass
    ''')


@pytest.mark.parametrize("name", list(CASES))
def test_near_miss(name: str) -> None:
    candidate, findings, source = CASES[name]
    assert select.declaration(RULE).holds(FileText(source.encode())) is candidate
    assert _tiers_agree("SHD201", source) == ["SHD201"] * findings


@pytest.mark.parametrize("mutant,name", [
    ("executor without map", "pool.map"),
    ("executor without submit", "pool.submit"),
    ("executor without run_in_executor", "run_in_executor"),
    ("map only bare", "pool.map over lines"),
    ("every def skipped", "def quit and the builtin called"),
])
def test_too_sharp_loses_a_finding(mutant: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A condition too sharp by one word (or one reading) rules out a case with a finding."""
    _, findings, source = CASES[name]
    assert findings and select.declaration(RULE).holds(FileText(source.encode()))
    if mutant.startswith("executor without"):
        lost = mutant.rsplit(" ", 1)[-1]
        real = words._callee_words

        def callee_words(names):
            return real([n for n in names if not n.endswith("." + lost)])
        monkeypatch.setattr(words, "_callee_words", callee_words)
    elif mutant == "map only bare":  # an attribute read back over the same line only
        monkeypatch.setattr(words.AttrWord, "_scan", lambda self, text: any(
            text.source[p - 1:p] == b"." for n in self.names for p in text.positions(n)))
    else:
        monkeypatch.setattr(words, "_DEFINES", __import__("re").compile(rb"\Z"))
    cond = select.declaration(RULE)
    fresh = words.context("executor")  # the contexts' words are built on first use: rebuild them
    monkeypatch.setattr(type(fresh), "holds", lambda self, text: words._context_words()[self.name].holds(text))
    assert not cond.holds(FileText(source.encode())), mutant


@pytest.mark.parametrize("source,holds", [
    (b"list(map(f, xs))", False),
    (b"pool.map(f, xs)", True),
    (b"pool . map(f, xs)", True),
    (b"pool.\\\n    map(f, xs)", True),
    (b"(pool.  # the pool\n map(f, xs))", True),  # a comment between: not read back, counts
    (b"from concurrent.futures.ThreadPoolExecutor import (\n    map,\n)\nmap(f, xs)", True),
    (b"from helpers import *\nmap(f, xs)", True),
    (b"from os import path\nmap(f, xs)", False),
    (b"x = 1\nmap(f, xs)  # pool.map(f, xs)", False),  # in a comment
    (b"# pool\nmap(f, xs)", True),  # a line end after a comment: not read back, counts
])
def test_attr_word(source: bytes, holds: bool) -> None:
    assert words.AttrWord("map").holds(FileText(source)) is holds


@pytest.mark.parametrize("source,holds", [
    (b"def exit(self): pass", False),
    (b"async def  quit(): pass", False),
    (b"class SystemExit(Exception): pass", False),
    (b"undef exit", True),  # not the keyword
    (b"def f(): return exit", True),
    (b"self.exit()", False),
])
def test_bare_word_skips_definitions(source: bytes, holds: bool) -> None:
    assert words.BareWord("exit", "quit", "SystemExit").holds(FileText(source)) is holds
