"""report.md and report.html: scenario summary, ranking in words, tables, figures.

Both are rendered from one list of blocks, so they say the same thing. The
HTML inlines the PNGs (base64) and links the PDFs, sidecars and result.json
files by relative path; every link is checked to resolve before writing.
"""
import base64
import html
import json
import os
from collections import defaultdict
from urllib.parse import quote

from sparsefuse_plot import style
from sparsefuse_plot.results import (BREAKDOWN_KEYS, BREAKDOWN_NAMES, describe_network, format_value, portable_text,
                                     value_sort_key)

TIE = 5e-4  # relative difference below which two mean iteration times count as a tie


class Link:
    def __init__(self, text, target):
        self.text, self.target = text, target


class Code:
    def __init__(self, text):
        self.text = text


class Bold:
    def __init__(self, text):
        self.text = text


def fmt_ms(seconds):
    ms = seconds * 1e3
    return f"{ms:,.1f}" if ms >= 10 else f"{ms:.3g}"


def _names(items):
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# --- the words ------------------------------------------------------------------
def _because(slow, fast):
    """Why SLOW is slower than FAST: the breakdown component that differs most."""
    diffs = {k: slow.breakdown[k] - fast.breakdown[k] for k in BREAKDOWN_KEYS}
    key = max(diffs, key=lambda k: diffs[k])
    total = sum(slow.breakdown.values())
    if diffs[key] <= 0 or total <= 0:
        return ""
    share = slow.breakdown[key] / total
    what = {"communication_exposed": "exposed communication (not hidden behind backward)",
            "sync_wait": "waiting for other workers (sync wait)",
            "compression": "compression", "forward": "the forward pass", "backward": "the backward pass",
            "optimizer": "the optimizer step"}[key]
    text = (f" because {what} takes {fmt_ms(slow.breakdown[key])} ms of each iteration ({share:.0%} of its "
            f"per-worker time) against {fmt_ms(fast.breakdown[key])} ms for {fast.scheme_label}")
    n_slow, n_fast = len(slow.buckets), len(fast.buckets)
    if key in ("communication_exposed", "sync_wait") and n_slow != n_fast and \
            max(n_slow, n_fast) >= 2 * min(n_slow, n_fast):
        text += (f"; it sends its gradients in {n_slow} collective{'s' if n_slow != 1 else ''} per iteration "
                 f"against {n_fast}")
    return text


def ranking_sentence(rs, group, settings=""):
    """One paragraph ranking the results of one model, scale and variant (SETTINGS names it)."""
    r0 = group[0]
    where = f"At {r0.workers} workers on {r0.model}" + (f" ({settings})" if settings else "")
    ranked = sorted(group, key=lambda r: (r.mean_s, rs.series_order.index(r.label)))
    if len(ranked) == 1:
        return (f"{where}, only {r0.scheme_label} was simulated ({fmt_ms(r0.mean_s)} ms/iteration, "
                f"{r0.throughput:,.0f} samples/s).")
    fastest = ranked[0]
    tied = [r for r in ranked if (r.mean_s - fastest.mean_s) / fastest.mean_s < TIE]
    base = next((r for r in ranked if r.scheme_label == rs.baseline), None)
    if len(tied) == len(ranked):
        return (f"{where}, {_names([r.scheme_label for r in tied])} tie "
                f"({fmt_ms(fastest.mean_s)} ms/iteration).")
    mark = lambda r: r.scheme_label + (" (the baseline)" if r is base else "")  # noqa: E731
    if len(tied) > 1:
        text = f"{where}, {_names([mark(r) for r in tied])} tie for fastest ({fmt_ms(fastest.mean_s)} ms/iteration)"
    else:
        text = f"{where}, {mark(fastest)} is fastest ({fmt_ms(fastest.mean_s)} ms/iteration)"
    slowest = ranked[-1]
    slow_tied = [r for r in ranked if (slowest.mean_s - r.mean_s) / slowest.mean_s < TIE]
    if base is not None and base not in tied and base not in slow_tied:
        text += f", {base.mean_s / fastest.mean_s:.2f}x faster than the baseline {base.scheme_label}"
    elif base is not None and base in tied:
        runner = ranked[len(tied)]
        text += (f"; the runner-up {runner.scheme_label} ({fmt_ms(runner.mean_s)} ms) takes "
                 f"{runner.mean_s / fastest.mean_s:.2f}x as long")
    subject = _names([r.scheme_label for r in slow_tied])
    if base is not None and base in slow_tied:
        subject = ("the baseline " if len(slow_tied) == 1 else "") + subject
    verb = "are" if len(slow_tied) > 1 else "is"
    text += (f"; {subject} {verb} slowest ({fmt_ms(slowest.mean_s)} ms/iteration, "
             f"{slowest.mean_s / fastest.mean_s:.2f}x as long){_because(slowest, fastest)}.")
    if len(ranked) > 2:
        text += " Fastest first: " + ", ".join(f"{r.scheme_label} {fmt_ms(r.mean_s)}" for r in ranked) + " ms."
    return text


