"""JUnit XML: one test case per finding (a failure), one per path that does not exist or file
that could not be analysed (an error), or one passing case when there is none of these."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from typing import IO

from . import Report, split_error


def render(report: Report, out: IO[str]) -> None:
    failed = report.failures()
    suites = ET.Element("testsuites", name="shutdown-lint", tests=str(max(1, len(report.diagnostics) + len(failed))),
                        failures=str(len(report.diagnostics)), errors=str(len(failed)))
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
    if failed:
        suite = ET.SubElement(suites, "testsuite", name="analysis errors", tests=str(len(failed)),
                              failures="0", errors=str(len(failed)), skipped="0")
        for err in failed:
            case = ET.SubElement(suite, "testcase", name="analysis", classname=split_error(err)[0])
            ET.SubElement(case, "error", message=err).text = err
    if not report.diagnostics and not failed:
        suite = ET.SubElement(suites, "testsuite", name="shutdown-lint", tests="1", failures="0", errors="0",
                              skipped="0")
        ET.SubElement(suite, "testcase", name="No findings", classname="shutdown-lint")
    ET.indent(suites)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(suites, encoding="unicode"))
    out.write("\n")
