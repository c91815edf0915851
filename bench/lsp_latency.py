"""Editor latency of ``shutdown-lint server`` through a real LSP client (issue 30).

A small client speaking JSON-RPC with Content-Length framing over the server's stdin/stdout,
as an editor does. Times, with a monotonic clock, from the moment ``didOpen`` / ``didChange``
is written to the moment the ``publishDiagnostics`` for that document and version is read:

- ``open``: a fresh server per round: started, ``initialize`` answered, ``initialized`` sent,
  then ``--idle`` seconds (an editor's window open before the file is), then ``didOpen`` of
  the file as it is on disk. The project's cache directory is removed before each round, so
  nothing is served from an earlier run (the worst case: a project never linted before; the
  user's cache directory, where a project without a marker keeps it, is a private one).
  ``open_at_start`` is the same ``didOpen`` sent right after ``initialized`` (no idle time).
- ``edit``: in one server, after the file is open, a changed line per round (a comment whose
  text changes, in the middle of the file: a buffer that is no longer the file on disk), sent
  as an incremental change, as editors send them.

    python bench/lsp_latency.py PROJECT FILE [--rounds 20] [--idle 2] [--server CMD ...]

prints the medians and every sample; ``--json OUT`` writes them. ``--server`` runs another
server command with the same client (e.g. ``ruff server``, for scale).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty, Queue

BIN = Path(sys.executable).parent


class Client:
    """One server process and the messages it sends, read by a thread into a queue."""

    def __init__(self, cmd: list[str], cwd: Path, extra_env: dict | None = None) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(extra_env or {})
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        self.inbox: Queue = Queue()
        self._id = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if length is None:
                continue
            body = out.read(length)
            self.inbox.put((time.perf_counter(), json.loads(body)))

    def send(self, message: dict) -> float:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return time.perf_counter()

    def request(self, method: str, params: dict, timeout: float = 120) -> dict:
        self._id += 1
        self.send({"id": self._id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == self._id and "method" not in m, timeout)[1]

    def wait(self, match, timeout: float = 120) -> tuple[float, dict]:
        deadline = time.monotonic() + timeout
        while True:
            try:
                item = self.inbox.get(timeout=max(0.0, deadline - time.monotonic()))
            except Empty:
                raise TimeoutError("no matching message from the server") from None
            if item is None:
                raise RuntimeError("the server closed its output")
            at, msg = item
            if "id" in msg and "method" in msg:  # a request from the server (e.g. registerCapability)
                self.send({"id": msg["id"], "result": None})
                continue
            if match(msg):
                return at, msg

    def drain(self) -> None:
        """Forget what the server sent so far (a server that publishes without a version, or
        twice, must not answer the next change with an old message)."""
        while True:
            try:
                item = self.inbox.get_nowait()
            except Empty:
                return
            if item is None:
                self.inbox.put(None)
                return

    def diagnostics(self, uri: str, version: int, timeout: float = 120) -> tuple[float, list]:
        at, msg = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri and m["params"].get("version", version) == version, timeout)
        return at, msg["params"]["diagnostics"]

    def start(self, root: Path) -> None:
        self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}}}})
        self.send({"method": "initialized", "params": {}})

    def stop(self) -> None:
        try:
            self.request("shutdown", None, timeout=30)  # type: ignore[arg-type]
            self.send({"method": "exit"})
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()
            self.proc.wait()

    def cpu(self) -> float:
        """CPU seconds of the server process so far (Linux /proc; 0 elsewhere)."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            return 0.0


def open_params(uri: str, text: str, version: int) -> dict:
    return {"textDocument": {"uri": uri, "languageId": "python", "version": version, "text": text}}


