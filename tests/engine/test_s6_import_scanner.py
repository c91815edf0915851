"""The project index reads import statements without ``ast`` where it can, and its pool workers
share what one of them read (issue 30, cold runs).

- ``_simple_names`` (one statement of the common shapes) gives what ``_names_imported([st])``
  (``ast``) gives, or None: on every import statement of the installed packages, on near misses
  and on random edits of real statements; ``names_of_statements`` (a file's whole block) gives
  what ``_names_imported`` gives for the block.
- The summary walker (``_FunctionWalker``: handlers and child fields looked up once per node
  class) gives the summaries ``ast.NodeVisitor``'s own ``visit``/``generic_visit`` give, on
  installed packages' modules.
- At -j2 the worker that did not build the import-word table takes the project's stamp from
  the worker that walked the project (it reads its candidates' import statements itself).
"""

from __future__ import annotations

import ast
import multiprocessing
import os
import random
import sys
import sysconfig

import pytest

from shutdown_lint.index import summary
from shutdown_lint.index.project import (ProjectIndex, _names_imported, _simple_names, import_statements,
                                         names_of_statements)
from shutdown_lint.index.shared import SharedLog

SITE = sysconfig.get_paths()["purelib"]


def _package_files(*tops: str, limit: int = 0) -> list[str]:
    out = []
    for top in tops:
        for d, dirs, files in os.walk(os.path.join(SITE, top)):
            dirs.sort()
            out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".py")]
    return out[:limit] if limit else out


def _read(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _agrees(statement: bytes) -> bool:
    found = _simple_names(statement)
    return found is None or found == _names_imported([statement])


ACCEPTED = [
    (b"import os", ["os"]),
    (b"import os.path as p, sys  # noqa", ["os.path", "sys"]),
    (b"  import a.b.c as d\t", ["a.b.c"]),
    (b"from . import (a,)", [".a"]),
    (b"from .. import a as b, c", ["..a", "..c"]),
    (b"from ...x.y import *", ["...x.y"]),
    (b"from a import*", ["a"]),
    (b"from a import (\n    b,  # see f(x\n    c as d,\n)  # e", ["a.b", "a.c"]),
    (b"from a import(b)", ["a.b"]),
    (b"from a import (\n  # only a comment line\n  b\n  as\n  c)", ["a.b"]),
    (b"import match, case, _, type", ["match", "case", "_", "type"]),
    (b"from __future__ import annotations", ["__future__.annotations"]),
]

REJECTED = [
    b"import a;", b"import a; import b", b"from a importb", b"from a import b,", b"from if import x",
    b"from a.if import x", b"from a import (b as if)", b"import as", b"import a as as", b"import a as b as c",
    b"from  import x", b"from a import ()", b"from a import (,)", b"import a . b", b"from a import b.c",
    b"import a \\\n  .b", b"from a import (b,\r\n c)", b"from a import (b,\x0c c)", b"import caf\xc3\xa9",
    b"from a import (  # -*- coding: latin-1 -*-\n b)", b"import a  # \xe2\x80\x94 dash", b"import a\x00",
    b"from a import (b, c", b"from a import b, c)", b"import (a)", b"from a import (*)", b"from a import b, *",
    b"from the start, we import", b"from .import x", b"from . mod import x", b"import a, ", b"from a import b as",
    b"from a import 'b'", b"import a if b else c", b"from a import (b) c",
]


def test_statements_of_the_common_shapes_are_read_without_ast():
    for statement, names in ACCEPTED:
        assert _simple_names(statement) == names == _names_imported([statement]), statement


def test_near_misses_are_left_to_ast():
    for statement in REJECTED:
        assert _simple_names(statement) is None, statement
        assert _agrees(statement)


def test_every_import_statement_of_the_installed_packages():
    files = _package_files("ray", "torch")
    assert len(files) > 3000
    seen = read = 0
    for path in files:
        statements = import_statements(_read(path))
        for st in statements:
            seen += 1
            found = _simple_names(st)
            if found is not None:
                read += 1
                assert found == _names_imported([st]), (path, st)
        assert names_of_statements(statements) == _names_imported(statements), path
    assert read > 0.95 * seen  # (on ray+torch: 99%; the others are docstring lines and backslashes)


def test_random_edits_of_real_statements():
    rng = random.Random(30)
    statements = [st for path in _package_files("ray", limit=400) for st in import_statements(_read(path))]
    pieces = [b" ", b"\t", b"\n", b",", b".", b"(", b")", b"#", b" as ", b"*", b";", b"\\", b"'", b"\r",
              b"if", b"import", b"from", b" x", b"\\\n", b"# c\n", b"\xc3\xa9", b"\x0c", b"__future__"]
    edited = []
    for _ in range(6000):
        st = bytearray(rng.choice(statements))
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(st) + 1)
            kind = rng.random()
            if kind < 0.4:
                st[i:i] = rng.choice(pieces)
            elif kind < 0.7:
                del st[i:i + rng.randint(1, 3)]
            else:
                st[i:i + 1] = rng.choice(pieces)
        edited.append(bytes(st))
    accepted = 0
    for st in edited:
        found = _simple_names(st)
        if found is not None:
            accepted += 1
            assert found == _names_imported([st]), st
    assert 0.1 * len(edited) < accepted < 0.9 * len(edited)  # the edits make both kinds
    for _ in range(1500):  # blocks of edited and real statements: the whole block agrees too
        block = rng.sample(edited, rng.randint(1, 4)) + rng.sample(statements, rng.randint(0, 4))
        rng.shuffle(block)
        assert names_of_statements(block) == _names_imported(block), block


