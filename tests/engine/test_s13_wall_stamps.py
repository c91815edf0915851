"""A run without a cache gives its outcomes no stamps (``runner.Mode.stamps``): nothing stores
them, and the files' contents are not hashed for them (ray+torch: 75 MB, 0.046 CPU-s)."""

from __future__ import annotations

import os
from pathlib import Path

from shutdown_lint import cli
from shutdown_lint.cache import sha256
from shutdown_lint.registry import all_rules
from shutdown_lint.runner import Job, Mode, process_file
from shutdown_lint.settings import Settings

SOURCE = ("import asyncio\nimport sys\n\nasync def main():\n    try:\n        await asyncio.sleep(1)\n"
          "    except asyncio.CancelledError:\n        pass\n\nasync def work():\n    sys.exit(1)\n\n"
          "asyncio.run(main())\n")  # SHD104, SHD201 and SHD402, two of them with fixes


def _settings() -> Settings:
    return Settings(selected=tuple(sorted(r.code for r in all_rules())))


def test_an_outcome_has_a_stamp_only_when_stamps_are_asked_for(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(SOURCE)
    job = Job("m.py", str(f))
    stamped = process_file(job, _settings(), Mode())
    bare = process_file(job, _settings(), Mode(stamps=False))
    st = os.stat(f)
    assert stamped.stamp == (st.st_mtime_ns, st.st_size, sha256(f.read_bytes()))
    assert bare.stamp is None
    assert bare.result.to_dict() == stamped.result.to_dict() and stamped.result.diagnostics


def test_a_cached_entry_is_still_served_by_its_hash(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(SOURCE)
    known = {"path": "m.py", "diagnostics": [], "stage": "words"}
    job = Job("m.py", str(f), known=(sha256(f.read_bytes()), known))
    out = process_file(job, _settings(), Mode(stamps=False))
    assert out.result.to_dict() == process_file(job, _settings(), Mode()).result.to_dict()
    assert not out.result.diagnostics  # the entry served, not a new lint


def test_a_fix_written_without_stamps(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text(SOURCE)
    g = tmp_path / "n.py"
    g.write_text(SOURCE)
    bare = process_file(Job("m.py", str(f)), _settings(), Mode(fix=True, unsafe=True, stamps=False))
    stamped = process_file(Job("n.py", str(g)), _settings(), Mode(fix=True, unsafe=True))
    assert bare.result.written and stamped.result.written
    assert f.read_bytes() == g.read_bytes() != SOURCE.encode()
    assert bare.stamp is None
    assert stamped.stamp is not None and stamped.stamp[2] == sha256(g.read_bytes())


def test_the_command_line_asks_for_stamps_only_with_a_cache(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    monkeypatch.chdir(tmp_path)
    seen = []
    real = cli._run_files

    def spy(args, resolver, mode, *rest, **kw):  # the real run goes on
        seen.append(mode.runner().stamps)
        return real(args, resolver, mode, *rest, **kw)

    monkeypatch.setattr(cli, "_run_files", spy)
    assert cli.main(["--no-cache", "-q", "--exit-zero", "m.py"]) == 0
    assert cli.main(["--cache-dir", str(tmp_path / ".c"), "-q", "--exit-zero", "m.py"]) == 0
    assert seen == [False, True]
    assert os.listdir(tmp_path / ".c")  # the cached run stored its results
