"""SHD404 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ: the
class name's span (no ``ast`` node: read after ``class``, spaces, tabs and backslash continuations,
non-ASCII names in characters, ``\\r\\n`` and ``\\r`` line ends), what owns a resource (``try``'s
``finally`` but not ``try*``'s, ``except`` of ``CancelledError``/``BaseException`` but not
``except*``, ``async with`` items, resource and cleanup calls, nested defs), SIGTERM handled
(``signal.signal``'s first argument as libcst's ``args[0]``: a keyword, ``*a``, parentheses and
comments), the setup hook (a dict key that is one string, not joined strings nor an f-string; a
keyword), bases (``*b``), the runner's text in the threaded message (owned parentheses, lines),
and the fix's presence (a body on its header's line, also after a backslash; an async ``__init__``).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer: with every file a
candidate (the ast path asserted taken) and with the candidate tiers.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, lint_source
from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate, key

_SETTINGS = Settings(selected=("SHD404",), target_version="py311")

NO = None  # no finding
CALL = "call"  # the fix adds the call to __init__
ADD = "add"  # the fix adds an __init__
NONE = "none"  # a finding without a fix

HEAD = "import asyncio, signal\nimport ray\n"  # the cases start on line 3

OWNS = """
            async def run(self):
                try:
                    await work()
                finally:
                    await cleanup()
