"""Exit paths on Python's ``ast`` (``ast_engine.exit_paths``, issue 30 S4) answer as the libcst
facts do (``facts.exit_paths``): for every ``except`` handler and every ``finally`` the ways out,
the swallowing ``finally``, the bound exception handed on or raised later, the exits, the
leaving statements and the yields (by span); the entrypoint a handler's normal exit ends; for
every call and ``raise`` whether it exits and with what status; the signal handlers; and the
walker's tree reads (``later_code_exits``, ``loop_between``, ``returns_only_none``) at every
``try``. Over every rule example, the example project and the engine's own sources (in
``test_ast_engine``, on the parse the facts are compared on) and the walker's unit-test shapes
(``test_exit_paths``)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from shutdown_lint.ast_engine import exit_paths as A
from shutdown_lint.ast_engine.facts import decode
from shutdown_lint.facts import exit_paths as C

from .both_trees import Both, own_sources

REPO = Path(__file__).resolve().parents[2]


def _ast_nodes(tree: "ast.Module | list", types: tuple) -> list:
    """Nodes of ``types`` in source order (libcst's walk order); ``tree``: a module, or its nodes in that order."""
    return [n for n in (tree if isinstance(tree, list) else A._preorder([tree])) if isinstance(n, types)]


_TRYS = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))


def compare_exit_paths(source: "str | Both") -> int:
    """Assert that both trees' exit-path facts agree on ``source`` (a text, or one already parsed
    both ways); the number of blocks compared."""
    both = source if isinstance(source, Both) else Both(source)
    cf, tree = both.cst, both.tree
    af = A.exit_paths_of(both.ast)
    cspan = both.cst_span
    preorder = list(A._preorder([tree]))

    def cpaths(p: C.ExitPaths) -> tuple:
        return (sorted(p.ways), p.swallowing_finally is not None, p.reraised_later, p.hands_on,
                [cspan(n) for n in p.exits], [(cspan(n), w) for n, w in p.leaves], [cspan(n) for n in p.yields])

    def apaths(p: C.ExitPaths) -> tuple:
        return (sorted(p.ways), p.swallowing_finally is not None, p.reraised_later, p.hands_on,
                [af.span(n) for n in p.exits], [(af.span(n), w) for n, w in p.leaves], [af.span(n) for n in p.yields])

    def cfn(node):
        return cf.enclosing_function(node)

    def afn(node):
        return af.enclosing_function(node)

    c_handlers = both.cst_nodes((cst.ExceptHandler, cst.ExceptStarHandler))
    a_handlers = _ast_nodes(preorder, (ast.ExceptHandler,))
    assert [cspan(h)[:2] for h in c_handlers] == [af.span(h)[:2] for h in a_handlers]
    for ch, ah in zip(c_handlers, a_handlers):
        where = cspan(ch)
        assert cpaths(cf.exit_paths(ch)) == apaths(af.exit_paths(ah)), where
        assert cf.normal_return_to_entrypoint(ch) == af.normal_return_to_entrypoint(ah), where
        assert C._returns_only_none(ch.body) == A.returns_only_none(ah.body), where
        assert C._loop_between(cf, ch, cfn(ch)) == A.loop_between(af, ah, afn(ah)), where
    c_trys = both.cst_nodes((cst.Try, cst.TryStar))
    a_trys = _ast_nodes(preorder, _TRYS)
    assert [cspan(t)[:2] for t in c_trys] == [af.span(t)[:2] for t in a_trys]
    for ct, at in zip(c_trys, a_trys):
        where = cspan(ct)
        if ct.finalbody is not None:
            assert cpaths(cf.exit_paths(ct.finalbody)) == apaths(af.exit_paths(at.finalbody)), where
        for stop in (True, False):
            assert C._later_code_exits(cf, ct, cfn(ct) if stop else None) == \
                A.later_code_exits(af, at, afn(at) if stop else None), (where, stop)
    # exits and statuses of every call and raise
    c_exits = both.cst_nodes((cst.Call, cst.Raise))
    a_exits = _ast_nodes(preorder, (ast.Call, ast.Raise))
    assert [cspan(n) for n in c_exits] == [af.span(n) for n in a_exits]
    for cn, an in zip(c_exits, a_exits):
        assert (cf.is_exit(cn), cf.exit_status(cn)) == (af.is_exit(an), af.exit_status(an)), cspan(cn)
        c_sig, a_sig = cf.signal_handler_of(cn), af.signal_handler_of(an)
        assert (c_sig is None) == (a_sig is None), cspan(cn)
        if c_sig is not None:
            assert (cspan(c_sig[0])[0], c_sig[1]) == (af.span(a_sig[0])[0], a_sig[1]), cspan(cn)
    assert sorted((cspan(k)[0], v) for k, v in cf.signal_handlers.items()) == \
        sorted((af.span(k)[0], v) for k, v in af.signal_handlers.items())
    return len(c_handlers) + len(c_trys)


