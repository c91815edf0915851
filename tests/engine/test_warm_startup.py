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