"""

CASES = {
    # ---------------------------------------------------------------- the name's span
    "plain": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class Gen:
        """ + OWNS),
    "spaces and a tab before the name": ((5, 8, 11, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class  \tGen :
        """ + OWNS),
    "a backslash before the name": ((6, 4, 7, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class \\
            Gen:
        """ + OWNS),
    "two backslashes before the name": ((7, 0, 3, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class \\
          \\
        Gen(
            object):
        """ + OWNS),
    "a backslash right after class": ((6, 4, 7, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class\\
            Gen:
        """ + OWNS),
    "non-ASCII name": ((5, 6, 16, "async actor `Générateur` holds resources in `run()`", ADD), """
        @ray.remote
        class Générateur:  # café
        """ + OWNS),
    "nested in a function": ((6, 10, 13, "async actor `Gen` holds resources in `run()`", ADD), """
        def make():
            @ray.remote
            class Gen:
                async def run(self):
                    try:
                        await work()
                    finally:
                        await cleanup()
            return Gen
        """),
    "decorator on the line above a comment": ((6, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        # a comment
        class Gen:
        """ + OWNS),
    "made remote by a call": ((4, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        class Gen:
        """ + OWNS + """
        G = ray.remote(Gen)
        """),
    # ---------------------------------------------------------------- owning a resource
    "try* finally: libcst's TryStar is no Try": (NO, """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    await work()
                except* ValueError:
                    pass
                finally:
                    await cleanup()
        """),
    "a try in a try*": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    try:
                        await work()
                    finally:
                        close_it()
                except* ValueError:
                    pass
        """),
    "finally with a lock release only": (NO, """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    work()
                finally:
                    self._lock.release()
        """),
    "finally with a cleanup verb": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    work()
                finally:
                    self.box.terminate()
        """),
    "finally in a nested def": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class Gen:
            async def run(self):
                def inner():
                    try:
                        pass
                    finally:
                        box.cleanup()
                inner()
        """),
    "finally in a decorator's lambda: not the body": (NO, """
        @ray.remote
        class Gen:
            @deco(lambda: close())
            async def run(self):
                pass
        """),
    "except CancelledError that cleans up": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    await work()
                except asyncio.CancelledError:
                    await self.box.aclose()
                    raise
        """),
    "except* CancelledError: libcst's ExceptStarHandler": (NO, """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    work()
                except* asyncio.CancelledError:
                    shutdown_all()
        """),
    "except BaseException through an alias": ((6, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        from asyncio.exceptions import CancelledError as CE
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    work()
                except CE:
                    stop_all()
        """),
    "except of a tuple": (NO, """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    work()
                except (asyncio.CancelledError, KeyError):
                    stop_all()
        """),
    "except BaseException without cleanup": (NO, """
        @ray.remote
        class Gen:
            async def run(self):
                try:
                    work()
                except BaseException:
                    log()
        """),
    "async with a sandbox": ((5, 6, 9, "async actor `Gen` holds resources in `go()`", ADD), """
        @ray.remote
        class Gen:
            async def go(self):
                async with make_sandbox() as box:
                    await box.run()
        """),
    "async with a lock and a sandbox, parenthesised": ((5, 6, 9, "async actor `Gen` holds resources in `go()`", ADD), """
        @ray.remote
        class Gen:
            async def go(self):
                async with (
                    self._lock,
                    make_sandbox() as box,
                ):
                    await box.run()
        """),
    "async with a lock named for a resource": (NO, """
        @ray.remote
        class Gen:
            async def go(self):
                async with self.sandbox_lock:
                    await step()
        """),
    "async with an aiohttp session": (NO, """
        import aiohttp
        @ray.remote
        class Gen:
            async def go(self):
                async with aiohttp.ClientSession() as session:
                    await session.get(u)
        """),
    "sync with a sandbox": (NO, """
        @ray.remote
        class Gen:
            async def go(self):
                with make_sandbox() as box:
                    box.run()
        """),
    "a resource call and a cleanup call": ((5, 6, 9, "async actor `Gen` holds resources in `go()`", ADD), """
        @ray.remote
        class Gen:
            async def go(self):
                s = await open_session()
                s.close()
        """),
    "a resource call only": (NO, """
        @ray.remote
        class Gen:
            async def go(self):
                s = await open_session()
        """),
    "the second async method owns": ((5, 6, 9, "async actor `Gen` holds resources in `b()`", ADD), """
        @ray.remote
        class Gen:
            async def a(self):
                pass
            async def b(self):
                async with lease_box() as box:
                    pass
        """),
    # ---------------------------------------------------------------- SIGTERM handled
    "signal.signal(SIGTERM) in a method": (NO, """
        @ray.remote
        class Gen:
            def __init__(self):
                signal.signal(signal.SIGTERM, self.stop)
        """ + OWNS),
    "signal.signal(SIGINT)": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", CALL), """
        @ray.remote
        class Gen:
            def __init__(self):
                signal.signal(signal.SIGINT, self.stop)
        """ + OWNS),
    "signal.signal with keywords": (NO, """
        @ray.remote
        class Gen:
            def __init__(self):
                signal.signal(signalnum=signal.SIGTERM, handler=self.stop)
        """ + OWNS),
    "signal.signal with a keyword second": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", CALL), """
        @ray.remote
        class Gen:
            def __init__(self):
                signal.signal(signal.SIGINT, handler=SIGTERM_HANDLER)
        """ + OWNS),
    "signal.signal(*args)": (NO, """
        @ray.remote
        class Gen:
            def __init__(self):
                signal.signal(*SIGTERM_ARGS)
        """ + OWNS),
    "SIGTERM in a comment inside the argument's parentheses": (NO, """
        @ray.remote
        class Gen:
            def __init__(self):
                signal.signal((  # SIGTERM
                    signal.SIGINT), self.stop)
        """ + OWNS),
    "SIGTERM in a comment after the argument": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", CALL), """
        @ray.remote
        class Gen:
            def __init__(self):
                signal.signal(signal.SIGINT,  # SIGTERM
                              self.stop)
        """ + OWNS),
    "setup_worker in a nested def": (NO, """
        import runtime_guard
        @ray.remote
        class Gen:
            def __init__(self):
                def later():
                    runtime_guard.ray.setup_worker()
        """ + OWNS),
    "setup_worker in a method's default": (NO, """
        import runtime_guard
        @ray.remote
        class Gen:
            def __init__(self, x=runtime_guard.ray.setup_worker()):
                pass
        """ + OWNS),
    "setup_worker outside the class": ((6, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        import runtime_guard
        @ray.remote
        class Gen:
        """ + OWNS + """
        runtime_guard.ray.setup_worker()
        """),
    # ---------------------------------------------------------------- the setup hook
    "setup hook in a dict": (NO, """
        ray.init(runtime_env={"worker_process_setup_hook": "runtime_guard.ray.setup_worker"})
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook keyword": (NO, """
        ray.init(runtime_env=dict(worker_process_setup_hook="runtime_guard.ray.setup_worker"))
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook key joined from two strings": ((7, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        ray.init(runtime_env={"worker_process_" "setup_hook": "runtime_guard.ray.setup_worker"})
        # worker_process_setup_hook
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook key parenthesised": (NO, """
        ray.init(runtime_env={("worker_process_setup_hook"): "runtime_guard.ray.setup_worker"})
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook key as an f-string": ((7, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        ray.init(runtime_env={f"worker_process_setup_hook": "runtime_guard.ray.setup_worker"})
        # worker_process_setup_hook
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook key as bytes": ((6, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        ray.init(runtime_env={b"worker_process_setup_hook": "runtime_guard.ray.setup_worker"})
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook naming another function": ((6, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        ray.init(runtime_env={"worker_process_setup_hook": "mine.setup"})
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook value with setup_worker in a comment in its parentheses": (NO, """
        ray.init(runtime_env={"worker_process_setup_hook": (  # setup_worker
            hook)})
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook keyword on a class": (NO, """
        class Env(Base, worker_process_setup_hook="runtime_guard.ray.setup_worker"):
            pass
        @ray.remote
        class Gen:
        """ + OWNS),
    "setup hook in a dict comprehension: no": ((7, 6, 9, "async actor `Gen` holds resources in `run()`", ADD), """
        env = {"worker_process_setup_hook": v for v in ["runtime_guard.ray.setup_worker"]}
        x = {**env}
        @ray.remote
        class Gen:
        """ + OWNS),
    # ---------------------------------------------------------------- the fix's presence
    "__init__ on its header line": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", NONE), """
        @ray.remote
        class Gen:
            def __init__(self): self.n = 0
        """ + OWNS),
    "__init__ on its header line after a backslash": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", NONE), """
        @ray.remote
        class Gen:
            def __init__(self): \\
                self.n = 0
        """ + OWNS),
    "__init__ with a comment after its colon": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", CALL), """
        @ray.remote
        class Gen:
            def __init__(self):  # the state:
                self.n = 0
        """ + OWNS),
    "__init__ starting with an if": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", CALL), """
        @ray.remote
        class Gen:
            def __init__(self):
                if x: self.n = 0
        """ + OWNS),
    "async __init__": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", NONE), """
        @ray.remote
        class Gen:
            async def __init__(self):
                self.n = 0
        """ + OWNS),
    "__init__ with a semicolon body on its line": ((5, 6, 9, "async actor `Gen` holds resources in `run()`", NONE), """
        @ray.remote
        class Gen:
            def __init__(self): a = 1; b = 2
        """ + OWNS),
    # ---------------------------------------------------------------- inherited
    "inherited from a base of the module": ((14, 6, 9, "async actor `Sub` holds resources in `Base.run()`, inherited,", NONE), """
        class Base:
            async def run(self):
                try:
                    await work()
                finally:
                    await cleanup()
            def other(self):
                pass

        @ray.remote
        class Sub(Base):
            x = 1
        """),
    "inherited, with an __init__": ((13, 6, 9, "async actor `Sub` holds resources in `Base.run()`, inherited,", CALL), """
        class Base:
        """ + OWNS + """
        @ray.remote
        class Sub(Base):
            def __init__(self):
                super().__init__()
        """),
    "inherited, __init__ on its line": ((13, 6, 9, "async actor `Sub` holds resources in `Base.run()`, inherited,", NONE), """
        class Base:
        """ + OWNS + """
        @ray.remote
        class Sub(Base):
            def __init__(self): pass
        """),
    "inherited from two bases: the first named": ((15, 6, 9, "async actor `Sub` holds resources in `A.a()`, inherited,", NONE), """
        class A:
            async def a(self):
                async with make_sandbox() as box:
                    pass
        class B:
            async def b(self):
                try:
                    pass
                finally:
                    await close()
        @ray.remote
        class Sub(A, B):
            pass
        """),
    "inherited from two bases, the second's first": ((15, 6, 9, "async actor `Sub` holds resources in `B.b()`, inherited,", NONE), """
        class A:
            async def a(self):
                async with make_sandbox() as box:
                    pass
        class B:
            async def b(self):
                try:
                    pass
                finally:
                    await close()
        @ray.remote
        class Sub(B, A):
            pass
        """),
    "inherited through *bases": ((13, 6, 9, "async actor `Sub` holds resources in `Base.run()`, inherited,", NONE), """
        class Base:
        """ + OWNS + """
        @ray.remote
        class Sub(*Base):
            pass
        """),
    "inherited through a metaclass keyword only": (NO, """
        class Base:
        """ + OWNS + """
        @ray.remote
        class Sub(metaclass=Base):
            pass
        """),
    "inherited, base handles SIGTERM": (NO, """
        class Base:
            def __init__(self):
                signal.signal(signal.SIGTERM, h)
        """ + OWNS + """
        @ray.remote
        class Sub(Base):
            pass
        """),
    "inherited, the subclass overrides it": (NO, """
        class Base:
        """ + OWNS + """
        @ray.remote
        class Sub(Base):
            def run(self):
                pass
        """),
    "inherited through ray.remote(...)(Cls) in a factory": ((13, 10, 13, "async actor `Sub` holds resources in `Base.run()`, inherited,", NONE), """
        class Base:
        """ + OWNS + """
        def make():
            class Sub(Base):
                pass
            return ray.remote(num_cpus=1)(Sub)
        """),
    "inherited on a class body line": ((13, 6, 9, "async actor `Sub` holds resources in `Base.run()`, inherited,", NONE), """
        class Base:
        """ + OWNS + """
        @ray.remote
        class Sub(Base): pass
        """),
    # ---------------------------------------------------------------- threaded actors
    "threaded": ((11, 6, 9, "threaded actor `Env` (max_concurrency > 1) runs `asyncio.run(rollout())` in `run()`", ADD), """
        async def rollout(box):
            try:
                await box.run()
            finally:
                await box.delete()

        @ray.remote(max_concurrency=8)
        class Env:
            def run(self, box):
                asyncio.run(rollout(box))
        """),
    "threaded, parenthesised runner over lines": ((11, 6, 9, "threaded actor `Env` (max_concurrency > 1) runs `(asyncio\n    .run)(rollout())` in `run()`", ADD), """
        async def rollout(box):
            try:
                await box.run()
            finally:
                await box.delete()

        @ray.remote(max_concurrency=8)
        class Env:
            def run(self, box):
                (asyncio
                    .run)(rollout(box))
        """),
    "threaded, the awaited coroutine owns": ((12, 6, 9, "threaded actor `Env` (max_concurrency > 1) runs `asyncio.run(outer())` in `go()`", NONE), """
        async def inner(box):
            async with lease_box(box) as b:
                pass

        async def outer(box):
            await inner(box)

        @ray.remote(max_concurrency=2)
        class Env:
            def __init__(self) -> None: ...
            def go(self, box):
                asyncio.run(outer(box))
        """),
    "threaded, max_concurrency=1": (NO, """
        async def rollout(box):
            try:
                await box.run()
            finally:
                await box.delete()

        @ray.remote(max_concurrency=1)
        class Env:
            def run(self, box):
                asyncio.run(rollout(box))
        """),
    "threaded, a signal handler does not count": ((11, 6, 9, "threaded actor `Env` (max_concurrency > 1) runs `asyncio.run(rollout())` in `run()`", CALL), """
        async def rollout(box):
            try:
                await box.run()
            finally:
                await box.delete()

        @ray.remote(max_concurrency=8)
        class Env:
            def __init__(self):
                signal.signal(signal.SIGTERM, h)
            def run(self, box):
                asyncio.run(rollout(box))
        """),
    "threaded through options": ((10, 6, 9, "threaded actor `Env` (max_concurrency > 1) runs `asyncio.run(rollout())` in `run()`", ADD), """
        async def rollout(box):
            try:
                await box.run()
            finally:
                await box.delete()

        class Env:
            def run(self, box):
                asyncio.run(rollout(box))

        R = ray.remote(Env)
        R.options(max_concurrency=n)
        """),
}

_every_file_a_candidate = every_file_a_candidate
_key = key


def _both_ways(source: bytes, monkeypatch, ast_path: bool = True):
    return both_ways(source, monkeypatch, _SETTINGS, ast_path=ast_path)


def _answer(result):
    """(line, column, end column, the message up to 'but does not'/'on a thread', the fix) or None."""
    assert len(result.diagnostics) <= 1
    if not result.diagnostics:
        return NO
    (d,) = result.diagnostics
    assert d.end_line == d.line
    head = d.message.split(" but does not")[0].split(" on a thread")[0]
    if d.fix is None:
        fix = NONE
    else:
        assert d.fix["applicability"] == "safe"
        fix = CALL if d.fix["message"].startswith("Call ") else ADD
    return (d.line, d.column - 1, d.end_column - 1, head, fix)


def _source(body: str, newline: str = "\n") -> bytes:
    return (HEAD + textwrap.dedent(body)).replace("\n", newline).encode()


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, body = CASES[name]
    _every_file_a_candidate(monkeypatch)
    result = _both_ways(_source(body), monkeypatch)
    assert _answer(result) == expected


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    expected, body = CASES[name]
    result = _both_ways(_source(body), monkeypatch, ast_path=False)
    if result.diagnostics:
        assert result.stage == STAGE_AST


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["a backslash before the name", "two backslashes before the name", "non-ASCII name",
                                  "__init__ on its header line after a backslash", "SIGTERM in a comment inside "
                                  "the argument's parentheses", "threaded, parenthesised runner over lines"])
def test_other_line_ends(name, newline, monkeypatch):
    expected, body = CASES[name]
    _every_file_a_candidate(monkeypatch)
    result = _both_ways(_source(body, newline), monkeypatch)
    assert (_answer(result) is NO) == (expected is NO)


def test_options(monkeypatch):
    """``resource_words`` and ``setup_calls`` read by both engines."""
    global _SETTINGS
    body = """
        import mine
        @ray.remote
        class Browser:
            def __init__(self):
                mine.guard()
            async def visit(self, url):
                tab = await open_tab(url)
                await tab.close()
        """
    _every_file_a_candidate(monkeypatch)
    base = _SETTINGS
    try:
        _SETTINGS = Settings(selected=("SHD404",), target_version="py311",
                             rule_options={"SHD404": {"resource_words": ["tab"]}})
        assert _answer(_both_ways(_source(body), monkeypatch))[3] == "async actor `Browser` holds resources in `visit()`"
        _SETTINGS = Settings(selected=("SHD404",), target_version="py311",
                             rule_options={"SHD404": {"resource_words": ["tab"], "setup_calls": ["mine.guard"]}})
        assert _answer(_both_ways(_source(body), monkeypatch)) is NO
    finally:
        _SETTINGS = base


PROJECT_BASE = """
import runtime_guard

class Base:
    async def run(self):
        try:
            await work()
        finally:
            await cleanup()

class Guarded(Base):
    def __init__(self):
        runtime_guard.ray.setup_worker()
"""

PROJECT_CASES = {
    "a base of another module": (1, """
        import ray
        from pkg.base import Base
        @ray.remote
        class Sub(Base):
            def __init__(self):
                pass
        """),
    "a starred base of another module": (1, """
        import ray
        from pkg.base import Base
        @ray.remote
        class Sub(*Base):
            pass
        """),
    "a base through its module": (1, """
        import ray
        from pkg import base
        @ray.remote
        class Sub(base.Base, metaclass=M):
            pass
        """),
    "a base that calls the setup": (0, """
        import ray
        from pkg.base import Guarded
        @ray.remote
        class Sub(Guarded):
            pass
        """),
}


@pytest.mark.parametrize("name", list(PROJECT_CASES))
def test_bases_in_another_module(name, tmp_path, monkeypatch):
    """The project index's answers (and the deps they record) are the same on both engines."""
    from shutdown_lint.index.project import ProjectIndex, current, set_current

    count, body = PROJECT_CASES[name]
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "base.py").write_text(PROJECT_BASE)
    actor = pkg / "actor.py"
    actor.write_bytes(_source(body).replace(HEAD.encode(), b""))
    _every_file_a_candidate(monkeypatch)
    before = current()
    set_current(ProjectIndex([str(tmp_path)]))
    try:
        monkeypatch.setattr(analyzer, "AST_MODE", "on")
        on = lint_source(actor.read_bytes(), str(actor), _SETTINGS, fix_edits=False)
        monkeypatch.setattr(analyzer, "AST_MODE", "off")
        off = lint_source(actor.read_bytes(), str(actor), _SETTINGS, fix_edits=False)
    finally:
        set_current(before)
    assert on.stage == STAGE_AST and off.stage != STAGE_AST
    assert _key(on) == _key(off)
    assert len(on.diagnostics) == count
    assert all("(pkg/base.py:" in d.message or "base.py:" in d.message for d in on.diagnostics)