def _parses_here(source: str) -> bool:
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False


def test_own_sources_hold_over_500_blocks():
    """The exit paths of every ``except`` handler and ``try`` of the example project and of our own
    sources agree, file by file, in ``test_ast_engine.test_facts_and_exit_paths_agree_on_examples_and_own_sources``
    (one parse per file for both comparisons; ``compare_exit_paths`` asserts that libcst's
    handlers and ``try``s are ast's, one for one): here, that those files hold over 500 of them."""
    blocks = 0
    for path in own_sources():
        tree = ast.parse(decode(path.read_bytes()))
        blocks += len(_ast_nodes(tree, (ast.ExceptHandler, *_TRYS)))
    assert blocks > 500


#: the walker's shapes (tests/engine/test_exit_paths.py) and more, each as a handler body
BODIES = [
    "raise", "raise e", "raise ValueError() from e", "log(e)", "return None", "return 1", "return (None)",
    "if e.args:\n    raise\nlog(e)", "if a:\n    raise\nelif b:\n    return\nelse:\n    raise",
    "if a:\n    raise\nelse:\n    if b:\n        return\n    log()", "sys.exit(1)", "sys.exit(0)", "os._exit()",
    "raise SystemExit", "raise SystemExit(0)", "raise SystemExit(f'{e}')", "await sys.exit(2)",
    "for x in xs:\n    break\nraise", "try:\n    raise\nfinally:\n    return",
    "for x in xs:\n    raise", "for x in [1, 2]:\n    raise", "for x in (*(), *(1,)):\n    raise",
    "for x in range(3):\n    raise", "for x in range(stop=3):\n    raise", "for x in range(True):\n    raise",
    "for x in range(0):\n    raise", "for x in []:\n    raise", "for x in {**{}}:\n    raise", "for x in {1: 2}:\n    raise",
    "for x in 'ab':\n    raise", "for x in '':\n    raise", "for x in 'a' 'b':\n    raise", "for x in b'\\x00':\n    raise",
    "for x in f'a':\n    raise", "for x in '''x''':\n    raise", "for x in '' '':\n    raise",
    "for x in [1, 2]:\n    if x:\n        continue\n    raise", "while g():\n    pass\nelse:\n    raise",
    "while g():\n    if x:\n        break\n    raise\nelse:\n    raise", "while True:\n    raise", "while 1:\n    raise",
    "while 0:\n    raise", "while 1.0:\n    raise", "while True:\n    if x:\n        break\n    raise",
    "while True:\n    for y in z:\n        break\n    else:\n        break\n    raise",
    "async for x in xs:\n    raise\nelse:\n    return", "with a:\n    raise", "async with a:\n    return",
    "match x:\n    case 1:\n        raise", "match x:\n    case 1:\n        raise\n    case _:\n        raise",
    "match x:\n    case 1:\n        raise\n    case y:\n        raise", "match x:\n    case _ if g():\n        raise",
    "match x:\n    case (_ as y) as z:\n        raise", "match x:\n    case 1 | _:\n        raise",
    "try:\n    g()\nexcept ValueError as v:\n    raise v\nraise", "try:\n    g()\nexcept ValueError:\n    raise\nraise",
    "try:\n    g()\nexcept BaseException as b:\n    raise b\nraise", "try:\n    g()\nexcept ValueError:\n    raise e\nraise",
    "try:\n    g()\nexcept (ValueError, *more):\n    raise\nraise", "try:\n    g()\nexcept:\n    raise\n",
    "try:\n    g()\nexcept asyncio.CancelledError:\n    raise\nraise", "try:\n    g()\nexcept x.CancelledError:\n    raise\n",
    "try:\n    raise ValueError()\nexcept ValueError:\n    pass\nraise",
    "try:\n    g()\nfinally:\n    break", "try:\n    g()\nelse:\n    return\nfinally:\n    log()",
    "try:\n    return 1\nfinally:\n    raise", "yield 1\nraise", "x = yield\nraise", "yield from g()",
    "def inner():\n    yield 1\n    return 2\nraise", "lambda: (yield)", "class K:\n    x = 1\nreturn",
    "errors.append(e)", "saved = e", "self.err = e", "errs[k] = e", "(saved) = e", "q.put_nowait(x=e)",
    "log(e.args)", "x.e = 1", "f(e=1)", "def e(): pass", "import e", "import a.e", "from e import x",
    "global e", "raise X from e", "log(f'{e}')", "g(); raise", "g(); return", "pass; break",
]


