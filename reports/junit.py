"""JUnit XML for a run: one test case per anomaly kind, plus the verdict and expectations.

CI dashboards (Jenkins, GitLab, GitHub test reporters) read the common subset: ``testsuites``
> ``testsuite`` > ``testcase`` with ``failure``/``error``/``skipped`` children, ``time`` in
seconds. A forbidden anomaly is a failure whose text lists the checker's examples; an allowed
one passes and says so in ``system-out``; a verdict of unknown is an error (the run could not
establish the facts), matching the CLI's exit code 2.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from contract.anomalies import MEANINGS
from contract.atomic_files import write_atomic

from .summary import AnomalyRow, Verdict

MAX_EXAMPLES_IN_XML = 10


def _examples_text(row: AnomalyRow) -> str:
    lines = [f"{row.count} {row.kind}: {MEANINGS.get(row.kind, '')}".rstrip(": ")]
    if row.why:
        lines.append(f"guarantee: {row.why}")
    for ex in row.examples[:MAX_EXAMPLES_IN_XML]:
        lines.append("  " + json.dumps(ex, sort_keys=True, default=str))
    if len(row.examples) > MAX_EXAMPLES_IN_XML:
        more = len(row.examples) - MAX_EXAMPLES_IN_XML
        lines.append(f"  … {more} more examples in results.json")
    return "\n".join(lines)


def junit_xml(
    run: dict[str, Any], results: dict[str, Any] | None, rows: list[AnomalyRow],
    verdict: Verdict, report_name: str = "report.html",
) -> bytes:
    """The JUnit document for one run, as UTF-8 bytes."""
    scenario = str(run.get("scenario") or "run")
    run_id = str(run.get("run_id") or run.get("started_at") or "")
    classname = f"kafka-chaos.{scenario}"
    duration = float(((results or {}).get("stats") or {}).get("duration_s") or 0.0)
    suites = ET.Element("testsuites", name="kafka-chaos")
    suite = ET.SubElement(suites, "testsuite", name=f"{scenario} {run_id}".strip(),
                          timestamp=str(run.get("started_at") or ""), time=f"{duration:.3f}")
    props = ET.SubElement(suite, "properties")
    for k, v in (("scenario", scenario), ("run_id", run_id), ("verdict", verdict.value),
                 ("report", report_name), ("seed", run.get("seed"))):
        ET.SubElement(props, "property", name=k, value="" if v is None else str(v))

    def case(name: str) -> ET.Element:
        return ET.SubElement(suite, "testcase", classname=classname, name=name, time="0")

    v = case("verdict")
    if verdict.value == "invalid":
        ET.SubElement(v, "failure", message=verdict.reason, type="invalid").text = verdict.reason
    elif verdict.value == "unknown":
        ET.SubElement(v, "error", message=verdict.reason, type="unknown").text = verdict.reason
    ET.SubElement(v, "system-out").text = " ".join([verdict.reason, *verdict.notes])

    if results is not None:
        for row in rows:
            c = case(row.kind)
            if row.status == "violation":
                ET.SubElement(c, "failure", message=f"{row.count} {row.kind} (forbidden)",
                              type=row.kind).text = _examples_text(row)
            elif row.status == "undecided":
                ET.SubElement(c, "error", message=f"{row.count} {row.kind} (undecided)",
                              type=row.kind).text = _examples_text(row)
            elif row.status == "allowed":
                ET.SubElement(c, "system-out").text = "allowed by this configuration. " + \
                    _examples_text(row)
            elif row.status == "unchecked":
                ET.SubElement(c, "skipped", message=row.why or "not checked")
        for section in ("expectations", "mechanism"):
            block = results.get(section)
            if not isinstance(block, dict):
                continue
            c = case(section)
            ok = block.get("met", block.get("observed"))
            details = "\n".join(json.dumps(d, sort_keys=True, default=str)
                                for d in block.get("details") or [])
            if ok is False:
                ET.SubElement(c, "failure", message=f"{section} not met", type=section).text = \
                    details
            else:
                ET.SubElement(c, "system-out").text = details
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    suite.set("skipped", "0")
    for k in ("tests", "failures", "errors"):
        suites.set(k, suite.get(k, "0"))
    ET.indent(suites)
    _xml_safe(suites)
    return ET.tostring(suites, encoding="utf-8", xml_declaration=True)


#: What XML 1.0 cannot carry at all (a record's text or a broker's error can hold it).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_safe(root: ET.Element) -> None:
    """Replaces the characters XML 1.0 forbids in every text, tail and attribute: a JUnit
    reader refuses the whole file over one."""
    for el in root.iter():
        if el.text:
            el.text = _NOT_XML.sub("\ufffd", el.text)
        if el.tail:
            el.tail = _NOT_XML.sub("\ufffd", el.tail)
        for k, v in el.attrib.items():
            el.set(k, _NOT_XML.sub("\ufffd", v))


def write_junit(path: Path, data: bytes) -> Path:
    """Write the JUnit document (atomically, so a CI reader never sees half a file)."""
    return write_atomic(path, data)
