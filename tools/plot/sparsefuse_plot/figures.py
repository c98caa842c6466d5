"""The figures. Each builder draws from a ResultSet and returns the sidecars
(the plotted series, with title and caption) of the figures it wrote."""
import json
import math
import os
import textwrap
from collections import defaultdict

from sparsefuse_plot import style
from sparsefuse_plot.results import (BREAKDOWN_KEYS, BREAKDOWN_NAMES, InputProblem, format_value, key_unit,
                                     portable_text, value_sort_key)

MIB = float(1 << 20)


HATCHES = [None, "//", "..", "xx", "\\\\", "oo", "++", "--"]  # bars of labels sharing a preset, like LINESTYLES for lines


class Options:
    def __init__(self, baseline=None, workers=None, heatmap_metric="time", max_timeline_workers=4):
        self.baseline = baseline
        self.workers = workers
        self.heatmap_metric = heatmap_metric
        self.max_timeline_workers = max_timeline_workers


def _series_style(rs, r):
    """Colour and marker from the preset; line style tells apart labels that share a preset."""
    same_preset = [label for label in rs.series_order if rs.by_label(label).preset == r.preset]
    index = same_preset.index(r.label) if r.label in same_preset else 0
    color = style.preset_color(r.preset)
    return {"color": color, "marker": style.preset_marker(r.preset),
            "linestyle": style.LINESTYLES[index % len(style.LINESTYLES)],
            "markerfacecolor": color if index % 2 == 0 else "white"}


def _legend(fig, axes_or_handles, labels=None, *, x=0.785, top=None, title="scheme"):
    if top is None:
        top = fig.subplotpars.top
    if labels is None:
        handles, labels = axes_or_handles.get_legend_handles_labels()
    else:
        handles = axes_or_handles
    size = 7 if len(labels) <= 14 else 6 if len(labels) <= 22 else 5
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(x, top), title=title, fontsize=size,
               frameon=False, borderaxespad=0.0)


def _repeat_note(counts):
    """Legend suffix naming how many repeats each point averages."""
    low, high = min(counts), max(counts)
    return f" (n={low})" if low == high else f" (n={low}-{high})"


def _shorten(label, width=28):
    return label if len(label) <= width else label[: width - 1] + "\u2026"


def _left_margin(labels, size, extra=0.0):
    """Left margin (figure fraction) that fits tick LABELS of font SIZE, plus EXTRA."""
    longest = max((len(line) for label in labels for line in label.split("\n")), default=4)
    return min(0.34, 0.03 + extra + longest * size * 0.56 / 72 / style.FIG_W_IN)


def _wrap(label, width=22, lines=3):
    """LABEL on up to LINES lines of WIDTH characters (for legends and tick labels)."""
    parts = textwrap.wrap(label, width, break_on_hyphens=False) or [label]
    if len(parts) > lines:
        parts = parts[: lines - 1] + [_shorten(" ".join(parts[lines - 1:]), width)]
    return "\n".join(parts)


# --- 1. throughput and speedup against workers -------------------------------
# More series than this in one line figure form a knot: draw one figure per family instead.
MAX_LINE_SERIES = 8


