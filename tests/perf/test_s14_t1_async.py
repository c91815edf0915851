"""Tier 1 of the asyncio rules, sharpened in session 14 (issue 30): each new ``candidate`` is a
necessary condition of the rule's ``candidate_tree`` (tier 2), read off the tier-2 code.

- SHD104, SHD105, SHD106, SHD301 read only ``async def``s (``Function.is_async``): their
  condition asks for one (``words.ASYNC_DEF``: ``async`` at a line's start, after indentation or a
  byte order mark, then ``def``, whitespace or backslash continuations between). ``async def``
  written in a message or mid-line in a docstring no longer sends a file to ``ast``;
- SHD101, SHD104, SHD105, SHD106 also ask, in code (``InCode``: strings and comments blanked),
  for the word their tier 2 must find as a callee or a handler's type (``gather``;
  ``CancelledError``/``BaseException`` or a bare ``except:``; ``cancel``; ``create_task``/
  ``ensure_future``): ``Tree.words`` of a callee is its own name or attribute, or the words of
  its aliases (import names, heads of bound values: spelled in code) or factory result types
  (none of these words). (SHD102's ``create_task`` in code would be exact too, but on ray+torch,
  the wheels and c28 it rules SHD102 out of no file that reaches tier 2: left as it was.)

Proof kept here: on a sample of the installed ray and torch sources, whenever the old condition
and tier 2 (or a structural necessary condition of it that does not depend on the project index)
hold, the new one holds; hand-written files for each shape tier 2 accepts (aliases, backslash
continuations, comments between tokens, a byte order mark, ``\\r`` line ends) keep the rule and
find with the tiers on what they find with them off; string and comment lookalikes are ruled out;
a mutant of a condition that drops one shape loses a case with a finding."""
from __future__ import annotations

import ast
import re
import textwrap
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter import ast_tree, select
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.words import FileText
from tests.perf.test_candidates import _tiers_agree

RULES = registry.rules_by_code()
CODES = ("SHD101", "SHD104", "SHD105", "SHD106", "SHD301")

#: the conditions before session 14 (the soundness test compares against them)
OLD = {
    "SHD101": C.qualified("asyncio.gather", "tqdm.asyncio.tqdm.gather", "tqdm.asyncio.tqdm_asyncio.gather",
                          "tqdm.auto.tqdm.gather"),
    "SHD104": C.All(C.Word("async"), C.AnyOf(C.Word("CancelledError", "BaseException"),
                                             C.WordThen("except", C.gap() + ":"))),
    "SHD105": C.All(C.Word("async"), C.Word("cancel"), C.AnyOf(C.Word("create_task", "ensure_future", "Task", "Future"))),
    "SHD106": C.All(C.Word("async"), C.AnyOf(C.Word("create_task"), C.qualified("asyncio.ensure_future"))),
    "SHD301": C.Word("async"),
}


def _new(code: str) -> C.Cond:
    return select.declaration(RULES[code])


def _structural(code: str, tree) -> bool:
    """A necessary condition of ``code``'s tier 2 that does not depend on the project index (SHD101
    and SHD301 ask it): the calls and defs its tier 2 reads before anything else."""
    if code == "SHD101":
        from shutdown_lint.rules.shd101_gather_without_taskgroup import _TREE_GATHERS
        return any(tree.may_call_any(c, _TREE_GATHERS) for c in tree.all_calls())
    if code == "SHD106":
        from shutdown_lint.rules.shd102_unobserved_task_exception import spawns
        return bool(spawns(tree)) and any(fn.is_async for fn in tree.functions)
    if code == "SHD104":
        from shutdown_lint.rules.shd104_swallowed_cancellation import _may_catch_cancellation
        return any(fn.is_async and any(_may_catch_cancellation(tree, h) for tr in fn.trys for h in tr.handlers)
                   for fn in tree.functions)
    if code == "SHD105":
        return any(fn.is_async and any(not lam and type(c.func) is ast.Attribute and c.func.attr == "cancel"
                                       for c, _, lam in fn.calls) for fn in tree.functions)
    return any(fn.is_async for fn in tree.functions)


