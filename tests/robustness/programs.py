"""Generated programs and the properties every run of the engine must keep.

Used by the bounded CI fuzzing in this directory and by ``bench/fuzz_long.py``.

Programs are built from *hazards* (every rule's invalid examples, split into whole
modules and single statements, plus a hand-written pool) put into random *contexts*
(nested functions, classes, decorators, comprehensions, lambdas, match, walrus, async
generators, ``async with``/``async for``, f-strings, annotations, line continuations),
then *decorated*: comments at every possible place, odd whitespace, CRLF, tabs, a BOM.

``check(source)`` runs lint and ``--fix --unsafe-fixes`` and returns the list of broken
properties (empty when all hold) plus counters.
"""

from __future__ import annotations

import ast
import io
import textwrap
import tokenize
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache

import libcst as cst
from hypothesis import assume
from hypothesis import strategies as st

from shutdown_lint import registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

ALL_CODES = tuple(r.code for r in registry.all_rules())
#: every rule on every file: the pre-filter must not hide a crash in a rule
SETTINGS = Settings(selected=ALL_CODES, target_version="py312", prefilter=False)
SETTINGS_PY310 = Settings(selected=ALL_CODES, target_version="py310", prefilter=False)
#: what the command line runs: the text pre-filter and the candidate stage must lose nothing
SETTINGS_FILTERED = Settings(selected=ALL_CODES, target_version="py312", prefilter=True)

# ---------------------------------------------------------------------------- hazards

IMPORT_LINES = (
    "import asyncio", "import asyncio as aio", "from asyncio import gather, create_task, TaskGroup",
    "import sys", "from sys import exit as die", "import os", "import signal", "import threading",
    "import time", "import ray", "import ray as r", "from ray import get as ray_get",
    "import torch.distributed as dist", "import torch", "import concurrent.futures as cf",
    "from concurrent.futures import ThreadPoolExecutor, ProcessPoolExecutor", "import subprocess",
    "import requests", "import multiprocessing as mp", "import anyio", "import uvloop",
    "from functools import partial", "import atexit", "import logging",
)

HAND_STATEMENTS = (
    "sys.exit(1)", "die(2)", "raise SystemExit(3)", "quit()", "exit(0)", "os._exit(1)",
    "time.sleep(5)", "requests.get(url, timeout=3)", "subprocess.run(['ls'], check=True)",
    "open(path).read()", "ray.get(refs)", "ray_get([f.remote() for f in fs])", "r.get(ref, timeout=None)",
    "ray.wait(refs, num_returns=1)", "asyncio.create_task(work())", "aio.ensure_future(work())",
    "create_task(self.work())", "await asyncio.gather(*tasks)", "await gather(a(), b())",
    "await aio.gather(*[work(i) for i in range(3)], return_exceptions=True)",
    "loop = asyncio.get_event_loop()", "loop.run_until_complete(main())", "asyncio.run(main())",
    "aio.run(self.main())", "threading.Thread(target=pump, daemon=True).start()",
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)", "signal.signal(signal.SIGINT, handler)",
    "loop.add_signal_handler(signal.SIGTERM, stop)", "dist.init_process_group('gloo')",
    "torch.distributed.destroy_process_group()", "pool = ThreadPoolExecutor(4)",
    "ex = cf.ProcessPoolExecutor()", "ex.submit(save, path)", "await asyncio.to_thread(save, path)",
    "await loop.run_in_executor(None, partial(save, path))", "task.cancel()", "t.cancel(); await t",
    "atexit.register(cleanup)", "logging.info('done')", "actor = Actor.remote()",
    "ray.kill(actor)", "ray.cancel(ref, force=True)", "raise", "pass", "return",
)

