"""SHD404's tier-1 condition for a file with no ``async`` in code (issue 30, session 6).

Such a file can only report through ``_check_inherited``: a class with bases, made a Ray actor
by a decorator or by ``ray.remote(Cls)`` / ``ray.remote(...)(Cls)``, whose async methods come
from a base in another module (the project index). ``_MayBeRemoteSubclass`` asks for a class
with bases that is decorated (its previous logical line starts with ``@``) or whose name may be
a call's first argument; before, any class with bases in a file naming ``ray.remote`` went to
``ast``. Each actor spelling below is linted by the CLI (a real subprocess) over a two-module
project with the tiers off and with tier 1 alone (tier 2 off): one finding both ways. Each
guard fails one case when dropped (``test_each_guard_is_needed``)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter.words import FileText

RULE = registry.rules_by_code()["SHD404"]
MODULE = sys.modules[RULE.__module__]

BASE = """\
class Base:
    async def run(self, box):
        try:
            await box.go()
        finally:
            await box.delete()
"""

#: an actor whose async methods are all inherited from ``base.Base``, in every spelling
ACTORS = {
    "decorator": "import ray\nfrom base import Base\n\n\n@ray.remote\nclass W(Base):\n    pass\n",
    "decorator call over lines, comment, blank line": (
        "import ray\nfrom base import Base\n\n\n@ray.remote(\n    num_cpus=1,  # one (core)\n)\n\n# the actor\n"
        "class W(Base):\n    pass\n"),
    "stacked decorators": (
        "import ray\nfrom base import Base\n\n\ndef keep(*a):\n    return lambda c: c\n\n\n@ray.remote\n"
        "@keep(\n    1, [2,\n        3])\nclass W(Base):\n    pass\n"),
    "from-import alias": "from ray import remote as r\nfrom base import Base\n\n\n@r(num_gpus=1)\nclass W(Base):\n    pass\n",
    "value alias": "import ray\nfrom base import Base\n\nR = ray.remote\n\n\n@R\nclass W(Base):\n    pass\n",
    "backslash decorator": "import ray\nfrom base import Base\n\n\n@ray \\\n    .remote\nclass W(Base):\n    pass\n",
    "ray.remote(Cls)": "import ray\nfrom base import Base\n\n\nclass W(Base):\n    pass\n\n\nA = ray.remote(W)\n",
    "ray.remote(...)(Cls) over lines": (
        "import ray as rr\nfrom base import Base\n\n\nclass W(Base):\n    pass\n\n\nA = rr.remote(num_cpus=1)(\n"
        "    # the class\n    W,\n)\n"),
    "class in a factory": (
        "import ray\nfrom base import Base\n\n\ndef make():\n    class W(Base):\n        pass\n"
        "    return ray.remote(W)\n"),
    # session 11: the decorator's head word is read, and a word other than ``remote`` counts only
    # where the module binds it (each below is lost when ``_may_be_remote`` takes ``remote`` alone)
    "annotated alias": ("import ray\nfrom base import Base\n\nR: object = ray.remote\n\n\n"
                        "@R(num_cpus=1)\nclass W(Base):\n    pass\n"),
    "parenthesised alias target": ("import ray\nfrom base import Base\n\n(R) = ray.remote\n\n\n"
                                   "@R\nclass W(Base):\n    pass\n"),
    "alias over lines": ("import ray\nfrom base import Base\n\nR = (\n    ray\n    .remote\n)\n\n\n"
                         "@R\nclass W(Base):\n    pass\n"),
    "called alias": ("import ray\nfrom base import Base\n\nmake = ray.remote\n\n\nclass W(Base):\n    pass\n\n\n"
                     "A = make(W)\n"),
    "import-as alias, called": (
        "from ray import remote as make\nfrom base import Base\n\n\nclass W(Base):\n    pass\n\n\n"
        "A = make(\n    W,\n)\n"),
    # the lines between the decorator and the class: strings, a formatted one, one over lines
    "strings in stacked decorators": (
        "import ray\nfrom base import Base\n\n\ndef keep(*a):\n    return lambda c: c\n\n\n@ray.remote(name='w')\n"
        "@keep(\"(\", ')',\n      \"\"\"[\"\"\")\nclass W(Base):\n    pass\n"),
    "formatted string in the decorator": (
        "import ray\nfrom base import Base\n\nN = 1\n\n\n@ray.remote(name=f\"w({N}\")\nclass W(Base):\n    pass\n"),
    "string over lines in the decorator": (
        "import ray\nfrom base import Base\n\n\n@ray.remote(name=\"\"\"\nw (\n\"\"\")\nclass W(Base):\n    pass\n"),
    "parenthesised decorator": "import ray\nfrom base import Base\n\n\n@(ray.remote)\nclass W(Base):\n    pass\n",
    "argument in parentheses": ("import ray\nfrom base import Base\n\n\nclass W(Base):\n    pass\n\n\n"
                                "A = ray.remote((W))\n"),
}

#: a class with bases that is no actor: ruled out at tier 1 now (it reached ``ast`` before)
NOT_ACTORS = [
    "import ray\nfrom base import Base\n\n\nclass W(Base):\n    pass\n\n\ndef f(x):\n    return isinstance(x, W)\n\n\n"
    "F = ray.remote(f)\n",
    "import ray\nfrom base import Base\n\nx = g(\n    1)\nclass W(Base):\n    pass\n\n\n@ray.remote\ndef f(w: W):\n"
    "    return w\n",
    # session 11: decorated by something that is not ``ray.remote`` (imported as itself, a string
    # argument), after a function whose last line holds a formatted string; the class named as an
    # attribute's receiver, as a base, a parameter, a second argument
    "import ray\nfrom ray.util.annotations import PublicAPI\nfrom base import Base\n\n\ndef g(e):\n"
    "    return str(\n        f\"x ( {e}\"\n    )\n\n\n@PublicAPI(stability=\"beta\")\nclass W(Base):\n    pass\n\n\n"
    "@ray.remote\ndef f():\n    return ray.get(g(W.x))\n",
    "import ray\nfrom base import Base\n\n\nclass W(Base):\n    pass\n\n\nclass V(W):\n    pass\n\n\n"
    "def f(W, v):\n    return isinstance(v, W)\n\n\nF = ray.remote(f)\n",
]


def _lint(tmp_path: Path, actor: str, env: dict) -> list:
    (tmp_path / "base.py").write_text(BASE)
    (tmp_path / "actor.py").write_text(actor)
    out = subprocess.run([sys.executable, "-m", "shutdown_lint", "--no-cache", "-q", "--exit-zero",
                          "--output-format", "json", "--select", "SHD404", "."],
                         cwd=tmp_path, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [(d["path"], d["line"]) for d in json.loads(out.stdout)]


@pytest.mark.parametrize("name", list(ACTORS))
def test_inherited_actor_spellings_stay_admitted(name: str, tmp_path: Path) -> None:
    source = ACTORS[name]
    assert RULE.candidate.holds(FileText(source.encode()))
    off = _lint(tmp_path, source, {"SHUTDOWN_LINT_CANDIDATES": "0"})
    assert len(off) == 1 and off[0][0] == "actor.py"
    assert _lint(tmp_path, source, {"SHUTDOWN_LINT_TREE_TIER": "0"}) == off


@pytest.mark.parametrize("source", NOT_ACTORS, ids=range(len(NOT_ACTORS)))
def test_classes_that_are_no_actor_are_ruled_out(source: str, tmp_path: Path) -> None:
    data = source.encode()
    assert MODULE._WITH_BASES.holds(FileText(data))  # the condition before: admitted
    assert not RULE.candidate.holds(FileText(data))
    assert _lint(tmp_path, source, {"SHUTDOWN_LINT_CANDIDATES": "0"}) == []


@pytest.mark.parametrize("guard,case", [
    ("_remote_decorated_class", "decorator"),
    ("_remote_argument", "ray.remote(Cls)"),
    ("_bound", "annotated alias"),
    ("_bound", "parenthesised alias target"),
    ("_bound", "alias over lines"),
    ("_bound", "called alias"),
    ("_bound", "import-as alias, called"),
    ("_bound", "value alias"),
    ("_bound", "from-import alias"),
])
def test_each_guard_is_needed(guard: str, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With one guard made to answer False, the case it admits is lost (an unsound condition):
    ``_bound`` False is tier 1 too sharp by the aliases (``remote`` the only word that counts)."""
    monkeypatch.setattr(MODULE, guard, lambda *a: False)
    assert not RULE.candidate.holds(FileText(ACTORS[case].encode()))


