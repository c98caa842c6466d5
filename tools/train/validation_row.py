"""One markdown row from a `sparsefuse validate --out DIR` file (DIR/validation.json):
bucket count and whether the sequence equals the simulator's, iteration time measured
and simulated and the error, the per-bucket compression error (mean |error|, worst
bucket), the same weighted by each bucket's measured compression time, and the
error of the buckets' summed compression time.

    validation_row.py --header FIRST_COLUMN      the header and separator lines
    validation_row.py VALIDATION_JSON LABEL      one row, LABEL in the first column
    validation_row.py --by-size-header FIRST_COLUMN
    validation_row.py --by-size VALIDATION_JSON LABEL
        the per-bucket compression error (mean |error|, bucket count) by kind of
        bucket, as `sparsefuse validate` writes it (compression_error_by_kind:
        >= 1e5 elements, fewer, sent dense as pairs)

Shared by tools/train/validation_table.sh (train runs) and
tools/device/replay.sh (GPU replays)."""
import json
import sys


def pct(e):
    return "n/a" if e is None else f"{100 * e:+.1f}%"


def row(path, label):
    v = json.load(open(path))
    metric = {m["name"]: m for m in v["metrics"]}
    it = metric["iteration time, mean (ms)"]
    if not v["same_buckets"]:  # validate compares no bucket of differing sequences
        return (f"| {label} | no: {v['bucket_difference']} | {it['measured']:.1f} | {it['simulated']:.1f} | "
                f"{pct(it['relative_error'])} | n/a (sequences differ) | n/a | n/a |")
    summed = metric["bucket compression, sum (ms)"]["relative_error"]
    buckets = v["buckets"]
    per_bucket = weighted = "n/a (none measured)"
    if v["worst_compression_bucket"] >= 0:
        w = buckets[v["worst_compression_bucket"]]
        worst = (w["simulated_compression_s"] - w["measured_compression_s"]) / w["measured_compression_s"]
        per_bucket = f"{100 * v['mean_abs_bucket_compression_error']:.1f}% / {pct(worst)}"
        weighted = f"{100 * v['time_weighted_bucket_compression_error']:.1f}%"
    return (f"| {label} | {len(buckets)} (yes) | {it['measured']:.1f} | {it['simulated']:.1f} | "
            f"{pct(it['relative_error'])} | {per_bucket} | {weighted} | {pct(summed)} |")


def by_size_row(path, label):
    v = json.load(open(path))
    if not v["same_buckets"]:
        return f"| {label} | n/a (sequences differ) | n/a | n/a |"
    cells = ["none" if k["mean_abs_error"] is None else f"{100 * k['mean_abs_error']:.1f}% ({k['buckets']})"
             for k in v["compression_error_by_kind"]]
    return f"| {label} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--by-size-header":
        print(f"| {sys.argv[2]} | per-bucket compression mean abs error (buckets): >= 1e5 elements | "
              "< 1e5 elements | sent dense as pairs |")
        print("|---|---|---|---|")
    elif len(sys.argv) == 4 and sys.argv[1] == "--by-size":
        print(by_size_row(sys.argv[2], sys.argv[3]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--header":
        print(f"| {sys.argv[2]} | buckets (same as simulated) | iteration measured (ms) | simulated (ms) | error | "
              "per-bucket compression error: mean abs / worst bucket | the same, time-weighted | "
              "bucket compression sum error |")
        print("|---|---|---|---|---|---|---|---|")
    elif len(sys.argv) == 3:
        print(row(sys.argv[1], sys.argv[2]))
    else:
        sys.exit("usage: validation_row.py --header FIRST_COLUMN | VALIDATION_JSON LABEL | "
                 "--by-size-header FIRST_COLUMN | --by-size VALIDATION_JSON LABEL")
