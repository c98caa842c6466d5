"""`fidelity FIDELITY_JSON --out DIR`: predicted against measured, log-log with the y = x line.

Reads the fidelity.json that `sparsefuse fidelity` writes; one panel for collective times (us),
one for training ratios (speedup, scaling efficiency), each case its own marker and colour.
Exit status: 0 success, 2 bad input.
"""
import argparse
import json
import sys

from sparsefuse_plot import style

PROG = "sparsefuse fidelity"
FIGURE = "fidelity-predicted-vs-measured"


def _panel(ax, cases, label):
    """Draws each case's points and the y = x line over their range; returns the plotted series."""
    series, low, high = [], float("inf"), 0.0
    for i, case in enumerate(cases):
        xs = [p["measured"] for p in case["points"]]
        ys = [p["predicted"] for p in case["points"]]
        colour = style.EXTRA_COLORS[i % len(style.EXTRA_COLORS)]
        ax.scatter(xs, ys, s=9, marker=style.MARKERS[i % len(style.MARKERS)], color=colour,
                   label=f"{case['id']} ({100 * case['summary_error']:.0f} %)")
        low, high = min([low] + xs + ys), max([high] + xs + ys)
        series.append({"case": case["id"], "measured": xs, "predicted": ys})
    if series:
        ax.plot([low, high], [low, high], color="#444444", linewidth=0.8, linestyle="--", label="y = x")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.legend(loc="upper left", fontsize=4.5, frameon=False)
    else:  # a run restricted to one role leaves a panel without cases
        ax.text(0.5, 0.5, "no cases of this kind in this run", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel(f"measured {label}")
    ax.set_ylabel(f"predicted {label}")
    return series


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: cannot read a fidelity report: {e}")
    if not isinstance(report, dict) or report.get("format") != "sparsefuse-fidelity/1":
        raise ValueError(f"{path}: expected \"format\": \"sparsefuse-fidelity/1\"")
    return report


def main(argv):
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("report")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    try:
        report = _load(args.report)
    except ValueError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    try:
        plt = style.setup_matplotlib()
    except ImportError:
        print(f"{PROG}: error: matplotlib is missing from {sys.executable}; install python3-matplotlib", file=sys.stderr)
        return 1
    collectives = [c for c in report["cases"] if c["kind"] == "collective"]
    scaling = [c for c in report["cases"] if c["kind"] == "scaling"]
    fig, axes = style.new_figure(plt, "Predicted vs measured",
                                 "Each point: one published measurement and the simulator's prediction for its "
                                 "set-up; on the dashed line the model is exact. Legend: case (its |error|).",
                                 1, 2, wspace=0.3)
    sidecar = {"kind": "fidelity", "title": "Predicted vs measured",
               "collective_time_us": _panel(axes[0][0], collectives, "time (us)"),
               "training_ratio": _panel(axes[0][1], scaling, "speedup / efficiency")}
    # Not "fidelity": its sidecar would overwrite the report fidelity.json.
    style.save_figure(plt, fig, args.out, FIGURE, sidecar)
    print(f"wrote {args.out}/{FIGURE}.png (+ .pdf, .json)")
    return 0
