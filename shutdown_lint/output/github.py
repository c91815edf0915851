"""GitHub Actions workflow commands: one ``::error`` annotation per finding."""

from __future__ import annotations

from typing import IO

from . import Report


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, out: IO[str]) -> None:
    for d in report.diagnostics:
        props = (f"title={_prop(f'shutdown-lint ({d.code})')},file={_prop(d.path)},line={d.line},col={d.column},"
                 f"endLine={d.end_line},endColumn={d.end_column}")
        out.write(f"::error {props}::{_data(f'{d.path}:{d.line}:{d.column}: {d.code} {d.message}')}\n")
    for err in report.errors:
        path = err.split(":", 1)[0]
        out.write(f"::error title=shutdown-lint,file={_prop(path)}::{_data(err)}\n")