def measure(project: Path, file: Path, rounds: int, idle: float, server: list[str], at_start: int = 5,
            cache_dirs: tuple[str, ...] = (".shutdown_lint_cache",)) -> dict:
    text = file.read_text()
    uri = file.resolve().as_uri()
    n_lines = text.count("\n")
    res: dict = {"file": str(file), "lines": n_lines, "open": [], "open_at_start": [], "edit": [],
                 "edit_cpu": [], "open_cpu": [], "findings": None}

    # a project with no marker (no pyproject.toml, no git) keeps its cache in the user's cache
    # directory: a private one, emptied before each round as the project's own
    import tempfile

    xdg = Path(tempfile.mkdtemp(prefix="lsp-latency-xdg-"))

    def clean() -> None:
        for d in cache_dirs:
            shutil.rmtree(project / d, ignore_errors=True)
        shutil.rmtree(xdg, ignore_errors=True)
        xdg.mkdir()

    for k in range(rounds + at_start):
        clean()
        c = Client(server, project, {"XDG_CACHE_HOME": str(xdg)})
        try:
            c.start(project)
            first = k >= at_start  # the at-start rounds first, then the idle ones
            if first:
                time.sleep(idle)
            c.drain()
            cpu0 = c.cpu()
            sent = c.send({"method": "textDocument/didOpen", "params": open_params(uri, text, 1)})
            got, diags = c.diagnostics(uri, 1)
            (res["open"] if first else res["open_at_start"]).append(got - sent)
            if first:
                res["open_cpu"].append(c.cpu() - cpu0)
            res["findings"] = len(diags)
            if k == rounds + at_start - 1:  # the last server: the edits
                time.sleep(idle)
                mid = n_lines // 2
                for v in range(2, rounds + 2):
                    change = {"range": {"start": {"line": mid, "character": 0}, "end": {"line": mid, "character": 0}},
                              "text": f"# edit {v}\n" if v == 2 else ""}
                    if v > 2:  # replace the comment's number: the buffer changes each time
                        change = {"range": {"start": {"line": mid, "character": 7},
                                            "end": {"line": mid, "character": 7 + len(str(v - 1))}},
                                  "text": str(v)}
                    c.drain()
                    cpu0 = c.cpu()
                    sent = c.send({"method": "textDocument/didChange", "params": {
                        "textDocument": {"uri": uri, "version": v}, "contentChanges": [change]}})
                    got, diags = c.diagnostics(uri, v)
                    res["edit"].append(got - sent)
                    res["edit_cpu"].append(c.cpu() - cpu0)
                    time.sleep(0.3)  # typing pauses: one lint per change
        finally:
            c.stop()
    clean()
    shutil.rmtree(xdg, ignore_errors=True)
    for key in ("open", "open_at_start", "edit", "open_cpu", "edit_cpu"):
        res[f"{key}_median"] = statistics.median(res[key]) if res[key] else None
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("project", type=Path)
    ap.add_argument("file", type=Path)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--at-start", type=int, default=5, help="rounds of didOpen sent right after initialized")
    ap.add_argument("--idle", type=float, default=2.0)
    ap.add_argument("--server", nargs="+", default=[str(BIN / "shutdown-lint"), "server"])
    ap.add_argument("--json")
    args = ap.parse_args()
    r = measure(args.project.resolve(), args.file.resolve(), args.rounds, args.idle, args.server, args.at_start)
    ms = lambda x: "-" if x is None else f"{x * 1000:.0f} ms"  # noqa: E731
    print(f"{r['file']} ({r['lines']} lines, {r['findings']} findings), {args.rounds} rounds: "
          f"open {ms(r['open_median'])} (CPU {ms(r['open_cpu_median'])}), edit {ms(r['edit_median'])} "
          f"(CPU {ms(r['edit_cpu_median'])}), open right after initialize {ms(r['open_at_start_median'])}")
    print("  open:", " ".join(f"{x * 1000:.0f}" for x in r["open"]))
    print("  edit:", " ".join(f"{x * 1000:.0f}" for x in r["edit"]))
    if args.json:
        Path(args.json).write_text(json.dumps(r, indent=2))


if __name__ == "__main__":
    main()