def series_groups(rs, results, limit):
    """[(name suffix, results)]: all RESULTS ("") when they hold at most LIMIT series, else one
    group per preset family (style.FAMILIES, in order), a family of more than LIMIT series cut
    into near-equal parts ("seed-sparse-1", ...)."""
    order = [label for label in rs.series_order if any(r.label == label for r in results)]
    if len(order) <= limit:
        return [("", results)]
    families = list(style.FAMILIES) + [style.OTHER_FAMILY]
    by_family = defaultdict(list)
    for label in order:
        by_family[style.family_of(rs.by_label(label).preset)].append(label)
    groups = []
    for family in families:
        labels = by_family[family]
        parts = -(-len(labels) // limit)
        size = -(-len(labels) // parts) if parts else 0
        for k in range(parts):
            chosen = set(labels[k * size:(k + 1) * size])
            groups.append((style.slug(family) + (f"-{k + 1}" if parts > 1 else ""),
                           [r for r in results if r.label in chosen]))
    return groups


def _same_as(series, key):
    """{label: earlier label} for series whose KEY values equal an earlier series' exactly:
    drawn on top of each other, the legend must say so."""
    first, same = {}, {}
    for s in series:
        values = (tuple(s["workers"]), tuple(s[key]))
        if values in first:
            same[s["label"]] = first[values]
        else:
            first[values] = s["label"]
    return same


def scaling(plt, rs, out_dir, opts):
    sidecars = []
    for model in rs.models:
        for part, results in series_groups(rs, rs.for_model(model), MAX_LINE_SERIES):
            sidecars.append(_scaling_figure(plt, rs, out_dir, model, part, results))
    return sidecars


def _scaling_figure(plt, rs, out_dir, model, part, results):
    workers = rs.workers_of(model)
    note = f"speedup = mean iteration time of {rs.baseline} / that of the scheme at the same scale"
    if any(r.n > 1 for r in results):
        note += ("; repeated runs (seeds) are one point: their mean, with error bars of the 95% "
                 "Student-t interval of the mean; n per series in the legend")
    if any(rs.speedup(r) is None for r in results):
        note += f" (points with no {rs.baseline} result at the same settings have no speedup)"
    caption = rs.caption(results, extra=note)
    title = f"Scaling of {model}" + (f" ({part.replace('-', ' ')})" if part else "")
    fig, axes = style.new_figure(plt, f"{title}: throughput and speedup over {rs.baseline}",
                                 caption, 1, 2, left=0.085, right=0.765, bottom=0.12, wspace=0.3)
    ax_t, ax_s = axes[0]
    series, styles = [], []
    for label in rs.series_order:
        points = sorted((r for r in results if r.label == label), key=lambda r: r.workers)
        if not points:
            continue
        st = _series_style(rs, points[0])
        counts = [r.n for r in points]
        series.append({"label": label, "scheme": points[0].scheme_label, "preset": points[0].preset,
                       "variant": points[0].variant, "color": st["color"], "marker": st["marker"],
                       "workers": [r.workers for r in points],
                       "throughput_samples_per_s": [r.throughput for r in points],
                       "iteration_time_mean_s": [r.mean_s for r in points],
                       "speedup": [rs.speedup(r) for r in points], "n": counts,
                       # Repeats (seeds) are one point: the mean, with its 95% interval as an error bar.
                       "throughput_ci95_half_width": [r.ci95.get("throughput_samples_per_s") for r in points],
                       "iteration_time_mean_ci95_half_width_s": [r.ci95.get("iteration_time_mean_s")
                                                                 for r in points],
                       "sources": [r.rel for r in points],
                       "repeat_sources": [[x.rel for x in r.repeats] for r in points]})
        styles.append(st)
    same = _same_as(series, "throughput_samples_per_s")
    for s, st in zip(series, styles):
        legend = _wrap(s["label"]) + (_repeat_note(s["n"]) if max(s["n"]) > 1 else "")
        if s["label"] in same:
            # Drawn exactly on an earlier series: a larger hollow marker keeps both visible.
            legend += f" (= {same[s['label']]})"
            st = dict(st, markerfacecolor="white", markersize=8, zorder=1.5)
        s["legend"] = legend.replace("\n", " ")
        half = s["throughput_ci95_half_width"]
        ax_t.errorbar(s["workers"], s["throughput_samples_per_s"], label=legend, capsize=2.5, elinewidth=0.8,
                      yerr=[h or 0.0 for h in half] if any(half) else None, **st)
        ax_s.plot(s["workers"], [v if v is not None else math.nan for v in s["speedup"]], **st)
    for ax in (ax_t, ax_s):
        style.workers_axis(ax, workers)
    log_t = style.value_axis(ax_t, [v for s in series for v in s["throughput_samples_per_s"]])
    ax_t.set_ylabel("throughput (samples/s, all workers" + (", log scale)" if log_t else ")"))
    ax_t.set_title("throughput (higher is better)")
    ax_s.axhline(1.0, color="#555555", linewidth=0.8, linestyle=(0, (4, 3)), zorder=0)
    log_s = style.value_axis(ax_s, [v for s in series for v in s["speedup"]], "x")
    ax_s.set_ylabel(f"speedup over {rs.baseline}" + (" (log scale)" if log_s else ""))
    ax_s.set_title(f"speedup over {rs.baseline} (dashed line: 1x)")
    _legend(fig, ax_t)
    name = f"scaling-{style.slug(model)}" + (f"-{part}" if part else "")
    return style.save_figure(plt, fig, out_dir, name, {
        "kind": "scaling", "title": title, "caption": caption, "model": model, "part": part or None,
        "baseline": rs.baseline, "x": "workers", "series": series,
        "throughput_y_scale": "log" if log_t else "linear", "speedup_y_scale": "log" if log_s else "linear"})


# --- 2. speedup bars per model at one scale -----------------------------------
def speedup_bars(plt, rs, out_dir, opts):
    groups = []
    left_out = set()
    for model in rs.models:
        scale = rs.chosen_scale(model, opts.workers)
        if scale is not None:
            members = [r for r in rs.for_model(model) if r.workers == scale]
            groups.append((model, scale, rs.ordered(members)))
    # Series with no baseline at their settings in any group cannot be compared: leave them out.
    comparable = {r.label for _, _, m in groups for r in m if rs.speedup(r) is not None}
    left_out = {r.label for _, _, m in groups for r in m} - comparable
    groups = [(model, scale, [r for r in m if r.label in comparable]) for model, scale, m in groups]
    groups = [g for g in groups if g[2]]
    if not groups:
        return []
    all_results = [r for _, _, m in groups for r in m]
    scales = sorted({g[1] for g in groups})
    scale_text = f"{scales[0]} workers" if len(scales) == 1 else "the largest scale of each model"
    note = (f"bar = mean iteration time of {rs.baseline} / that of the scheme, same model, scale and settings; "
            "n/a: no baseline result at the same settings")
    if left_out:
        schemes = []
        for label in rs.series_order:
            if label in left_out and rs.by_label(label).scheme_label not in schemes:
                schemes.append(rs.by_label(label).scheme_label)
        note += (f"; {len(left_out)} series of {', '.join(schemes)} left out: no {rs.baseline} result at "
                 "their settings")
    caption = rs.caption(all_results, extra=note)
    fig, axes = style.new_figure(plt, f"Speedup over {rs.baseline} per model at {scale_text}", caption,
                                 right=0.765, bottom=0.13)
    ax = axes[0][0]
    # Every series keeps its slot in every group, so a bar's position names its scheme too.
    slots = [label for label in rs.series_order if any(r.label == label for r in all_results)]
    width = 0.84 / len(slots)
    many = len(slots) > 6
    series = {label: {"label": label, "models": [], "workers": [], "speedup": [], "iteration_time_mean_s": [],
                      "baseline_iteration_time_mean_s": [], "sources": []} for label in slots}
    handles = {}
    known = [s for s in (rs.speedup(r) for r in all_results) if s is not None]
    tallest = max(known + [1.0])
    log = style.value_axis(ax, known + [1.0], "x")
    # On a log axis bars stand on the decade below the smallest speedup, not on 0.
    floor = 10 ** math.floor(math.log10(min(known + [1.0]) / 1.2)) if log else 0.0
    for gi, (model, scale, members) in enumerate(groups):
        for r in members:
            s = rs.speedup(r)
            st = _series_style(rs, r)
            x = gi - 0.42 + width * (slots.index(r.label) + 0.5)
            top = s if s is not None else floor
            bar = ax.bar(x, top - floor, width * 0.9, bottom=floor, color=st["color"], edgecolor="white",
                         linewidth=0.3, hatch=HATCHES[style.LINESTYLES.index(st["linestyle"])])
            handles.setdefault(r.label, bar)
            label_y = max(top, floor) * 1.08 if log else top + tallest * 0.01
            ax.text(x, label_y, "n/a" if s is None else f"{s:.2f}" if s >= 0.1 else f"{s:.3f}",
                    ha="center", va="bottom", fontsize=5 if many else 6, rotation=90 if many else 0)
            base = rs.baseline_of(r)
            entry = series[r.label]
            entry["models"].append(model)
            entry["workers"].append(r.workers)
            entry["speedup"].append(s)
            entry["iteration_time_mean_s"].append(r.mean_s)
            entry["baseline_iteration_time_mean_s"].append(base.mean_s if base else None)
            entry["sources"].append(r.rel)
    ax.axhline(1.0, color="#555555", linewidth=0.8, linestyle=(0, (4, 3)), zorder=0)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{m}\n{s} workers" for m, s, _ in groups])
    ax.set_xlim(-0.5, len(groups) - 0.5)
    if log:
        ax.set_ylim(floor, tallest * (3.0 if many else 2.0))
    else:
        ax.set_ylim(0, tallest * (1.18 if many else 1.1))
    ax.set_ylabel(f"speedup over {rs.baseline} (higher is faster" + (", log scale)" if log else ")"))
    ax.set_xlabel("model and scale")
    ax.grid(axis="x", visible=False)
    _legend(fig, [handles[label] for label in slots], [_wrap(label) for label in slots])
    sidecar = {"kind": "speedup-bars", "title": f"Speedup over {rs.baseline} per model", "caption": caption,
               "baseline": rs.baseline, "series": [series[label] for label in slots], "y_scale": "log" if log else "linear",
               "left_out": [label for label in rs.series_order if label in left_out]}
    return [style.save_figure(plt, fig, out_dir, "speedup-bars", sidecar)]


# --- 3. stacked per-iteration breakdown -------------------------------------------
def _breakdown_scales(rs, model, opts):
    have = rs.workers_of(model)
    if len(have) <= 4:
        return have
    chosen = rs.chosen_scale(model, opts.workers) or have[-1]
    return sorted({have[0], have[len(have) // 2], chosen, have[-1]})


def breakdown(plt, rs, out_dir, opts):
    sidecars = []
    for model in rs.models:
        scales = _breakdown_scales(rs, model, opts)
        results = [r for r in rs.for_model(model) if r.workers in scales]
        caption = rs.caption(results, extra="bars: per-worker means per iteration; black tick: mean iteration "
                                            "time of the job (set by the slowest worker)")
        rows = [label for label in rs.series_order if any(r.label == label for r in results)]
        size = 7 if len(rows) <= 8 else 6 if len(rows) <= 14 else 5
        ticks = [_wrap(label, 22, 2) for label in rows]
        fig, axes = style.new_figure(plt, f"Where an iteration goes: {model}", caption, 1, len(scales),
                                     left=_left_margin(ticks, size, 0.03), right=0.8, bottom=0.12, wspace=0.15,
                                     sharey=True)
        panels = []
        for ax, scale in zip(axes[0], scales):
            members = rs.ordered([r for r in results if r.workers == scale])
            ys = [rows.index(r.label) for r in members]
            left = [0.0] * len(members)
            for key in BREAKDOWN_KEYS:
                values = [r.breakdown[key] * 1e3 for r in members]
                ax.barh(ys, values, 0.7, left=left, color=style.COMPONENT_COLORS[key], label=BREAKDOWN_NAMES[key],
                        edgecolor="white", linewidth=0.2)
                left = [a + v for a, v in zip(left, values)]
            ax.plot([r.mean_s * 1e3 for r in members], ys, linestyle="none", marker="|", markersize=9,
                    markeredgewidth=1.5, color="black", label="mean iteration time")
            ax.set_title(f"{scale} workers")
            ax.set_xlabel("time per iteration (ms)")
            ax.set_xlim(0, max([r.mean_s * 1e3 for r in members] + left) * 1.05)
            ax.grid(axis="y", visible=False)
            panels.append({"workers": scale, "series": [
                {"label": r.label, "preset": r.preset, "color": style.preset_color(r.preset), "source": r.rel,
                 "breakdown_s": dict(r.breakdown), "iteration_time_mean_s": r.mean_s} for r in members]})
        ax0 = axes[0][0]
        ax0.set_yticks(range(len(rows)))
        ax0.set_yticklabels(ticks, fontsize=size)
        for tick, label in zip(ax0.get_yticklabels(), rows):
            tick.set_color(style.preset_color(rs.by_label(label).preset))
        ax0.set_ylim(len(rows) - 0.5, -0.5)
        ax0.set_ylabel("scheme (in the scheme's colour)")
        handles, labels = ax0.get_legend_handles_labels()
        _legend(fig, handles, [_wrap(label, 18) for label in labels], x=0.815, title="component")
        name = f"breakdown-{style.slug(model)}"
        sidecars.append(style.save_figure(plt, fig, out_dir, name, {
            "kind": "breakdown", "title": f"Where an iteration goes: {model}", "caption": caption, "model": model,
            "components": list(BREAKDOWN_KEYS), "unit": "s (plotted in ms)", "panels": panels}))
    return sidecars


# --- 4. Gantt timeline of one iteration ---------------------------------------------
_LANES = ("compute", "compression", "communication", "waiting")
_COMPUTE = {"forward", "backward", "optimizer"}


def _activity(event):
    name = str(event.get("name", ""))
    lowered = name.lower()
    if name in _COMPUTE:
        return "compute", name
    if "decompress" in lowered or "unpack" in lowered or "scatter" in lowered:
        return "compression", "decompression"
    if "compress" in lowered or "sparsif" in lowered or "pack" in lowered or "select" in lowered:
        return "compression", "compression"
    if lowered in ("wait", "sync_wait", "waiting"):
        return "waiting", "wait"
    if event.get("tid") == 0:
        return "compute", name
    return "communication", "communication"


def load_timeline(path, rel, max_workers):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputProblem(f"{rel}: cannot read the timeline: {e}") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputProblem(f"{rel}: at /traceEvents: expected a Chrome-trace event array")
    spans = [e for e in events if isinstance(e, dict) and e.get("ph") == "X"
             and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]
    workers = sorted({e.get("pid") for e in spans if isinstance(e.get("pid"), int)})
    shown = workers[:max_workers]
    # One iteration per worker: from its first forward to the end of the first optimizer step after it.
    windows = {}
    for w in shown:
        mine = sorted((e for e in spans if e.get("pid") == w), key=lambda e: e["ts"])
        forwards = [e for e in mine if e.get("name") == "forward"]
        start = forwards[0]["ts"] if forwards else (mine[0]["ts"] if mine else 0.0)
        ends = [e["ts"] + e["dur"] for e in mine if e.get("name") == "optimizer" and e["ts"] >= start]
        end = ends[0] if ends else max((e["ts"] + e["dur"] for e in mine), default=start)
        windows[w] = (start, end)
    t0 = min((s for s, _ in windows.values()), default=0.0)
    lanes = {}
    for w in shown:
        start, end = windows[w]
        for e in spans:
            if e.get("pid") != w or e["ts"] + e["dur"] <= start or e["ts"] >= end:
                continue
            lane, activity = _activity(e)
            lanes.setdefault((w, lane), []).append({
                "name": e.get("name"), "activity": activity, "ts_us": e["ts"], "dur_us": e["dur"],
                "start_ms": (e["ts"] - t0) / 1e3, "duration_ms": e["dur"] / 1e3})
    return workers, shown, t0, lanes


def _union(ranges):
    merged = []
    for start, duration in sorted(ranges):
        if merged and start <= merged[-1][0] + merged[-1][1]:
            end = max(merged[-1][0] + merged[-1][1], start + duration)
            merged[-1] = (merged[-1][0], end - merged[-1][0])
        else:
            merged.append((start, duration))
    return merged


def timelines(plt, rs, out_dir, opts):
    from matplotlib.patches import Patch
    sidecars = []
    used = set()
    for r in [r for r in rs.all if r.timeline]:
        rel = os.path.join(os.path.dirname(r.rel), "timeline.json")
        workers, shown, t0, lanes = load_timeline(r.timeline, rel, opts.max_timeline_workers)
        if not lanes:
            rs.warnings.append(f"{rel}: no spans to draw; no timeline figure")
            continue
        name = f"timeline-{style.slug(r.model)}-{style.slug(r.label)}-{r.workers}w"
        base, n = name, 2
        while name in used:
            name, n = f"{base}-{n}", n + 1
        used.add(name)
        present_lanes = [lane for lane in _LANES if any(k[1] == lane for k in lanes)]
        rows = [(w, lane) for w in shown for lane in present_lanes]
        caption = rs.caption([r], extra=f"scheme {r.label}; workers {', '.join(map(str, shown))} of "
                                        f"{r.workers} (timeline holds {len(workers)}); from {rel}")
        fig, axes = style.new_figure(plt, f"One iteration of {r.label} on {r.model}, {r.workers} workers",
                                     caption, left=0.16, right=0.8, bottom=0.11)
        ax = axes[0][0]
        colors = {"forward": style.COMPONENT_COLORS["forward"], "backward": style.COMPONENT_COLORS["backward"],
                  "optimizer": style.COMPONENT_COLORS["optimizer"], "compression": style.COMPONENT_COLORS["compression"],
                  "communication": style.COMPONENT_COLORS["communication"], "wait": style.COMPONENT_COLORS["wait"],
                  "decompression": "#b2df8a"}
        seen = []
        lane_json = []
        end = max(s["start_ms"] + s["duration_ms"] for v in lanes.values() for s in v)
        for y, (w, lane) in enumerate(rows):
            spans = sorted(lanes.get((w, lane), []), key=lambda s: s["start_ms"])
            by_activity = defaultdict(list)
            for s in spans:
                by_activity[s["activity"]].append((s["start_ms"], s["duration_ms"]))
                if s["activity"] not in seen:
                    seen.append(s["activity"])
            for activity, ranges in by_activity.items():
                if activity == "wait":  # waits of successive buckets overlap: draw their union
                    ranges, edge = _union(ranges), "none"
                else:  # white separators only where they do not hide narrow spans
                    edge = "white" if len(ranges) <= 120 and min(d for _, d in ranges) > 0.004 * end else "none"
                ax.broken_barh(ranges, (y - 0.38, 0.76), facecolors=colors.get(activity, "#999999"),
                               edgecolor=edge, linewidth=0.25)
            lane_json.append({"worker": w, "lane": lane, "spans": spans})
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([lane for _, lane in rows])
        ax.set_ylim(len(rows) - 0.5, -0.5)
        for i in range(1, len(shown)):
            ax.axhline(i * len(present_lanes) - 0.5, color="#888888", linewidth=0.6)
        from matplotlib.transforms import blended_transform_factory
        to_left = blended_transform_factory(ax.transAxes, ax.transData)
        for i, w in enumerate(shown):
            middle = i * len(present_lanes) + (len(present_lanes) - 1) / 2
            ax.text(-0.2, middle, f"worker {w}", transform=to_left, rotation=90, ha="center", va="center",
                    fontsize=7, fontweight="bold")
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, end * 1.01)
        ax.set_xlabel("time since the iteration's first forward pass (ms)")
        names = {"forward": "forward", "backward": "backward", "optimizer": "optimizer", "compression": "compression",
                 "decompression": "decompression", "communication": "collective running",
                 "wait": "posted, waiting to start"}
        order = [a for a in ("forward", "backward", "optimizer", "compression", "decompression", "communication",
                             "wait") if a in seen]
        order += [a for a in seen if a not in order]
        handles = [Patch(facecolor=colors.get(a, "#999999"), label=names.get(a, a)) for a in order]
        _legend(fig, handles, [_wrap(h.get_label(), 16) for h in handles], x=0.815, title="activity")
        sidecars.append(style.save_figure(plt, fig, out_dir, name, {
            "kind": "timeline", "title": f"One iteration of {r.label} on {r.model}", "caption": caption,
            "model": r.model, "workers": r.workers, "label": r.label, "source": r.rel, "timeline": rel,
            "origin_us": t0, "workers_shown": shown, "lanes": lane_json}))
    return sidecars


# --- 5. buffer partition ----------------------------------------------------------------
def _tint(color, amount):
    from matplotlib.colors import to_rgb
    return tuple(c + (1 - c) * amount for c in to_rgb(color))


MAX_PARTITION_ROWS = 8


def partition(plt, rs, out_dir, opts):
    sidecars = []
    for model in rs.models:
        scale = rs.chosen_scale(model, opts.workers)
        if scale is None:
            continue
        members = rs.ordered([r for r in rs.for_model(model) if r.workers == scale])
        # One row per scheme: past MAX_PARTITION_ROWS rows the labels and bucket counts overlap,
        # so the schemes are drawn by family, in figures of at most that many rows.
        all_members = members
        for part, members in series_groups(rs, all_members, MAX_PARTITION_ROWS):
            sparse = any(r.is_sparse for r in members)
            caption = rs.caption(members, scale=scale, extra="buckets in flush (backward) order, alternating shades"
                                 + ("; top: elements each bucket covers, solid = sent dense, hatched = sparsified"
                                    if sparse else ""))
            n = len(members)
            size = 7 if n <= 6 else 6 if n <= 9 else 5
            ticks = [_wrap(r.label, 22, 2) if n <= (6 if sparse else 9) else _shorten(r.label, 34) for r in members]
            # Panels: (what is drawn, x label, title); the split by dense/sparse only when something is sparse.
            panels = ([("elements", "gradient elements covered, cumulative over buckets in flush order (millions)",
                        "what each bucket covers")] if sparse else [])
            panels += [("bytes", "bytes sent per worker per iteration, cumulative over buckets (MiB)",
                        "bucket sizes on the wire (bytes)" if sparse else "bucket sizes (bytes)"),
                       ("tensors", "gradient tensors, cumulative over buckets in flush order (count)",
                        "tensors per bucket")]
            fig, axes = style.new_figure(plt, f"Buffer partition per scheme: {model}, {scale} workers"
                                         + (f" ({part.replace('-', ' ')})" if part else ""), caption,
                                         len(panels), 1, left=_left_margin(ticks, size),
                                         right=0.95 if not sparse else 0.83, bottom=0.09,
                                         hspace=0.55 if len(panels) == 2 else 0.75)
            series = []
            totals = {kind: [] for kind, _, _ in panels}
            for y, r in enumerate(members):
                color = style.preset_color(r.preset)
                pos = {kind: 0.0 for kind, _, _ in panels}
                buckets = []
                for i, b in enumerate(r.buckets):
                    shade = color if i % 2 == 0 else _tint(color, 0.45)
                    widths = {"elements": float(b["elements"]) / 1e6, "bytes": float(b["bytes_per_worker"]) / MIB,
                              "tensors": float(b["tensors"])}
                    entry = {"index": i, "tensors": b["tensors"], "bytes_per_worker": b["bytes_per_worker"],
                             "elements": b["elements"], "start_mib": pos.get("bytes", 0.0),
                             "start_tensor": pos["tensors"]}
                    for key in ("first_tensor", "sent_elements", "dense_elements", "collective"):
                        if key in b:
                            entry[key] = b[key]
                    for (kind, _, _), ax in zip(panels, axes[:, 0]):
                        width = widths[kind]
                        if kind == "elements":
                            dense = min(float(b.get("dense_elements", b["elements"])), float(b["elements"])) / 1e6
                            ax.barh(y, dense, left=pos[kind], height=0.7, color=shade, edgecolor="white", linewidth=0.2)
                            if width > dense:
                                ax.barh(y, width - dense, left=pos[kind] + dense, height=0.7,
                                        color=_tint(color, 0.8 if i % 2 == 0 else 0.55),
                                        hatch="////", edgecolor=color, linewidth=0)
                            entry["start_melements"] = pos[kind]
                        else:
                            ax.barh(y, width, left=pos[kind], height=0.7, color=shade, edgecolor="white", linewidth=0.2)
                        pos[kind] += width
                    buckets.append(entry)
                for kind in pos:
                    totals[kind].append(pos[kind])
                series.append({"label": r.label, "preset": r.preset, "color": color, "source": r.rel,
                               "bytes_sent_per_worker": sum(float(b["bytes_per_worker"]) for b in r.buckets),
                               "buckets": buckets})
            for (kind, xlabel, title), ax in zip(panels, axes[:, 0]):
                top = max(totals[kind]) if totals[kind] else 1.0
                ax.set_xlim(0, top * (1.2 if kind == "bytes" and sparse else 1.17))
                for y, (r, total) in enumerate(zip(members, totals[kind])):
                    count = len(r.buckets)
                    text = (f"{total:,.1f} MiB" if total >= 0.1 else f"{total * 1024:,.1f} KiB") if kind == "bytes" \
                        and sparse else f"{count} bucket{'s' if count != 1 else ''}"
                    ax.text(total + top * 0.01, y, text, va="center", fontsize=min(6, size))
                ax.set_yticks(range(n))
                ax.set_yticklabels(ticks, fontsize=size)
                for tick, r in zip(ax.get_yticklabels(), members):
                    tick.set_color(style.preset_color(r.preset))
                ax.set_ylim(n - 0.5, -0.5)
                ax.grid(axis="y", visible=False)
                ax.set_xlabel(xlabel, fontsize=6.5)
                ax.set_title(title, fontsize=7.5)
            if sparse:
                from matplotlib.patches import Patch
                handles = [Patch(facecolor="#777777", label="sent dense"),
                           Patch(facecolor=_tint("#777777", 0.75), hatch="////", edgecolor="#777777",
                                 label="sparsified")]
                _legend(fig, handles, ["sent dense", "sparsified"], x=0.845, top=0.82, title="elements")
            name = f"partition-{style.slug(model)}" + (f"-{part}" if part else "")
            sidecars.append(style.save_figure(plt, fig, out_dir, name, {
                "kind": "partition", "title": f"Buffer partition per scheme: {model}", "caption": caption,
                "model": model, "workers": scale, "panels": [kind for kind, _, _ in panels], "series": series}))
    return sidecars


# --- 6. heatmaps of two-key sweeps --------------------------------------------------
def _key_label(key):
    unit = key_unit(key.split(".")[-1])
    return f"{key} ({unit})" if unit else key


def _value_text(key, value):
    return format_value(key.split(".")[-1], value) if not isinstance(value, str) else value


def heatmaps(plt, rs, out_dir, opts, limit_per_sweep=12):
    sidecars = []
    metric = opts.heatmap_metric
    for sweep in rs.sweeps:
        if len(sweep.keys) < 2 or not sweep.results:
            continue
        ky, kx = sweep.keys[0], sweep.keys[1]
        extra = sweep.keys[2:]
        # Within one sweep only the axes vary, so the grid's first two keys span one heatmap and
        # only further keys split it. Settings derived from an axis (compression.density becomes
        # the scheme's density knob) must not split it into one-cell maps.
        groups = defaultdict(list)
        for r, values in sweep.results:
            ident = []
            if "model" not in sweep.keys:
                ident.append(("model", r.model))
            if "workers" not in sweep.keys:
                ident.append(("workers", r.workers))
            if not {"scheme", "scheme.preset"} & set(sweep.keys):
                ident.append(("scheme", r.preset))
            ident += [(k, values[k]) for k in extra]
            groups[tuple((k, json.dumps(v, sort_keys=True)) for k, v in ident)].append((r, values))
        sweep_dir = os.path.dirname(sweep.rel)
        sweep_slug = style.slug(os.path.basename(sweep_dir) or "sweep")
        for gi, key in enumerate(sorted(groups)):
            if gi >= limit_per_sweep:
                rs.warnings.append(f"{sweep.rel}: {len(groups)} heatmaps wanted; drew the first {limit_per_sweep}")
                break
            members = groups[key]
            xs = sorted({json.dumps(v[kx], sort_keys=True) for _, v in members},
                        key=lambda t: value_sort_key(json.loads(t)))
            ys = sorted({json.dumps(v[ky], sort_keys=True) for _, v in members},
                        key=lambda t: value_sort_key(json.loads(t)))
            grid = [[None] * len(xs) for _ in ys]
            cells = []
            for r, v in members:
                i, j = ys.index(json.dumps(v[ky], sort_keys=True)), xs.index(json.dumps(v[kx], sort_keys=True))
                raw = r.mean_s if metric == "time" else r.throughput
                grid[i][j] = raw
                cells.append({"x": v[kx], "y": v[ky], "value": raw, "source": r.rel})
            scale = 1e3 if metric == "time" else 1.0
            shown = [[math.nan if c is None else c * scale for c in row] for row in grid]
            ident = ", ".join(f"{k}={json.loads(v) if k != 'workers' else v}" for k, v in key)
            results = [r for r, _ in members]
            caption = rs.caption(results, extra=f"sweep {sweep.rel}" + (f"; {ident}" if ident else ""))
            title_metric = "mean iteration time" if metric == "time" else "throughput"
            fig, axes = style.new_figure(plt, f"Sweep of {ky} x {kx}: {title_metric}", caption,
                                         left=0.14, right=0.9, bottom=0.12)
            ax = axes[0][0]
            cmap = plt.get_cmap("viridis_r" if metric == "time" else "viridis").copy()
            cmap.set_bad("#dddddd")
            finite = [c for row in shown for c in row if not math.isnan(c)]
            lo, hi = (min(finite), max(finite)) if finite else (0, 1)
            log = lo > 0 and hi / lo > 8  # a wide range: colour by order of magnitude
            from matplotlib.colors import LogNorm
            image = ax.imshow(shown, origin="lower", aspect="auto", cmap=cmap,
                              norm=LogNorm(vmin=lo, vmax=hi) if log else None)
            for i, row in enumerate(shown):
                for j, c in enumerate(row):
                    if math.isnan(c):
                        ax.text(j, i, "n/a", ha="center", va="center", fontsize=6, color="#555555")
                        continue
                    frac = 0.5 if hi == lo else ((math.log(c / lo) / math.log(hi / lo)) if log
                                                 else (c - lo) / (hi - lo))
                    dark = frac > 0.55 if metric == "time" else frac < 0.45
                    ax.text(j, i, f"{c:,.1f}" if c >= 100 else f"{c:.3g}", ha="center", va="center",
                            fontsize=6 if len(xs) <= 8 else 5, color="white" if dark else "black")
            ax.set_xticks(range(len(xs)))
            ax.set_xticklabels([_value_text(kx, json.loads(x)) for x in xs],
                               rotation=30 if len(xs) > 6 else 0, ha="right" if len(xs) > 6 else "center")
            ax.set_yticks(range(len(ys)))
            ax.set_yticklabels([_value_text(ky, json.loads(y)) for y in ys])
            ax.set_xlabel(_key_label(kx))
            ax.set_ylabel(_key_label(ky))
            ax.grid(False)
            bar = fig.colorbar(image, ax=ax, fraction=0.05, pad=0.02)
            if log:  # plain numbers at 1, 2, 5 x 10^n rather than bare powers of ten
                from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
                bar.ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
                bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 1 else f"{v:g}"))
                bar.ax.yaxis.set_minor_formatter(NullFormatter())
            bar.set_label(("mean iteration time (ms, lower is better" if metric == "time"
                           else "throughput (samples/s, higher is better") + (", log scale)" if log else ")"))
            name = f"heatmap-{sweep_slug}" + (f"-{gi + 1}" if len(groups) > 1 else "")
            sidecars.append(style.save_figure(plt, fig, out_dir, name, {
                "kind": "heatmap", "title": f"Sweep of {ky} x {kx}", "caption": caption, "sweep": sweep.rel,
                "x_key": kx, "y_key": ky, "fixed": dict((k, json.loads(v)) for k, v in key),
                "metric": "iteration_time_s.mean" if metric == "time" else "throughput_samples_per_s",
                "unit": "s (plotted in ms)" if metric == "time" else "samples/s",
                "x_values": [json.loads(x) for x in xs], "y_values": [json.loads(y) for y in ys],
                "values": grid, "cells": cells}))
    return sidecars


# --- 7. validation: a real run against its simulation ----------------------------
MEASURED_COLOR, SIMULATED_COLOR = "#333333", "#6baed6"


def _error_text(error):
    return "n/a" if error is None else f"{error * 100:+.0f}%"


def validation(plt, rs, out_dir, opts, limit=12):
    """Measured against simulated per time metric, and each bucket's collective duration."""
    sidecars = []
    for path, rel, doc in rs.validations[:limit]:
        times = [m for m in doc["metrics"] if m["name"].endswith("(ms)")]
        overrides = doc.get("overrides") or []
        simulated = os.path.join(os.path.dirname(path), str(doc.get("simulated", "")))
        mine = [r for r in rs.all if os.path.abspath(r.path) == os.path.abspath(simulated)]
        caption = (f"trace: {rs.provenance(mine) if mine else 'unknown'} | measured: {doc.get('measured', '?')} | "
                   "simulated: its recorded scenario"
                   + (" with --set " + ", ".join(overrides) if overrides else "")
                   + f" | error = (simulated - measured) / measured | from {rel}")
        caption = portable_text(caption)
        fig, axes = style.new_figure(plt, "A real run against its simulation", caption, 1, 2,
                                     left=_left_margin([m["name"] for m in times], 7), right=0.97, wspace=0.35,
                                     bottom=0.17)
        ax_m, ax_b = axes[0]
        ys = list(range(len(times)))[::-1]
        for offset, key, color in ((0.2, "measured", MEASURED_COLOR), (-0.2, "simulated", SIMULATED_COLOR)):
            ax_m.barh([y + offset for y in ys], [m[key] for m in times], 0.38, color=color, label=key)
        log = style.value_axis(ax_m, [v for m in times for v in (m["measured"], m["simulated"])], which="x")
        ax_m.set_yticks(ys)
        ax_m.set_yticklabels([m["name"].replace(" (ms)", "") for m in times])
        for y, m in zip(ys, times):
            ax_m.text(max(m["measured"], m["simulated"]), y, " " + _error_text(m.get("relative_error")),
                      va="center", fontsize=6)
        ax_m.set_xlabel("time per iteration (ms" + (", log scale)" if log else ")"))
        ax_m.set_title("per iteration")
        # One legend for both panels, below them: inside a panel it covered bars.
        fig.legend(*ax_m.get_legend_handles_labels(), loc="lower center", bbox_to_anchor=(0.5, 0.0), ncol=2,
                   fontsize=7, frameon=False)
        buckets = doc["buckets"]
        if buckets:
            idx = [b["index"] for b in buckets]
            measured = [b["measured_duration_s"] * 1e3 for b in buckets]
            simulated = [b["simulated_duration_s"] * 1e3 for b in buckets]
            ax_b.bar([i - 0.2 for i in idx], measured, 0.4, color=MEASURED_COLOR, label="measured")
            ax_b.bar([i + 0.2 for i in idx], simulated, 0.4, color=SIMULATED_COLOR, label="simulated")
            log_b = style.value_axis(ax_b, measured + simulated)
            ax_b.set_ylabel("collective duration (ms" + (", log scale)" if log_b else ")"))
            ax_b.set_xlabel("bucket, in flush order")
        else:
            ax_b.axis("off")
            ax_b.text(0.5, 0.5, "bucket sequences differ:\n" + _wrap(doc.get("bucket_difference", ""), 40, 6),
                      ha="center", va="center", fontsize=7, transform=ax_b.transAxes)
        ax_b.set_title("each bucket's collective (last iteration)")
        name = "validation-" + style.slug(os.path.relpath(os.path.dirname(path), rs.root) or "run")
        sidecars.append(style.save_figure(plt, fig, out_dir, name, {
            "kind": "validation", "title": "A real run against its simulation", "caption": caption,
            "source": rel, "metrics": times,
            "buckets": [{"index": b["index"], "measured_duration_ms": b["measured_duration_s"] * 1e3,
                         "simulated_duration_ms": b["simulated_duration_s"] * 1e3} for b in buckets]}))
    return sidecars


BUILDERS = [scaling, speedup_bars, breakdown, timelines, partition, heatmaps, validation]


def draw_all(rs, out_dir, opts, progress=None):
    """Draws every figure kind; PROGRESS(done, total, what) is told after each."""
    plt = style.setup_matplotlib()
    sidecars = []
    for i, build in enumerate(BUILDERS):
        sidecars += build(plt, rs, out_dir, opts)
        if progress:
            progress(i + 1, len(BUILDERS), f"{len(sidecars)} figures")
    return sidecars
