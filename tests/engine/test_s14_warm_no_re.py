"""Session 14, warm path: the command line's "mistyped command?" test reads the first argument
without ``re``.

Every run asks ``cli._unknown_command(argv[0])``; it imported ``re`` (with enum, functools and
the sre compiler: ~4 ms of a warm run's start in an installed wheel) to match
``[a-z][a-z0-9_-]*``. The same test is now a first-letter range and ``str.strip`` of the allowed
characters. Checked: the same answer as the pattern on generated words (letters of every case,
digits, ``_``, ``-``, separators, dots, spaces, line ends, non-ASCII letters and digits that
``str.isalnum`` would take), and no ``re`` imported by the command line's module for an option,
a path or a mistyped command (an interpreter without ``site``: the development install's import
hook imports ``re`` itself).
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys

from shutdown_lint.cli import _unknown_command

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PATTERN = re.compile(r"[a-z][a-z0-9_-]*")
ALPHABET = "abcxyzABCXYZ0189_-./\\ \t\n\r\x00\u00e9\u00df\u0131\u212a\u0660\u00b2\uff41"


def _words() -> list[str]:
    rng = random.Random(14)
    words = ["", "a", "z", "check", "chekc", "rule", "server", "map", "a-b_c9", "-a", "_a", "9a", "A", "aB",
             "a\n", "a ", " a", "a.py", "a/b", "\u00e9t\u00e9", "\uff41", "a\u0660", "a\u00b2", "--isolated",
             "ray/__init__.py", "src", "k\u212a"]
    for n in range(4000):
        words.append("".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 6))))
        words.append(rng.choice("abcxyz") + "".join(rng.choice("abz09_-" + ALPHABET[:14]) for _ in range(n % 7)))
    return words


def test_the_same_answer_as_the_pattern(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing here has one of these names
    for word in _words():
        if "\x00" in word:  # lexists raises on a NUL whatever the test: only the pattern's part is compared
            expected = PATTERN.fullmatch(word) is not None
            assert expected is False
            continue
        expected = PATTERN.fullmatch(word) is not None and not os.path.lexists(word)
        assert _unknown_command(word) is expected, repr(word)


def test_a_name_that_exists_is_no_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _unknown_command("chekc")
    (tmp_path / "chekc").write_text("")
    assert not _unknown_command("chekc")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    assert not _unknown_command("dangling")  # lexists: a broken link is a path


def _without_site(code: str, cwd) -> str:
    """``code``'s output in an interpreter without ``site`` (the development install's import hook
    imports ``re`` itself) that finds this checkout's package; fails on an error."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = REPO
    proc = subprocess.run([sys.executable, "-S", "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_no_re_imported_to_ask(tmp_path):
    out = _without_site("import sys\nfrom shutdown_lint import cli\nassert 're' not in sys.modules, 'before'\n"
                        "print([cli._unknown_command(w) for w in ('--isolated', 'ray/__init__.py', 'chekc', 'src')])\n"
                        "print('re' in sys.modules)\n", tmp_path)
    assert out.split("\n")[:2] == ["[False, False, True, True]", "False"], out


#: the modules a fully cached run imports (``test_cache_format``'s warm run: cli, its configuration,
#: settings, cache, discovery and the index's store)
WARM_MODULES = ("shutdown_lint.cli", "shutdown_lint.config", "shutdown_lint.settings", "shutdown_lint.hierarchy",
                "shutdown_lint.cache", "shutdown_lint.cache_key", "shutdown_lint.discovery",
                "shutdown_lint.index.hooks", "shutdown_lint.index.store", "shutdown_lint.diagnostic",
                "shutdown_lint.output", "shutdown_lint.interrupt", "shutdown_lint.record")


def test_the_warm_runs_modules_import_no_re(tmp_path):
    """``config`` (``requires-python``'s minor version) and ``settings`` (``target-version``)
    import ``re`` in the one function each that reads a pattern: at module level they loaded
    ``re`` and ``enum`` into every warm run (277 -> 265 M instructions of a warm ray+torch run,
    callgrind, WARM)."""
    out = _without_site(f"import sys\nfor m in {WARM_MODULES!r}:\n    __import__(m)\n"
                        "print(sorted(m for m in ('re', 'enum') if m in sys.modules))\n", tmp_path)
    assert out.strip() == "[]", out


def test_the_patterns_still_read_the_versions():
    from shutdown_lint import config, settings

    assert settings.parse_target("py311") == (3, 11)
    assert [config.target_from_requires_python(s) for s in (">=3.10", ">3.10", "~=3.11", "==3.12.1", None)] == [
        "py310", "py311", "py311", "py312", None]