def _settings(key, keys):
    """The settings of group KEY that differ among the groups of its model and scale."""
    peers = [k for k in keys if k[:2] == key[:2]]
    parts = []
    for i, (name, value) in enumerate(key[2]):
        if len({json.dumps(k[2][i][1], sort_keys=True) for k in peers}) > 1:
            parts.append(f"{name.split('.')[-1]}={format_value(name, value, units=False)}")
    return ", ".join(parts)


def _variant_sort_key(items):
    return tuple((0, float(v), "") if isinstance(v, (int, float)) and not isinstance(v, bool)
                 else (1, 0.0, json.dumps(v, sort_keys=True)) for _, v in items)


def _ranking_groups(rs):
    groups = defaultdict(list)
    for r in rs.results:
        groups[(r.model, r.workers, r.variant_items)].append(r)
    return groups


# --- the document -----------------------------------------------------------------
def build_blocks(rs, sidecars, out_dir, figures_rel, opts, command):
    blocks = []
    link = lambda text, path: Link(text, os.path.relpath(path, out_dir))  # noqa: E731
    results = rs.results
    title = f"sparsefuse report: {os.path.basename(rs.root.rstrip(os.sep)) or rs.root}"
    blocks.append(("h", 1, [title]))
    # The command as typed may hold absolute paths: shown with file names only.
    blocks.append(("p", [f"Generated by ", Code(portable_text(command)), f" from {len(rs.all)} result.json file"
                         f"{'s' if len(rs.all) != 1 else ''} under ", Code(rs.shown_root), ". Speedups are relative to ",
                         Bold(rs.baseline), " at the same model, scale and settings. Times are means per iteration "
                         "over the measured iterations; the job's iteration time is set by its slowest worker, "
                         "the breakdown columns are per-worker means."]))

    # Scenario summary
    blocks.append(("h", 2, ["Scenario"]))
    rows = []
    for model in rs.models:
        mine = rs.for_model(model)
        batches = sorted({r.scenario.get("batch_per_worker") for r in mine if r.scenario.get("batch_per_worker")})
        provenance = rs.provenance(mine)
        rows.append([f"model {model}", f"trace: {provenance}; batch {', '.join(map(str, batches))} per worker; "
                                       f"workers: {', '.join(map(str, rs.workers_of(model)))}"])
    # One row per scheme with its settings, after this table: a long run-on cell is unreadable.
    scheme_rows = []
    for label in rs.scheme_labels():
        r = next(x for x in results if x.scheme_label == label)
        knobs = {k: v for k, v in r.scheme.items() if k != "preset"} if label == r.preset else {}
        scheme_rows.append([label, ", ".join(f"{k}={format_value(k, v)}" for k, v in sorted(knobs.items())) or "—"])
    rows.append(["schemes", ", ".join(row[0] for row in scheme_rows) + " (settings below)"])
    rows.append(["network", "; ".join(sorted({describe_network(r.doc) for r in results}))])
    variability = sorted({json.dumps(r.scenario.get("variability"), sort_keys=True) for r in results})
    if len(variability) == 1 and variability[0] != "null":
        v = json.loads(variability[0])
        rows.append(["variability", ", ".join(f"{k}={json.dumps(x)}" for k, x in sorted(v.items()))
                     if isinstance(v, dict) else variability[0]])
    runs = sorted({(r.scenario.get("iterations"), r.scenario.get("warmup_iterations"), r.scenario.get("seed"))
                   for r in results}, key=str)
    rows.append(["iterations", "; ".join(f"{i} measured after {w} warm-up, seed {s}" for i, w, s in runs)])
    if rs.variant_keys:
        varied = []
        for key in rs.variant_keys:
            values = sorted({json.dumps(v, sort_keys=True) for r in results for k, v in r.variant_items if k == key},
                            key=lambda text: value_sort_key(json.loads(text)))
            varied.append(f"{key}: " + ", ".join(format_value(key, json.loads(v)) for v in values))
        rows.append(["varied settings", "; ".join(varied)])
    descriptions = sorted({r.scenario.get("description") for r in results if r.scenario.get("description")})
    for d in descriptions:
        rows.append(["description", d])
    blocks.append(("table", ["", ""], rows))
    blocks.append(("table", ["scheme", "settings (resolved knobs)"], scheme_rows, "left"))

    # Ranking in words
    blocks.append(("h", 2, ["Ranking"]))
    groups = _ranking_groups(rs)
    for model in rs.models:
        blocks.append(("h", 3, [model]))
        keys = sorted((k for k in groups if k[0] == model), key=lambda k: (k[1], _variant_sort_key(k[2])))
        ranked = [k for k in keys if len(groups[k]) > 1]
        single = [k for k in keys if len(groups[k]) == 1]
        items = [[ranking_sentence(rs, groups[k], _settings(k, keys))] for k in (ranked if ranked else single[:1])]
        if ranked and single or len(single) > 1:
            shown = 0 if ranked else 1
            items.append([f"{len(single) - shown} more result{'s' if len(single) - shown != 1 else ''} of {model} "
                          "have no other scheme at the same scale and settings, so they are not ranked here; "
                          "see the tables (and the sweep heatmap, if any)."])
        blocks.append(("list", items))

    # Tables per model and scale
    blocks.append(("h", 2, ["Results"]))
    header = ["scheme", "mean ms", "p50 ms", "p99 ms", "samples/s", f"speedup vs {rs.baseline}"] + \
             [f"{BREAKDOWN_NAMES[k]} ms" for k in BREAKDOWN_KEYS] + ["buckets", "result"]
    for model in rs.models:
        for workers in rs.workers_of(model):
            members = rs.ordered([r for r in rs.for_model(model) if r.workers == workers])
            blocks.append(("h", 3, [f"{model}, {workers} workers"]))
            table = []
            for r in members:
                s = rs.speedup(r)
                table.append([r.label, fmt_ms(r.mean_s), fmt_ms(r.iteration["p50"]), fmt_ms(r.iteration["p99"]),
                              f"{r.throughput:,.1f}", f"{s:.3f}x" if s is not None else "n/a"]
                             + [fmt_ms(r.breakdown[k]) for k in BREAKDOWN_KEYS]
                             + [str(len(r.buckets)), link("result.json", r.path)])
            blocks.append(("table", header, table))

    # Figures
    blocks.append(("h", 2, ["Figures"]))
    blocks.append(("p", [f"PNG at {style.FIG_PX[0]}x{style.FIG_PX[1]} px ({style.DPI} dpi), with a PDF and a JSON "
                         "sidecar holding the plotted numbers. Regenerate them alone with ",
                         Code(portable_text(f"sparsefuse plot {rs.shown_root} --out {os.path.join(out_dir, figures_rel)}")), "."]))
    if not any(s["kind"] == "timeline" for s in sidecars):
        blocks.append(("p", ["No timeline: none of the result directories holds a timeline.json. Add one with ",
                             Code("sparsefuse simulate SCENARIO --out DIR --timeline DIR/timeline.json"), "."]))
    if not any(s["kind"] == "heatmap" for s in sidecars):
        blocks.append(("p", ["No heatmap: no sweep.json with two or more swept keys was found."]))
    for s in sidecars:
        base = os.path.join(out_dir, figures_rel)
        blocks.append(("h", 3, [s["title"]]))
        blocks.append(("figure", os.path.join(base, s["png"]), s["caption"],
                       [link("PDF", os.path.join(base, s["pdf"])), link("data (JSON)", os.path.join(base, s["figure"] + ".json"))]))

    # Inputs and notes
    blocks.append(("h", 2, ["Inputs"]))
    blocks.append(("list", [[link(r.rel, r.path), f" ({r.provenance} trace)"]
                            + ([" + ", link("timeline.json", r.timeline)] if r.timeline else [])
                            for r in rs.all]))
    if rs.warnings:
        blocks.append(("h", 2, ["Notes"]))
        blocks.append(("list", [[w] for w in rs.warnings]))
    return blocks