# A few whole modules that exercise interplay (two rules' fixes in one function).
HAND_MODULES = (
    """
    import asyncio, sys, time

    async def worker(q):
        while True:
            item = await q.get()
            time.sleep(0.1)  # blocking
            if item is None:
                sys.exit(1)

    async def main():
        q = asyncio.Queue()
        asyncio.create_task(worker(q))
        await asyncio.gather(worker(q), worker(q))

    if __name__ == "__main__":
        asyncio.run(main())
    """,
    """
    import ray, signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)

    @ray.remote
    class Actor:
        async def run(self):
            try:
                await self.step()
            except BaseException:
                pass

    def main():
        ray.init()
        a = Actor.remote()
        print(ray.get(a.run.remote()))
    """,
)


def _statements_of(code: str) -> list[str]:
    """Simple statements inside function bodies of ``code`` (dedented source text)."""
    try:
        module = cst.parse_module(code)
    except cst.ParserSyntaxError:
        return []
    out: list[str] = []

    class V(cst.CSTVisitor):
        depth = 0

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.depth += 1

        def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
            self.depth -= 1

        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            if self.depth:
                text = module.code_for_node(node.with_changes(leading_lines=())).strip()
                if text and "\n" not in text:
                    out.append(text)

    module.visit(V())
    return out


