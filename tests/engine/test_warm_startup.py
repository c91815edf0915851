"""The warm path's start-up shortcuts change nothing a user sees: argparse's texts found once per
parser (``cli._OnceGettext``) translate as ``gettext`` does, and ``interrupt.handling`` does without
``threading`` (each run in a fresh interpreter: a real subprocess)."""

import struct
import subprocess
import sys
import textwrap


def _mo(path, pairs: dict) -> None:
    """A GNU message catalogue (the .mo format) holding ``pairs``."""
    keys = sorted(pairs)
    ids, strs = b"", b""
    offsets = []
    for k in keys:
        offsets.append((len(ids), len(k.encode()), len(strs), len(pairs[k].encode())))
        ids += k.encode() + b"\0"
        strs += pairs[k].encode() + b"\0"
    n = len(keys)
    start_ids = 7 * 4 + 16 * n
    start_strs = start_ids + len(ids)
    table = []
    for o1, l1, o2, l2 in offsets:
        table += [l1, start_ids + o1]
    for o1, l1, o2, l2 in offsets:
        table += [l2, start_strs + o2]
    head = struct.pack("Iiiiiii", 0x950412DE, 0, n, 7 * 4, 7 * 4 + 8 * n, 0, 0)
    path.write_bytes(head + struct.pack(f"{4 * n}i", *table) + ids + strs)


_SCRIPT = """
import argparse, gettext, sys
if sys.argv[1] != "-":
    gettext.bindtextdomain("messages", sys.argv[1])
from shutdown_lint import cli
new = cli.build_parser()
assert argparse._ is gettext.gettext  # put back
old = cli._build_parser()  # argparse's own gettext throughout
for p in (new, old):
    sys.stdout.write(p.format_help() + "\\n----\\n")
"""


def _helps(arg: str, lang: str) -> list[str]:
    env = {"LANGUAGE": lang, "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(_SCRIPT), arg], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split("\n----\n")[:2]


def test_help_translated_as_gettext_does(tmp_path):
    d = tmp_path / "de" / "LC_MESSAGES"
    d.mkdir(parents=True)
    _mo(d / "messages.mo", {"options": "Optionen", "show this help message and exit": "Hilfe zeigen",
                            "positional arguments": "Positionsargumente"})
    new, old = _helps(str(tmp_path), "de")
    assert new == old
    assert "Optionen:" in new and "Hilfe zeigen" in new and "Positionsargumente:" in new
    new, old = _helps(str(tmp_path), "fr")  # no catalogue for it: the texts as written
    assert new == old and "options:" in new


def test_help_without_catalogue():
    new, old = _helps("-", "C")
    assert new == old and "show this help message and exit" in new


_THREAD = """
import _thread, signal, sys, time
from shutdown_lint import interrupt
assert "threading" not in sys.modules
out = []
def run():
    try:
        with interrupt.handling() as h:
            out.append((h.state, dict(h.saved), signal.getsignal(signal.SIGTERM)))
    except BaseException as e:
        out.append(repr(e))
_thread.start_new_thread(run, ())
for _ in range(1000):
    if out:
        break
    time.sleep(0.01)
assert out == [(None, {}, signal.SIG_DFL)], out
with interrupt.handling() as h:
    assert signal.getsignal(signal.SIGTERM) is interrupt._handler and len(h.saved) == 2
assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
print("ok", "threading" in sys.modules)
"""


def test_handling_without_threading_in_a_bare_thread():
    out = subprocess.run([sys.executable, "-c", _THREAD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "False"]


# ------------------------------------------------------------------ the command line without argparse

def test_fast_options_are_the_parsers():
    """``cli._FAST_OPTIONS`` holds every option of ``build_parser`` but help and --version, with its
    dest and action."""
    import argparse

    from shutdown_lint import cli
    from shutdown_lint.output import FORMATS

    kinds = {argparse._StoreTrueAction: "true", argparse._StoreAction: "store", argparse._AppendAction: "append"}
    want = {}
    for a in cli.build_parser()._actions:
        if not a.option_strings or a.dest in ("help", "version"):
            continue
        for opt in a.option_strings:
            if isinstance(a, argparse.BooleanOptionalAction):
                kind = "no" if opt.startswith("--no-") else "yes"
                assert a.default is False
            elif a.type is int:
                kind = "int"
                assert a.default is None
            elif a.choices is not None:
                kind = "format"
                assert tuple(a.choices) == tuple(FORMATS) and a.default is None
            else:
                kind = kinds[type(a)]
                assert a.default is (False if kind == "true" else None) and a.type is None and a.choices is None
            want[opt] = (a.dest, kind)
    assert cli._FAST_OPTIONS == want


_TOKENS = ["a.py", "pkg", "", "x y", "-", "--", "-j", "--jobs", "2", "0", "-1", "x", "+3", "--fix", "--no-fix",
           "--unsafe-fixes", "--select", "SHD201", "--select=SHD2", "--sel", "--ignore", "--output-format", "json",
           "concise", "bogus", "-q", "--quiet", "--isolated", "--cache-dir", "--help", "-h", "--version", "-j2",
           "--exit-zero", "--per-file-ignores", "t/*:SHD1", "--no-prefilter", "--extend-exclude", "--watch", "-qq"]


def test_fast_parse_is_argparse():
    """Wherever ``_parse_fast`` answers, ``_parse`` (argparse) answers the same; where it fails, it does not answer."""
    import contextlib
    import io
    import random

    from shutdown_lint.cli import _fast_parse, _parse, _parse_fast, build_parser

    parser = build_parser()
    rnd = random.Random(30)
    answered = 0
    for k in range(4000):
        argv = [rnd.choice(_TOKENS) for _ in range(rnd.randrange(0, 8))]
        if k % 10 == 0:
            argv += [f"m{i}.py" for i in range(70)]  # a long trailing file list (``_parse``)
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            try:
                expected = vars(_parse(parser, list(argv)))
            except SystemExit as e:
                expected = ("exit", e.code)
        got = _parse_fast(list(argv))
        if got is not None:
            answered += 1
            assert vars(got) == expected, argv  # (``_parse``: what the command ran before, argparse's answer
            # for a short command line; a long file list's head only, see ``cli._parse``)
        if len(argv) < 10:
            assert _fast_parse(list(argv)) == got
    assert answered > 300


def test_usage_errors_and_help_unchanged():
    """Through the command: help and a usage error print argparse's text (a real subprocess)."""
    for argv, code, where in ((["--help"], 0, "usage: shutdown-lint [-h]"), (["-j", "x"], 2, "argument -j/--jobs: invalid int"),
                              (["--output-format", "nope"], 2, "invalid choice: 'nope'"),
                              (["a.py", "--fix", "b.py"], 2, "unrecognized arguments: b.py")):
        out = subprocess.run([sys.executable, "-m", "shutdown_lint", *argv], capture_output=True, text=True, timeout=60)
        assert out.returncode == code and where in (out.stdout + out.stderr), (argv, out.stdout, out.stderr)
