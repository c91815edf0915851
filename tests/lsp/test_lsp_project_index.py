"""The language server lints as the command line does, project index included (issue 30).

pygls' own LSP client talks to ``shutdown-lint server`` in a subprocess, over a copy of
``tests/data/projects/crossmodule`` (findings that exist only through other modules: a base
class elsewhere that owns a container, a teardown in the module that imports this one). For
each buffer text the published diagnostics must equal what
``shutdown-lint --stdin-filename FILE -`` prints for the same text: on open, after edits
(the buffer no longer the file on disk), and after another module is changed and saved.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from test_lsp_server import _Session as _ServerSession  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "tests" / "data" / "projects" / "crossmodule"
RULES = ["SHD101", "SHD102", "SHD502", "SHD503"]
pytestmark = pytest.mark.timeout(180)

FINALLY = "        try:\n            return await box.run()\n        finally:\n            await box.delete()\n"


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    dst = tmp_path / "crossmodule"
    shutil.copytree(PROJECT, dst)
    (dst / "pyproject.toml").write_text(f"[tool.shutdown-lint]\nselect = {json.dumps(RULES)}\n")
    return dst


def _cli(project: Path, rel: str, text: str) -> list[tuple]:
    """(code, line, column, message) the command line reports for ``text`` as the file ``rel``."""
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--output-format", "json", "--no-cache",
                           "--stdin-filename", rel, "-"], input=text.encode(), cwd=project, env=_env(),
                          capture_output=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((d["code"], d["line"], d["column"], d["message"]) for d in json.loads(proc.stdout))


def _lsp(diags: list[types.Diagnostic]) -> list[tuple]:
    out = []
    for d in diags:
        message = d.message
        for hint in (" (safe fix available)", " (unsafe fix available)"):
            message = message.removesuffix(hint)
        out.append((d.code, d.range.start.line + 1, d.range.start.character + 1, message))
    return sorted(out)


class _Session(_ServerSession):
    """test_lsp_server's client session, with the index left on and documents opened and edited."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, env=_env())

    def open(self, path: Path, text: str) -> str:
        uri = path.as_uri()
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri, language_id="python", version=1, text=text)))
        return uri

    def change(self, uri: str, version: int, text: str) -> None:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def test_open_and_edits_give_the_command_lines_findings(project: Path) -> None:
    rel = "src/rollouts/generate.py"
    path = project / rel
    text = path.read_text()
    # the buffer edited in ways that move and change findings (not saved: the disk keeps the original)
    edits = ["import os\n\n" + text,  # every finding one line down... two lines down
             text.replace("async def", "async  def", 1),
             "import os\n\n" + text + "\n\nasync def extra():\n    pass\n"]

    async def scenario() -> None:
        s = _Session(project)
        await s.start()
        try:
            uri = s.open(path, text)
            got = _lsp(await s.diagnostics(uri, 1))
            assert got == _cli(project, rel, text)
            # the index's findings are there: the base class and the agent live in other modules
            assert sum(1 for g in got if g[0] == "SHD101") == 3, got
            for version, new in enumerate(edits, start=2):
                s.change(uri, version, new)
                assert _lsp(await s.diagnostics(uri, version)) == _cli(project, rel, new)
        finally:
            await s.stop()

    asyncio.run(scenario())


def test_quick_changes_are_linted_once_more_with_the_last_text(project: Path) -> None:
    rel = "src/rollouts/generate.py"
    path = project / rel
    text = path.read_text()

    async def scenario() -> None:
        s = _Session(project)
        await s.start()
        try:
            uri = s.open(path, text)
            await s.diagnostics(uri, 1)
            for version in range(2, 8):  # faster than a lint: coalesced
                s.change(uri, version, "\n" * version + text)
            last = await s.diagnostics(uri, 7)
            assert _lsp(last) == _cli(project, rel, "\n" * 7 + text)
            await asyncio.sleep(1.0)
            assert s.published.empty()  # nothing after the last version's diagnostics
        finally:
            await s.stop()

    asyncio.run(scenario())


def test_saving_another_module_relints_its_dependents(project: Path) -> None:
    rel = "src/rollouts/generate.py"
    path = project / rel
    base = project / "src/rollouts/envs/base.py"
    text, base_text = path.read_text(), base.read_text()
    assert FINALLY in base_text

    async def scenario() -> None:
        s = _Session(project)
        await s.start()
        try:
            uri = s.open(path, text)
            before = _lsp(await s.diagnostics(uri, 1))
            assert ("SHD101", 12) in {g[:2] for g in before}
            # the base class loses its finally, in the editor, and is saved
            base_uri = s.open(base, base_text)
            await s.diagnostics(base_uri, 1)
            new_base = base_text.replace(FINALLY, "        return await box.run()\n")
            s.change(base_uri, 2, new_base)
            base.write_text(new_base)
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=base_uri)))
            after = _lsp(await s.diagnostics(uri))  # generate.py is linted again, with the new index
            assert ("SHD101", 12) not in {g[:2] for g in after}
            assert after == _cli(project, rel, text)
        finally:
            await s.stop()

    asyncio.run(scenario())