@lru_cache(maxsize=1)
def rule_examples() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(whole invalid-example modules, statements taken from them), for every rule."""
    modules: list[str] = []
    statements: list[str] = []
    for rule in registry.all_rules():
        for inv in rule.invalid:
            modules.append(inv.code)
            statements.extend(_statements_of(inv.code))
    return tuple(modules), tuple(dict.fromkeys(statements))


def hazard_statements() -> tuple[str, ...]:
    return tuple(dict.fromkeys((*rule_examples()[1], *HAND_STATEMENTS)))


def hazard_modules() -> tuple[str, ...]:
    return (*rule_examples()[0], *(textwrap.dedent(m).strip("\n") + "\n" for m in HAND_MODULES))


# ---------------------------------------------------------------------------- contexts

_EXPR_CALLS = (
    "sys.exit(1)", "die(2)", "ray.get(ref)", "ray_get(refs)", "asyncio.create_task(work())",
    "aio.ensure_future(self.work())", "time.sleep(1)", "gather(a(), b())", "loop.run_until_complete(main())",
    "asyncio.run(main())", "threading.Thread(target=pump)", "ex.submit(save, path)", "quit()",
)

# Expression contexts: ``{e}`` is a hazard call expression.
EXPR_CONTEXTS = (
    "[{e} for _ in range(2)]", "lambda: {e}", "(y := {e})", "f'{{{e}!r:>10}}'", "{e} if cond else None",
    "g({e}, key={e})", "{{k: {e} for k in ks if k}}", "({e},)", "(\n    {e}  # inside parens\n)",
    "not {e}", "print(*[{e}], sep='')", "[*map(lambda x: {e}, xs)]", "{e}.result()",
)
ASYNC_EXPR_CONTEXTS = ("await {e}", "[await x async for x in {e}]", "await (yield_ := {e})")

# Block contexts: ``{body}`` is an indented block (already indented by 4).
BLOCKS = (
    "def f{n}(a, *args, b: 'int' = 1, **kw) -> None:\n{body}",
    "def g{n}():\n    def inner{n}():\n{body2}\n    return inner{n}",
    "class C{n}(Base, metaclass=Meta):\n    attr: int = 0\n    def m{n}(self):\n{body2}",
    "@decorator\n@functools.wraps(f)\ndef d{n}(x):\n{body}",
    "@ray.remote(num_cpus=1)\ndef remote{n}(x):\n{body}",
    "@ray.remote\nclass Actor{n}:\n    async def run(self):\n{abody2}\n    def sync(self):\n{body2}",
    "async def af{n}(self):\n{abody}",
    "async def agen{n}():\n{abody}\n    yield 1",
    "async def aw{n}():\n    async with lock as l, other():\n{abody2}\n    async for x in stream():\n{abody2}",
    "if __name__ == '__main__':\n{body}",
    "try:\n{body}\nexcept (ValueError, KeyboardInterrupt) as e:\n{body}\nelse:\n    pass\nfinally:\n{body}",
    "try:\n{body}\nexcept* OSError:\n{body}",
    "match command.split():\n    case [action, *rest] if (n := len(rest)) > 1:\n{body2}\n    case {{'k': v, **kw}}:\n{body2}\n    case Point(x=0) | None:\n{body2}\n    case _:\n{body2}",
    "for i in range(3):\n{body}\nelse:\n{body}",
    "while (chunk := read()):\n{body}",
    "with open(p) as fh, \\\n        lock:\n{body}",
    "x = \\\n    1\nif x:\n{body}",
    "def threaded{n}():\n{body}\nthreading.Thread(target=threaded{n}).start()",
    "async def spawned{n}():\n{abody}\nasyncio.create_task(spawned{n}())",
    "def submitted{n}():\n{body}\nasync def runner{n}():\n    await asyncio.to_thread(submitted{n})",
)


def _indent(text: str, level: int) -> str:
    return textwrap.indent(text, "    " * level, lambda line: True)


@st.composite
def _expr(draw) -> str:
    call = draw(st.sampled_from(_EXPR_CALLS))
    return draw(st.sampled_from(EXPR_CONTEXTS)).format(e=call)


@st.composite
def _simple(draw, is_async: bool) -> str:
    """One statement line: a hazard statement, or a hazard expression in a context."""
    choice = draw(st.integers(0, 5))
    if choice <= 2:
        stmt = draw(st.sampled_from(hazard_statements()))
        if not is_async and "await " in stmt:
            stmt = stmt.replace("await ", "")
        return stmt
    if choice == 3 and is_async:
        call = draw(st.sampled_from(_EXPR_CALLS))
        return draw(st.sampled_from(ASYNC_EXPR_CONTEXTS)).format(e=call)
    target = draw(st.sampled_from(("", "v = ", "v: Annotated[int, 'm'] = ", "self.v = ", "yield_ = ")))
    return target + draw(_expr())


@st.composite
def _block(draw, depth: int, is_async: bool) -> str:
    """A block body (not indented) of 1..3 items; items may be nested blocks."""
    items = []
    for _ in range(draw(st.integers(1, 3))):
        if depth > 0 and draw(st.booleans()):
            items.append(draw(_compound(depth - 1, is_async)))
        else:
            items.append(draw(_simple(is_async)))
    return "\n".join(items)


@st.composite
def _compound(draw, depth: int, is_async: bool) -> str:
    template = draw(st.sampled_from(BLOCKS))
    n = draw(st.integers(0, 99))
    # async-only constructs need an async body; the sync blocks inherit the caller's flavour
    defines_async = template.startswith(("async def", "@ray.remote\nclass"))
    defines_sync = template.startswith(("def", "@", "class")) and not defines_async
    inner_async = is_async and not defines_sync
    body = draw(_block(depth, inner_async))
    abody = draw(_block(depth, True))
    return template.format(
        n=n, body=_indent(body, 1), body2=_indent(body, 2), abody=_indent(abody, 1), abody2=_indent(abody, 2)
    )


@st.composite
def synthetic_module(draw, max_depth: int = 3) -> str:
    imports = draw(st.lists(st.sampled_from(IMPORT_LINES), min_size=1, max_size=8, unique=True))
    doc = draw(st.sampled_from(("", '"""Module docstring."""\n', "# leading comment\n", "from __future__ import annotations\n")))
    items = [draw(_compound(max_depth, False)) for _ in range(draw(st.integers(1, 4)))]
    return doc + "\n".join(imports) + "\n\n" + "\n\n".join(items) + "\n"


@st.composite
def wrapped_example(draw) -> str:
    """A rule's invalid example (or a hand-written module), as is or nested in a context."""
    code = draw(st.sampled_from(hazard_modules()))
    wrapper = draw(st.sampled_from((None, None, "if True:\n", "class Wrapper:\n", "def outer():\n",
                                    "async def outer():\n", "try:\n")))
    if wrapper is None:
        return code
    if "from __future__" in code:
        return code
    tail = "\nexcept Exception:\n    pass\n" if wrapper == "try:\n" else ""
    return wrapper + _indent(code, 1) + tail