def test_the_summary_walker_is_node_visitors_walk(monkeypatch):
    sources = [_read(p) for p in _package_files("ray/serve/_private", "ray/_private", limit=250)]
    fast = [summary.summarize(s) for s in sources]
    monkeypatch.setattr(summary._FunctionWalker, "visit", ast.NodeVisitor.visit)
    monkeypatch.setattr(summary._FunctionWalker, "generic_visit", ast.NodeVisitor.generic_visit)
    assert [summary.summarize(s) for s in sources] == fast
    assert sum(len(s["functions"]) + len(s["classes"]) for s in fast if s) > 1000


CTX = multiprocessing.get_context("fork") if sys.platform.startswith("linux") else None


def _in_child(fn):
    """``fn()`` in a forked process (a pool worker's position); its return value comes back."""
    parent, child = CTX.Pipe(duplex=False)

    def target():
        child.send(fn())
        child.close()

    p = CTX.Process(target=target)
    p.start()
    got = parent.recv() if parent.poll(60) else "no answer"
    p.join(30)
    assert p.exitcode == 0
    return got


@pytest.fixture
def project(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .env import Env\n")
    (pkg / "env.py").write_text("import asyncio\nfrom concurrent.futures import ThreadPoolExecutor\n\n"
                                "class Env:\n    pass\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "user.py").write_text("from ..env import (\n    Env,  # the env\n)\nimport pkg.env as e\n")
    return tmp_path


@pytest.mark.skipif(CTX is None, reason="fork start method")
def test_the_second_worker_walks_no_project_again_and_reads_only_its_candidates(project, monkeypatch):
    import shutdown_lint.index.store as store

    index = ProjectIndex([str(project / "pkg")])
    index.settle()  # as the runner does before its pool forks
    index.shared = SharedLog(CTX.Lock(), size=1 << 20)
    env = str(project / "pkg" / "env.py")
    walks = []
    original = store.project_digest
    monkeypatch.setattr(store, "project_digest", lambda *a, **k: walks.append(1) or original(*a, **k))

    def search():
        reads = []
        plain = index.read
        index.read = lambda p: reads.append(p) or plain(p)
        deps: dict = {}
        found = index.importers(env, deps)
        searched = len(reads)
        lines = {f: index.import_lines(f) for f in index.project_files()}
        return found, sorted(deps.items()), lines, searched, len(walks)

    first = _in_child(search)
    second = _in_child(search)
    assert first[0] == second[0] == [str(project / "pkg" / "__init__.py"), str(project / "pkg" / "sub" / "user.py")]
    assert first[1] == second[1] and first[2] == second[2]  # the same stamp and statements
    assert first[3] == len(index.project_files()) and first[4] == 1  # the first read every file once, walked once
    assert 0 < second[3] < first[3] and second[4] == 0  # the second: the first one's table and stamp

