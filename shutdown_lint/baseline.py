"""Baselines: adopt the tool on a large code base and gate only new findings.

A finding's fingerprint is (path, code, the stripped text of its line, occurrence index
among findings with the same path, code and text). Line numbers are not part of it, so
code that moves up or down keeps its baseline entry; editing the flagged line makes the
finding new. Paths are stored relative to the baseline file's directory.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Iterable

from .diagnostic import Diagnostic

_FORMAT = 1


class BaselineError(Exception):
    pass


def _rel(path: str, base_dir: str) -> str:
    return os.path.relpath(os.path.abspath(path), base_dir).replace(os.sep, "/")


def fingerprints(diagnostics: Iterable[Diagnostic], base_dir: str) -> list[tuple[str, str, str, int]]:
    """One fingerprint per diagnostic, in the given order (which must be sorted)."""
    seen: Counter = Counter()
    out = []
    for d in diagnostics:
        key = (_rel(d.path, base_dir), d.code, d.line_text.strip())
        out.append((*key, seen[key]))
        seen[key] += 1
    return out


def write(path: str, diagnostics: list[Diagnostic]) -> int:
    base_dir = os.path.dirname(os.path.abspath(path))
    items = [
        {"path": p, "code": c, "line_text": t, "occurrence": n, "message": d.message}
        for (p, c, t, n), d in zip(fingerprints(diagnostics, base_dir), diagnostics)
    ]
    data = {"format": _FORMAT, "tool": "shutdown-lint", "findings": items}
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
        fh.write("\n")
    os.replace(tmp, path)
    return len(items)


def load(path: str) -> set[tuple[str, str, str, int]]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return {(f["path"], f["code"], f["line_text"], int(f["occurrence"])) for f in data["findings"]}
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found (create it with --write-baseline)") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise BaselineError(f"{path}: not a shutdown-lint baseline: {e}") from None


def filter_new(path: str, diagnostics: list[Diagnostic]) -> tuple[list[Diagnostic], int]:
    """Drop the diagnostics recorded in the baseline; return (new ones, number dropped)."""
    known = load(path)
    base_dir = os.path.dirname(os.path.abspath(path))
    kept = [d for d, fp in zip(diagnostics, fingerprints(diagnostics, base_dir)) if fp not in known]
    return kept, len(diagnostics) - len(kept)