# ---------------------------------------------------------------------------- decoration


def _newline_positions(text: str) -> list[tuple[int, int, bool]]:
    """(line, col, has_comment) of every NEWLINE/NL token: the places a trailing comment fits."""
    out = []
    commented = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                commented.add(tok.start[0])
            elif tok.type in (tokenize.NEWLINE, tokenize.NL) and tok.string:
                out.append((tok.start[0], tok.start[1], tok.start[0] in commented))
    except (tokenize.TokenError, SyntaxError):
        return []
    return out


@st.composite
def decorate(draw, code: str) -> str:
    """Comments wherever they fit, odd whitespace, CRLF/tabs/BOM; the program stays valid."""
    lines = code.split("\n")
    positions = _newline_positions(code)
    counter = 0
    # trailing comments (and trailing whitespace) at the end of logical and non-logical lines
    for line_no, col, has_comment in sorted(positions, reverse=True):
        if has_comment or not draw(st.integers(0, 3)) == 0:
            continue
        counter += 1
        row = lines[line_no - 1]
        pad = draw(st.sampled_from(("  ", " ", "\t", "   ")))
        text = draw(st.sampled_from(("# c{}", "#c{}", "# type: ignore  # c{}", "# noqa: E501 c{}", "#: c{} ü")))
        lines[line_no - 1] = row[:col] + pad + text.format(counter) + row[col:]
    # own-line comments and blank lines between lines (never after a backslash continuation)
    out = []
    for i, row in enumerate(lines):
        prev = out[-1] if out else ""
        if not prev.rstrip().endswith("\\") and draw(st.integers(0, 6)) == 0:
            counter += 1
            indent = draw(st.sampled_from(("", "    ", "        ", "  ")))
            out.append(draw(st.sampled_from((f"{indent}# own {counter}", "", "    ", f"{indent}#"))))
        out.append(row)
    text = "\n".join(out)
    if draw(st.integers(0, 4)) == 0:
        text = text.replace("    ", "\t")  # tabs for indentation (and inside strings: still valid)
    if draw(st.integers(0, 5)) == 0:
        text = "\n\n  # leading\n" + text
    if draw(st.booleans()) and not text.endswith("\n\n"):
        text = text.rstrip("\n") if draw(st.booleans()) else text + "\n\n"
    newline = draw(st.sampled_from(("\n", "\n", "\n", "\r\n", "\r")))
    if newline != "\n":
        text = text.replace("\n", newline)
    return text


@st.composite
def encoded(draw, text: str) -> bytes:
    kind = draw(st.sampled_from(("utf8", "utf8", "utf8", "bom", "latin1")))
    if kind == "bom":
        return b"\xef\xbb\xbf" + text.encode("utf-8")
    if kind == "latin1":
        try:
            return ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1")
        except UnicodeEncodeError:
            return text.encode("utf-8")
    return text.encode("utf-8")