def _wrapped(body: str) -> str:
    inner = textwrap.indent(body, " " * 12)
    return ("import asyncio, os, sys\nfrom runtime_guard import hard_exit\n"
            "async def f(xs):\n    while g():\n        try:\n            await g()\n"
            f"        except BaseException as e:\n{inner}\n"
            "    raise saved\n    raise (self.err)\n    raise errs[0]\n    raise ExceptionGroup('x', [errors])\n")


@pytest.mark.parametrize("body", BODIES)
def test_exit_paths_agree_on_walker_shapes(body):
    source = _wrapped(body)
    if not _parses_here(source):
        pytest.skip("not Python")
    assert compare_exit_paths(source) >= 1


ENTRYPOINTS = [
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n\n"
    "if __name__ == '__main__':\n    main()\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        return\n\n"
    "if __name__ == '__main__':\n    sys.exit(main())\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        return 1\n\n"
    "if __name__ == '__main__':\n    sys.exit(main())\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n\n"
    "if __name__ == '__main__':\n    main(); cleanup()\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n\n"
    "if __name__ == '__main__':\n    main()\n    raise SystemExit(1)\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n\n"
    "if __name__ == '__main__':\n    x = 1  # a comment ending in a backslash \\\n    main()\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n\n"
    "if __name__ == '__main__':\n    x = 1; \\\n    main()\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n\n"
    "if __name__ == '__main__':\n    main() ;\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n    finally:\n        cleanup()\n\n"
    "if __name__ == '__main__': main()\n",
    "async def main():\n    try:\n        await run()\n    except KeyboardInterrupt:\n        pass\n\n"
    "if __name__ == '__main__':\n    asyncio.run(main())\n",
    "async def serve():\n    try:\n        await run()\n    except KeyboardInterrupt:\n        pass\n"
    "def main():\n    asyncio.run(serve())\nif __name__ == '__main__':\n    main()\n",
    "if __name__ == '__main__':\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n    x = 1\n",
    "if __name__ == '__main__':\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n    sys.exit(2)\n",
    "def main():\n    for x in y:\n        try:\n            run()\n        except KeyboardInterrupt:\n            pass\n"
    "if __name__ == '__main__':\n    main()\n",
    "def main():\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n    if x: raise SystemExit(3)\n"
    "if __name__ == '__main__':\n    main()\n",
    "def main():\n    if x:\n        try:\n            run()\n        except KeyboardInterrupt: pass\n    else: return 2\n"
    "if __name__ == '__main__':\n    sys.exit(main(), 1)\n",
    "import signal, sys, os\ndef on_term(s, f):\n    sys.exit(0)\nsignal.signal(signal.SIGTERM, on_term)\n"
    "signal.signal(signal.SIGINT, lambda s, f: os._exit(128 + s))\nsignal.signal(*args)\n"
    "loop.add_signal_handler(signal.SIGINT, on_term)\nsys.exit('failed'); os._exit(**kw); sys.exit(None)\n"
    "sys.exit(True); sys.exit(False); sys.exit(os.EX_OK); sys.exit(EXIT_FAILURE); sys.exit(1.0); hard_exit()\n",
]


@pytest.mark.parametrize("source", ENTRYPOINTS)
def test_exit_paths_agree_on_entrypoints(source):
    compare_exit_paths("import asyncio, sys\nfrom runtime_guard import hard_exit\n" + source)