# --- rendering ----------------------------------------------------------------------
def _md_inline(segments, in_table=False):
    out = []
    for seg in segments:
        if isinstance(seg, Link):
            out.append(f"[{_md_escape(seg.text, in_table)}]({quote(seg.target)})")
        elif isinstance(seg, Code):
            out.append(f"`{seg.text}`")
        elif isinstance(seg, Bold):
            out.append(f"**{_md_escape(seg.text, in_table)}**")
        else:
            out.append(_md_escape(str(seg), in_table))
    return "".join(out)


def _md_escape(text, in_table):
    for c in ("\\", "*", "_", "[", "]", "<", ">", "`"):
        text = text.replace(c, "\\" + c)
    return text.replace("|", "\\|") if in_table else text


def _cell(value):
    return value if isinstance(value, list) else [value]


def render_md(blocks, out_dir):
    lines = []
    for block in blocks:
        kind = block[0]
        if kind == "h":
            lines += ["#" * block[1] + " " + _md_inline(block[2]), ""]
        elif kind == "p":
            lines += [_md_inline(block[1]), ""]
        elif kind == "list":
            lines += ["- " + _md_inline(item) for item in block[1]] + [""]
        elif kind == "table":
            header, rows = block[1], block[2]
            lines.append("| " + " | ".join(_md_inline([h], True) for h in header) + " |")
            # Result tables right-align their number columns; a table of text ("left") does not.
            text_only = len(block) > 3 and block[3] == "left"
            lines.append("|" + "|".join("---" if i == 0 or text_only else "---:" for i in range(len(header))) + "|"
                         if header[0] else "|---|---|")
            for row in rows:
                lines.append("| " + " | ".join(_md_inline(_cell(c), True) for c in row) + " |")
            lines.append("")
        elif kind == "figure":
            png, caption, extra = block[1], block[2], block[3]
            rel = os.path.relpath(png, out_dir)
            lines += [f"![{_md_escape(caption, False)}]({quote(rel)})", "",
                      "*" + _md_escape(caption, False) + "* (" + _md_inline(_join(extra, " · ")) + ")", ""]
    return "\n".join(lines)


