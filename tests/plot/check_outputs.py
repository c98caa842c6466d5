"""Checks the outputs of `sparsefuse plot` / `sparsefuse report` against the inputs.

- every figure in index.json has a PNG of 1600x1000 pixels (read from the PNG
  header), a PDF and a JSON sidecar;
- the sidecars' plotted series equal the numbers in the result.json files
  (and timeline.json) they name, and speedups equal baseline mean / mean;
- a preset has one colour in every figure;
- every link and image in report.md and report.html resolves (the HTML inlines
  its PNGs as data: URIs, which must decode to PNGs of the same size);
- the ranking names the fastest scheme of each model and scale.
Python 3 standard library only. Exits 1 with a list of failures.
"""
import argparse
import base64
import html.parser
import json
import math
import os
import re
import struct
import sys
from urllib.parse import unquote

WIDTH, HEIGHT = 1600, 1000
failures = []


def fail(message):
    failures.append(message)


def png_size(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", data[16:24])


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def find_results(root):
    out = {}
    for directory, _, files in os.walk(root):
        if "result.json" in files:
            path = os.path.join(directory, "result.json")
            out[os.path.realpath(path)] = load(path)
    return out


def source(results_dir, rel):
    """A sidecar names a result as '<basename of RESULTS_DIR>/<path below it>'."""
    parent = os.path.dirname(os.path.abspath(results_dir.rstrip("/")))
    path = os.path.realpath(os.path.join(parent, rel))
    if not os.path.isfile(path):
        fail(f"sidecar source {rel} does not exist")
        return None
    return load(path)


def preset(r):
    scheme = r["scenario"]["scheme"]
    return scheme if isinstance(scheme, str) else scheme["preset"]


def swept_value(r, key):
    """The value of a swept KEY (a dotted scenario path) in a result; "scheme" is swept by preset name."""
    if key == "scheme":
        return preset(r)
    node = r["scenario"]
    for part in key.split("."):
        node = node[part]
    return node


def repeat_mean(args, rels):
    """The first of several repeats with its throughput and mean iteration time replaced by
    their means over all of them (what a point of repeats must plot)."""
    runs = [source(args.results, rel) for rel in rels]
    if any(r is None for r in runs):
        return None
    mean = dict(runs[0])
    mean["throughput_samples_per_s"] = math.fsum(r["throughput_samples_per_s"] for r in runs) / len(runs)
    mean["iteration_time_s"] = {"mean": math.fsum(r["iteration_time_s"]["mean"] for r in runs) / len(runs)}
    return mean


def same(a, b, what):
    if a != b:
        fail(f"{what}: sidecar has {a!r}, result.json has {b!r}")


def baseline_mean(results, r, baseline):
    matches = [x for x in results.values() if preset(x) == baseline and x["scenario"]["model"] == r["scenario"]["model"]
               and x["scenario"]["workers"] == r["scenario"]["workers"]
               and x["scenario"]["network"] == r["scenario"]["network"]]
    # Runs differing only in their seed are repeats: the baseline is their mean.
    by_seed = {}
    for m in matches:
        by_seed.setdefault(m["scenario"].get("seed"), set()).add(m["iteration_time_s"]["mean"])
    if not by_seed or any(len(means) != 1 for means in by_seed.values()):
        return None
    means = [next(iter(v)) for v in by_seed.values()]
    return math.fsum(means) / len(means)


def check_speedup(value, r, results, baseline, what):
    base = baseline_mean(results, r, baseline)
    want = None if base is None else base / r["iteration_time_s"]["mean"]
    if (value is None) != (want is None) or (want is not None and abs(value - want) > 1e-12 * want):
        fail(f"{what}: speedup {value} != {want}")


def check_figures(args, results):
    index = load(os.path.join(args.figures, "index.json"))
    kinds = {f["kind"] for f in index["figures"]}
    for kind in args.expect_kinds.split(","):
        if kind not in kinds:
            fail(f"no {kind} figure in {args.figures}/index.json (have {sorted(kinds)})")
    colors = {}
    for entry in index["figures"]:
        name = entry["name"]
        for key in ("png", "pdf", "json"):
            if not os.path.isfile(os.path.join(args.figures, entry[key])):
                fail(f"{name}: {entry[key]} missing")
        with open(os.path.join(args.figures, entry["png"]), "rb") as f:
            size = png_size(f.read(32))
        if size != (WIDTH, HEIGHT):
            fail(f"{entry['png']}: {size}, expected {WIDTH}x{HEIGHT} pixels")
        with open(os.path.join(args.figures, entry["pdf"]), "rb") as f:
            if f.read(5) != b"%PDF-":
                fail(f"{entry['pdf']}: not a PDF")
        side = load(os.path.join(args.figures, entry["json"]))
        if not side.get("caption") or "trace: analytic" not in side["caption"]:
            fail(f"{name}: caption lacks the trace provenance: {side.get('caption')!r}")
        check_portable(name, side.get("caption", ""))
        check = CHECKS[side["kind"]]
        check(args, results, side, colors)
    check_scaling_totals()
    if args.sparse:
        partitions = [load(os.path.join(args.figures, e["json"])) for e in index["figures"] if e["kind"] == "partition"]
        if not partitions or partitions[0].get("panels", [None])[0] != "elements":
            fail("sparse results: the partition figure lacks the dense/sparsified panel")


# A caption shipped with a figure names files by repository-relative or base name only, and
# cites no document outside the repository (a "<name>.md §1.2" section reference).
ABSOLUTE_PATH = re.compile(r"(?:^|[\s(=:])(?:/[^\s/]+){2,}")
EXTERNAL_DOC = re.compile(r"\.md\s*§|§\s*\d")


def check_portable(name, caption):
    if ABSOLUTE_PATH.search(caption):
        fail(f"{name}: caption holds an absolute path: {caption!r}")
    if EXTERNAL_DOC.search(caption):
        fail(f"{name}: caption cites a document outside the repository: {caption!r}")


def note_color(colors, preset_name, color, where):
    if colors.setdefault(preset_name, color) != color:
        fail(f"{where}: {preset_name} drawn in {color}, elsewhere in {colors[preset_name]}")
    # ... and no two presets share a colour (wfbp and spardl were both blue).
    owner = colors.setdefault(("colour", color), preset_name)
    if owner != preset_name:
        fail(f"{where}: {preset_name} and {owner} share the colour {color}")


def check_series_styles(side):
    """A line figure: at most 8 series, each preset with its own marker, and a series that lies
    exactly on an earlier one says so in its legend."""
    series = side["series"]
    if len({s["preset"] for s in series}) > 8:
        fail(f"{side['figure']}: {len(series)} series in one figure (at most 8; split by family)")
    markers = {}
    for s in series:
        if markers.setdefault(s["marker"], s["preset"]) != s["preset"]:
            fail(f"{side['figure']}: {s['preset']} and {markers[s['marker']]} share the marker {s['marker']}")
    seen = {}
    for s in series:
        values = json.dumps([s["workers"], s["throughput_samples_per_s"]])
        if values in seen and f"(= {seen[values]})" not in s["legend"]:
            fail(f"{side['figure']}: {s['label']} lies on {seen[values]} but its legend {s['legend']!r} does not say so")
        seen.setdefault(values, s["label"])


def check_y_scale(got, values, what):
    """A value axis is log-scale exactly when its positive values span more than 20x (style.LOG_AXIS_SPREAD)."""
    positive = [v for v in values if v is not None and v > 0]
    want = "log" if positive and max(positive) / min(positive) > 20.0 else "linear"
    if got != want:
        fail(f"{what}: y axis {got}, expected {want} for values {min(positive, default=0)}..{max(positive, default=0)}")


def check_scaling(args, results, side, colors):
    if side["baseline"] != args.baseline:
        fail(f"{side['figure']}: baseline {side['baseline']}, expected {args.baseline}")
    points = 0
    for s in side["series"]:
        note_color(colors, s["preset"], s["color"], side["figure"])
        for i, rel in enumerate(s["sources"]):
            r = repeat_mean(args, s["repeat_sources"][i]) if s["n"][i] > 1 else source(args.results, rel)
            if r is None:
                continue
            what = f"{side['figure']} {s['label']} #{i}"
            same(s["workers"][i], r["scenario"]["workers"], what + " workers")
            same(s["throughput_samples_per_s"][i], r["throughput_samples_per_s"], what + " throughput")
            same(s["iteration_time_mean_s"][i], r["iteration_time_s"]["mean"], what + " mean")
            same(s["preset"], preset(r), what + " preset")
            check_speedup(s["speedup"][i], r, results, args.baseline, what)
            points += 1
    models = {r["scenario"]["model"] for r in results.values()}
    if side["model"] not in models:
        fail(f"{side['figure']}: unknown model {side['model']}")
    # Every result of the model is plotted, once per (scheme, scale, variant).
    expected = {(preset(r), r["scenario"]["workers"], json.dumps(r["scenario"]["network"], sort_keys=True))
                for r in results.values() if r["scenario"]["model"] == side["model"]}
    check_series_styles(side)
    # A model's series may be split over one figure per scheme family: count over all of them.
    plotted = SCALING_POINTS.setdefault(side["model"], [0, len(expected)])
    plotted[0] += points
    check_y_scale(side["throughput_y_scale"], [v for s in side["series"] for v in s["throughput_samples_per_s"]],
                  side["figure"] + " throughput")
    check_y_scale(side["speedup_y_scale"], [v for s in side["series"] for v in s["speedup"]], side["figure"] + " speedup")


SCALING_POINTS = {}  # model: [points plotted in all its scaling figures, distinct results]


def check_scaling_totals():
    for model, (points, expected) in SCALING_POINTS.items():
        if points != expected:
            fail(f"scaling figures of {model}: {points} points plotted, {expected} distinct results")


def check_speedup_bars(args, results, side, colors):
    check_y_scale(side["y_scale"], [v for s in side["series"] for v in s["speedup"]] + [1.0], "speedup-bars")
    for s in side["series"]:
        for i, rel in enumerate(s["sources"]):
            r = source(args.results, rel)
            if r is None:
                continue
            what = f"speedup-bars {s['label']} #{i}"
            same(s["iteration_time_mean_s"][i], r["iteration_time_s"]["mean"], what)
            check_speedup(s["speedup"][i], r, results, args.baseline, what)
            scales = sorted({x["scenario"]["workers"] for x in results.values()
                             if x["scenario"]["model"] == r["scenario"]["model"]})
            want = args.workers if args.workers else scales[-1]
            same(s["workers"][i], want, what + " scale")


def check_breakdown(args, results, side, colors):
    for panel in side["panels"]:
        for s in panel["series"]:
            r = source(args.results, s["source"])
            if r is None:
                continue
            note_color(colors, s["preset"], s["color"], side["figure"])
            what = f"{side['figure']} {panel['workers']} {s['label']}"
            same(s["breakdown_s"], r["breakdown_s"], what + " breakdown")
            same(s["iteration_time_mean_s"], r["iteration_time_s"]["mean"], what + " mean")
            same(panel["workers"], r["scenario"]["workers"], what + " workers")


def check_partition(args, results, side, colors):
    for s in side["series"]:
        r = source(args.results, s["source"])
        if r is None:
            continue
        note_color(colors, s["preset"], s["color"], side["figure"])
        same(len(s["buckets"]), len(r["buckets"]), f"partition {s['label']} bucket count")
        for plotted, bucket in zip(s["buckets"], r["buckets"]):
            for key in ("tensors", "bytes_per_worker", "elements", "dense_elements", "sent_elements"):
                if key in bucket or key in plotted:
                    same(plotted.get(key), bucket.get(key), f"partition {s['label']} bucket {plotted['index']} {key}")
        same(s["bytes_sent_per_worker"], float(sum(b["bytes_per_worker"] for b in r["buckets"])),
             f"partition {s['label']} total bytes")


def check_timeline(args, results, side, colors):
    parent = os.path.dirname(os.path.abspath(args.results.rstrip("/")))
    trace = load(os.path.join(parent, side["timeline"]))
    events = {(e["pid"], e["name"], e["ts"], e["dur"]) for e in trace["traceEvents"] if e.get("ph") == "X"}
    shown = side["workers_shown"]
    if not 1 <= len(shown) <= 4:
        fail(f"{side['figure']}: shows {len(shown)} workers")
    plotted = set()
    for lane in side["lanes"]:
        for span in lane["spans"]:
            key = (lane["worker"], span["name"], span["ts_us"], span["dur_us"])
            if key not in events:
                fail(f"{side['figure']}: span {key} not in the timeline")
            plotted.add(key)
            if abs(span["start_ms"] - (span["ts_us"] - side["origin_us"]) / 1e3) > 1e-9 or \
                    abs(span["duration_ms"] - span["dur_us"] / 1e3) > 1e-9:
                fail(f"{side['figure']}: span {key} misplaced")
    wanted = {e for e in events if e[0] in shown}
    if plotted != wanted:  # the timeline holds one iteration, so every span of the shown workers is drawn
        fail(f"{side['figure']}: drew {len(plotted)} spans, the timeline has {len(wanted)} for workers {shown}")


def check_heatmap(args, results, side, colors):
    metric = "throughput_samples_per_s" if args.metric == "throughput" else "iteration_time_s.mean"
    same(side["metric"], metric, "heatmap metric")
    for cell in side["cells"]:
        r = source(args.results, cell["source"])
        if r is None:
            continue
        value = r["throughput_samples_per_s"] if args.metric == "throughput" else r["iteration_time_s"]["mean"]
        same(cell["value"], value, f"heatmap cell {cell['source']}")
        same(cell["x"], swept_value(r, side["x_key"]), f"heatmap x of {cell['source']}")
        same(cell["y"], swept_value(r, side["y_key"]), f"heatmap y of {cell['source']}")
        i, j = side["y_values"].index(cell["y"]), side["x_values"].index(cell["x"])
        same(side["values"][i][j], value, f"heatmap grid at {cell['y']}, {cell['x']}")
    if any(v is None for row in side["values"] for v in row):
        fail(f"{side['figure']}: holes in a complete sweep")
    sweep_points = len(load(os.path.join(os.path.dirname(os.path.abspath(args.results.rstrip('/'))),
                                         side["sweep"]))["points"])
    same(len(side["cells"]), sweep_points, "heatmap cells vs sweep points")


def check_validation(args, results, side, colors):
    """The plotted metrics and bucket durations are validation.json's."""
    v = source(args.results, side["source"])
    if v is None:
        return
    want = [m for m in v["metrics"] if m["name"].endswith("(ms)")]
    same(side["metrics"], want, "validation metrics")
    same([(b["index"], b["measured_duration_ms"], b["simulated_duration_ms"]) for b in side["buckets"]],
         [(b["index"], b["measured_duration_s"] * 1e3, b["simulated_duration_s"] * 1e3) for b in v["buckets"]],
         "validation buckets")


CHECKS = {"scaling": check_scaling, "speedup-bars": check_speedup_bars, "breakdown": check_breakdown,
          "partition": check_partition, "timeline": check_timeline, "heatmap": check_heatmap,
          "validation": check_validation}


class Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("href", "src") and value is not None:
                self.links.append((tag, value))


def check_report(args, results):
    md_path, html_path = os.path.join(args.report, "report.md"), os.path.join(args.report, "report.html")
    with open(md_path, encoding="utf-8") as f:
        md = f.read()
    for text, where in ((md, "report.md"), (json.dumps(load(os.path.join(args.report, "figures", "index.json"))),
                                            "figures/index.json")):
        if os.path.realpath(args.results) in text or os.path.abspath(args.results) in text:
            fail(f"{where} holds the results directory's absolute path {os.path.abspath(args.results)}")
    targets = re.findall(r"\]\(([^)\s]+)\)", md)
    if not targets:
        fail("report.md has no links")
    for target in targets:
        if not os.path.exists(os.path.join(args.report, unquote(target))):
            fail(f"report.md: link {target} does not resolve")
    images = re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", md)
    index = load(os.path.join(args.report, "figures", "index.json"))
    if len(images) != len(index["figures"]):
        fail(f"report.md shows {len(images)} figures, index.json lists {len(index['figures'])}")
    parser = Links()
    with open(html_path, encoding="utf-8") as f:
        parser.feed(f.read())
    pngs = 0
    for tag, value in parser.links:
        if value.startswith("data:image/png;base64,"):
            size = png_size(base64.b64decode(value.split(",", 1)[1])[:32])
            if size != (WIDTH, HEIGHT):
                fail(f"report.html: inlined image of size {size}")
            pngs += 1
        elif re.match(r"^[a-z]+:", value):
            fail(f"report.html: external link {value}")
        elif not os.path.exists(os.path.join(args.report, unquote(value))):
            fail(f"report.html: {tag} {value} does not resolve")
    if pngs != len(index["figures"]):
        fail(f"report.html inlines {pngs} figures, index.json lists {len(index['figures'])}")
    # The ranking names the fastest scheme of each model and scale (dense presets, no ties in these runs).
    groups = {}
    for r in results.values():
        key = (r["scenario"]["model"], r["scenario"]["workers"], json.dumps(r["scenario"]["network"], sort_keys=True))
        groups.setdefault(key, {})[preset(r)] = r["iteration_time_s"]["mean"]
    ranked = 0
    for (model, workers, _), means in groups.items():
        if len(means) < 2:
            continue
        fastest = min(means, key=means.get)
        ties = [p for p, m in means.items() if (m - means[fastest]) / means[fastest] < 5e-4]
        if len(ties) > 1:
            continue
        ms = means[fastest] * 1e3
        number = f"{ms:,.1f}" if ms >= 10 else f"{ms:.3g}"
        text = f"{fastest} is fastest ({number} ms/iteration)"
        pattern = (re.escape(f"At {workers} workers on {model}") + r"[^.]*?, " + re.escape(fastest)
                   + r"( \(the baseline\))? is fastest " + re.escape(f"({number} ms/iteration)"))
        if not re.search(pattern, md):
            fail(f"report.md lacks '{text}' for {model} at {workers} workers")
        ranked += 1
        slowest = max(means, key=means.get)
        if not re.search(re.escape(f"At {workers} workers on {model}") + r"[^\n]*" + re.escape(slowest)
                         + r" is slowest[^\n]* because ", md):
            fail(f"report.md does not explain why {slowest} is slowest at {workers} workers on {model}")
    if not ranked:
        fail("no ranking sentence checked")
    for heading in ("## Scenario", "## Ranking", "## Results", "## Figures"):
        if heading not in md:
            fail(f"report.md lacks {heading}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--results", required=True)
    parser.add_argument("--figures", required=True)
    parser.add_argument("--report")
    parser.add_argument("--baseline", required=True)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--metric", default="time")
    parser.add_argument("--expect-kinds", required=True)
    parser.add_argument("--sparse", action="store_true")
    args = parser.parse_args()
    results = find_results(args.results)
    check_figures(args, results)
    if args.report:
        check_report(args, results)
    for message in failures:
        print("FAIL:", message)
    print(f"check_outputs: {len(failures)} failure(s) in {args.figures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