def is_valid_python(data: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "<fuzz>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    try:
        cst.parse_module(data)
    except Exception:
        return False
    return True


@st.composite
def hazard_program(draw) -> bytes:
    """A valid program with hazards in random contexts, decorated. Invalid draws are discarded."""
    code = draw(st.one_of(wrapped_example(), synthetic_module()))
    data = draw(encoded(draw(decorate(code))))
    assume(is_valid_python(data))
    return data


# ---------------------------------------------------------------------------- properties


def comments(data: bytes) -> Counter:
    """Multiset of comment texts (tokenize, so ``#`` in strings does not count)."""
    out: Counter = Counter()
    # Python treats a lone CR as a newline, but BytesIO.readline does not split on it: without
    # this, a CR-only file is one line and its first comment runs to the end of the file
    data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    try:
        for tok in tokenize.tokenize(io.BytesIO(data).readline):
            if tok.type == tokenize.COMMENT:
                out[tok.string.rstrip()] += 1
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


@dataclass
class Report:
    crashes: list[str] = field(default_factory=list)  # analyzer or fixer raised
    analysis_errors: list[str] = field(default_factory=list)  # error diagnostic on a valid program
    unparsable: list[str] = field(default_factory=list)
    lost_comments: list[str] = field(default_factory=list)
    not_idempotent: list[str] = field(default_factory=list)
    findings_left: list[str] = field(default_factory=list)  # a claimed fix did not remove its finding
    prefilter_lost: list[str] = field(default_factory=list)  # the pre-filter hid a finding
    findings: int = 0
    fixes_applied: int = 0
    fixes_skipped: int = 0

    @property
    def problems(self) -> list[str]:
        return [*self.crashes, *self.analysis_errors, *self.unparsable, *self.lost_comments,
                *self.not_idempotent, *self.findings_left, *self.prefilter_lost]


def _fixable(result, unsafe: bool = True) -> int:
    return sum(1 for d in result.diagnostics if d.fix and (unsafe or d.fix["applicability"] == "safe"))


def check(data: bytes, settings: Settings = SETTINGS, *, expect_parse: bool = True) -> Report:
    """Lint and fix ``data`` and record every broken property.

    ``expect_parse``: the input is valid Python, so an analysis error is a bug; for
    arbitrary input (hypothesmith's grammar strategy may produce code CPython rejects)
    a one-line error is the right answer and only exceptions count.
    """
    rep = Report()
    try:
        before = lint_source(data, "fuzz.py", settings)
    except Exception:
        rep.crashes.append("lint_source raised:\n" + traceback.format_exc())
        return rep
    if before.error is not None:
        if "\n" in before.error:
            rep.crashes.append(f"multi-line error diagnostic: {before.error!r}")
        if expect_parse:
            rep.analysis_errors.append(f"analysis error on valid input: {before.error}")
        return rep
    rep.findings = len(before.diagnostics)
    if settings.selected == SETTINGS.selected and not settings.prefilter:
        try:
            filtered = lint_source(data, "fuzz.py", SETTINGS_FILTERED)
        except Exception:
            rep.crashes.append("lint_source (pre-filter on) raised:\n" + traceback.format_exc())
            return rep
        key = lambda d: (d.line, d.column, d.code)  # noqa: E731
        lost = sorted(set(map(key, before.diagnostics)) - set(map(key, filtered.diagnostics)))
        if lost and settings.target_version == SETTINGS_FILTERED.target_version:
            rep.prefilter_lost.append(f"findings hidden by the pre-filter/candidate stage: {lost}")
    try:
        outcome = fix_source(data, "fuzz.py", settings, unsafe=True)
    except Exception:
        rep.crashes.append("fix_source raised:\n" + traceback.format_exc())
        return rep
    fixed = outcome.source
    rep.fixes_applied = outcome.applied
    rep.fixes_skipped = len(outcome.warnings)
    if fixed == data:
        return rep
    if not is_valid_python(fixed):
        rep.unparsable.append("fixed output does not parse:\n" + fixed.decode("utf-8", "replace"))
        return rep
    lost = comments(data) - comments(fixed)
    if lost:
        rep.lost_comments.append(f"comments lost by the fix: {sorted(lost)}")
    try:
        again = fix_source(fixed, "fuzz.py", settings, unsafe=True)
    except Exception:
        rep.crashes.append("second fix_source raised:\n" + traceback.format_exc())
        return rep
    if again.source != fixed:
        rep.not_idempotent.append(
            "second --fix changed the file:\n" + fixed.decode("utf-8", "replace")
            + "\n--- became\n" + again.source.decode("utf-8", "replace"))
    try:
        after = lint_source(fixed, "fuzz.py", settings)
    except Exception:
        rep.crashes.append("lint_source raised on the fixed file:\n" + traceback.format_exc())
        return rep
    # every fixable finding left must be one the fixer reported as skipped
    if _fixable(after) > len(again.warnings):
        left = [f"{d.line}: {d.code} {d.message}" for d in after.diagnostics if d.fix]
        rep.findings_left.append(f"fixable findings left after --fix without a skip warning: {left}")
    return rep
