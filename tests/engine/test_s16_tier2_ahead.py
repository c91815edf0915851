"""Tier-2 verdicts judged ahead on the project index's parse (``shutdown_lint/prefilter/ahead.py``).

A project search that summarises a file of the run before the run lints it parses that file; its
candidate tiers then run on that parse, and a file they rule out is not parsed again when the run
reaches it. The answer must be the one the file's own tier 2 gives: the same findings, and a file
whose bytes or rules differ from what was judged is judged again. Real files, the real command.
"""

from __future__ import annotations

import hashlib
import os
import textwrap

import pytest

from shutdown_lint import analyzer, registry
from shutdown_lint.cli import main
from shutdown_lint.index.summary import summarize
from shutdown_lint.prefilter import ahead, ast_tree, select
from shutdown_lint.runner import KEEP_TREE_LINES, Job
from shutdown_lint.settings import Settings

from .conftest import write

# a module-level executor: SHD503 searches the modules that import this one for its shutdown
POOL = textwrap.dedent(
    """\
    from concurrent.futures import ThreadPoolExecutor

    POOL = ThreadPoolExecutor(max_workers=4)


    def submit(job):
        return POOL.submit(job)
    """
)
# an importer the search summarises (it spells `shutdown` and has an `except` block) and that
# reaches tier 2 for SHD502 only, which rules it out: its init call is destroyed in a `finally`
TRAIN = textwrap.dedent(
    """\
    import torch.distributed as dist

    from pkg import a_pool


    def main():
        dist.init_process_group("gloo")
        try:
            a_pool.submit(print).result()
        finally:
            dist.destroy_process_group()


    def stop():
        try:
            pass
        except Exception:
            a_pool.POOL.shutdown(wait=False)
    """
)


@pytest.fixture
def project(tmp_path, monkeypatch):
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "a_pool.py", POOL)
    write(tmp_path / "pkg" / "b_train.py", TRAIN)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def tier2_parses(monkeypatch):
    """The sha1 of every text the candidate tier parses (the real ``parse``, recorded). The trees
    an earlier test left are dropped: the index would reuse one rather than parse."""
    ast_tree.release_trees(0)
    seen: list[str] = []
    real = ast_tree.parse

    def recording(source):
        seen.append(hashlib.sha1(source).hexdigest())
        return real(source)

    monkeypatch.setattr(ast_tree, "parse", recording)
    return seen


def _sha(path) -> str:
    return hashlib.sha1(open(path, "rb").read()).hexdigest()


def _lint(capsys, *args) -> tuple[int, str]:
    code = main(["--no-cache", "--output-format", "json", *args])
    return code, capsys.readouterr().out


def test_a_file_summarised_before_its_lint_is_ruled_out_on_that_parse(project, capsys, tier2_parses, monkeypatch):
    code, out = _lint(capsys, "-j1", "pkg")
    assert ahead.last_run == {"judged": 1, "ruled_out": 1, "used": 1}
    assert _sha("pkg/b_train.py") not in tier2_parses  # never parsed by the candidate tier
    assert _sha("pkg/a_pool.py") in tier2_parses

    # without it: the same result, and the importer is parsed by its own tier 2
    tier2_parses.clear()
    monkeypatch.setattr(ahead, "enabled", False)
    assert _lint(capsys, "-j1", "pkg") == (code, out)
    assert _sha("pkg/b_train.py") in tier2_parses


