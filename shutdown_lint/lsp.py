"""The language server (LSP over stdio, on pygls).

- Diagnostics on open, change and save at once; changes that arrive while a document is being
  linted are coalesced: when that lint ends, the document's latest text is linted once (typing
  does not queue a lint per keystroke). A result is published only if the document has not
  changed since.
- The same analysis, configuration, project index and cache as the command line: each document
  is linted with the nearest config above it (``hierarchy.Resolver``) and the project index the
  command line builds for that file (``shutdown-lint --stdin-filename FILE -`` with the buffer's
  text gives the same findings), excluded files get no diagnostics, and a document whose text
  equals the file on disk is served from / stored in ``.shutdown_lint_cache``.
- Kept warm between requests: the settings, the rule catalogue and the analysis modules are
  loaded in the background once the client has initialized (the first ``didOpen`` does not pay
  for imports); each project index stays built until a file is saved or the client reports a
  changed file. Fix edits are rendered only when a code action asks for them.
- Code actions: each fix as a quick fix (safe fixes preferred, unsafe ones labelled as such) and a
  ``source.fixAll.shutdown-lint`` action applying every safe fix, as ``--fix`` would.
- Hover on a rule code or name (``# noqa: SHD201``) or on a finding shows the rule's page.
- Bad input is answered per JSON-RPC: a body that is not JSON gets a Parse error (id null), a
  request whose params do not fit gets Invalid params for its id, an unknown request gets Method
  not found; the server keeps serving. Logging goes to stderr as one line per event, no tracebacks.

Linting runs in a worker thread so the server keeps answering while a large file is analysed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Optional
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.exceptions import JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcParseError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace.position_codec import ServerTextPosition, ServerTextRange

from . import __version__
from . import config as C
from .diagnostic import FileResult
from .hierarchy import Overrides, Resolver, SettingsError
from .interrupt import deferred, exit_now, handling

SOURCE = "shutdown-lint"
FIX_ALL_KIND = f"{types.CodeActionKind.SourceFixAll.value}.shutdown-lint"
_WORD = re.compile(r"SHD\d+|[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)+")
_ERROR_AT = re.compile(r"^.*?:(\d+):(\d+): (.*)$")

log = logging.getLogger("shutdown_lint.lsp")


class _Answered:
    """Stands in for a message that was already answered with an error: pygls drops it."""

    jsonrpc = "answered"

    def __repr__(self) -> str:
        return "(a malformed message, answered with an error)"


class _Protocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):  # type: ignore[override]
        try:
            return super().structure_message(data)
        except (JsonRpcInvalidParams, JsonRpcInternalError) as e:
            # pygls raises here, before it knows the request: answer the request ourselves
            if isinstance(data, dict) and "method" in data and data.get("id") is not None:
                error = JsonRpcInvalidParams() if isinstance(e, JsonRpcInvalidParams) else e
                self._send_response(data["id"], error=types.ResponseError(
                    code=error.code, message=f"{error.message}: {data.get('method')!r} could not be read"))
            log.warning("dropped a malformed %s message", data.get("method", "?") if isinstance(data, dict) else "?")
            return _Answered()


class ShutdownLintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("shutdown-lint", __version__, protocol_cls=_Protocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        #: uri -> (version, result, lines, with fix edits)
        self.results: dict[str, tuple[Optional[int], FileResult, list[str], bool]] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self._resolver: Optional[Resolver] = None
        self._caches: dict[str, Any] = {}
        self._reported: set[str] = set()
        # lints run in worker threads; the cache index is one dict saved as a whole
        self._cache_lock = threading.Lock()
        self._messages: list[str] = []
        self._ignorers: dict[tuple[Optional[str], str], Any] = {}
        # one lint at a time (the project index is the analysis' module-wide current index)
        self._lint_lock = threading.Lock()
        #: project indexes by their roots, kept warm between lints (dropped when a file changes)
        self._indexes: dict[tuple, Any] = {}
        self._stores: dict[Optional[str], Any] = {}
        self._index_generation = 0  # bumped when a file changes on disk
        self._indexes_of = 0  # the generation ``_indexes`` were built in
        #: documents being linted now, and those changed meanwhile (linted again when it ends)
        self._running: dict[str, asyncio.Task] = {}
        self._dirty: set[str] = set()
        #: results to store in the cache once published
        self._to_store: list[tuple] = []

    def report_server_error(self, error: Exception, source: Any) -> None:  # type: ignore[override]
        if isinstance(error, json.JSONDecodeError):
            # a body that is not JSON: JSON-RPC's Parse error, with a null id
            # (sent as a plain dict: the typed message would drop the required `"id": null`)
            self.protocol._send_data({"jsonrpc": "2.0", "id": None, "error": {
                "code": JsonRpcParseError.CODE, "message": f"{JsonRpcParseError.MESSAGE}: {error}"}})
            return
        log.warning("server error (%s): %s", getattr(source, "__name__", source), error)

    # ---------------------------------------------------------------- settings and linting

    @property
    def resolver(self) -> Resolver:
        if self._resolver is None:
            root = self.workspace.root_path or os.getcwd()
            try:
                base = C.load(None, root)
            except C.ConfigError as e:
                self._config_error(str(e))
                base = C.Config(root=C.find_root_without_config(root))
            self._resolver = Resolver(base, Overrides(), C.catalogue_from_registry())
        return self._resolver

    def forget_settings(self) -> None:
        self._resolver = None
        with self._cache_lock:
            self._caches.clear()
        self._reported.clear()
        self._ignorers.clear()
        self.forget_index()

    def forget_index(self) -> None:
        """A file changed on disk: the project indexes (and their summary stores) are rebuilt
        on the next lint, from the files as they are now (a counter: the event loop does not
        wait for a lint in progress)."""
        self._index_generation += 1

    def warm_up(self) -> None:
        """Load what the first lint needs (settings, the rule catalogue, the analysis and its
        libcst), in a worker thread once the client has initialized."""
        try:
            resolver = self.resolver
            root = resolver.base.root
            settings = resolver.settings(resolver.config_path(os.path.join(root, "__init__.py")))
            from .analyzer import lint_source

            with self._lint_lock:  # a small lint imports what the rules import lazily
                lint_source(b"import asyncio\n\n\nasync def f():\n    asyncio.create_task(f())\n",
                            "<warm-up>", settings, fix_edits=False)
        except Exception as e:  # noqa: BLE001 - the lints report what is wrong
            log.warning("warm-up: %s: %s", type(e).__name__, e)

    def _config_error(self, message: str) -> None:
        # called from lint threads: queued here, shown from the event loop by flush_messages()
        if message not in self._reported:  # once per message, not per keystroke
            self._reported.add(message)
            self._messages.append(message)

    def flush_messages(self) -> None:
        while self._messages:
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                             message=f"shutdown-lint: {self._messages.pop(0)}"))

    def _ignorer(self, cfg: C.Config):  # type: ignore[no-untyped-def]
        from .discovery import Ignorer

        key = (cfg.path, cfg.root)
        if key not in self._ignorers:  # it caches the .gitignore files it has read
            self._ignorers[key] = Ignorer(cfg.root, cfg.exclude, cfg.respect_gitignore)
        return self._ignorers[key]

    def lint(self, uri: str, text: str, edits: bool = False) -> Optional[tuple[FileResult, Any]]:
        """Findings for ``text`` as the file at ``uri`` (None: excluded, not a file, or bad config);
        ``edits``: with each fix's text edits (code actions), else only its applicability."""
        path = uri_to_path(uri)
        if path is None:
            return None
        abspath = os.path.abspath(path)
        resolver = self.resolver
        try:
            cfg_path = resolver.config_path(abspath)
            cfg = resolver.config(cfg_path)
            settings = resolver.settings(cfg_path)
        except SettingsError as e:
            self._config_error(str(e))
            return None
        if self._ignorer(cfg).ignored(abspath, False):
            return None
        display = _display(abspath, resolver.base.root)
        data = text.encode("utf-8")
        cached = self._from_cache(abspath, data, settings, resolver.base.root, edits)
        if cached is not None:
            return FileResult.from_dict(cached), settings
        from .analyzer import lint_source

        # as on the command line: the project index for this file, and a syntax error reported
        # where a rule would have looked
        with self.project_index(abspath, settings):
            result = lint_source(data, display, settings, fix_edits=edits)
        # stored after the result is published (``store_pending``): the index write is not on
        # the way to the editor
        with self._cache_lock:
            self._to_store.append((abspath, data, settings, result, display))
        return result, settings

    def store_pending(self) -> None:
        """Store the results linted since the last call (see ``_to_cache``)."""
        while True:
            with self._cache_lock:
                if not self._to_store:
                    return
                item = self._to_store.pop(0)
            self._to_cache(*item)

    @contextmanager
    def project_index(self, abspath: str, settings) -> Iterator[None]:  # type: ignore[no-untyped-def]
        """One analysis at a time, with the file's project index installed (the analysis reads
        it as the run's current index)."""
        from .index.project import set_current

        with self._lint_lock:
            set_current(self._index_for(abspath, settings, self.resolver.base.root))
            try:
                yield
            finally:
                set_current(None)

    def _index_for(self, abspath: str, settings, root: str):  # type: ignore[no-untyped-def]
        """The project index the command line builds for this file alone (its roots: the
        file's package root, or its folder), kept between lints; None when the index is off."""
        from .index.hooks import enabled

        if not enabled():
            return None
        from .index.project import ProjectIndex

        if self._indexes_of != self._index_generation:  # a file changed since they were built
            self._indexes_of = self._index_generation
            self._indexes.clear()
            self._stores.clear()
        with self._cache_lock:
            cache = self._cache_for(settings, root)
        store = self._stores.get(cache.dir)
        if store is None:
            from .index.store import SummaryStore

            store = self._stores[cache.dir] = SummaryStore(cache.dir)
        fresh = ProjectIndex([abspath], None, store)  # roots only: a few stats
        key = (cache.dir, tuple((r.dir, r.only) for r in fresh.roots))
        return self._indexes.setdefault(key, fresh)

    def _cache_for(self, settings, root: str):  # type: ignore[no-untyped-def]
        from .cache import Cache
        from .cache_key import fingerprint

        key = fingerprint(settings)
        if key not in self._caches:
            # where the command line keeps it (the project root, or the user's cache directory)
            from .cache_key import CACHE_DIR_NAME, cache_dir_for
            from .config import marked_root

            project = self.resolver.base.path is not None or marked_root(root) is not None
            self._caches[key] = Cache(cache_dir_for(root, project) or os.path.join(root, CACHE_DIR_NAME), key)
        return self._caches[key]

    def _from_cache(self, abspath: str, data: bytes, settings, root: str, edits: bool) -> Optional[dict]:  # type: ignore[no-untyped-def]
        from .cache import restore_path, sha256

        with self._cache_lock:
            cache = self._cache_for(settings, root)
            entry = cache.entry(abspath)
        if entry is None or entry[2] != sha256(data):
            return None
        result = entry[3]
        if edits and any(d.get("fix") is not None and not d["fix"].get("edits") for d in result.get("diagnostics", [])):
            return None  # stored by a run that did not render fix edits
        if result.get("deps"):  # as a warm run of the command line: a module it relied on changed?
            from .index.hooks import deps_changed

            with self._cache_lock:
                if deps_changed(result, abspath, cache, cache.dir):
                    return None
        return restore_path(result, _display(abspath, root))

    def _to_cache(self, abspath: str, data: bytes, settings, result: FileResult, display: str) -> None:  # type: ignore[no-untyped-def]
        """Store a result only for the text that is on disk (an unsaved buffer has no stat to key)."""
        from .cache import sha256, strip_path

        try:
            st = os.stat(abspath)
            with open(abspath, "rb") as fh:
                if fh.read() != data:
                    return
        except OSError:
            return
        with self._cache_lock:
            cache = self._cache_for(settings, self.resolver.base.root)
            cache.store(abspath, st.st_mtime_ns, st.st_size, sha256(data), strip_path(result.to_dict(), display))
            with deferred():  # a stop waits for the write: never a stray temporary file
                warning = cache.save()
        if warning:
            log.warning("%s", warning)

    async def refresh(self, uri: str) -> None:
        """Lint the document now and publish, unless it changed meanwhile."""
        doc = self.workspace.get_text_document(uri)
        version, text = doc.version, doc.source
        try:
            outcome = await asyncio.get_running_loop().run_in_executor(None, self.lint, uri, text)
        except Exception as e:  # a rule bug must not take the server down
            log.warning("linting %s failed: %s: %s", uri, type(e).__name__, e)
            outcome = None
        self.flush_messages()
        if uri not in self.workspace.text_documents:
            return  # closed meanwhile (its diagnostics were cleared)
        if self.workspace.get_text_document(uri).version != version:
            return  # a newer lint is queued
        lines = text.splitlines(keepends=True)
        if outcome is None:
            self.results.pop(uri, None)
            diagnostics: list[types.Diagnostic] = []
        else:
            result = outcome[0]
            self.results[uri] = (version, result, lines, False)
            diagnostics = to_lsp_diagnostics(result, lines, self.workspace.position_codec)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))
        await asyncio.get_running_loop().run_in_executor(None, self.store_pending)

    def schedule(self, uri: str) -> None:
        """Lint ``uri`` now; if it is being linted, once more when that lint ends."""
        if uri in self.pending:
            self._dirty.add(uri)
            return
        self.pending[uri] = asyncio.ensure_future(self._lint_until_clean(uri))

    async def _lint_until_clean(self, uri: str) -> None:
        try:
            while True:
                self._dirty.discard(uri)
                await self.refresh(uri)
                if uri not in self._dirty or uri not in self.workspace.text_documents:
                    return
        except Exception as e:  # nobody awaits this task (SHD102): its failure goes to the server's log now
            log.error("linting %s stopped: %s: %s", uri, type(e).__name__, e)
        finally:
            if self.pending.get(uri) is asyncio.current_task():  # not a newer one after a close
                self.pending.pop(uri, None)
                self._dirty.discard(uri)

    def current_result(self, uri: str, edits: bool = False) -> Optional[tuple[FileResult, list[str]]]:
        """The document's result for its current version (``edits``: with fix edits)."""
        doc = self.workspace.get_text_document(uri)
        stored = self.results.get(uri)
        if stored is not None and stored[0] == doc.version and (stored[3] or not edits):
            return stored[1], stored[2]
        version, text = doc.version, doc.source
        outcome = self.lint(uri, text, edits)
        self.store_pending()
        if outcome is None:
            return None
        lines = text.splitlines(keepends=True)
        self.results[uri] = (version, outcome[0], lines, edits)
        return outcome[0], lines