# ---------------------------------------------------------------- soundness on real code
def _sample() -> list[Path]:
    """Every 3rd file of the installed ray and torch packages that spells a word one of the old
    conditions needs (``async``, ``gather``, ``create_task``, ``ensure_future``)."""
    import importlib.util

    out = []
    for pkg in ("ray", "torch"):  # found, not imported (importing torch takes seconds)
        spec = importlib.util.find_spec(pkg)
        if spec is None or spec.origin is None:
            continue
        for path in sorted(Path(spec.origin).parent.rglob("*.py")):
            data = path.read_bytes()
            if b"async" in data or b"gather" in data or b"create_task" in data or b"ensure_future" in data:
                out.append(path)
    return out[::3]


def test_new_condition_holds_wherever_old_and_tier2_hold_on_ray_and_torch():
    checked = {code: 0 for code in CODES}
    ruled_out = {code: 0 for code in CODES}
    for path in _sample():
        data = path.read_bytes()
        text = FileText(data)
        olds = [code for code in CODES if OLD[code].holds_on_text(text)]
        if not olds:
            continue
        tree = ast_tree.parse(data)
        if tree is None or not tree.exact_names:
            continue
        for code in olds:
            new = _new(code).holds(FileText(data))
            keeps = _structural(code, tree)
            if keeps:
                checked[code] += 1
                assert new, (code, str(path))
            if keeps and RULES[code].candidate_tree(tree):
                assert new, (code, str(path))
            ruled_out[code] += not new
    assert all(checked.values()), checked
    assert ruled_out["SHD104"] and ruled_out["SHD301"], ruled_out


# ---------------------------------------------------------------- the shapes tier 2 accepts
CASES: list[tuple[str, str, bytes, bool, int]] = []  # (code, name, source, tier 1 keeps, findings)


def case(code: str, name: str, candidate: bool, findings: int, source: str | bytes) -> None:
    data = textwrap.dedent(source).encode() if isinstance(source, str) else source
    CASES.append((code, name, data, candidate, findings))


_GATHER = '''
    {imports}
    async def run_trial(cfg):
        sandbox = await start(cfg)
        try:
            return await sandbox.run()
        finally:
            await sandbox.delete()

    async def generate(cfgs):
        {bind}
        return await {call}(*[run_trial(c) for c in cfgs])
    '''


def gather(name: str, imports: str, call: str, bind: str = "pass", candidate: bool = True, findings: int = 1) -> None:
    case("SHD101", name, candidate, findings, _GATHER.format(imports=imports, call=call, bind=bind))


gather("asyncio.gather", "import asyncio", "asyncio.gather")
gather("import as", "import asyncio as aio", "aio.gather")
gather("from import as", "from asyncio import gather as g", "g")
gather("from import, parenthesised", "from asyncio import (\n        sleep,  # c\n        gather,\n    )", "gather")
gather("a name bound to it", "import asyncio", "g", bind="g = asyncio.gather")
gather("the module bound to a name", "import asyncio", "aio.gather", bind="aio = asyncio")
gather("a star import (the facts resolve no name through it)", "from asyncio import *", "gather", findings=0)
gather("a backslash continuation", "import asyncio", "asyncio.\\\n            gather")
gather("a comment between, in brackets", "import asyncio", "(asyncio.  # which\n            gather)")
gather("tqdm", "from tqdm.asyncio import tqdm", "tqdm.gather")
gather("asyncio.gather only in a docstring", '"""Runs asyncio.gather over the trials."""\n    import asyncio',
       "asyncio.wait", candidate=False, findings=0)
gather("tqdm and gather only in strings", 'import tqdm\n    NAMES = ["torch.gather", "tqdm"]', "run_all",
       candidate=False, findings=0)

_SWALLOW = '''
    import asyncio
    {imports}
    async def pump(fast):
        try:
            await step()
        except {caught}:
            if fast:
                raise
            log.info("slow stop")
    '''


def swallow(name: str, caught: str, imports: str = "", candidate: bool = True, findings: int = 1) -> None:
    case("SHD104", name, candidate, findings, _SWALLOW.format(imports=imports, caught=caught))


swallow("asyncio.CancelledError", "asyncio.CancelledError")
swallow("BaseException", "BaseException")
swallow("from import as", "Stop", imports="from asyncio import CancelledError as Stop")
swallow("a name bound to it", "Stop", imports="Stop = asyncio.CancelledError")
swallow("a tuple", "(ValueError, asyncio.CancelledError)")
case("SHD104", "a bare except, a continuation before its colon", True, 1, '''
    async def pump():
        try:
            await step()
        except \\
                :
            log.info("stopped")
    ''')
