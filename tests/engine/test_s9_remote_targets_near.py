"""``summary._remote_targets`` with the module's source walks only the nodes on lines that spell
``remote`` (and, for classes in functions, ``class``): it must give what the whole walk gives, in
the same order, whatever the layout (decorators above a class, calls over several lines, classes
nested in functions and branches), and fall back to the whole walk where lines cannot be told."""

from __future__ import annotations

import ast
import itertools
import pathlib

from shutdown_lint.index import summary

ROOT = pathlib.Path(summary.__file__).resolve().parents[2]

_PIECES = [
    "import ray\n",
    "class Top(Base):\n    pass\n",
    "def make(base):\n    class Sub(base, Mixin):\n        pass\n    return ray.remote(Sub)\n",
    "def make2():\n    if x:\n        class Sub(Other):\n            pass\n    return ray.remote(\n        Sub\n    )\n",
    "def deco():\n    @ray.remote(\n        num_cpus=1)\n    class Inner(B):\n        pass\n    return Inner\n",
    "def deco2():\n    @ray.\\\n remote\n    class Inner2:\n        pass\n",
    "actor.ping.remote(value)\n",
    "h = ray.remote(num_gpus=1)(Top)\n",
    "f(g(h(ray.remote(Sub))))\n",
    "x = [ray.remote(t) for t in (A, B)]\n",
    "y = lambda: ray.remote(Sub)\n",
    "remote(Worker)\n",
    "ray.remote(mod.Cls)\n",
    "def later():\n    class Sub(Late):\n        pass\n",
    "s = 'remote'  # a remote word in a string and a comment\n",
]


def _both(source: bytes) -> tuple[list[str], list[str]]:
    tree = ast.parse(source)
    return summary._remote_targets(tree), summary._remote_targets(tree, source)


def test_pruned_walk_gives_the_whole_walks_targets():
    n = 0
    for k in (1, 2, 3):
        for combo in itertools.permutations(_PIECES, k):
            source = "".join(combo).encode()
            whole, near = _both(source)
            assert near == whole, source
            n += bool(whole)
    assert n > 500


def test_lines_that_cannot_be_told_take_the_whole_walk():
    cr = b"import ray\rdef f():\r    class S(B):\r        pass\r    return ray.remote(S)\r"
    assert summary._lines_near(cr, b"remote") is None
    assert _both(cr)[1] == _both(cr)[0] == ["ray.remote:B"]


def test_a_name_python_normalises_keeps_its_line():
    wide = "import ray\nclass T(B):\n    pass\nray.\uff52emote(T)\n".encode()  # NFKC: ｒemote is remote
    assert summary._lines_near(wide, b"remote") == [4]  # the bytes never spell it: its line is non-ASCII
    assert _both(wide)[1] == _both(wide)[0] == ["ray.remote:T"]


def test_the_projects_own_modules():
    for path in sorted((ROOT / "shutdown_lint").rglob("*.py")) + sorted((ROOT / "rules").glob("*.py")):
        source = path.read_bytes()
        if b"remote" in source:
            whole, near = _both(source)
            assert near == whole, path
