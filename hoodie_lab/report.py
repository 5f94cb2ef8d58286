"""The design-review report: one self-contained HTML file plus its PNG/SVG plots.

Each part of hoodie-lab contributes a section built by a function
``build(ctx) -> Section``; every section carries the command that reproduces
it. The HTML embeds its plots as data URIs and uses no external scripts,
styles or fonts, so it opens offline.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable


@dataclass
class Section:
    title: str
    command: str
    paragraphs: list[str] = field(default_factory=list)  # HTML fragments (already escaped where needed)
    figures: list[Path] = field(default_factory=list)  # PNGs to embed (SVG siblings are linked)
    ok: bool = True
    seconds: float = 0.0


@dataclass
class Context:
    out_dir: Path
    quick: bool = True
    seed: int = 7
    log: Callable[[str], None] = print

    @property
    def fig_dir(self) -> Path:
        d = self.out_dir / "figures"
        d.mkdir(parents=True, exist_ok=True)
        return d


def esc(text: object) -> str:
    return html.escape(str(text))


def table(headers: list[str], rows: list[list[object]]) -> str:
    """A small HTML table with escaped cells."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.45}
h1{border-bottom:2px solid #333}h2{margin-top:2em;border-bottom:1px solid #ccc}
code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:90%}
pre{background:#f6f8fa;padding:.7em;overflow-x:auto;border-radius:4px;white-space:pre-wrap;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:.6em 0;font-size:85%;display:block;overflow-x:auto;max-width:100%}
td{overflow-wrap:break-word}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}
th{background:#f0f0f0}.ok{color:#1a7f37;font-weight:bold}.bad{color:#cf222e;font-weight:bold}
img{max-width:100%;border:1px solid #eee;margin:.5em 0}.cmd{background:#eef;padding:.3em .6em;border-radius:4px}
nav a{margin-right:1em}
"""


def render(sections: list[Section], title: str, generated: str) -> str:
    nav = "".join(f'<a href="#s{i}">{esc(s.title)}</a>' for i, s in enumerate(sections))
    summary = "".join(f"<tr><td><a href='#s{i}'>{esc(s.title)}</a></td><td>"
                      + ("<span class='ok'>ok</span>" if s.ok else "<span class='bad'>FAILED</span>")
                      + f"</td><td>{s.seconds:.1f} s</td></tr>" for i, s in enumerate(sections))
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
             f"<style>{_CSS}</style></head><body><h1>{esc(title)}</h1>",
             f"<p>Generated {esc(generated)}. Every section names the command that reproduces it.</p>",
             f"<nav>{nav}</nav>",
             f"<table><thead><tr><th>section</th><th>status</th><th>time</th></tr></thead><tbody>{summary}"
             "</tbody></table>"]
    for i, s in enumerate(sections):
        status = "<span class='ok'>ok</span>" if s.ok else "<span class='bad'>FAILED</span>"
        parts.append(f"<h2 id='s{i}'>{esc(s.title)} — {status}</h2>")
        parts.append(f"<p>Reproduce: <code class='cmd'>{esc(s.command)}</code> "
                     f"<small>({s.seconds:.1f} s)</small></p>")
        parts.extend(s.paragraphs)
        for fig in s.figures:
            data = base64.b64encode(Path(fig).read_bytes()).decode("ascii")
            svg = Path(fig).with_suffix(".svg")
            link = f" <a href='figures/{esc(svg.name)}'>SVG</a>" if svg.exists() else ""
            parts.append(f"<figure><img alt='{esc(Path(fig).stem)}' src='data:image/png;base64,{data}'>"
                         f"<figcaption>{esc(Path(fig).stem)}{link}</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts)


def build_report(out_dir: Path, builders: list[Callable[[Context], Section]], *, quick: bool = True,
                 seed: int = 7, log: Callable[[str], None] = print) -> tuple[Path, list[Section]]:
    """Run every section builder and write ``out_dir/index.html``.

    A builder that raises becomes a FAILED section with the error, so one broken
    part never hides the others; callers decide the exit status from ``ok``.
    """
    ctx = Context(Path(out_dir), quick=quick, seed=seed, log=log)
    ctx.out_dir.mkdir(parents=True, exist_ok=True)
    sections: list[Section] = []
    for n, builder in enumerate(builders, 1):
        name = getattr(builder, "__doc__", None) or builder.__name__
        log(f"[{n}/{len(builders)}] {name.strip().splitlines()[0]}")
        started = time.perf_counter()
        try:
            section = builder(ctx)
        except Exception as exc:  # noqa: BLE001 - reported in the document, not swallowed
            section = Section(title=builder.__name__, command="", ok=False,
                              paragraphs=[pre("".join(traceback.format_exception(exc))[-4000:])])
        section.seconds = time.perf_counter() - started
        sections.append(section)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    path = ctx.out_dir / "index.html"
    path.write_text(render(sections, "hoodie-lab design review", stamp), encoding="utf-8")
    return path, sections
