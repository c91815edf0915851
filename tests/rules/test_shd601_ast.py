"""SHD601 on ``ast`` (``_Ast``) gives what its libcst self gives, where the two trees differ:
the command argument in libcst's order (``*a``, ``**k``, ``f(k=1, *a)``, ``args=``), list and tuple
elements (``*"x"``), ``shlex.split`` with a keyword first, string texts where ``ast`` merges
implicit concatenations (plain pieces evaluated, f-string pieces raw: escapes, ``{{``, ``rf``),
bytes, the wrappers of a ``process_iter()`` call (positional, starred, keyword argument, a class
base, the callee of a call, the first or a later ``for`` of a comprehension, its ``if``), ``for``
and ``async for``, ``if``/``elif``/``else`` tests around kills, nested defs and classes, libcst's
``Name`` nodes (parameters, keywords, imports, ``except as``, ``global``) and ``SimpleString``
pieces (raw source, quotes stripped: prefixes, escapes, f-string texts and format specs are none),
``SIGKILL`` and ``9`` arguments, non-ASCII columns, CRLF/CR line ends.

Each case runs through ``lint_source`` with the engine switch on and off and must give the same
result (diagnostics without edits, deps, warnings) and the stated answer, once with the candidate
tiers passing every file through (the ast path taken: asserted), once with the tiers.
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.settings import Settings

from ast_both_ways import both_ways, every_file_a_candidate, key

_SETTINGS = Settings(selected=("SHD601",))
K, K9 = "kill", "kill9"  # a process_iter() finding, without / with SIGKILL

CASES = {
    # ---------------------------------------------------------------- commands
    "list": (["pkill -f vllm"], 'import subprocess\nsubprocess.run(["pkill", "-f", "vllm"])\n'),
    "tuple, SIGKILL": (["killall -9 python"], 'import os, subprocess\nsubprocess.call(("killall", "-9", "python"))\n'),
    "targeted": ([], 'import subprocess\nsubprocess.run(["pkill", "-P", "1"])\n'),
    "args keyword": (["pkill x"], 'import subprocess\nsubprocess.run(args=["pkill", "x"])\n'),
    "args keyword then star": ([], """
        import subprocess
        subprocess.run(args=["pkill", "k"], *"ls")
        """),
    "star first": (["pkill y"], 'import subprocess\nsubprocess.run(*["pkill", "y"])\n'),
    "double star first": ([], 'import subprocess\nsubprocess.run(**{"args": ["pkill"]})\n'),
    "starred string element": (["pkill vllm"], 'import subprocess\nsubprocess.run(["pkill", *"vllm"])\n'),
    "unknown element": (["pkill -f {}"], 'import subprocess\nsubprocess.run(["pkill", "-f", name])\n'),
    "bash -c": (["pkill -f a"], 'import subprocess\nsubprocess.run(["/bin/bash", "-c", "echo; pkill -f a"])\n'),
    "shell string": (["killall q"], 'import os\nos.system("killall q || true")\n'),
    "shell string concatenated": (["pkill -f vllm serve"], """
        import os
        os.system("pkill -f "
                  'vllm serve')
        """),
    "bytes": ([], 'import os\nos.system(b"pkill x")\n'),
    "f-string": (["killall python{}"], 'import os\nos.system(f"killall python{port}")\n'),
    "f-string with an escape (raw in libcst)": (["killall atb"], 'import os\nos.system(f"killall a\\tb")\n'),
    "f-string with braces": (["pkill {{x}}"], 'import os\nos.system(f"pkill {{x}}")\n'),
    "f-string and a plain piece": (["pkill -f anb {}"], """
        import os
        os.system("pkill -f a\\\\nb " f"{x}")
        """),
    "plain piece with an escape then an f-string": (["pkill -f a"], """
        import os
        os.system("pkill -f a\\nb" f"{x}")
        """),
    "rf-string": (["pkill d{}"], 'import os\nos.system(rf"pkill \\d{x}")\n'),
    "f-string with a format spec": (["pkill {}"], 'import os\nos.system(f"pkill {x:>{w}}")\n'),
    "f-string over two lines": (["pkill -f {} x"], """
        import os
        os.system(f"pkill -f {n}"
                  f" x")
        """),
    "shlex.split": (["pkill -f z"], 'import shlex, subprocess\nsubprocess.run(shlex.split("pkill -f z"))\n'),
    "shlex.split with a keyword": (["pkill k"], """
        import shlex, subprocess
        subprocess.run(shlex.split(s="pkill k"))
        """),
    "shlex.split of nothing": ([], 'import shlex, subprocess\nsubprocess.run(shlex.split())\n'),
    "pgrep and kill": (["kill $(pgrep ...)"], 'import os\nos.system("kill $(pgrep -f ray::)")\n'),
    "not a command call": ([], 'import subprocess\nprint(["pkill", "x"])\n'),
    "sudo timeout": (["pkill -f w"], 'import subprocess\nsubprocess.run(["sudo", "timeout", "5", "pkill", "-f", "w"])\n'),
    "non-ASCII": (["pkill é"], 'import os\né = 1; os.system("pkill é")\n'),
    # ---------------------------------------------------------------- psutil
    "loop, name test": ([K], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "x":
                p.terminate()
        """),
    "async for": ([K9], """
        import psutil
        async def f():
            async for p in psutil.process_iter():
                if "x" in p.cmdline():
                    os.kill(p.pid, 15)
        """),
    "loop, no name test": ([], """
        import psutil
        for p in psutil.process_iter():
            p.terminate()
        """),
    "loop, own tree": ([], """
        import os, psutil
        for p in psutil.process_iter():
            if p.name() == "x" and p.ppid() == os.getpid():
                p.kill()
        """),
    "loop, own tree as a string key": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == "x" and p.info['ppid'] == 1:
                p.kill()
        """),
    "own tree key with a prefix": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == "x" and p.info[u'ppid'] == 1:
                p.kill()
        """),
    "own tree key with an escape": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == "x" and p.info['pp\\x69d'] == 1:
                p.kill()
        """),
    "own tree key concatenated": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == "x" and p.info['pp' 'id'] == 1:
                p.kill()
        """),
    "own tree key in an f-string's text": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == f"ppid":
                p.kill()
        """),
    "own tree key as a piece beside an f-string": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == "ppid" f"{x}":
                p.kill()
        """),
    "own tree key inside an f-string's expression": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == f"{p.info['ppid']}":
                p.kill()
        """),
    "own tree word in a format spec": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == f"{x:ppid}":
                p.kill()
        """),
    "own tree word in a triple-quoted string": ([], '''
        import psutil
        for p in psutil.process_iter():
            if p.info['name'] == """ppid""":
                p.kill()
        '''),
    "own tree word as a substring only": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "my_ppid":
                p.kill()
        """),
    "own tree word as an import": ([], """
        import psutil
        for p in psutil.process_iter():
            from os import getpid
            if p.name() == "x":
                p.kill()
        """),
    "own tree word in a dotted import": ([], """
        import psutil
        for p in psutil.process_iter():
            import a.ppid.b
            if p.name() == "x":
                p.kill()
        """),
    "own tree word as a parameter": ([], """
        import psutil
        for p in psutil.process_iter():
            f = lambda ppid: 0
            if p.name() == "x":
                p.kill()
        """),
    "own tree word as a keyword": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "x" and g(ppid=1):
                p.kill()
        """),
    "own tree word in except as / global": ([], """
        import psutil
        def f():
            for p in psutil.process_iter():
                global ppid
                if p.name() == "x":
                    p.kill()
        """),
    "own tree word in a nested def's name": ([], """
        import psutil
        for p in psutil.process_iter():
            def getpid():
                pass
            if p.name() == "x":
                p.kill()
        """),
    "own tree word in the loop's else": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "x":
                p.kill()
        else:
            ppid = 1
        """),
    "name as a string": ([K9], """
        import psutil
        for p in psutil.process_iter(["name"]):
            if p.info["name"] == "x":
                p.kill()
        """),
    "name in an f-string's text only": ([], """
        import psutil
        for p in psutil.process_iter():
            if f"name" == x:
                p.kill()
        """),
    "name as a bytes literal": ([], """
        import psutil
        for p in psutil.process_iter():
            if b"name" == x:
                p.kill()
        """),
    "exe as an attribute": ([K], """
        import psutil
        for p in psutil.process_iter():
            if p.exe:
                p.send_signal(15)
        """),
    "elif and else": ([K9, K9], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "a":
                pass
            elif x:
                p.kill()
            else:
                p.kill()
        """),
    "kill in the if's test": ([K], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "a" and p.terminate():
                pass
        """),
    "kill in a nested def": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "a":
                def stop():
                    p.kill()
        """),
    "kill in a nested async def's decorator": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "a":
                @deco(p.kill())
                async def stop():
                    pass
        """),
    "kill in a nested class and lambda": ([K9, K9], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "a":
                class A:
                    p.kill()
                g = lambda: p.kill()
        """),
    "list() wrapper, no name test": ([], """
        import psutil
        for p in list(psutil.process_iter()):
            p.kill()
        """),
    "comprehension, the call alone in its if, a name in it": ([], """
        import psutil
        for p in [q for q in y if psutil.process_iter(["name"])]:
            p.kill()
        """),
    "kill after the name test": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "a":
                pass
            p.kill()
        """),
    "kill after a nested name test": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.name() == "a":
                if x:
                    pass
                p.kill()
        """),
    "own tree word inside an identifier": ([K9], """
        import psutil
        for p in psutil.process_iter():
            my_ppid = 1
            if p.name() == "x":
                p.kill()
        """),
    "own tree word inside a dotted import's part": ([K9], """
        import psutil
        for p in psutil.process_iter():
            import a.ppids
            if p.name() == "x":
                p.kill()
        """),
    "own tree key concatenated over lines": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.info["name"] == "x" and p.info[("pp"
                                                 "ppid")] == 1:
                p.kill()
        """),
    "own tree key concatenated over lines, indentation going back": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.info["name"] == "x" and p.info[("a"
                                                     "b"
                                                   "ppid")] == 1:
                p.kill()
        """),
    "own tree key, a quote inside": ([], """
        import psutil
        for p in psutil.process_iter():
            if p.info["name"] == "x" and p.info["ppid'"] == 1:
                p.kill()
        """),
    "own tree word in a raw string": ([K9], """
        import psutil
        for p in psutil.process_iter():
            if p.info["name"] == r"ppid":
                p.kill()
        """),
    "list() wrapper": ([K], """
        import os, psutil
        for p in list(psutil.process_iter()):
            if p.name().startswith("raylet"):
                os.kill(p.pid, 15)
        """),
    "sorted with a key": ([K9], """
        import psutil
        for p in sorted(psutil.process_iter(), key=len):
            if p.name():
                p.kill()
        """),
    "keyword wrapper": ([K9], """
        import psutil
        for p in f(it=psutil.process_iter()):
            if p.name():
                p.kill()
        """),
    "starred wrapper": ([K9], """
        import psutil
        for p in chain(*psutil.process_iter()):
            if p.name():
                p.kill()
        """),
    "starred in a list": ([], """
        import psutil
        for p in [*psutil.process_iter()]:
            if p.name():
                p.kill()
        """),
    "callee of a call": ([], """
        import psutil
        for p in psutil.process_iter()():
            if p.name():
                p.kill()
        """),
    "wrapper, own tree": ([], """
        import os, psutil
        for p in list(psutil.process_iter()):
            if p.name() and os.getpid():
                p.kill()
        """),
    "comprehension with a name test": ([K9], """
        import psutil
        for p in [q for q in psutil.process_iter() if q.name() == "x"]:
            p.kill()
        """),
    "generator with a name test": ([K9], """
        import psutil
        for p in (q for q in psutil.process_iter() if "x" in q.cmdline()):
            os.kill(p.pid, 9)
        """),
    "comprehension, later for": ([], """
        import psutil
        for p in [q for x in y for q in psutil.process_iter() if q.name() == "x"]:
            p.kill()
        """),
    "comprehension, no name test": ([], """
        import psutil
        for p in [q for q in psutil.process_iter() if q.pid]:
            p.kill()
        """),
    "comprehension, the call in its if": ([], """
        import psutil
        for p in [q for q in y if psutil.process_iter()]:
            if p.name():
                p.kill()
        """),
    "dict comprehension": ([K9], """
        import psutil
        for p in {q: 1 for q in psutil.process_iter() if q.name()}:
            p.kill()
        """),
    "process_iter as a class base": ([], """
        import psutil
        class A(psutil.process_iter()):
            pass
        """),
    "SIGKILL argument": ([K9], """
        import os, psutil, signal
        for p in psutil.process_iter():
            if p.name():
                os.kill(p.pid, signal.SIGKILL)
        """),
    "9 argument": ([K9], """
        import os, psutil
        for p in psutil.process_iter():
            if p.name():
                os.kill(p.pid, (9))
        """),
    "9 as a keyword and starred": ([K9, K], """
        import os, psutil
        for p in psutil.process_iter():
            if p.name():
                p.send_signal(sig=9)
                p.send_signal(*[9])
        """),
    "0x9 and 9.0": ([K, K], """
        import os, psutil
        for p in psutil.process_iter():
            if p.name():
                os.kill(p.pid, 0x9)
                os.kill(p.pid, 9.0)
        """),
    "os.killpg alias": ([K], """
        import psutil
        from os import killpg as kp
        for p in psutil.process_iter():
            if p.name():
                kp(p.pid, 15)
        """),
    "from psutil import process_iter": ([K9], """
        from psutil import process_iter as pi
        for p in pi():
            if p.name():
                p.kill()
        """),
    "two calls, one loop": ([K9, K9], """
        import psutil
        for p in zip(psutil.process_iter(), psutil.process_iter()):
            if p.name():
                p.kill()
        """),
}


