"""Entry point: `plot RESULTS_DIR [--out DIR]` and `report RESULTS_DIR [--out DIR]`.

Exit status: 0 success, 2 bad input (missing directory, no result.json,
malformed files, unknown --baseline), 1 anything else.
"""
import argparse
import json
import os
import sys
import time

PROG = "sparsefuse"


def _parser():
    parser = argparse.ArgumentParser(prog=PROG)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("plot", "draw the figures of a results directory"),
                       ("report", "write report.md and report.html (and the figures) for a results directory")):
        p = sub.add_parser(name, help=text, prog=f"{PROG} {name}")
        p.add_argument("results_dir")
        p.add_argument("--out", help="output directory (plot: RESULTS_DIR/figures; report: RESULTS_DIR)")
        p.add_argument("--baseline", help="scheme that speedups are relative to (default: the first scheme of "
                                          "compare.csv, else the first preset in catalogue order)")
        p.add_argument("--workers", type=int, help="scale of the per-model figures (default: the largest)")
        p.add_argument("--heatmap-metric", choices=("time", "throughput"), default="time",
                       help="value of sweep heatmaps: mean iteration time or throughput")
        p.add_argument("--command-line", help=argparse.SUPPRESS)
    return parser


def _remove_stale(out_dir, keep):
    """Deletes figures a previous run listed in index.json that this run did not write."""
    index = os.path.join(out_dir, "index.json")
    try:
        with open(index, encoding="utf-8") as f:
            previous = json.load(f)
    except (OSError, ValueError):
        return
    for entry in previous.get("figures", []) if isinstance(previous, dict) else []:
        for key in ("png", "pdf", "json"):
            name = entry.get(key) if isinstance(entry, dict) else None
            if isinstance(name, str) and name not in keep and os.path.basename(name) == name:
                try:
                    os.unlink(os.path.join(out_dir, name))
                except OSError:
                    pass


class _Progress:
    """Progress on stderr for runs over two seconds: a line at most every two seconds."""

    def __init__(self, job):
        self.job, self.start, self.last = job, time.monotonic(), None

    def __call__(self, done, total, what):
        now = time.monotonic()
        if now - self.start < 2 or (self.last is not None and now - self.last < 2 and done < total):
            return
        self.last = now
        print(f"{PROG} {self.job}: {done}/{total} figure kinds drawn ({what}), {now - self.start:.0f} s elapsed",
              file=sys.stderr, flush=True)


def make_figures(rs, out_dir, opts, job="plot"):
    from sparsefuse_plot import figures, style
    sidecars = figures.draw_all(rs, out_dir, opts, _Progress(job))
    keep = {s[k] for s in sidecars for k in ("png", "pdf", "figure")} | {s["figure"] + ".json" for s in sidecars}
    _remove_stale(out_dir, keep)
    index = {"format": "sparsefuse-figures/1", "results_dir": rs.shown_root, "baseline": rs.baseline,
             "size_px": list(style.FIG_PX), "dpi": style.DPI,
             "figures": [{"name": s["figure"], "kind": s["kind"], "title": s["title"], "caption": s["caption"],
                          "png": s["png"], "pdf": s["pdf"], "json": s["figure"] + ".json"} for s in sidecars],
             "warnings": rs.warnings}
    style.write_atomically(os.path.join(out_dir, "index.json"), json.dumps(index, indent=1) + "\n")
    return sidecars


def _check_output_dir(path):
    """Creates PATH before any figure is drawn; an unusable one is bad input, not a traceback."""
    from sparsefuse_plot.results import InputProblem
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InputProblem(f"--out {path}: cannot create the output directory: {e.strerror}")
    if not os.access(path, os.W_OK):
        raise InputProblem(f"--out {path}: the output directory is not writable")


def main(argv):
    if argv[:1] == ["fidelity"]:  # `sparsefuse fidelity`'s figure: its own module and options
        from sparsefuse_plot import fidelity
        return fidelity.main(argv[1:])
    args = _parser().parse_args(argv)
    from sparsefuse_plot.results import InputProblem, ResultSet
    from sparsefuse_plot.figures import Options
    try:
        rs = ResultSet(args.results_dir, baseline=args.baseline)
        opts = Options(baseline=args.baseline, workers=args.workers, heatmap_metric=args.heatmap_metric)
        if args.workers is not None and not any(args.workers in rs.workers_of(m) for m in rs.models):
            have = sorted({r.workers for r in rs.results})
            raise InputProblem(f"--workers {args.workers}: no results at that scale; have "
                               + ", ".join(map(str, have)))
        _check_output_dir(args.out or (os.path.join(args.results_dir, "figures") if args.command == "plot"
                                       else args.results_dir))
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print(f"{PROG} {args.command}: error: matplotlib is missing from {sys.executable}; "
                  "install Debian's python3-matplotlib (tools/setup does)", file=sys.stderr)
            return 1
        if args.command == "plot":
            out_dir = args.out or os.path.join(args.results_dir, "figures")
            sidecars = make_figures(rs, out_dir, opts)
            for s in sidecars:
                print(f"wrote {os.path.join(out_dir, s['png'])} (+ .pdf, .json)")
            print(f"wrote {os.path.join(out_dir, 'index.json')}")
        else:
            from sparsefuse_plot import report
            out_dir = args.out or args.results_dir
            figures_dir = os.path.join(out_dir, "figures")
            sidecars = make_figures(rs, figures_dir, opts, job="report")
            written = report.write_report(rs, sidecars, out_dir, "figures", opts,
                                          args.command_line or f"{PROG} report {args.results_dir}")
            print(f"wrote {len(sidecars)} figures under {figures_dir}")
            for path in written:
                print(f"wrote {path}")
        for warning in rs.warnings:
            print(f"{PROG} {args.command}: note: {warning}", file=sys.stderr)
        return 0
    except InputProblem as e:
        print(f"{PROG} {args.command}: error: {e}", file=sys.stderr)
        return 2