case("SHD104", "async, a continuation, def", True, 1, '''
    import asyncio
    async \\
    def pump():
        try:
            await step()
        except asyncio.CancelledError:
            log.info("stopped")
    ''')
case("SHD104", "a byte order mark", True, 1,
     b"\xef\xbb\xbfasync def pump():\n    try:\n        await step()\n    except BaseException:\n        pass\n")
case("SHD104", "\\r line ends", True, 1,
     b"import asyncio\rasync def pump():\r    try:\r        await step()\r"
     b"    except asyncio.CancelledError:\r        pass\r")
case("SHD104", "async def in a message only", False, 0, '''
    import asyncio
    HINT = "make it an async def"
    def pump():
        try:
            step()
        except asyncio.CancelledError:
            pass
    ''')
case("SHD104", "CancelledError in a comment only", False, 0, '''
    async def pump():
        try:
            await step()
        except ValueError:  # not CancelledError
            pass
    ''')

_CANCEL = '''
    import asyncio

    class Trainer:
        {header}
            gen = asyncio.create_task(self.generate())
            await self.train_on(self.queue)
            {cancel}  # epoch over
            self.save_checkpoint()
    '''


def cancel(name: str, header: str = "async def run_epoch(self):", call: str = "gen.cancel()",
           candidate: bool = True, findings: int = 1) -> None:
    case("SHD105", name, candidate, findings, _CANCEL.format(header=header, cancel=call))


cancel("gen.cancel()")
cancel("a continuation inside", call="gen.\\\n                cancel()")
cancel("async, tab, def", header="async\tdef run_epoch(self):")
cancel("a decorator above", header="@traced\n        async def run_epoch(self):")
cancel("cancel only in a string", call='getattr(gen, "cancel")()', candidate=False, findings=0)

_DROP = '''
    import asyncio
    {imports}
    async def heartbeat(conn):
        while True:
            try:
                await conn.ping()
                await asyncio.sleep(5)
            except Exception:
                log.exception("heartbeat failed")

    async def start(conn):
        {spawn}(heartbeat(conn))  # keep pinging
    '''


def drop(name: str, spawner: str, imports: str = "", candidate: bool = True, findings: int = 1) -> None:
    case("SHD106", name, candidate, findings, _DROP.format(imports=imports, spawn=spawner))


drop("asyncio.create_task", "asyncio.create_task")
drop("from import as", "spawn", imports="from asyncio import ensure_future as spawn")
drop("a continuation", "asyncio.\\\n        create_task")

_BLOCK = '''
    import time
    {header}
        time.sleep(1)
    '''


def block(name: str, header: str, candidate: bool = True, findings: int = 1) -> None:
    case("SHD301", name, candidate, findings, _BLOCK.format(header=header))


block("async def", "async def step():")
block("a continuation", "async \\\n    def step():")
block("two spaces, a form feed", "\x0casync  def step():")
case("SHD301", "in a class", True, 1, """
import time
class C:
    async def step(self):
        time.sleep(1)
""")
case("SHD301", "a byte order mark", True, 1, b"\xef\xbb\xbfasync def step():\n    import time\n    time.sleep(1)\n")
case("SHD301", "\\r\\n line ends", True, 1, b"import time\r\nasync def step():\r\n    time.sleep(1)\r\n")
case("SHD301", "a lone \\r line end before it", True, 1, b"import time\rasync def step():\r    time.sleep(1)\r")
case("SHD301", "a message names it", False, 0, '''
    import time
    HINT = "define it with `async def` instead"
    def step():
        time.sleep(1)
    ''')
case("SHD301", "a table of keywords", False, 0, '''
    import ast, time
    KEYWORDS = {ast.AsyncFunctionDef: "async def"}
    def step():
        time.sleep(1)
    ''')