# ------------------------------------------------------------------ conversions


def uri_to_path(uri: str) -> Optional[str]:
    parsed = urlparse(uri)
    if parsed.scheme not in ("file", ""):
        return None  # untitled buffers, git diffs...
    path = unquote(parsed.path)
    if os.name == "nt" and re.match(r"^/[A-Za-z]:", path):  # pragma: no cover
        path = path[1:]
    return path or None


def _display(abspath: str, root: str) -> str:
    """The path messages and ``per-file-ignores`` see: relative to the workspace's project root, as
    when the command line runs there."""
    return os.path.relpath(abspath, root) if abspath.startswith(root.rstrip(os.sep) + os.sep) else abspath


def _client_range(lines: list[str], codec, start: tuple[int, int], end: tuple[int, int]) -> types.Range:  # type: ignore[no-untyped-def]
    """1-based (line, column) in code points -> an LSP range in the negotiated encoding."""
    n = len(lines)

    def pos(line: int, col: int) -> ServerTextPosition:
        line = min(max(line - 1, 0), n)
        width = len(lines[line].rstrip("\r\n")) if line < n else 0
        return ServerTextPosition(line, min(max(col - 1, 0), width))

    return codec.range_to_client_units(lines, ServerTextRange(pos(*start), pos(*end)))


