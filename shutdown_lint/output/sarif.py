"""SARIF 2.1.0, as GitHub code scanning accepts it: the rules with their documentation
as help text, one result per finding with a region (1-based), relative URIs under
``%SRCROOT%``, and the analysis errors as tool execution notifications."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO

from .. import __version__
from . import ERROR_LEVEL, FINDING_LEVEL, Report, split_error

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFO_URI = "https://github.com/shutdown-lint/shutdown-lint"


def _rules(report: Report) -> list[dict]:
    from .. import registry

    rules = []
    for r in registry.all_rules():
        doc = r.documentation()
        rules.append({
            "id": r.code,
            "name": r.name,
            "shortDescription": {"text": r.summary},
            "fullDescription": {"text": r.summary},
            "help": {"text": doc, "markdown": doc},
            "defaultConfiguration": {"level": FINDING_LEVEL},
            "properties": {"tags": ["shutdown", "reliability"], "fixable": r.has_fix()},
        })
    return rules


def _uri(path: str) -> str:
    if os.path.isabs(path):
        return Path(path).as_uri()
    return path.replace(os.sep, "/")


def _notification(text: str) -> dict:
    """A path that does not exist or a file that could not be analysed: a tool execution
    notification at error level, with the file and position when the text has them."""
    path, line, column, _ = split_error(text)
    return {"level": ERROR_LEVEL, "message": {"text": text},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(path), "uriBaseId": "%SRCROOT%"},
                                                "region": {"startLine": line, "startColumn": column}}}]}


def render(report: Report, out: IO[str]) -> None:
    rules = _rules(report)
    index = {r["id"]: i for i, r in enumerate(rules)}
    results = []
    for d in report.diagnostics:
        result = {
            "ruleId": d.code,
            "level": FINDING_LEVEL,
            "message": {"text": d.message},
            "locations": [{
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(d.path), "uriBaseId": "%SRCROOT%"},
                    "region": {"startLine": d.line, "startColumn": d.column, "endLine": d.end_line,
                               "endColumn": d.end_column},
                }
            }],
            "partialFingerprints": {"shutdownLint/v1": f"{d.code}:{d.line_text}"},
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        results.append(result)
    notifications = [_notification(e) for e in report.failures()]
    log = {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "shutdown-lint", "version": __version__, "semanticVersion": __version__,
                                "informationUri": INFO_URI, "rules": rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path(os.getcwd()).as_uri() + "/"}},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "results": results,
        }],
    }
    json.dump(log, out, indent=2)
    out.write("\n")
