"""The language server's cached results are exact for the searches of a module's importers:
a module that comes to import an open module and shuts its executor down (saved from the
editor, or created outside it and reported by the client's file watcher) takes the open
module's SHD503 finding away, though that module's text and its cached result are unchanged.

A real ``shutdown-lint server`` in a subprocess, driven by pygls' client (tests/lsp).
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lsp"))

from lsprotocol import types  # noqa: E402
from test_lsp_server import _Session  # noqa: E402

from shutdown_lint.cache import read_index  # noqa: E402

pytestmark = pytest.mark.timeout(180)

POOL = ("from concurrent.futures import ThreadPoolExecutor\n\nPOOL = ThreadPoolExecutor(4)\n\n\n"
        "def submit(fn):\n    return POOL.submit(fn)\n")
SHUTS = "import a\n\n\ndef close():\n    a.POOL.shutdown(wait=True)\n"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    return env


def _project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.shutdown-lint]\nselect = ["SHD503"]\n')
    (tmp_path / "a.py").write_text(POOL)
    return tmp_path


async def _open_and_wait_stored(s: _Session, path: Path) -> tuple[str, list]:
    """Open ``path`` (its text as on disk) and wait until its result is in the cache index: the
    next lint of the unchanged text is served from there."""
    uri = path.as_uri()
    s.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri, language_id="python", version=1, text=path.read_text())))
    diags = await s.diagnostics(uri, 1)
    for _ in range(200):
        index = list((path.parent / ".shutdown_lint_cache").glob("results-*.bin"))
        if len(index) == 1 and str(path) in read_index(str(index[0])):
            break
        await asyncio.sleep(0.05)
    else:
        raise AssertionError("the result was not stored")
    return uri, diags


def test_a_new_importer_saved_in_the_editor_takes_the_finding_away(tmp_path: Path) -> None:
    root = _project(tmp_path)

    async def scenario() -> None:
        s = _Session(root, env=_env())
        await s.start()
        try:
            uri, diags = await _open_and_wait_stored(s, root / "a.py")
            assert [d.code for d in diags] == ["SHD503"]
            b = root / "b.py"
            b.write_text(SHUTS)
            b_uri = b.as_uri()
            s.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=b_uri, language_id="python", version=1, text=SHUTS)))
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=b_uri)))
            for _ in range(5):  # a.py is linted again after the save (b.py's diagnostics come too)
                if await s.diagnostics(uri) == []:
                    break
            else:
                raise AssertionError("a.py kept its finding")
        finally:
            await s.stop()

    asyncio.run(scenario())


def test_an_importer_created_outside_the_editor_takes_the_finding_away(tmp_path: Path) -> None:
    root = _project(tmp_path)

    async def scenario() -> None:
        s = _Session(root, env=_env())
        await s.start()
        try:
            uri, diags = await _open_and_wait_stored(s, root / "a.py")
            assert [d.code for d in diags] == ["SHD503"]
            b = root / "b.py"
            b.write_text(SHUTS)
            s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
                types.FileEvent(uri=b.as_uri(), type=types.FileChangeType.Created)]))
            assert await s.diagnostics(uri) == []
            # and the removal brings it back
            b.unlink()
            s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
                types.FileEvent(uri=b.as_uri(), type=types.FileChangeType.Deleted)]))
            assert [d.code for d in await s.diagnostics(uri)] == ["SHD503"]
        finally:
            await s.stop()

    asyncio.run(scenario())