@pytest.mark.parametrize("code,name,source,candidate,findings", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_shape(code: str, name: str, source: bytes, candidate: bool, findings: int) -> None:
    """Tier 1 keeps every shape tier 2 keeps (and the rule reports in), and the tiers on find
    what the tiers off find."""
    assert _new(code).holds(FileText(source)) is candidate
    tree = ast_tree.parse(source)
    assert tree is not None and tree.exact_names
    if candidate:
        assert RULES[code].candidate_tree(tree)
    else:
        assert not (_structural(code, tree) and RULES[code].candidate_tree(tree))
    assert len(_tiers_agree(code, source)) == findings


# ---------------------------------------------------------------- mutants
class _Mutant(C.Cond):
    """``ASYNC_DEF`` read another way: ``line_start(src, k)`` on the offset after the indentation
    before ``async``, ``tail`` the regex after it."""

    def __init__(self, line_start, tail: bytes, indent: bytes = b" \t\f") -> None:
        self.line_start, self.tail, self.indent = line_start, re.compile(tail), indent

    def holds(self, text: FileText) -> bool:
        src = text.source
        for p in text.positions(b"async"):
            k = p
            while k > 0 and src[k - 1] in self.indent:
                k -= 1
            if self.line_start(src, k) and self.tail.match(src, p + 5):
                return True
        return False


_TAIL = rb"(?:\s|\\(?:\r\n|\r|\n))+def(?![A-Za-z0-9_])"
_LINE_START = (lambda src, k: k == 0 or src[k - 1] in b"\r\n" or (k == 3 and src.startswith(b"\xef\xbb\xbf")))


@pytest.mark.parametrize("mutant,code,name", [
    (_Mutant(_LINE_START, rb"[ \t]+def\b"), "SHD301", "a continuation"),  # no continuation
    (_Mutant(_LINE_START, rb" def\b"), "SHD105", "async, tab, def"),  # one space only
    (_Mutant(lambda src, k: k == 0 or src[k - 1] == 10, _TAIL), "SHD301", "a lone \\r line end before it"),
    (_Mutant(lambda src, k: k == 0 or src[k - 1] in b"\r\n", _TAIL), "SHD301", "a byte order mark"),
    # no indentation before it
    (_Mutant(lambda src, k: src[k:k + 5] == b"async" and (k == 0 or src[k - 1] in b"\r\n"), _TAIL), "SHD301", "in a class"),
    (_Mutant(_LINE_START, _TAIL, indent=b" \t"), "SHD301", "two spaces, a form feed"),  # no form feed
])
def test_async_def_mutant_loses_a_finding(mutant, code: str, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    source = next(c[2] for c in CASES if c[0] == code and c[1] == name)
    assert next(c[4] for c in CASES if c[0] == code and c[1] == name)
    assert RULES["SHD301"].candidate.holds(FileText(source))  # ``ASYNC_DEF``
    assert not mutant.holds(FileText(source)), name


class _RightAfterDot(C.Cond):
    """A mutant: ``word`` right after a ``.`` (no gap)."""

    def __init__(self, word: str) -> None:
        self.word = word.encode()

    def holds(self, text: FileText) -> bool:
        return any(p and text.source[p - 1] == 46 for p in text.positions(self.word))


@pytest.mark.parametrize("code,mutant,name", [
    # the callee's word as an attribute of the module only (no alias, no bare name)
    ("SHD101", C.InCode(C.WordThen("asyncio", C.gap() + r"\." + C.gap() + "gather")), "from import as"),
    # the word as a callee only (``gather(``)
    ("SHD101", C.InCode(C.WordThen("gather", C.gap() + r"\(")), "a name bound to it"),
    # the word read on one line only
    ("SHD101", C.InCode(C.WordThen("asyncio", r"\.gather")), "a backslash continuation"),
    ("SHD104", C.InCode(C.WordThen("except", r"\s*:")), "a bare except, a continuation before its colon"),
    ("SHD104", C.InCode(C.WordThen("except", r"[ \t]*(?:asyncio\.)?(?:CancelledError|BaseException)")),
     "from import as"),
    ("SHD105", C.InCode(_RightAfterDot("cancel")), "a continuation inside"),
])
def test_word_mutant_loses_a_finding(code: str, mutant: C.Cond, name: str) -> None:
    """The part of the condition a mutant replaces rules out a case with a finding: each shape
    above is needed."""
    source = next(c[2] for c in CASES if c[0] == code and c[1] == name)
    assert next(c[4] for c in CASES if c[0] == code and c[1] == name)
    assert _new(code).holds(FileText(source))
    assert not mutant.holds(FileText(source)), name


def test_conditions_read_code() -> None:
    """Every new condition but SHD301's reads code (checked there when every rule still in does);
    SHD301's reads the text only: it is in nearly every file with an ``async def``, whose code
    views would cost more than the parses they save."""
    assert all(_new(code).reads_code for code in CODES if code != "SHD301")
    assert not _new("SHD301").reads_code
