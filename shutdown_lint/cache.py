"""The result cache under ``.shutdown_lint_cache/`` in the project root.

One index file per (tool version, effective settings) maps an absolute path to
``[mtime_ns, size, sha256, FileResult dict]``. A warm run only ``stat()``s each file; a
file whose stat changed but whose content hash did not (a ``touch``, a checkout) is
re-hashed by the worker and still served from the cache. Results are stored without
their display path, which depends on the working directory of the run.

A corrupt or unreadable cache is a warning and is ignored; writes are atomic.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Optional

from . import __version__

CACHE_DIR_NAME = ".shutdown_lint_cache"
_FORMAT = 1


def write_json_atomic(path: str, data: Any, cache_dir: str) -> Optional[str]:
    """Write ``data`` as JSON to ``path`` atomically; returns a warning or None."""
    from .source import replace_atomically

    try:
        ensure_dir(cache_dir)
        # no fsync: a cache lost to a power cut is only a slower next run
        replace_atomically(path, json.dumps(data, separators=(",", ":")).encode(), fsync=False)
    except OSError as e:
        return f"cache not written ({path}): {e.strerror or e}"
    return None


def ensure_dir(cache_dir: str) -> None:
    if os.path.isdir(cache_dir):
        return
    os.makedirs(cache_dir, exist_ok=True)
    # keep the cache out of version control and backups
    with open(os.path.join(cache_dir, ".gitignore"), "w") as fh:
        fh.write("# created by shutdown-lint\n*\n")
    with open(os.path.join(cache_dir, "CACHEDIR.TAG"), "w") as fh:
        fh.write("Signature: 8a477f597d28d172789f06886806bc55\n# shutdown-lint cache\n")


def settings_key(fingerprint: str) -> str:
    return hashlib.sha256(f"{_FORMAT}|{__version__}|{fingerprint}".encode()).hexdigest()[:20]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Cache:
    def __init__(self, cache_dir: str, fingerprint: str) -> None:
        self.dir = cache_dir
        self.path = os.path.join(cache_dir, f"results-{settings_key(fingerprint)}.json")
        self.entries: dict[str, list] = {}
        self.warnings: list[str] = []
        self.dirty = False
        self._load()

    def _load(self) -> None:
        try:
            with open(self.path, encoding="utf-8") as fh:
                data = json.load(fh)
        except FileNotFoundError:
            return
        except (OSError, ValueError) as e:
            self.warnings.append(f"warning: ignoring unreadable cache {self.path}: {e}")
            return
        if (not isinstance(data, dict) or data.get("format") != _FORMAT
                or not isinstance(data.get("files"), dict)):
            self.warnings.append(f"warning: ignoring corrupt cache {self.path}")
            return
        self.entries = data["files"]

    def lookup(self, abspath: str, st: os.stat_result) -> Optional[dict]:
        """The stored result dict when the file's stat matches, else None."""
        entry = self.entries.get(abspath)
        if not _valid(entry):
            return None
        if entry[0] == st.st_mtime_ns and entry[1] == st.st_size:
            return entry[3]
        return None

    def entry(self, abspath: str) -> Optional[list]:
        entry = self.entries.get(abspath)
        return entry if _valid(entry) else None

    def store(self, abspath: str, mtime_ns: int, size: int, digest: str, result: dict) -> None:
        self.entries[abspath] = [mtime_ns, size, digest, result]
        self.dirty = True

    def save(self) -> Optional[str]:
        if not self.dirty:
            return None
        # forget files that are gone, so the index does not grow forever
        live = {p: e for p, e in self.entries.items() if os.path.exists(p)}
        return write_json_atomic(self.path, {"format": _FORMAT, "version": __version__, "files": live}, self.dir)


def _valid(entry: Any) -> bool:
    return (isinstance(entry, list) and len(entry) == 4 and isinstance(entry[0], int)
            and isinstance(entry[1], int) and isinstance(entry[3], dict))


def strip_path(result: dict, path: str) -> dict:
    """A FileResult dict made independent of the display path (for storing)."""
    out = dict(result)
    out["path"] = ""
    out["diagnostics"] = [{**d, "path": ""} for d in result.get("diagnostics", [])]
    out["warnings"] = [_unprefix(w, path) for w in result.get("warnings", [])]
    if out.get("error"):
        out["error"] = _unprefix(out["error"], path)
    for key in ("fixed", "diff", "written"):
        out.pop(key, None)
    out["cached"] = False
    return out


def restore_path(result: dict, path: str) -> dict:
    out = dict(result)
    out["path"] = path
    out["diagnostics"] = [{**d, "path": path} for d in result.get("diagnostics", [])]
    out["warnings"] = [_prefix(w, path) for w in result.get("warnings", [])]
    if out.get("error"):
        out["error"] = _prefix(out["error"], path)
    out["cached"] = True
    return out


_MARK = "\x00PATH\x00"


def _unprefix(text: str, path: str) -> str:
    return _MARK + text[len(path):] if text.startswith(path) else text


def _prefix(text: str, path: str) -> str:
    return path + text[len(_MARK):] if text.startswith(_MARK) else text
