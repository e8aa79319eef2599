"""The Jinja2 environment and the inlined stylesheet and script shared by all pages.

CSS and JavaScript live as real files under ``static/`` (so they are linted and edited as what
they are) and are inlined into each page at render time: a report is one self-contained file
that opens offline from a CI artifact, an e-mail or a USB stick.

The page's Content-Security-Policy allows no inline code but its own: every ``<script>`` and
``<style>`` block is allowed by the SHA-256 of the text emitted, computed after rendering (no
``'unsafe-inline'``), so markup that slipped into a page through a file name or a log line could
not run or restyle it. Hence no ``on…=`` handler and no ``style=`` attribute anywhere: handlers
are attached by the script, looks are classes. Links to the run's own files go through
:func:`local_href`.
"""

from __future__ import annotations

import base64
import hashlib
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

from contract.atomic_files import write_atomic as contract_write_atomic
from contract.faults import fault_css_rules

from . import svg

#: What base.html.j2 puts in its CSP ``<meta>``; render_template replaces it with the policy.
#: The meta comes before any data on the page, and only the first occurrence is replaced.
CSP_SLOT = "kafka-chaos-csp-slot"

#: An inline block: its text is what the browser hashes (raw text, never entity-decoded).
_INLINE_BLOCK = re.compile(r"<(script|style)\b[^>]*>(.*?)</\1\s*>", re.S | re.I)


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
    env.globals["csp_slot"] = CSP_SLOT
    env.filters["local_href"] = local_href
    env.filters["num"] = lambda v: f"{v:,}" if isinstance(v, int) else v
    env.filters["fmt_num"] = svg.fmt_num
    env.filters["seconds"] = lambda v: "—" if v is None else f"{float(v):,.1f} s"
    return env


def local_href(path: str) -> str:
    """The link to a file below the page's folder: ``./`` and the URL-quoted relative path.

    A run folder or log file may be named anything; quoted, ``javascript:alert(1)/report.html``
    becomes ``./javascript%3Aalert%281%29/report.html``, a file, never a script, a query or a
    fragment.
    """
    return "./" + quote(str(path).lstrip("/"))


def _source_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def content_security_policy(html: str) -> str:
    """The policy of a rendered page: nothing from outside, no inline code but the page's own
    ``<script>`` and ``<style>`` blocks, each allowed by the hash of its exact text."""
    hashes: dict[str, list[str]] = {"script": [], "style": []}
    for m in _INLINE_BLOCK.finditer(html):
        h = _source_hash(m.group(2))
        if h not in (kept := hashes[m.group(1).lower()]):
            kept.append(h)
    script, style = (" ".join(hashes[k]) or "'none'" for k in ("script", "style"))
    return (f"default-src 'none'; script-src {script}; style-src {style}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def render_template(name: str, context: dict[str, Any]) -> str:
    """Render a page template with the shared environment, its CSP filled in."""
    # The browser hashes a block after turning CR LF and CR into LF; hash what it will see.
    html = environment().get_template(name).render(**context)
    html = html.replace("\r\n", "\n").replace("\r", "\n")
    if CSP_SLOT not in html:
        raise ValueError(f"{name} has no Content-Security-Policy slot (extend base.html.j2)")
    return html.replace(CSP_SLOT, content_security_policy(html), 1)


def write_atomic(path: Path, text: str) -> Path:
    """Write a page via a temporary file and a rename, so a reader never sees half of it."""
    return contract_write_atomic(path, text)
