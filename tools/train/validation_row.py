"""One markdown row from a `sparsefuse validate --out DIR` file (DIR/validation.json):
bucket count and whether the sequence equals the simulator's, iteration time measured
and simulated and the error, the per-bucket compression error (mean |error|, worst
bucket), the same weighted by each bucket's measured compression time, and the
error of the buckets' summed compression time.

    validation_row.py --header FIRST_COLUMN      the header and separator lines
    validation_row.py VALIDATION_JSON LABEL      one row, LABEL in the first column
    validation_row.py --by-size-header FIRST_COLUMN
    validation_row.py --by-size VALIDATION_JSON RESULT_JSON LABEL
        the per-bucket compression error (mean |error|, bucket count) by kind of
        bucket: sparse of >= 1e5 elements, sparse of fewer, sent dense as pairs
        (RESULT_JSON, the measured run's, gives each bucket's elements)

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


LARGE = 100_000  # elements: where a kernel's time is its memory traffic, not its call


def size_class(bucket):
    if bucket["collective"] == "allgather" and bucket["dense_elements"] == bucket["elements"]:
        return "dense as pairs"
    return ">= 1e5 elements" if bucket["elements"] >= LARGE else "< 1e5 elements"


def by_size_row(validation_path, result_path, label):
    v = json.load(open(validation_path))
    measured = json.load(open(result_path))["buckets"]
    if not v["same_buckets"] or len(measured) != len(v["buckets"]):
        return f"| {label} | n/a (sequences differ) | n/a | n/a |"
    errors = {name: [] for name in (">= 1e5 elements", "< 1e5 elements", "dense as pairs")}
    for compared, bucket in zip(v["buckets"], measured):
        m = compared["measured_compression_s"]
        if m > 0:  # a bucket with nothing to compress (a dense allreduce) has no error
            errors[size_class(bucket)].append(abs(compared["simulated_compression_s"] - m) / m)
    cells = [f"{100 * sum(e) / len(e):.1f}% ({len(e)})" if e else "none" for e in errors.values()]
    return f"| {label} | " + " | ".join(cells) + " |"


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--by-size-header":
        print(f"| {sys.argv[2]} | per-bucket compression mean abs error (buckets): sparse, >= 1e5 elements | "
              "sparse, < 1e5 elements | sent dense as pairs |")
        print("|---|---|---|---|")
    elif len(sys.argv) == 5 and sys.argv[1] == "--by-size":
        print(by_size_row(sys.argv[2], sys.argv[3], sys.argv[4]))
    elif len(sys.argv) == 3 and sys.argv[1] == "--header":
        print(f"| {sys.argv[2]} | buckets (same as simulated) | iteration measured (ms) | simulated (ms) | error | "
              "per-bucket compression error: mean abs / worst bucket | the same, time-weighted | "
              "bucket compression sum error |")
        print("|---|---|---|---|---|---|---|---|")
    elif len(sys.argv) == 3:
        print(row(sys.argv[1], sys.argv[2]))
    else:
        sys.exit("usage: validation_row.py --header FIRST_COLUMN | VALIDATION_JSON LABEL | "
                 "--by-size-header FIRST_COLUMN | --by-size VALIDATION_JSON RESULT_JSON LABEL")