_every_file_a_candidate = every_file_a_candidate
_key = key


def _both_ways(source: bytes, monkeypatch, ast_path: bool = True):
    return both_ways(source, monkeypatch, _SETTINGS, ast_path=ast_path)


def _answer(result) -> list:
    out = []
    for d in result.diagnostics:
        assert d.code == "SHD601" and d.fix is None
        if d.message.startswith("process killed"):
            out.append(K9 if "with SIGKILL" in d.message else K)
        else:
            out.append(d.message.split("`")[1])
    return out


def _source(name: str, newline: str = "\n") -> bytes:
    return textwrap.dedent(CASES[name][1]).replace("\n", newline).encode()


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst(name, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    assert _answer(_both_ways(_source(name), monkeypatch)) == CASES[name][0]


@pytest.mark.parametrize("name", list(CASES))
def test_ast_equals_libcst_with_the_tiers(name, monkeypatch):
    """The same cases with the candidate tiers on (a file they rule out takes neither engine)."""
    _both_ways(_source(name), monkeypatch, ast_path=False)


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["shell string concatenated", "f-string over two lines", "own tree word in a triple-quoted string",
                                  "own tree key concatenated", "elif and else",
                                  "own tree key concatenated over lines"])
def test_line_ends(name, newline, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    assert _answer(_both_ways(_source(name, newline), monkeypatch)) == CASES[name][0]


def test_columns(monkeypatch):
    _every_file_a_candidate(monkeypatch)
    (d,) = _both_ways('import os\né = "ü"; os.system("pkill x")\n'.encode(), monkeypatch).diagnostics
    assert (d.line, d.column) == (2, 10)
