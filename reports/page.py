"""The Jinja2 environment and the inlined stylesheet and script shared by all pages.

CSS and JavaScript live as real files under ``static/`` (so they are linted and edited as what
they are) and are inlined into each page at render time: a report is one self-contained file
that opens offline from a CI artifact, an e-mail or a USB stick.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from contract.atomic_files import write_atomic as contract_write_atomic
from contract.faults import fault_css_rules

from . import svg


@cache
def _static(name: str) -> str:
    return resources.files("reports").joinpath("static", name).read_text(encoding="utf-8")


@cache
def environment() -> jinja2.Environment:
    """The template environment: autoescaping on, undefined variables are errors."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("reports", "templates"),
        autoescape=jinja2.select_autoescape(["html", "j2"], default=True),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # The fault colours are the registry's (contract.faults), so a new kind needs no CSS.
    env.globals["inline_css"] = lambda: Markup(_static("report.css") + fault_css_rules())
    # "</script" inside the script would end it early; the source never contains it.
    env.globals["inline_js"] = lambda: Markup(_static("report.js").replace("</", "<\\/"))
    env.filters["num"] = lambda v: f"{v:,}" if isinstance(v, int) else v
    env.filters["fmt_num"] = svg.fmt_num
    env.filters["seconds"] = lambda v: "—" if v is None else f"{float(v):,.1f} s"
    return env


def render_template(name: str, context: dict[str, Any]) -> str:
    """Render a page template with the shared environment."""
    return environment().get_template(name).render(**context)


def write_atomic(path: Path, text: str) -> Path:
    """Write a page via a temporary file and a rename, so a reader never sees half of it."""
    return contract_write_atomic(path, text)
