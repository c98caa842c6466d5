"""How reproducible the runtime's per-bucket compression times are between repeated
`sparsefuse train` runs of one scheme on one machine: the noise floor of the per-bucket
compression comparison that `sparsefuse validate` prints.

`validate` scores a simulator by the mean over buckets of |simulated - measured| / measured
compression time. Two trainings of the same scheme on the same machine do not measure the same
times either, so a simulator that knew another run's exact per-bucket times would still show an
error; below that floor no simulator's per-bucket error can be judged. This tool measures it:

    run_to_run.py RUN RUN [RUN ...] [--json FILE]

RUN is a directory that `sparsefuse train --out DIR` wrote (DIR/result.json) or the result.json
itself. All runs must have the same bucket sequence (first_tensor, tensors, elements,
dense_elements, collective per bucket). Only buckets with compression_s > 0 in every run count;
those that compress and pack nothing (dense allreduce) are left out, as validate leaves out
buckets measured at 0.

- run-vs-run: for each ordered pair of distinct runs (a, b), the mean over the buckets of
  |a_i - b_i| / b_i, run a "predicting" run b as a simulator would: the mean of the pair
  values, their min and max.
- leave-one-out: for each run k, the same with the mean of the other runs' times predicting
  run k (needs 3 runs): the mean over the runs, min and max.
- both again per kind of bucket, the kinds of validate's compression_error_by_kind.

--json FILE also writes the figures as fractions (0.132 for 13.2%), written to a temporary file
in FILE's directory and renamed. Bad input: exit status 2 and a message naming the file and the
field. Python 3 standard library only."""
import argparse
import itertools
import json
import math
import os
import sys
import tempfile

# The kinds of `sparsefuse validate`'s compression_error_by_kind, in its order. The rule is
# model/validation.cc's compression_kind: an all-gathered bucket whose elements are all dense is
# "sent dense as pairs" whatever its size (no "< 1e5 elements" condition on that kind), any other
# bucket goes by its element count.
KINDS = (">= 1e5 elements", "< 1e5 elements", "sent dense as pairs")
LARGE_BUCKET = 100_000  # elements (kLargeBucket in model/validation.cc)

# The bucket fields that must match between the runs, and what each must be.
IDENTITY = (("first_tensor", int), ("tensors", int), ("elements", int), ("dense_elements", int),
            ("collective", str))
NO_BUCKET = "no bucket has a measured compression in every run"


class InputError(Exception):
    """Bad input: the message names the file and the field."""


def bucket_kind(bucket):
    if bucket["collective"] == "allgather" and bucket["dense_elements"] == bucket["elements"]:
        return "sent dense as pairs"
    return ">= 1e5 elements" if bucket["elements"] >= LARGE_BUCKET else "< 1e5 elements"


def result_path(arg):
    return os.path.join(arg, "result.json") if os.path.isdir(arg) else arg


def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read the run's result ({e.strerror or e}); "
                         "expected a directory written by `sparsefuse train --out` or its result.json")
    except (ValueError, RecursionError) as e:  # JSONDecodeError, bad UTF-8, huge integers
        raise InputError(f"{path}: not valid JSON ({e}); expected a sparsefuse result document")


def checked_field(path, index, bucket, name, kind):
    where = f"{path}: buckets[{index}].{name}"
    if name not in bucket:
        raise InputError(f"{where}: missing; expected {describe(kind)}")
    value = bucket[name]
    if kind is str:
        ok = isinstance(value, str)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    else:  # seconds
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
              and math.isfinite(value) and value >= 0)
    if not ok:
        raise InputError(f"{where}: {json.dumps(value)[:60]}; expected {describe(kind)}")
    return value


def describe(kind):
    return {str: "a string", int: "an integer >= 0"}.get(kind, "a finite number of seconds >= 0")


def load_buckets(path):
    doc = read_json(path)
    if not isinstance(doc, dict) or "buckets" not in doc:
        raise InputError(f"{path}: buckets: missing; expected a result document with a list of buckets")
    if not isinstance(doc["buckets"], list):
        raise InputError(f"{path}: buckets: not a list; expected a list of bucket objects")
    buckets = []
    for i, b in enumerate(doc["buckets"]):
        if not isinstance(b, dict):
            raise InputError(f"{path}: buckets[{i}]: not an object; expected a bucket object")
        fields = {name: checked_field(path, i, b, name, kind) for name, kind in IDENTITY}
        fields["compression_s"] = checked_field(path, i, b, "compression_s", float)
        buckets.append(fields)
    return buckets


def check_same_sequence(paths, runs):
    first = runs[0]
    for path, run in zip(paths[1:], runs[1:]):
        for i in range(min(len(first), len(run))):
            for name, _ in IDENTITY:
                if run[i][name] != first[i][name]:
                    raise InputError(f"{path}: bucket {i} differs in {name}: {json.dumps(run[i][name])}, "
                                     f"expected {json.dumps(first[i][name])} as in {paths[0]}")
        if len(run) != len(first):
            raise InputError(f"{path}: buckets: {len(run)} buckets, expected {len(first)} as in {paths[0]} "
                             f"(bucket {min(len(run), len(first))} is in only one of them)")