def _severity():  # type: ignore[no-untyped-def]
    """A finding's severity: ``output.FINDING_LEVEL``, the level SARIF and GitHub annotations use."""
    from .output import FINDING_LEVEL

    return {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "note": types.DiagnosticSeverity.Information}[FINDING_LEVEL]


def to_lsp_diagnostics(result: FileResult, lines: list[str], codec) -> list[types.Diagnostic]:  # type: ignore[no-untyped-def]
    out = []
    for d in result.diagnostics:
        fix = d.fix or {}
        hint = ""
        if d.fix is not None:
            hint = " (safe fix available)" if fix.get("applicability") == "safe" else " (unsafe fix available)"
        out.append(types.Diagnostic(
            range=_client_range(lines, codec, (d.line, d.column), (d.end_line, d.end_column)),
            message=f"{d.message}{hint}",
            severity=_severity(),
            code=d.code,
            source=SOURCE,
            data={"name": d.name},
        ))
    if result.error:
        m = _ERROR_AT.match(result.error)
        line, col, message = (int(m.group(1)), int(m.group(2)), m.group(3)) if m else (1, 1, result.error)
        out.append(types.Diagnostic(
            range=_client_range(lines, codec, (line, col), (line, col + 1)),
            message=message, severity=types.DiagnosticSeverity.Error, source=SOURCE))
    return out


