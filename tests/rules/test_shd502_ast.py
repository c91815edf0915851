"""SHD502 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
comments and blank lines near module-level code and defs (libcst's ``code_for_node`` files
them under a statement, a block's footer or the module's header), teardown in ``finally`` /
``except`` bodies (``ast`` has no ``Finally`` node), callbacks and SIGTERM handler installs
(``facts.contexts`` on ``ast``: ``ast_engine/execution.py``), the first argument of
``signal.signal`` as written (a keyword, ``*a``, parentheses it owns), one-line compound
statements (no fix) and non-ASCII lines (character columns).

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer; ``init_calls`` is set
so that the candidate tiers do not rule the file out before either engine sees it (the ast path
is still taken: asserted).
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from shutdown_lint import registry
from shutdown_lint.ast_engine import AstFacts
from shutdown_lint.ast_engine.execution import execution_of
from shutdown_lint.facts import ModuleFacts
from shutdown_lint.index import project
from shutdown_lint.index.project import ProjectIndex
from shutdown_lint.positions import positions_of
from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, key

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

_INIT = {"SHD502": {"init_calls": ["torch.distributed.init_process_group"]}}
_SETTINGS = Settings(selected=("SHD502",), rule_options=_INIT)

NO = None  # no finding
SAFE = "safe"  # a finding with a safe fix
UNSAFE = "unsafe"  # a finding with an unsafe fix
NOFIX = "nofix"  # a finding without a fix

CASES = {
    # ---------------------------------------------------------------- cleanup blocks
    "destroy in finally": (NO, """
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            try:
                run()
            finally:
                dist.destroy_process_group()
        """),
    "destroy in except body": (NO, """
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            try:
                run()
            except BaseException:
                dist.destroy_process_group()
                raise
        """),
    "destroy in an except clause's type, not its body": (SAFE, """
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            try:
                run()
            except (dist.destroy_process_group() or OSError):
                pass
        """),
    "destroy in try body and else only": (SAFE, """
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            try:
                run()
                dist.destroy_process_group()
            except ValueError:
                pass
            else:
                dist.destroy_process_group()
        """),
    "destroy in a lambda inside finally": (SAFE, """
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
            try:
                run()
            finally:
                done = lambda: dist.destroy_process_group()
        """),
    "destroy in a nested finally of a helper the function calls": (NO, """
        import torch.distributed as dist
        def _close():
            try:
                pass
            finally:
                dist.destroy_process_group()
        def main():
            dist.init_process_group("gloo")
            _close()
        """),
    # ---------------------------------------------------------------- callbacks
    "atexit.register of a destroying helper": (NO, """
        import atexit
        import torch.distributed as dist
        def _bye():
            dist.destroy_process_group()
        def main():
            atexit.register(_bye)
            dist.init_process_group("gloo")
        """),
    "add_done_callback on an object of no known type: no callback": (SAFE, """
        import torch.distributed as dist
        def _bye(fut):
            dist.destroy_process_group()
        def main(fut):
            fut.add_done_callback(_bye)
            dist.init_process_group("gloo")
        """),
    "loop.call_soon of a destroying helper": (NO, """
        import asyncio
        import torch.distributed as dist
        def _bye():
            dist.destroy_process_group()
        def main():
            loop = asyncio.get_event_loop()
            loop.call_soon(_bye)
            dist.init_process_group("gloo")
        """),
    "a helper that destroys but nobody registers": (SAFE, """
        import torch.distributed as dist
        def _bye():
            dist.destroy_process_group()
        def main():
            dist.init_process_group("gloo")
        """),
    "a thread target that destroys is no callback": (SAFE, """
        import threading
        import torch.distributed as dist
        def _bye():
            dist.destroy_process_group()
        def main():
            threading.Thread(target=_bye).start()
            dist.init_process_group("gloo")
        """),
    "loop.add_signal_handler with SIGTERM: unsafe fix": (UNSAFE, """
        import asyncio, signal
        import torch.distributed as dist
        async def main():
            loop = asyncio.get_running_loop()
            loop.add_signal_handler(signal.SIGTERM, print)
            dist.init_process_group("gloo")
        """),
    # ---------------------------------------------------------------- SIGTERM handler installs
    "signal.signal(SIGTERM, ...) elsewhere in the module: unsafe fix": (UNSAFE, """
        import signal
        import torch.distributed as dist
        signal.signal(signal.SIGTERM, lambda *a: None)
        def main():
            dist.init_process_group("gloo")
        """),
    "signal.signal with the number as a keyword": (UNSAFE, """
        import signal
        import torch.distributed as dist
        def main():
            signal.signal(signalnum=signal.SIGTERM, handler=print)
            dist.init_process_group("gloo")
        """),
    "signal.signal with the handler written first (libcst reads the first argument as written)": (SAFE, """
        import signal
        import torch.distributed as dist
        def main():
            signal.signal(handler=print, signalnum=signal.SIGTERM)
            dist.init_process_group("gloo")
        """),
    "signal.signal(SIGINT, ...): safe fix": (SAFE, """
        import signal
        import torch.distributed as dist
        def main():
            signal.signal(signal.SIGINT, print)  # SIGTERM stays
            dist.init_process_group("gloo")
        """),
    "signal.signal(*args) with args naming SIGTERM": (UNSAFE, """
        import signal
        import torch.distributed as dist
        def main():
            signal.signal(*(signal.SIGTERM, print))
            dist.init_process_group("gloo")
        """),
    "a comment inside the parentheses the first argument owns": (UNSAFE, """
        import signal
        import torch.distributed as dist
        def main():
            signal.signal((  # SIGTERM
                sig), print)
            dist.init_process_group("gloo")
        """),
    "a comment before the parentheses (the call's, not the argument's)": (SAFE, """
        import signal
        import torch.distributed as dist
        def main():
            signal.signal(  # SIGTERM
                (sig), print)
            dist.init_process_group("gloo")
        """),
    "a SIGTERM handler that destroys": (NO, """
        import signal
        import torch.distributed as dist
        def _term(signum, frame):
            dist.destroy_process_group()
        def main():
            signal.signal(signal.SIGTERM, _term)
            dist.init_process_group("gloo")
        """),
    # ---------------------------------------------------------------- module-level text
    "destroy named in a comment above module-level code": (NO, """
        import torch.distributed as dist
        # destroy_process_group is registered below
        handlers = []
        def main():
            dist.init_process_group("gloo")
        """),
    "destroy named in a comment above a def (the def's)": (SAFE, """
        import torch.distributed as dist
        x = 1
        # destroy_process_group is up to the caller
        def main():
            dist.init_process_group("gloo")
        """),
    "destroy named in the module header": (SAFE, """
        # destroy_process_group: see the trainer
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
        """),
    "destroy named in the module footer": (SAFE, """
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
        x = 1
        # destroy_process_group
        """),
    "destroy named in the module header, above module-level code (the header's)": (SAFE, """
        # destroy_process_group: see the trainer
        handlers = []
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
        """),
    "destroy named on an import line": (SAFE, """
        import torch.distributed as dist  # destroy_process_group
        def main():
            dist.init_process_group("gloo")
        """),
    "an import and code on one line": (NO, """
        import torch.distributed as dist; x = 1  # destroy_process_group
        def main():
            dist.init_process_group("gloo")
        """),
    "an indented comment after a module-level if (its block's)": (NO, """
        import torch.distributed as dist
        if dist.is_available():
            x = 1
            # destroy_process_group
        def main():
            dist.init_process_group("gloo")
        """),
    "a dedented comment after a module-level if, then an indented one": (NO, """
        import torch.distributed as dist
        if dist.is_available():
            x = 1
        # destroy_process_group
            # (indented)
        def main():
            dist.init_process_group("gloo")
        """),
    "a dedented comment after a module-level if, before a def": (SAFE, """
        import torch.distributed as dist
        if dist.is_available():
            x = 1
        # destroy_process_group
        def main():
            dist.init_process_group("gloo")
        """),
    "an indented comment after a module-level if with a one-line else": (SAFE, """
        import torch.distributed as dist
        if dist.is_available():
            x = 1
        else: x = 2
            # destroy_process_group
        def main():
            dist.init_process_group("gloo")
        """),
    "an indented comment after an elif block": (NO, """
        import torch.distributed as dist
        if a:
            x = 1
        elif b:
            x = 2
            # destroy_process_group
        def main():
            dist.init_process_group("gloo")
        """),
    "destroy in a module-level string": (NO, """
        import torch.distributed as dist
        NOTE = "call destroy_process_group"
        def main():
            dist.init_process_group("gloo")
        """),
    "atexit at module level under a main guard": (NO, """
        import atexit
        import torch.distributed as dist
        def main():
            dist.init_process_group("gloo")
        if __name__ == "__main__":
            atexit.register(dist.destroy_process_group)
            main()
        """),
    # ---------------------------------------------------------------- guard text in the area
    "install_distributed_teardown in a comment above a method of the class": (NO, """
        import torch.distributed as dist
        class W:
            def setup(self):
                dist.init_process_group("gloo")
            # runtime_guard.torch.install_distributed_teardown() is called by the launcher
            def run(self):
                pass
        """),
    "install_distributed_teardown in a comment after the class's last method (the class's)": (SAFE, """
        import torch.distributed as dist
        class W:
            def setup(self):
                dist.init_process_group("gloo")
            def run(self):
                pass
            # install_distributed_teardown
        """),
    "install_distributed_teardown in the function's block footer": (NO, """
        import torch.distributed as dist
        def setup():
            dist.init_process_group("gloo")
                # install_distributed_teardown
        x = 1
        """),
    "install_distributed_teardown in a comment in an unrelated function": (SAFE, """
        import torch.distributed as dist
        def setup():
            dist.init_process_group("gloo")
        def other():
            # install_distributed_teardown
            pass
        """),
    "install_distributed_teardown in a decorator of the function": (NO, """
        import torch.distributed as dist
        @wraps(install_distributed_teardown)
        def setup():
            dist.init_process_group("gloo")
        """),
    # ---------------------------------------------------------------- fix presence
    "one-line if: no fix": (NOFIX, """
        import torch.distributed as dist
        def main(rank):
            if rank >= 0: dist.init_process_group("gloo")
        """),
    "after a semicolon in an indented block: fix": (SAFE, """
        import torch.distributed as dist
        def main(rank):
            x = 1; dist.init_process_group("gloo")
        """),
    "a one-line else: no fix": (NOFIX, """
        import torch.distributed as dist
        def main(rank):
            if rank:
                pass
            else: dist.init_process_group("gloo")
        """),
    "in an if test: no fix": (NOFIX, """
        import torch.distributed as dist
        def main(rank):
            if dist.init_process_group("gloo"):
                pass
        """),
    "in a with item: no fix": (NOFIX, """
        import torch.distributed as dist
        def main(rank):
            with dist.init_process_group("gloo"):
                pass
        """),
    "at module level: fix": (SAFE, """
        import torch.distributed as dist
        dist.init_process_group("gloo")
        """),
    "a one-line def body: no fix": (NOFIX, """
        import torch.distributed as dist
        def main(rank): dist.init_process_group("gloo")
        """),
    "a backslash-continued one-line if: no fix": (NOFIX, """
        import torch.distributed as dist
        def main(rank):
            if rank: \\
                dist.init_process_group("gloo")
        """),
    # ---------------------------------------------------------------- non-ASCII
    "non-ASCII text before the call on its line": (SAFE, """
        import torch.distributed as dist
        def main():
            é = 1; dist.init_process_group("gloo")  # café
        """),
    "non-ASCII in the first argument of signal.signal": (UNSAFE, """
        import signal
        import torch.distributed as dist
        def main():
            signal.signal(getattr(signal, "SIGTERM") if "é" else 0, print)
            dist.init_process_group("gloo")
        """),
}


_key = key


def _both_ways(source: bytes, path: str, monkeypatch, settings: Settings = _SETTINGS):
    return both_ways(source, monkeypatch, settings, path)


def _answer(result):
    if not result.diagnostics:
        return NO
    (d,) = result.diagnostics
    return d.fix["applicability"] if d.fix else NOFIX


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    expected, source = CASES[name]
    result = _both_ways(textwrap.dedent(source).encode(), "m.py", monkeypatch)
    assert _answer(result) == expected


def test_non_ascii_column_is_characters(monkeypatch):
    source = 'import torch.distributed as dist\ndef main():\n    é = "ü"; dist.init_process_group("gloo")\n'
    result = _both_ways(source.encode(), "m.py", monkeypatch)
    (d,) = result.diagnostics
    assert (d.line, d.column) == (3, 14)  # 16 in UTF-8 bytes


def _execution(facts, ex, line_of) -> dict:
    """Every execution answer about the module's functions and classes (not the actor a base's
    message names: ``_inherit_remote`` walks a set of classes, in no fixed order on either tree)."""
    out = {}
    for fn in facts.functions:
        out[fn.qualname, line_of(fn.node)] = (
            sorted(ex.contexts(fn)), sorted(g.qualname for g in ex.callers(fn)),
            sorted((line_of(n), k) for n, k in ex.references(fn)), ex.only_main_task(fn),
            ex.is_process_entrypoint(fn), [(line_of(c), t and t.qualname) for c, t in ex.main_runner_calls(fn)])
    out["classes"] = sorted((c.qualname, ex.is_ray_remote_class(c), ex.is_threaded_ray_actor(c),
                             ex.remote_through_subclass(c) is None) for c in facts.classes)
    return out


def _sources():
    for rule in registry.all_rules():
        valid, invalid = rule.examples()
        for ex in [*valid, *invalid]:
            yield textwrap.dedent(ex.code)
    for path in sorted(EXAMPLES.rglob("*.py")):
        yield path.read_text(encoding="utf-8")


def test_execution_contexts_agree_on_rule_examples_and_examples():
    """``ast_engine/execution.py`` answers as ``facts/execution.py`` (what SHD502 reads:
    ``contexts``/``callers``; the rest of ``ExecutionQueries`` too) over every rule example and
    the example project."""
    compared = 0
    for source in _sources():
        try:
            tree = ast.parse(source)
            module = cst.parse_module(source)
        except (SyntaxError, cst.ParserSyntaxError):
            continue
        cf = ModuleFacts.build(module)
        pos = positions_of(module)
        af = AstFacts.build(tree, source)
        assert _execution(cf, cf, lambda n: pos[n].start.line) == \
            _execution(af, execution_of(af), lambda n: n.lineno), source
        compared += 1
    assert compared > 300


def _project(tmp_path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))


@pytest.fixture
def index_of(monkeypatch):
    def install(root):
        monkeypatch.setattr(project, "_current", ProjectIndex([str(root)]))
    return install


def test_where_the_index_looked_is_the_same(tmp_path, monkeypatch, index_of):
    """The message's list of importers, and the deps, through the project index."""
    _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/dist.py": """
            import torch.distributed as dist
            def setup():
                dist.init_process_group("gloo")
            """,
        "pkg/a.py": "from pkg.dist import setup\n",
        "pkg/b.py": """
            from pkg import dist as d
            def run():
                try:
                    d.setup()
                finally:
                    print("no teardown here")
            """,
    })
    index_of(tmp_path)
    path = tmp_path / "pkg" / "dist.py"
    result = _both_ways(path.read_bytes(), str(path), monkeypatch)
    (d,) = result.diagnostics
    assert "no teardown in this module or in the modules that import it" in d.message
    assert result.deps


def test_teardown_in_an_importer_or_a_callee_elsewhere(tmp_path, monkeypatch, index_of):
    _project(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/dist.py": """
            import torch.distributed as dist
            def setup():
                dist.init_process_group("gloo")
            """,
        "pkg/train.py": """
            import torch.distributed as dist
            from pkg.dist import setup
            def main():
                setup()
                try:
                    pass
                finally:
                    dist.destroy_process_group()
            """,
        "pkg/other.py": """
            import torch.distributed as dist
            from pkg.util import close
            def setup():
                dist.init_process_group("gloo")
                try:
                    pass
                finally:
                    close()
            """,
        "pkg/util.py": """
            import torch.distributed as dist
            def close():
                dist.destroy_process_group()
            """,
    })
    index_of(tmp_path)
    for name in ("dist.py", "other.py"):
        path = tmp_path / "pkg" / name
        result = _both_ways(path.read_bytes(), str(path), monkeypatch)
        assert not result.diagnostics, name