def mean(values):
    return sum(values) / len(values)


def mean_difference(predicted, actual):
    """validate's per-bucket error: mean |predicted - actual| / actual."""
    return mean([abs(p - a) / a for p, a in zip(predicted, actual)])


def spread(values):
    return {"mean": mean(values), "min": min(values), "max": max(values)}


def run_vs_run(times):
    """times[run][bucket] -> the figure for every ordered pair (a predicting b) and their spread."""
    pairs = [{"a": a, "b": b, "mean_abs_difference": mean_difference(times[a], times[b])}
             for a, b in itertools.permutations(range(len(times)), 2)]
    return {**spread([p["mean_abs_difference"] for p in pairs]), "pairs": pairs}


def leave_one_out(times):
    """The other runs' mean predicting each run, and their spread; None with fewer than 3 runs."""
    if len(times) < 3:
        return None
    per_run = []
    for k, actual in enumerate(times):
        others = [t for j, t in enumerate(times) if j != k]
        predicted = [mean(column) for column in zip(*others)]
        per_run.append({"run": k, "mean_abs_difference": mean_difference(predicted, actual)})
    return {**spread([r["mean_abs_difference"] for r in per_run]), "runs": per_run}


def summarize(paths, runs):
    kept = [i for i in range(len(runs[0])) if all(run[i]["compression_s"] > 0 for run in runs)]
    summary = {"format": "sparsefuse-run-to-run/1", "runs": paths, "buckets": len(runs[0]),
               "compressed_buckets": len(kept), "run_vs_run": None, "leave_one_out": None, "by_kind": []}
    if not kept:
        return summary
    times = [[run[i]["compression_s"] for i in kept] for run in runs]
    summary["run_vs_run"] = run_vs_run(times)
    summary["leave_one_out"] = leave_one_out(times)
    for kind in KINDS:
        columns = [n for n, i in enumerate(kept) if bucket_kind(runs[0][i]) == kind]
        entry = {"kind": kind, "buckets": len(columns), "run_vs_run": None, "leave_one_out": None}
        if columns:
            sub = [[t[n] for n in columns] for t in times]
            entry["run_vs_run"] = run_vs_run(sub)["mean"]
            loo = leave_one_out(sub)
            entry["leave_one_out"] = loo["mean"] if loo else None
        summary["by_kind"].append(entry)
    return summary


def pct(fraction):
    return f"{100 * fraction:.1f}%"


def report(summary):
    runs = summary["runs"]
    lines = [f"runs            {len(runs)} ({', '.join(runs)})"]
    if not summary["compressed_buckets"]:
        return lines + [f"buckets         {summary['buckets']}; {NO_BUCKET}"]
    lines.append(f"buckets         {summary['compressed_buckets']} of {summary['buckets']} "
                 "with a measured compression in every run")
    rvr, loo = summary["run_vs_run"], summary["leave_one_out"]
    lines.append(f"run-vs-run      mean |difference| {pct(rvr['mean'])} "
                 f"(pairs: {pct(rvr['min'])}-{pct(rvr['max'])})")
    if loo:
        lines.append(f"leave-one-out   mean |difference| {pct(loo['mean'])} "
                     f"(runs: {pct(loo['min'])}-{pct(loo['max'])})")
    else:
        lines.append(f"leave-one-out   needs 3 runs ({len(runs)} given)")
    for k in summary["by_kind"]:
        head = f"by kind         {k['kind']} ({k['buckets']}):"
        if not k["buckets"]:
            lines.append(f"{head} none")
            continue
        loo_text = pct(k["leave_one_out"]) if k["leave_one_out"] is not None else "needs 3 runs"
        lines.append(f"{head} run-vs-run {pct(k['run_vs_run'])}, leave-one-out {loo_text}")
    return lines


def write_json(path, summary):
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=directory, prefix=".run_to_run.",
                                         suffix=".tmp", delete=False) as f:
            tmp = f.name
            json.dump(summary, f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except OSError as e:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
        raise InputError(f"{path}: cannot write the JSON figures ({e.strerror or e})")


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="run_to_run.py", description="Run-to-run spread of per-bucket compression times.")
    parser.add_argument("runs", nargs="*", metavar="RUN_DIR",
                        help="a `sparsefuse train --out` directory or its result.json (at least 2)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures (fractions) as JSON")
    args = parser.parse_args(argv)
    if len(args.runs) < 2:
        parser.error(f"at least 2 runs are needed to compare, {len(args.runs)} given")
    return args


def main(argv):
    args = parse_args(argv)
    try:
        paths = [result_path(r) for r in args.runs]
        runs = [load_buckets(p) for p in paths]
        check_same_sequence(paths, runs)
        summary = summarize(paths, runs)
        print("\n".join(report(summary)))
        if args.json:
            write_json(args.json, summary)
    except InputError as e:
        print(f"run_to_run.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