def _join(items, sep):
    out = []
    for i, item in enumerate(items):
        if i:
            out.append(sep)
        out.append(item)
    return out


def _html_inline(segments):
    out = []
    for seg in segments:
        if isinstance(seg, Link):
            out.append(f'<a href="{html.escape(quote(seg.target))}">{html.escape(seg.text)}</a>')
        elif isinstance(seg, Code):
            out.append(f"<code>{html.escape(seg.text)}</code>")
        elif isinstance(seg, Bold):
            out.append(f"<strong>{html.escape(seg.text)}</strong>")
        else:
            out.append(html.escape(str(seg)))
    return "".join(out)


_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;font-size:13px;margin:0.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 7px}
td{text-align:right}td:first-child,th:first-child{text-align:left}th{background:#f3f3f3}
figure{margin:1em 0 2em}figure img{width:100%;max-width:1000px;border:1px solid #ddd}
figcaption{font-size:13px;color:#444}code{background:#f5f5f5;padding:0 3px}li{margin:0.3em 0}"""


def render_html(blocks, out_dir):
    title = "".join(s if isinstance(s, str) else s.text for s in blocks[0][2])
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"]
    for block in blocks:
        kind = block[0]
        if kind == "h":
            parts.append(f"<h{block[1]}>{_html_inline(block[2])}</h{block[1]}>")
        elif kind == "p":
            parts.append(f"<p>{_html_inline(block[1])}</p>")
        elif kind == "list":
            parts.append("<ul>" + "".join(f"<li>{_html_inline(item)}</li>" for item in block[1]) + "</ul>")
        elif kind == "table":
            header, rows = block[1], block[2]
            head = "" if not any(header) else "<tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in header) + "</tr>"
            body = "".join("<tr>" + "".join(f"<td>{_html_inline(_cell(c))}</td>" for c in row) + "</tr>"
                           for row in rows)
            parts.append(f"<table>{head}{body}</table>")
        elif kind == "figure":
            png, caption, extra = block[1], block[2], block[3]
            with open(png, "rb") as f:
                data = base64.b64encode(f.read()).decode("ascii")
            parts.append(f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
                         f"<figcaption>{html.escape(caption)} ({_html_inline(_join(extra, ' · '))})"
                         "</figcaption></figure>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _links(node):
    if isinstance(node, Link):
        yield node
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from _links(item)


def _check_links(blocks, out_dir):
    missing = [link.target for link in _links(blocks) if not os.path.exists(os.path.join(out_dir, link.target))]
    missing += [b[1] for b in blocks if b[0] == "figure" and not os.path.exists(b[1])]
    if missing:
        raise RuntimeError("report links that do not resolve: " + ", ".join(missing))


def write_report(rs, sidecars, out_dir, figures_rel, opts, command):
    blocks = build_blocks(rs, sidecars, out_dir, figures_rel, opts, command)
    _check_links(blocks, out_dir)
    md_path, html_path = os.path.join(out_dir, "report.md"), os.path.join(out_dir, "report.html")
    style.write_atomically(md_path, render_md(blocks, out_dir))
    style.write_atomically(html_path, render_html(blocks, out_dir))
    return [md_path, html_path]
