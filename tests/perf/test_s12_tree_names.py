"""``Tree``'s cheap name questions (``may_alias``, ``may_call_word``, ``binds_name``, ``head``),
which tier-2 conditions ask instead of building the alias sets or ``named_bindings``, against
the summaries they stand in for, on real modules (this package, the rules, asyncio,
concurrent.futures, multiprocessing, subprocess): each must be a necessary condition of (or
equal to) what it replaces, or a tier-2 condition would rule out a file a rule reports in."""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import multiprocessing
import subprocess
from pathlib import Path

import pytest

from shutdown_lint.prefilter import ast_tree
from shutdown_lint.prefilter.ast_tree import Tree

ROOT = Path(__file__).resolve().parents[2]
_FILES = sorted({*(ROOT / "shutdown_lint").rglob("*.py"), *(ROOT / "rules").glob("*.py"),
                 *Path(asyncio.__file__).parent.glob("*.py"),
                 *Path(concurrent.futures.__file__).parent.glob("*.py"),
                 *Path(multiprocessing.__file__).parent.glob("*.py"), Path(subprocess.__file__)})
# every 3rd file keeps the test short; the names asked come from each module itself
FILES = _FILES[::3]

#: dotted names the rules ask about (SHD201 exits, SHD502 init, SHD601 commands, SHD602 factories)
VOCABULARY = ("sys.exit", "os._exit", "exit", "quit", "builtins.SystemExit", "torch.distributed.init_process_group",
              "subprocess.Popen", "subprocess.run", "os.system", "asyncio.create_subprocess_exec",
              "multiprocessing.Process", "concurrent.futures.ThreadPoolExecutor", "asyncio.get_running_loop",
              "loop.create_task", "asyncio.create_task")


def _tree(path: Path) -> Tree:
    return Tree(ast.parse(path.read_bytes()))


def _identifiers(module: ast.Module) -> set[str]:
    out = set()
    for n in ast.walk(module):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.alias):
            out.update((n.asname or n.name).split("."))
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
    return out


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_binds_name_is_named_bindings(path):
    fresh = _tree(path)
    names = _identifiers(fresh.module) | {"not_bound_anywhere_x"}
    asked = {n: fresh.binds_name(n) for n in names}  # before ``named_bindings`` is built
    assert "named_bindings" not in fresh.__dict__
    built = _tree(path).named_bindings
    assert asked == {n: n in built for n in names}
    assert {n: fresh.binds_name(n) for n in names} == asked  # and once it is built
    fresh.named_bindings
    assert {n: fresh.binds_name(n) for n in names} == asked


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_may_alias_holds_for_every_word_of_an_alias_set(path):
    tree = _tree(path)
    names, attrs = tree._aliases
    words = set().union(*names.values(), *attrs.values())
    assert all(tree.may_alias(frozenset({w})) for w in words)
    assert not tree.may_alias(frozenset({"no_alias_spells_this_x"}))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_may_call_word_is_necessary_for_may_call_any(path):
    tree = _tree(path)
    calls = [n for n in ast.walk(tree.module) if isinstance(n, ast.Call)]
    own = {ast_tree.callee_name(c) for c in calls} - {None}
    for dotted in (*VOCABULARY, *sorted(own)[:40]):
        names = (dotted,)
        lasts = frozenset({dotted.rsplit(".", 1)[-1]})
        aliased = tree.may_alias(lasts)
        for call in calls:
            if tree.may_call_any(call, names):
                assert tree.may_call_word(call, lasts, aliased), (dotted, ast.unparse(call)[:80])


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_head_is_where_words_start(path):
    tree = _tree(path)
    for _, value in tree.value_bindings:
        word = ast_tree.head(value)
        if word is not None:
            assert word in tree.words(value)
        else:
            assert tree.words(value) == set()


def test_the_questions_on_a_small_module():
    tree = Tree(ast.parse(
        "import subprocess as sp\n"
        "from os import system\n"
        "runner = sp.Popen\n"
        "class K:\n    pass\n"
        "def f():\n    import signal\n    r = runner(['x'])\n    self.p = r\n"))
    assert tree.binds_name("sp") and tree.binds_name("system") and tree.binds_name("K")
    assert tree.binds_name("signal") and tree.binds_name("runner") and not tree.binds_name("subprocess")
    assert tree.may_alias(frozenset({"Popen"})) and not tree.may_alias(frozenset({"run"}))
    call = tree.module.body[4].body[1].value  # runner(['x'])
    assert tree.may_call_any(call, ("subprocess.Popen",))
    assert tree.may_call_word(call, frozenset({"Popen"}), True)
    assert not tree.may_call_word(call, frozenset({"Popen"}), False)  # only through the alias
    assert ast_tree.head(ast.parse("await a.b(c)()", mode="eval").body) == "b"


def test_a_factorys_result_type_is_an_alias_word():
    # ``loop`` stands for the loop type the factory returns: a word no import or binding spells
    tree = Tree(ast.parse("import asyncio\nloop = asyncio.get_running_loop()\nloop.create_task(main())\n"))
    assert "AbstractEventLoop" in tree.words(tree.module.body[1].targets[0])
    assert tree.may_alias(frozenset({"AbstractEventLoop"}))
    call = tree.module.body[2].value
    assert tree.may_call_any(call, ("asyncio.AbstractEventLoop.create_task",))
    assert tree.may_call_word(call, frozenset({"create_task"}), tree.may_alias(frozenset({"create_task"})))
