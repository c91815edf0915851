"""``shutdown-lint server`` end to end: pygls' own LSP client talks to the server in a subprocess.

Initialize, open a hazardous file, receive the diagnostic, hover its code, apply the quick fix and
see the diagnostic go; the fix-all source action; the server's answers to malformed messages
(raw JSON-RPC frames on its stdin) and that it keeps serving after them.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pygls = pytest.importorskip("pygls")  # in the test extra (via the lsp extra)

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

from shutdown_lint.cache import read_index  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)

# SHD201 (sys.exit in a thread target ends only that thread), with a safe fix
HAZARD = textwrap.dedent(
    """\
    import sys
    import threading


    def pump():
        sys.exit(3)


    threading.Thread(target=pump).start()
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP text edits (non-overlapping) to ``text``."""
    lines = text.splitlines(keepends=True)

    def offset(p: types.Position) -> int:
        return sum(len(x) for x in lines[:p.line]) + p.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(e.range.start)] + e.new_text + text[offset(e.range.end):]
    return text


class _Session:
    def __init__(self, root: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = env if env is not None else _env()
        self.client = LanguageClient("shutdown-lint-test", "1")
        self.published: asyncio.Queue = asyncio.Queue()

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
            self.published.put_nowait(params)

        self.messages: list[str] = []

        @self.client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            self.messages.append(params.message)

    async def start(self) -> None:
        await self.client.start_io(sys.executable, "-m", "shutdown_lint", "server", env=self.env, cwd=str(self.root))
        result = await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=self.root.as_uri(), process_id=os.getpid())), 60)
        assert result.server_info.name == "shutdown-lint"
        self.client.initialized(types.InitializedParams())

    async def diagnostics(self, uri: str, version: int | None = None) -> list[types.Diagnostic]:
        """The next diagnostics published for ``uri`` (for ``version``, when given)."""
        while True:
            params = await asyncio.wait_for(self.published.get(), 60)
            if params.uri == uri and (version is None or params.version == version):
                return list(params.diagnostics)

    async def stop(self) -> None:
        await asyncio.wait_for(self.client.shutdown_async(None), 30)
        self.client.exit(None)
        await asyncio.wait_for(self.client.stop(), 30)


def test_open_diagnose_hover_fix_and_diagnostic_goes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.shutdown-lint]\nselect = ["SHD201", "SHD301"]\n')
    bad = tmp_path / "bad.py"
    bad.write_text(HAZARD)
    uri = bad.as_uri()

    async def scenario() -> None:
        s = _Session(tmp_path)
        await s.start()
        try:
            s.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=HAZARD)))
            diags = await s.diagnostics(uri, 1)
            assert [(d.code, d.source, d.range.start.line) for d in diags] == [("SHD201", "shutdown-lint", 5)]
            diag = diags[0]
            assert "safe fix available" in diag.message
            # the buffer is what is on disk: its result goes into the command line's cache (just
            # after it is published)
            for _ in range(100):
                index = list((tmp_path / ".shutdown_lint_cache").glob("results-*.bin"))
                if len(index) == 1 and str(bad) in read_index(str(index[0])):
                    break
                await asyncio.sleep(0.1)
            assert len(index) == 1 and str(bad) in read_index(str(index[0]))

            hover = await s.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=diag.range.start))
            assert hover is not None and "# SHD201" in hover.contents.value and "## What it does" in hover.contents.value

            actions = await s.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
                context=types.CodeActionContext(diagnostics=[diag])))
            quick = [a for a in actions if a.kind == types.CodeActionKind.QuickFix]
            assert len(quick) == 1 and quick[0].is_preferred and quick[0].title.startswith("Fix SHD201")
            assert any(a.kind == "source.fixAll.shutdown-lint" for a in actions)
            fixed = _apply(HAZARD, quick[0].edit.changes[uri])
            assert "sys.exit(3)" not in fixed

            # the editor applies the edit: the diagnostic goes
            s.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
            assert await s.diagnostics(uri, 2) == []

            # typing the hazard back: it returns; several quick changes give one lint of the last text
            for v in (3, 4, 5):
                s.client.text_document_did_change(types.DidChangeTextDocumentParams(
                    text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=v),
                    content_changes=[types.TextDocumentContentChangeWholeDocument(text=HAZARD)]))
            assert [d.code for d in await s.diagnostics(uri, 5)] == ["SHD201"]
            assert s.published.empty()  # versions 3 and 4 were never linted

            # source action only: fix all safe findings
            only = await s.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
                context=types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
            assert [a.kind for a in only] == ["source.fixAll.shutdown-lint"]
            assert "sys.exit(3)" not in _apply(HAZARD, only[0].edit.changes[uri])

            # an unsafe fix is offered, labelled, never preferred, and not part of "fix all safe"
            blocking = "import time\n\n\nasync def poll():\n    time.sleep(1)\n"
            other_uri = (tmp_path / "aio.py").as_uri()
            s.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=other_uri, language_id="python", version=1, text=blocking)))
            [unsafe_diag] = await s.diagnostics(other_uri, 1)
            assert unsafe_diag.code == "SHD301" and "unsafe fix available" in unsafe_diag.message
            unsafe = await s.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=other_uri), range=unsafe_diag.range,
                context=types.CodeActionContext(diagnostics=[unsafe_diag])))
            assert [(a.kind, bool(a.is_preferred)) for a in unsafe] == [(types.CodeActionKind.QuickFix, False)]
            assert "(unsafe fix, review the change)" in unsafe[0].title
            assert "await asyncio.sleep(1)" in _apply(blocking, unsafe[0].edit.changes[other_uri])

            # hover on a code in a suppression comment
            s.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=(tmp_path / "other.py").as_uri(), language_id="python", version=1,
                text="x = 1  # noqa: SHD301\n")))
            page = await s.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=(tmp_path / "other.py").as_uri()),
                position=types.Position(line=0, character=17)))
            assert page is not None and "# SHD301" in page.contents.value
        finally:
            await s.stop()

    asyncio.run(scenario())


def test_nearest_config_and_exclude_apply_to_open_documents(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.shutdown-lint]\nexclude = ["gen/"]\n')
    (tmp_path / "quiet").mkdir()
    (tmp_path / "quiet" / "shutdown-lint.toml").write_text('ignore = ["SHD201"]\n')
    (tmp_path / "gen").mkdir()
    docs = {name: (tmp_path / name).as_uri() for name in ("loud.py", "quiet/q.py", "gen/g.py")}

    async def scenario() -> None:
        s = _Session(tmp_path)
        await s.start()
        try:
            got = {}
            for name, uri in docs.items():
                s.client.text_document_did_open(types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=HAZARD)))
                got[name] = [d.code for d in await s.diagnostics(uri, 1)]
            assert got == {"loud.py": ["SHD201"], "quiet/q.py": [], "gen/g.py": []}
        finally:
            await s.stop()

    asyncio.run(scenario())


def test_config_error_is_shown_once_and_the_server_goes_on(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.shutdown-lint]\nselekt = ["SHD201"]\n')
    uri = (tmp_path / "a.py").as_uri()

    async def scenario() -> None:
        s = _Session(tmp_path)
        await s.start()
        try:
            for version in (1, 2):
                if version == 1:
                    s.client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                        uri=uri, language_id="python", version=1, text=HAZARD)))
                else:
                    s.client.text_document_did_change(types.DidChangeTextDocumentParams(
                        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
                        content_changes=[types.TextDocumentContentChangeWholeDocument(text=HAZARD + "\n")]))
                assert await s.diagnostics(uri, version) == []
            assert len(s.messages) == 1 and "pyproject.toml: unknown key `selekt`" in s.messages[0], s.messages
            # fixing the config (and saving it) brings the findings back
            (tmp_path / "pyproject.toml").write_text('[tool.shutdown-lint]\nselect = ["SHD201"]\n')
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=(tmp_path / "pyproject.toml").as_uri())))
            assert [d.code for d in await s.diagnostics(uri, 2)] == ["SHD201"]
        finally:
            await s.stop()

    asyncio.run(scenario())


def _frame(payload: Any) -> bytes:
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _read_messages(data: bytes) -> list[dict]:
    out = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
        out.append(json.loads(rest[:length]))
        data = rest[length:]
    return out


def test_malformed_and_unknown_messages_are_answered_and_the_server_keeps_serving(tmp_path: Path) -> None:
    uri = (tmp_path / "bad.py").as_uri()
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}},
        {"jsonrpc": "2.0", "method": "initialized", "params": {}},
        b"{this is not json",
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown-lint/no-such-method", "params": {}},
        {"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {"textDocument": 7}},
        {"jsonrpc": "2.0", "method": "$/no-such-notification", "params": {}},
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": HAZARD}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "shutdown_lint", "server"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=str(tmp_path))
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"".join(_frame(f) for f in frames))
        proc.stdin.flush()
        # wait for the diagnostics of the document opened after the bad messages
        seen: list[dict] = []
        buf = b""
        while not any(m.get("method") == "textDocument/publishDiagnostics" for m in seen):
            chunk = os.read(proc.stdout.fileno(), 65536)
            assert chunk, proc.stderr.read().decode() if proc.stderr else "server exited"
            buf += chunk
            try:
                seen = _read_messages(buf)
            except (ValueError, StopIteration, IndexError):
                continue  # a partial frame
        proc.stdin.write(_frame({"jsonrpc": "2.0", "id": 9, "method": "shutdown", "params": None})
                         + _frame({"jsonrpc": "2.0", "method": "exit", "params": None}))
        proc.stdin.close()
        rest, err = proc.stdout.read(), proc.stderr.read() if proc.stderr else b""
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    messages = _read_messages(buf + rest)
    by_id = {m.get("id"): m for m in messages if "method" not in m}
    assert by_id[1]["result"]["serverInfo"]["name"] == "shutdown-lint"
    assert by_id[None]["error"]["code"] == -32700  # Parse error, id null
    assert by_id[2]["error"]["code"] == -32601  # Method not found
    assert by_id[3]["error"]["code"] == -32602  # Invalid params
    assert 9 in by_id and "error" not in by_id[9]
    diags = next(m for m in messages if m.get("method") == "textDocument/publishDiagnostics")["params"]
    assert [d["code"] for d in diags["diagnostics"]] == ["SHD201"]
    text = err.decode()
    assert "Traceback" not in text and all(line.startswith("shutdown-lint server:") for line in text.splitlines())


def test_server_without_pygls_prints_install_hint_and_exits_2() -> None:
    code = ("import sys; sys.modules['pygls'] = None\n"
            "from shutdown_lint.cli import main\nsys.exit(main(['server']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=_env())
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == ("shutdown-lint server: error: the language server needs pygls: "
                                "pip install 'shutdown-lint[lsp]'")


def test_help_lists_server() -> None:
    r = subprocess.run([sys.executable, "-m", "shutdown_lint", "--help"], capture_output=True, text=True,
                       timeout=60, env=_env())
    assert r.returncode == 0 and "server            run the language server" in r.stdout