def test_the_verdict_holds_only_for_the_bytes_and_the_settings_it_judged(project, tier2_parses):
    settings = Settings(tuple(registry.rules_by_code()))
    by_code = registry.rules_by_code()
    path = str(project / "pkg" / "b_train.py")
    data = open(path, "rb").read()
    ahead.begin([Job("pkg/b_train.py", path)], settings)
    try:
        summarize(data, path)  # the project index's parse of it
        # other settings (another group of the run's files): not this verdict
        assert ahead.known("pkg/b_train.py", data, Settings(settings.selected)) is None
        assert ahead.known("pkg/b_train.py", data, settings) == ([by_code["SHD502"]], analyzer.STAGE_TREE)
        with select.disabled(tree_only=True):  # the tiers switched off: no verdict of theirs holds
            assert ahead.known("pkg/b_train.py", data, settings) is None
        assert analyzer.select_rules(data, "pkg/b_train.py", settings) == ([], analyzer.STAGE_TREE)
        assert tier2_parses == []
        # other bytes (the destroy gone from the `finally`): judged on their own parse, and kept
        changed = data.replace(b"        dist.destroy_process_group()\n", b"        pass\n")
        rules, stage = analyzer.select_rules(changed, "pkg/b_train.py", settings)
        assert [r.code for r in rules] == ["SHD502"] and stage == analyzer.STAGE_LIBCST
        assert tier2_parses == [hashlib.sha1(changed).hexdigest()]
        # rules asked for by the caller (not the run's): the tiers run on them
        assert analyzer.select_rules(data, "pkg/b_train.py", settings, [by_code["SHD502"]]) == ([], analyzer.STAGE_TREE)
        assert tier2_parses[-1] == hashlib.sha1(data).hexdigest()
    finally:
        ahead.end()


def test_a_file_the_text_tiers_rule_out_is_remembered_so(project, tier2_parses):
    settings = Settings(tuple(registry.rules_by_code()))
    path = str(write(project / "pkg" / "c_util.py", "from pkg import a_pool\n\n\ndef size():\n    return 4\n"))
    data = open(path, "rb").read()
    ahead.begin([Job("pkg/c_util.py", path)], settings)
    try:
        summarize(data, path)
        assert ahead.known("pkg/c_util.py", data, settings) == ([], analyzer.STAGE_TEXT)
        assert ahead.known("pkg/c_util.py", data + b"\nimport signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n",
                           settings) is None
    finally:
        ahead.end()
    assert ahead.last_run == {"judged": 1, "ruled_out": 0, "used": 1}


def test_a_file_whose_tier_2_reads_the_project_index_has_its_tier_2_at_its_lint(project, capsys, tier2_parses):
    # SHD301's condition may ask the index about another module's return annotation: what it
    # reads is the file's own dependency, recorded by its own lint
    write(project / "pkg" / "b_train.py", TRAIN + textwrap.dedent(
        """\


        async def poll():
            await asyncio.sleep(0)
        """))
    _lint(capsys, "-j1", "pkg")
    # judged ahead as far as tier 1 (its lint took the rules from there), not tier 2
    assert ahead.last_run == {"judged": 1, "ruled_out": 0, "used": 1}
    assert _sha("pkg/b_train.py") in tier2_parses


def test_a_file_the_run_reached_already_is_not_judged(project, capsys, tier2_parses):
    # b first in the run: linted before a's search summarises it, so nothing is judged ahead (b
    # is longer than the trees a run keeps after a file, so the search parses it again)
    os.rename("pkg/b_train.py", "pkg/_b_train.py")
    pad = "".join(f"\n\ndef pad{i}():\n    return {i}\n" for i in range(KEEP_TREE_LINES // 4 + 1))
    write(project / "pkg" / "_b_train.py", TRAIN + pad)
    _lint(capsys, "-j1", "pkg")
    assert ahead.last_run == {"judged": 0, "ruled_out": 0, "used": 0}
    assert _sha("pkg/_b_train.py") in tier2_parses


def test_a_pool_run_judges_nothing_ahead_and_gives_the_serial_result(project, capsys, tier2_parses, monkeypatch):
    # enough files for a pool. (A pool lints the largest files first, so a search meets modules
    # linted already, by this worker or another one it cannot see: judging ahead there cost more
    # than it saved, see prefilter/ahead.py)
    write(project / "pkg" / "a_pool.py", POOL + "".join(f"\n\ndef pad{i}():\n    return {i}\n" for i in range(200)))
    for i in range(10):
        write(project / "pkg" / f"c{i}.py", "".join(f"X{j} = {j}\n" for j in range(60 + i)))
    serial = _lint(capsys, "-j1", "pkg")
    assert ahead.last_run == {"judged": 1, "ruled_out": 1, "used": 1}
    ahead.last_run = None
    assert _lint(capsys, "-j2", "pkg") == serial
    assert ahead.last_run is None  # no serial run: nothing judged
    monkeypatch.setattr(ahead, "enabled", False)
    assert _lint(capsys, "-j1", "pkg") == serial
