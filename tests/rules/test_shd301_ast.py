"""SHD301 on ``ast`` (``_Ast``, issue 30 session 9) reports exactly what the libcst rule reports.

Every snippet is linted twice, gate on (``analyzer.AST_MODE``: the ``ast`` check) and off (the
libcst rule), with the candidate tiers passing every file through (so the check also runs where
tier 2 would rule the rule out), and the two ``FileResult``s must be equal: the diagnostics field
by field (position, message, fix presence, applicability and message; the edits are the libcst
path's alone), the warnings, the error and the dependencies. The snippets are near misses where the
two trees differ: awaited or handed-over calls, lambdas, comprehensions, ``with`` items, nested
defs and their decorators and defaults, string annotations, parentheses libcst gives a node (in
the messages and in the code the rule compares), ``a; b`` lines (libcst's one statement), literals
read from their text (``0x0``), keyword arguments named like a variable (a libcst ``Name``),
non-ASCII text before a finding (``ast`` counts UTF-8 bytes).
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, lint_source
from shutdown_lint.settings import Settings

from ast_both_ways import every_file_a_candidate

HEAD = ("import asyncio, functools, io, os, queue, threading, time, typing\n"
        "from typing import IO, Optional, Union\nfrom pathlib import Path\n"
        "import concurrent.futures\nimport httpx, ray, requests, torch\n")

CASES = {
    # --- awaited, handed over, lambdas
    "awaited-or-not": """
        async def main(p):
            await asyncio.to_thread(time.sleep, 1)
            await (asyncio.sleep(1))
            time.sleep(1)
            asyncio.create_task(coro=torch.save(p, p))
            asyncio.gather(*[requests.get(u) for u in p])
            print(*ray.get(p))
        """,
    "lambdas": """
        async def main(loop, p):
            await loop.run_in_executor(None, lambda: time.sleep(1))
            f = lambda x=time.sleep(2): x
            g = lambda: [open(q) for q in p]
        """,
    # --- comprehensions: flagged, no fix; iterating over a file in one
    "comprehensions": """
        async def main(paths, fh: io.TextIOWrapper):
            a = [torch.load(p) for p in paths]
            b = {k: open(k) for k in paths}
            c = sum(os.path.getsize(p) for p in paths)
            d = [line for line in fh]
            e = [x async for x in fh]
            for line in fh:
                pass
            async for line in fh:
                pass
        """,
    # --- with items and open blocks
    "with-items": """
        async def main(u, p):
            with requests.get(u) as r:
                r.json()
            with open(p) as f:
                requests.get(u)
                time.sleep(1)
            with (open(p) as f, open(u) as g):
                g.write(f.read())
            async with make(open(p)) as h:
                time.sleep(1)
        """,
    # --- nested defs, their decorators and defaults, a class in a coroutine
    "nested-defs": """
        def retry(x):
            return lambda f: f
        async def main(p):
            def work():
                time.sleep(1)
            @retry(time.sleep(2))
            async def inner(x=time.sleep(3)):
                time.sleep(4)
            @functools.lru_cache(os.cpu_count())
            def cached():
                pass
            class C:
                t = time.sleep(5)
                def m(self):
                    open(p)
            work()
            await inner()
        """,
    # --- same-module chains (the message names callees and lines)
    "chains": """
        def leaf(p):
            return subprocess_free(p) or open(p)
        def mid(p):
            leaf(p)
        class Store:
            def save(self, s):
                torch.save(s, self.path)
            async def run(self, s):
                (self.save)(s)
                ( self . save )(s)
                self.save(s)
        async def main(p):
            mid(p)
            (mid)(p)
            functools.partial(mid, p)()
        """,
    # --- string annotations and declared types
    "annotations": """
        async def main(a: "io.TextIOWrapper", b: Optional["IO[str]"], c: "Union[(IO, IO)]",
                       d: Union[(IO, IO)], e: "io." "TextIOWrapper", f: typing.Annotated[(IO, 1)],
                       g: "IO | None", h: 'Optional["io.TextIOWrapper"]'):
            a.read(); b.read(); c.read(); d.read(); e.read(); f.read(); g.read(); h.read()
        """,
    "declared-values": """
        class W(threading.Thread):
            pass
        class Client:
            def __init__(self):
                self.c = httpx.Client()
                self.q: queue.Queue = make()
            async def run(self, u, x):
                self.c.get(u)
                self.q.get()
                p = Path(x) if x else None
                p.exists()
                s = Path(x) if x else "None"
                s.exists()
                t = Path(x) if x else "No" "ne"
                t.exists()
                w = W()
                w.join()
                (p / "a").mkdir()
                p.parent.exists()
        """,
    "return-annotations": """
        def open_client() -> httpx.Client:
            return httpx.Client()
        async def make() -> "httpx.Client":
            return httpx.Client()
        async def main(u):
            open_client().get(u)
            c = await make()
            c.get(u)
            d = make()
            d.get(u)
        """,
    # --- non-ASCII text before the findings and on their lines
    "non-ascii": """
        async def main(u):
            x = "héllo wörld"; time.sleep(1)
            print("日本語テキスト"); requests.get(u, headers={"ü": "é"})
            # ça bloque
            requests.post(u)
        """,
    # --- ``a; b``: libcst's statement is the whole line
    "semicolons": """
        async def main(ref, other):
            ready, _ = ray.wait([ref], timeout=0); ray.get(ref)
            x = 1; ray.get(other)
            if ray.wait([other], timeout=0)[0]: ray.get(other)
        async def two(ref):
            ray.wait([ref], timeout=0)
            ray.get(ref)
        async def three(ref, a):
            ray.wait([a], timeout=0)
            ray.get(ref)
        """,
    # --- polls and literals read from their text
    "polls": """
        async def main(q: queue.Queue, lock: threading.Lock, ev: threading.Event, pid):
            q.get(False)
            q.get(True, 0)
            q.get(timeout=0x0)
            q.get(timeout=0.0)
            q.get(timeout=0_0)
            q.get(timeout=(0))
            q.get(0)
            q.get(block=0)
            q.get(block=00)
            lock.acquire(0)
            lock.acquire(blocking=False)
            ev.wait(0)
            ev.wait(-0)
            os.waitpid(pid, os.WNOHANG)
            os.waitpid(pid, WNOHANG)
            os.waitpid(pid, 0)
            ray.get(pid, timeout=0)
            ray.wait(pid, timeout=0j)
        """,
    "queues": """
        async def main(x):
            a = queue.Queue()
            a.put(x)
            b = queue.Queue(maxsize=0x0)
            b.put(x)
            c = queue.Queue(0)
            c.put(x)
            d = queue.Queue(*x)
            d.put(x)
            e = queue.Queue(3)
            e.put(x)
            f = queue.Queue(maxsize=0.0)
            f.put(x)
            if not a.empty():
                a.get()
            if not ( a ).empty():
                a.get()
            while a.qsize():
                (a).get()
        """,
    # --- generators consumed here or not (a keyword argument named like the variable is a libcst Name)
    "lazy": """
        async def main(p):
            for e in os.scandir(p):
                pass
            list(os.walk(p))
            gen = os.walk(p)
            next(gen)
            it = os.scandir(p)
            list(it=0)
            other = Path(p).iterdir()
            await asyncio.to_thread(list, other)
            sorted(enumerate(Path(p).glob("*")))
            kept = Path(p).rglob("*")
            use = lambda: list(kept)
        """,
    # --- futures
    "futures": """
        async def main(pool: concurrent.futures.ThreadPoolExecutor):
            a = pool.submit(print)
            a.result()
            b = pool.submit(print)
            if b.done():
                b.result()
            c = pool.submit(print)
            concurrent.futures.wait([c])
            c.result()
            d = pool.submit(print)
            (d).result()
        """,
    # --- markers on the call's line (flake8-async/ruff codes of the family)
    "markers": """
        async def main(u):
            time.sleep(1)  # noqa: ASYNC251
            time.sleep(
                1)  # noqa: ASYNC251
            requests.get(u)  # type: ignore[ASYNC210]
            requests.get(u)  # noqa: ASYNC251
            s = "# noqa: ASYNC251"; time.sleep(2)
        """,
    # --- iterating over a file object, parenthesised as libcst keeps it
    "iteration": """
        async def main(p, fh: io.TextIOWrapper):
            for line in (fh):
                pass
            for line in ( # a comment (with parentheses)
                    fh ):
                pass
            for (line) in(fh):
                pass
            for line in open(p):
                pass
            for line in fh.readlines():
                pass
            xs = [(line) for (line) in (fh)]
            proc = subprocess_popen(p)
        """,
    # --- rebinding a name between a value and its use (libcst counts every Name)
    "rebinding": """
        async def main(p):
            fh = open(p)
            def fh():
                pass
            fh.read()
        async def other(p):
            fh = open(p)
            try:
                pass
            except OSError as fh:
                fh.read()
        async def third(p):
            path = Path(p)
            from os import path
            path.exists()
        async def fourth(p):
            f = open(p)
            f.read()
            f = 3
        """,
    "rebinding-near-misses": """
        def retry(x):
            return lambda f: f
        async def main(p, x):
            fh = open(p)
            @retry(fh)
            def fh():
                pass
            fh.read()
        async def other(p, x):
            f = open(p)
            with x.f(f.read()) as f:
                pass
            g = open(p)
            import g
            g.read()
            h = open(p)
            for h in (h.read(),):
                pass
            k = open(p)
            class k:
                pass
            k.read()
        """,
    # --- code written over several lines (libcst's text drops the block's indentation inside brackets)
    "multi-line": """
        async def main(x, fh: io.TextIOWrapper):
            if x:
                Path(
                    x,
                ).exists()
                Path(x) \\
                    .exists()
                Path('''a
                    b''').exists()
                (Path(x)
                    # a comment
                    .parent).exists()
            for line in (
                fh
            ):
                pass
            print("a"
                  "b".format(1), Path("a"
                                      "b").exists())
        """,
    # --- classes of the module standing for a known base, starred bases
    "bases": """
        bases = (threading.Thread,)
        class A(*bases):
            pass
        class B(threading.Thread, metaclass=type):
            pass
        async def main():
            A().join()
            B().join()
        """,
}

#: fix library: the module's imports decide what the fix writes (asyncio, anyio, trio)
LIBRARIES = {
    "asyncio-alias": "import asyncio as aio\nimport time\nasync def f():\n    time.sleep(1)\n    open('x').read()\n",
    "trio": "import time, trio\nasync def f():\n    time.sleep(1)\n    print(open('x'))\n    g(1)\ndef g(x):\n    time.sleep(x)\n",
    "anyio-from": "from anyio import to_thread\nimport time\nasync def f():\n    time.sleep(1)\n    h()\ndef h():\n    os.system('x')\n",
    "anyio-guarded": "import time\nif True:\n    import anyio\nasync def f():\n    time.sleep(1)\n",
    "anyio-relative": "from .anyio import x\nimport time\nasync def f():\n    time.sleep(1)\n",
}


_every_file_a_candidate = every_file_a_candidate


def _rows(result) -> tuple:
    return (result.error, result.warnings, result.deps,
            [{**d.to_dict(), "fix": d.to_dict()["fix"] and {**d.to_dict()["fix"], "edits": []}}
             for d in result.diagnostics])


def _both(source: str, monkeypatch, options=None):
    settings = Settings(selected=("SHD301",), target_version="py312",
                        rule_options={"SHD301": options} if options else {})
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    on = lint_source(source.encode(), "snippet.py", settings, fix_edits=False)
    monkeypatch.setattr(analyzer, "AST_MODE", "off")
    off = lint_source(source.encode(), "snippet.py", settings, fix_edits=False)
    return on, off


@pytest.mark.parametrize("code", list(CASES.values()), ids=list(CASES))
def test_ast_check_equals_the_libcst_rule(code, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    on, off = _both(HEAD + textwrap.dedent(code), monkeypatch)
    assert on.stage == STAGE_AST
    assert _rows(on) == _rows(off)


@pytest.mark.parametrize("code", list(LIBRARIES.values()), ids=list(LIBRARIES))
def test_fix_plans_name_the_same_library(code, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    on, off = _both(code, monkeypatch)
    assert on.stage == STAGE_AST and on.diagnostics
    assert _rows(on) == _rows(off)


@pytest.mark.parametrize("options", [
    {"allowed-calls": ["builtins.open", ".read"]},
    {"extra-blocking-calls": ["mylib.upload", ".flush_to_disk"], "max-depth": 0},
    {"blocking-families": ["files", "waits"], "max-depth": 1},
])
def test_options_are_read_the_same(options, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    code = HEAD + "import mylib\n" + textwrap.dedent(CASES["chains"] + CASES["comprehensions"] + """
        async def up(blob, fh: io.TextIOWrapper, q: queue.Queue):
            mylib.upload(blob)
            blob.flush_to_disk()
            fh.read()
            q.get()
        """)
    on, off = _both(code, monkeypatch, options)
    assert on.stage == STAGE_AST and on.diagnostics
    assert _rows(on) == _rows(off)


def test_the_cases_cover_both_answers(monkeypatch):
    """Not vacuous: findings with and without a fix, messages naming callees and lines, findings
    on lines after non-ASCII text, and the chosen near misses left unreported."""
    _every_file_a_candidate(monkeypatch)
    fixes, messages = set(), []
    for code in CASES.values():
        on, _ = _both(HEAD + textwrap.dedent(code), monkeypatch)
        fixes |= {d.fix is not None for d in on.diagnostics}
        messages += [d.message for d in on.diagnostics]
    assert fixes == {True, False}
    assert any("`(self.save)()` blocks the event loop: it calls `torch.save()` (line" in m for m in messages)
    assert any("iterating over the file object `( # a comment (with parentheses)" in m for m in messages)
    assert len(messages) >= 60


def test_columns_after_non_ascii_text_are_characters(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    on, off = _both(HEAD + textwrap.dedent(CASES["non-ascii"]), monkeypatch)
    sleep = next(d for d in on.diagnostics if "time.sleep" in d.message)
    assert sleep.column == len('    x = "héllo wörld"; ') + 1
    assert _rows(on) == _rows(off)


def test_crlf_text_over_several_lines(monkeypatch):
    """A module with ``\\r\\n`` line endings: libcst's code of a node over several lines writes
    ``\\n`` where the module's own newline ends a line inside brackets, not in a string."""
    _every_file_a_candidate(monkeypatch)
    code = (HEAD + textwrap.dedent(CASES["multi-line"])).replace("\n", "\r\n")
    on, off = _both(code, monkeypatch)
    assert on.stage == STAGE_AST and any("`Path(\n    x,\n).exists()`" in d.message for d in on.diagnostics)
    assert _rows(on) == _rows(off)


DRIVER = """
import asyncio, ray

async def main(refs):
    ray.get(refs)
    ready, _ = ray.wait(refs)
    try:
        ray.get(refs)
    except KeyboardInterrupt:
        ray.cancel(refs)
    return ready

if __name__ == "__main__":
    ray.init()
    asyncio.run(main([]))
"""


@pytest.mark.parametrize("every_file", [True, False], ids=["every-file-a-candidate", "tiers"])
def test_ray_calls_left_to_shd403_the_same_way(every_file, monkeypatch):
    """SHD301 leaves the driver's ``ray.get``/``ray.wait`` in a coroutine to SHD403 when SHD403 is
    selected (``_left_to_shd403``): the same on both engines, whether SHD403 detects on ``ast`` or
    keeps the file on libcst."""
    if every_file:
        _every_file_a_candidate(monkeypatch)
    settings = Settings(selected=("SHD301", "SHD403"), target_version="py312")
    results = []
    for mode in ("on", "off"):
        monkeypatch.setattr(analyzer, "AST_MODE", mode)
        results.append(lint_source(DRIVER.encode(), "driver.py", settings, fix_edits=False))
    on, off = results
    assert _rows(on) == _rows(off)
    assert {d.code for d in off.diagnostics} == {"SHD403"}
