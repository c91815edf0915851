"""The language server stops at once on Ctrl+C (SIGINT to its process group) and on SIGTERM,
with the editor still connected and a lint in progress: exit 130 / 143, one line on stderr.

pygls alone ends on KeyboardInterrupt only after its stdin reader thread returns (a read that
blocks until the editor writes or closes the pipe) and the lint thread finishes; SIGTERM
killed it with no line at all. A real client (pygls' ``LanguageClient``) drives the server in
a subprocess started in its own session, as an editor would.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

pygls = pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)

# a document whose lint takes a while (a long module with a finding in every function)
BIG = "import asyncio\n\n\n" + "".join(
    f"async def child_{i}():\n    try:\n        await asyncio.sleep({i})\n    finally:\n        print({i})\n\n\n"
    f"async def parent_{i}():\n    return await asyncio.gather(child_{i}(), child_{i}())\n\n\n"
    for i in range(400))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@pytest.mark.parametrize("how", ["SIGINT to the group", "SIGTERM"])
def test_the_server_stops_at_once_while_connected_and_linting(tmp_path: Path, how: str) -> None:
    doc = tmp_path / "big.py"
    doc.write_text(BIG)

    async def scenario() -> tuple[int, float, bytes]:
        client = LanguageClient("shutdown-lint-test", "1")
        await client.start_io(sys.executable, "-m", "shutdown_lint", "server", env=_env(), cwd=str(tmp_path),
                              start_new_session=True)
        server = client._server
        assert server is not None
        try:
            await asyncio.wait_for(client.initialize_async(types.InitializeParams(
                capabilities=types.ClientCapabilities(), root_uri=tmp_path.as_uri(), process_id=os.getpid())), 60)
            client.initialized(types.InitializedParams())
            client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
                uri=doc.as_uri(), language_id="python", version=1, text=BIG)))
            await asyncio.sleep(0.5)  # the lint of the document has started; stdin stays open
            assert server.returncode is None
            sent = time.monotonic()
            if how == "SIGTERM":
                server.send_signal(signal.SIGTERM)
            else:
                os.killpg(server.pid, signal.SIGINT)
            await asyncio.wait_for(server.wait(), 20)  # a liveness bound: bench/bench_interrupt.py times it
            took = time.monotonic() - sent
            assert server.stderr is not None
            err = await asyncio.wait_for(server.stderr.read(), 10)
            return server.returncode, took, err
        finally:
            if server.returncode is None:
                server.kill()
                await server.wait()
            client._stop_event.set()

    code, took, err = asyncio.run(scenario())
    name = "SIGTERM" if how == "SIGTERM" else "SIGINT"
    assert code == (143 if name == "SIGTERM" else 130), (code, err)
    assert err.decode().splitlines() == [f"shutdown-lint server: stopped by {name}"], err
    # no stray temporary file of a cache write cut short
    leftovers = [p.name for p in tmp_path.rglob("*") if p.name.startswith((".tmp-", ".shutdown-lint-"))]
    assert leftovers == [], leftovers
