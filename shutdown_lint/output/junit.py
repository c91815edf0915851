"""JUnit XML: one test case per finding (failures), or one passing case per clean run."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import IO

from . import Report


def render(report: Report, out: IO[str]) -> None:
    suites = ET.Element("testsuites", name="shutdown-lint", tests=str(max(1, len(report.diagnostics))),
                        failures=str(len(report.diagnostics)), errors=str(len(report.errors)))
    by_path = defaultdict(list)
    for d in report.diagnostics:
        by_path[d.path].append(d)
    for path in sorted(by_path):
        items = by_path[path]
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(items)), failures=str(len(items)),
                              errors="0", skipped="0")
        for d in items:
            case = ET.SubElement(suite, "testcase", name=f"org.shutdown-lint.{d.code}", classname=path,
                                 file=path, line=str(d.line))
            failure = ET.SubElement(case, "failure", message=d.message, type=d.code)
            failure.text = f"{d.path}:{d.line}:{d.column}: {d.code} {d.message}"
    if report.errors:
        suite = ET.SubElement(suites, "testsuite", name="analysis errors", tests=str(len(report.errors)),
                              failures="0", errors=str(len(report.errors)), skipped="0")
        for err in report.errors:
            case = ET.SubElement(suite, "testcase", name="analysis", classname=err.split(":", 1)[0])
            ET.SubElement(case, "error", message=err).text = err
    if not report.diagnostics and not report.errors:
        suite = ET.SubElement(suites, "testsuite", name="shutdown-lint", tests="1", failures="0", errors="0",
                              skipped="0")
        ET.SubElement(suite, "testcase", name="No findings", classname="shutdown-lint")
    ET.indent(suites)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(suites, encoding="unicode"))
    out.write("\n")