@pytest.mark.parametrize("case", ["decorator call over lines, comment, blank line", "stacked decorators",
                                  "backslash decorator", "strings in stacked decorators"])
def test_decorator_read_on_over_lines(case: str) -> None:
    """``_decorated_statement`` follows brackets, backslashes, blank and comment lines and other
    decorators on from the ``@`` to the class (a line in between, ``)`` or ``.remote``, starts
    no statement)."""
    src = FileText(ACTORS[case].encode()).code().source  # comments and strings blanked
    assert MODULE._decorated_statement(src, src.index(b"@")) == src.index(b"class W")


@pytest.mark.parametrize("case", ["formatted string in the decorator", "string over lines in the decorator"])
def test_decorator_lines_with_strings_not_read(case: str) -> None:
    """A formatted string keeps its brackets in the code; a string over lines leaves a quote alone
    on a line: the lines after such a decorator are not read (None: the class counts)."""
    src = FileText(ACTORS[case].encode()).code().source
    assert MODULE._decorated_statement(src, src.index(b"@")) is None


def test_unreadable_text_counts() -> None:
    """A formatted string after a decorator that may be ``ray.remote``, a decorator or an argument
    not read (``@f(x).remote``, ``g[0](W)``) or a ``\\r`` line end where the scan reads: admitted
    (not read for sure)."""
    for src in ("import ray\n@ray.remote(n=f'{1}')\ndef f(): pass\nclass W(Base):\n    pass\n",
                "import ray\n@f(1).z\nclass W(Base):\n    pass\nF = ray.remote(f)\n",
                "import ray\nclass W(Base):\n    pass\nF = ray.remote(f)\nG = g[0](W)\n",
                "import ray\r\n@ray.remote\r\ndef f(): pass\r\nclass W(Base):\r\n    pass\r\n"):
        readable = src.replace("f'{1}'", "'1'").replace("(1).z", "").replace("[0]", "").replace("\r", "")
        assert not RULE.candidate.holds(FileText(readable.encode())), readable
        assert RULE.candidate.holds(FileText(textwrap.dedent(src).encode())), src


@pytest.mark.parametrize("source, expected", [
    ("class W(Base):\n    pass\nV = g()\nclass V(W):\n    pass\n", False),  # a base, not an argument
    ("class W(Base):\n    pass\nf = g()\ndef f(W):\n    pass\n", False),  # a parameter
    ("class W(Base):\n    pass\nmyclass = ray.remote\nX = myclass(W)\n", True),  # ends in ``class``: a name
    ("class W(Base):\n    pass\nremote = ray.remote\nX = remote(W)\n", True),
])
def test_a_definitions_parentheses_are_no_call(source: str, expected: bool) -> None:
    """``_remote_argument``: the class name between the parentheses of a ``class``/``def``
    statement is a base or a parameter, never a call's argument (the keyword read back by
    ``words.ends_with_definition_keyword``), even where the statement's name is also bound to a
    value (which ``_may_be_remote`` alone would admit)."""
    code = FileText(source.encode()).code()
    last = code.source.rindex(b"W")
    assert MODULE._remote_argument(code, last) is expected
