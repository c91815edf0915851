"""GitHub Actions workflow commands: one annotation per finding (``::warning``, the level every
format and the editor give a finding), and one ``::error`` per path that does not exist or file
that could not be analysed."""

from __future__ import annotations

from typing import IO

from . import ERROR_LEVEL, FINDING_LEVEL, Report, split_error


def _data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(text: str) -> str:
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report, out: IO[str]) -> None:
    for d in report.diagnostics:
        props = (f"title={_prop(f'shutdown-lint ({d.code})')},file={_prop(d.path)},line={d.line},col={d.column},"
                 f"endLine={d.end_line},endColumn={d.end_column}")
        out.write(f"::{FINDING_LEVEL} {props}::{_data(f'{d.path}:{d.line}:{d.column}: {d.code} {d.message}')}\n")
    for err in report.failures():
        path, line, col, _ = split_error(err)
        out.write(f"::{ERROR_LEVEL} title=shutdown-lint,file={_prop(path)},line={line},col={col}::{_data(err)}\n")