def _text_edits(edits: list[dict]) -> list[types.TextEdit]:
    """The engine's line-granular edits (1-based rows, column 1) as LSP text edits."""
    out = []
    for e in edits:
        start = types.Position(line=e["location"]["row"] - 1, character=0)
        end = types.Position(line=e["end_location"]["row"] - 1, character=0)
        out.append(types.TextEdit(range=types.Range(start=start, end=end), new_text=e["content"]))
    return out


def _overlaps(a: types.Range, b: types.Range) -> bool:
    def key(p: types.Position) -> tuple[int, int]:
        return (p.line, p.character)

    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _wanted(kind: str, only: Optional[list[str]]) -> bool:
    return not only or any(kind == o or kind.startswith(f"{o}.") for o in only)


# ------------------------------------------------------------------ the server's features

server = ShutdownLintServer()


@server.feature(types.INITIALIZED)
async def initialized(ls: ShutdownLintServer, params: types.InitializedParams) -> None:
    # the first didOpen usually follows at once: the warm-up holds the lint lock, so that lint
    # waits for it instead of importing the same modules beside it
    asyncio.get_running_loop().run_in_executor(None, ls.warm_up)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def did_open(ls: ShutdownLintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: ShutdownLintServer, params: types.DidChangeTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
async def did_save(ls: ShutdownLintServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if os.path.basename(uri_to_path(uri) or "") in C.CONFIG_FILES:
        ls.forget_settings()  # a config changed: every open document may lint differently now
        for other in list(ls.workspace.text_documents):
            if other.endswith(".py") or other.endswith(".pyi"):
                ls.schedule(other)
        return
    ls.forget_index()  # the file on disk changed: what other modules see of it too
    ls.schedule(uri)
    for other in list(ls.workspace.text_documents):  # their findings may rest on the saved module
        if other != uri and (other.endswith(".py") or other.endswith(".pyi")):
            ls.schedule(other)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
async def did_close(ls: ShutdownLintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls._dirty.discard(uri)
    ls.results.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def did_change_watched(ls: ShutdownLintServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(os.path.basename(uri_to_path(c.uri) or "") in C.CONFIG_FILES for c in params.changes):
        ls.forget_settings()
        for other in list(ls.workspace.text_documents):
            ls.schedule(other)
    elif params.changes:  # a module changed, appeared or went: the project indexes are rebuilt
        ls.forget_index()
        for other in list(ls.workspace.text_documents):
            ls.schedule(other)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False),
)
async def code_action(ls: ShutdownLintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    only = [str(getattr(k, "value", k)) for k in (params.context.only or [])]
    loop = asyncio.get_running_loop()
    current = await loop.run_in_executor(None, ls.current_result, uri)
    codec = ls.workspace.position_codec
    if current is not None and _wanted(types.CodeActionKind.QuickFix.value, only) and any(
            d.fix is not None and _overlaps(lsp.range, params.range)
            for d, lsp in zip(current[0].diagnostics, to_lsp_diagnostics(current[0], current[1], codec))):
        # a fix under the cursor: its text edits are rendered now (the publish did without them)
        current = await loop.run_in_executor(None, ls.current_result, uri, True)
    ls.flush_messages()
    if current is None:
        return []
    result, lines = current
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix.value, only):
        for d, lsp in zip(result.diagnostics, to_lsp_diagnostics(result, lines, codec)):
            if d.fix is None or not d.fix.get("edits") or not _overlaps(lsp.range, params.range):
                continue
            safe = d.fix.get("applicability") == "safe"
            what = d.fix.get("message") or "apply the fix"
            title = f"Fix {d.code}: {what}" if safe else f"Fix {d.code} (unsafe fix, review the change): {what}"
            actions.append(types.CodeAction(
                title=title, kind=types.CodeActionKind.QuickFix, diagnostics=[lsp], is_preferred=safe,
                edit=types.WorkspaceEdit(changes={uri: _text_edits(d.fix["edits"])})))
    if _wanted(FIX_ALL_KIND, only) and any(d.fix and d.fix.get("applicability") == "safe" for d in result.diagnostics):
        edit = await asyncio.get_running_loop().run_in_executor(None, _fix_all_edit, ls, uri)
        if edit is not None:
            actions.append(types.CodeAction(title="shutdown-lint: fix all safe findings", kind=FIX_ALL_KIND,
                                            edit=edit))
    return actions


def _fix_all_edit(ls: ShutdownLintServer, uri: str) -> Optional[types.WorkspaceEdit]:
    """Every safe fix at once (what ``--fix`` writes), as edits to the open document."""
    from .analyzer import AnalysisError
    from .edits import text_edits
    from .fixer import fix_source
    from .runner import decode

    doc = ls.workspace.get_text_document(uri)
    path = uri_to_path(uri)
    if path is None:
        return None
    try:
        abspath = os.path.abspath(path)
        settings = ls.resolver.for_file(abspath)
        data = doc.source.encode("utf-8")
        with ls.project_index(abspath, settings):  # as --fix: with the file's project index
            outcome = fix_source(data, _display(abspath, ls.resolver.base.root), settings, unsafe=False)
    except (SettingsError, AnalysisError) as e:
        log.warning("fix all: %s", e)
        return None
    if outcome.source == data:
        return None
    return types.WorkspaceEdit(changes={uri: _text_edits(text_edits(doc.source, decode(outcome.source)))})


@server.feature(types.TEXT_DOCUMENT_HOVER)
async def hover(ls: ShutdownLintServer, params: types.HoverParams) -> Optional[types.Hover]:
    from .explain import find_rule, hover_markdown

    doc = ls.workspace.get_text_document(params.text_document.uri)
    pos = doc.position_from_client_units(params.position)
    line = doc.lines[pos.line] if pos.line < len(doc.lines) else ""
    rule = None
    for m in _WORD.finditer(line):
        if m.start() <= pos.character <= m.end():
            rule = find_rule(m.group(0))
            break
    if rule is None:  # on a finding: its rule
        stored = ls.results.get(params.text_document.uri)
        if stored is not None and stored[0] == doc.version:
            for d, lsp in zip(stored[1].diagnostics, to_lsp_diagnostics(stored[1], stored[2], ls.workspace.position_codec)):
                if _overlaps(lsp.range, types.Range(start=params.position, end=params.position)):
                    rule = find_rule(d.code)
                    break
    if rule is None:
        return None
    # the summary, what / why / example, and the command for the whole page
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hover_markdown(rule)))


class _OneLine(logging.Formatter):
    """Editors show the server's stderr as a log: one line per event, no tracebacks."""

    def format(self, record: logging.LogRecord) -> str:
        record.exc_info = None
        record.exc_text = None
        record.stack_info = None
        text = super().format(record)
        if "Traceback" in text:  # pygls puts some tracebacks in the message itself
            text = text.split("\n", 1)[0]
        return text.replace("\n", " | ")


def serve() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("shutdown-lint server: %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    # pygls ends on KeyboardInterrupt only once its stdin reader thread returns (a read blocked
    # until the editor writes or closes the pipe) and a lint in progress ends: Ctrl+C or SIGTERM
    # (an editor or a supervisor stopping us) ends the process now, after any cache write
    with handling(act=_stop):
        server.start_io()


def _stop(signum: int) -> None:
    import signal

    exit_now(signum, f"shutdown-lint server: stopped by {signal.Signals(signum).name}")
