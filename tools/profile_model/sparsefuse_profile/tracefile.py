"""Measured iterations -> a sparsefuse-trace/1 document, and writing it.

Per tensor: the median ready offset over the measured iterations and its
spread (interquartile range); tensors are listed in the measured order
(ascending median ready offset). Parameters that never receive a gradient
(the BERT pooler in SQuAD) keep their reverse-registration place, after the
tensor that precedes them there, with "has_grad": false.
"""
import json
import os
import statistics
import tempfile

FORMAT = "sparsefuse-trace/1"
CV_LIMIT = 10.0  # the largest iteration_cv the trace reader (common/trace.cc) accepts


def median_ns(values):
    return int(round(statistics.median(values)))


def spread_ns(values):
    """Interquartile range (inclusive quartiles); 0 for a single value."""
    if len(values) < 2:
        return 0
    q = statistics.quantiles(values, n=4, method="inclusive")
    return int(round(q[2] - q[0]))


def robust_cv(values):
    """Coefficient of variation from the interquartile range: IQR / 1.349 /
    median, which is sigma / mu for a normal distribution but is not blown up
    by one stalled iteration on a shared host (the standard deviation is)."""
    return round(spread_ns(values) / 1.349 / statistics.median(values), 6)


def _cumulative_split(total, parts):
    """TOTAL split into PARTS integer shares adding up to TOTAL exactly."""
    return [total * (k + 1) // parts - total * k // parts for k in range(parts)]


def measured_order(names, iterations):
    """Indices of the parameters with a gradient, by median ready offset
    (ties: reverse registration); and those that never got one. A parameter
    with a gradient in only some iterations is an error (the trace would lie)."""
    counts = {}
    for it in iterations:
        for i in it.ready:
            counts[i] = counts.get(i, 0) + 1
    partial = [names[i] for i, c in counts.items() if c != len(iterations)]
    if partial:
        raise ValueError(f"parameters received a gradient in only some iterations: {', '.join(partial[:5])}")
    with_grad = sorted(counts, key=lambda i: (median_ns([it.ready[i] for it in iterations]), -i))
    without = [i for i in range(len(names)) if i not in counts]
    return with_grad, without


def order_differences(order):
    """List positions at which the measured order (parameter indices with a
    gradient) differs from the reverse registration order of the same parameters."""
    reverse = sorted(order, reverse=True)
    return [k for k in range(len(order)) if order[k] != reverse[k]]


def unhooked_summary(bare, hooked):
    """Medians of the iterations run without hooks (BARE: (forward, backward,
    optimizer) tuples) and the hooks' cost: the hooked median iteration over
    the unhooked one, minus 1."""
    totals = [sum(b) for b in bare]
    iteration = median_ns(totals)
    return {
        "iterations": len(bare),
        "forward_ns": median_ns([b[0] for b in bare]),
        "backward_ns": median_ns([b[1] for b in bare]),
        "optimizer_ns": median_ns([b[2] for b in bare]),
        "iteration_ns": iteration,
        "hook_overhead": median_ns([it.total for it in hooked]) / iteration - 1 if iteration else 0.0,
    }


def build(workload, names, shapes, owner_index, iterations, provenance, batch):
    with_grad, without = measured_order(names, iterations)
    listed = list(with_grad)
    # Insert each gradient-less parameter after its reverse-registration predecessor.
    for i in sorted(without, reverse=True):
        later = [j for j in listed if j > i]
        at = listed.index(min(later)) + 1 if later else 0
        listed.insert(at, i)

    ready = {i: [it.ready[i] for it in iterations] for i in with_grad}
    # Module exclusive forward times, split equally among the module's own parameters.
    module_median = {}
    for m in set(owner_index):
        module_median[m] = median_ns([it.module_ns.get(m, 0) for it in iterations])
    owned = {}
    for i, m in enumerate(owner_index):
        owned.setdefault(m, []).append(i)
    forward_share = {}
    for m, members in owned.items():
        for i, share in zip(members, _cumulative_split(module_median[m], len(members))):
            forward_share[i] = share

    forward = median_ns([it.forward for it in iterations])
    backward = median_ns([it.backward for it in iterations])
    optimizer = median_ns([it.optimizer for it in iterations])
    totals = [it.total for it in iterations]

    tensors, previous = [], 0
    for i in listed:
        t = {"name": names[i], "shape": list(shapes[i]), "elements": _elements(shapes[i])}
        if i in ready:
            previous = median_ns(ready[i])
            t["ready_ns"] = previous
            t["ready_spread_ns"] = spread_ns(ready[i])
        else:
            t["ready_ns"] = previous
        t["forward_ns"] = forward_share[i]
        if i not in ready:
            t["has_grad"] = False
        tensors.append(t)
    # The list is sorted by median, and every gradient is ready before
    # backward() returns in every iteration, so the median backward end is
    # never before the last median ready offset.
    assert all(a["ready_ns"] <= b["ready_ns"] for a, b in zip(tensors, tensors[1:]))
    assert backward >= tensors[-1]["ready_ns"]
    cv = robust_cv(totals)
    if cv > CV_LIMIT:
        # A stall in a few iterations of a short run; the trace reader accepts
        # at most CV_LIMIT, so the raw value is kept in the provenance.
        provenance["iteration_cv_unclamped"] = cv
        cv = CV_LIMIT
    return {
        "format": FORMAT,
        "model": workload.name,
        "description": workload.description,
        "batch_size": batch,
        "dtype": "float32",
        "provenance": provenance,
        "forward_ns": forward,
        "backward_ns": backward,
        "optimizer_ns": optimizer,
        "iteration_ns": median_ns(totals),
        "iteration_cv": cv,
        "tensors": tensors,
    }


def _elements(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def render(trace):
    """2-space indent, one tensor per line: the layout of tools/gen_traces.py."""
    def dump(v):
        return json.dumps(v, ensure_ascii=False, separators=(", ", ": "))

    lines = ["{"] + [f"  {dump(k)}: {dump(v)}," for k, v in trace.items() if k != "tensors"]
    lines.append('  "tensors": [')
    lines.append(",\n".join(f"    {dump(t)}" for t in trace["tensors"]))
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"


def write_atomically(path, content):
    """Writes CONTENT (text, or bytes written as they are) to a temporary file
    beside PATH and renames it: never a partial file."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".profile-", suffix=".tmp", dir=directory)
    try:
        binary = isinstance(content, bytes)
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline="\n")) as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
