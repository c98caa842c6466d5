"""Independent reference for `sparsefuse train --dump-grads`: from every
rank's own gradients (as backward produced them), recompute what the
runtime's averaged gradients must be, with plain torch, and compare.

usage: check_grads.py DUMP_DIR RANKS dense
       check_grads.py DUMP_DIR RANKS topk DENSITY
       check_grads.py DUMP_DIR RANKS casync RESULT_DIR

dense: the average of the ranks' gradients.
topk:  per tensor and rank, error feedback (acc = residual + grad), the
       k = max(1, floor(n * density)) largest |acc| sent, the rest kept as
       the residual; the average of what the ranks sent.
casync: HiPress's ring for the tensors the run's plan compressed (from
       RESULT_DIR's result.json and trace.json: a bucket sending fewer
       elements than it covers, K from the plan's secopa_partitions in
       tensor order, the scheme's density), the dense average for the
       others. A tensor's K parts of ceil(n / K) elements each visit ranks
       j, j + 1, ... (mod RANKS), every rank adding its own values and keeping
       the part's min(len, max(1, floor(len * density))) largest |values|
       (ties: the lower index).
Exits 1 with the first mismatch."""
import json
import math
import os
import sys

import torch


def load(directory, ranks):
    dumps = [torch.load(os.path.join(directory, f"rank{r}.pt")) for r in range(ranks)]
    for d in dumps[1:]:
        assert d["names"] == dumps[0]["names"] and len(d["own"]) == len(dumps[0]["own"])
    return dumps


def expected_dense(dumps, it, j):
    return sum(d["own"][it][j] for d in dumps) / len(dumps)


class TopkReference:
    def __init__(self, dumps, density):
        self.dumps, self.density = dumps, density
        self.residual = [[torch.zeros_like(g) for g in d["own"][0]] for d in dumps]

    def expected(self, it, j):
        total = None
        for r, d in enumerate(self.dumps):
            acc = (self.residual[r][j] + d["own"][it][j]).flatten()
            k = max(1, math.floor(acc.numel() * self.density))
            idx = acc.abs().topk(k).indices
            sent = torch.zeros_like(acc)
            sent[idx] = acc[idx]
            self.residual[r][j] = (acc - sent).view_as(d["own"][it][j])
            total = sent if total is None else total + sent
        return (total / len(self.dumps)).view_as(self.dumps[0]["own"][it][j])


class CasyncReference:
    def __init__(self, dumps, result_dir):
        result = json.load(open(os.path.join(result_dir, "result.json")))
        trace = json.load(open(os.path.join(result_dir, "trace.json")))
        self.dumps, self.density = dumps, result["scenario"]["scheme"]["density"]
        ring = [b["first_tensor"] for b in result["buckets"] if b["sent_elements"] < b["elements"]]
        assert all(b["tensors"] == 1 for b in result["buckets"]), "hipress plans one tensor per buffer"
        partitions = result["plan"]["secopa_partitions"]
        assert len(partitions) == len(ring) > 0, (partitions, ring)
        by_name = {trace["tensors"][t]["name"]: k for t, k in zip(sorted(ring), partitions)}
        self.partitions = [by_name.get(name, 0) for name in dumps[0]["names"]]

    def expected(self, it, j):
        ranks, K = len(self.dumps), self.partitions[j]
        shape = self.dumps[0]["own"][it][j].shape
        if K == 0:
            return expected_dense(self.dumps, it, j)
        grads = [d["own"][it][j].flatten() for d in self.dumps]
        n = grads[0].numel()
        size = -(-n // K)
        total = torch.zeros(n)
        for part in range(K):
            lo, hi = min(n, part * size), min(n, (part + 1) * size)
            keep = min(hi - lo, max(1, math.floor((hi - lo) * self.density)))
            v = torch.zeros(hi - lo)
            for hop in range(ranks):
                v = grads[(part + hop) % ranks][lo:hi] + v
                order = torch.sort(-v.abs(), stable=True).indices  # ties: the lower index first
                v[order[keep:]] = 0
            total[lo:hi] = v
        return (total / ranks).view(shape)


def main(argv):
    directory, ranks, mode = argv[0], int(argv[1]), argv[2]
    dumps = load(directory, ranks)
    reference = None
    if mode == "topk":
        reference = TopkReference(dumps, float(argv[3]))
    elif mode == "casync":
        reference = CasyncReference(dumps, argv[3])
    names = dumps[0]["names"]
    iterations = len(dumps[0]["own"])
    checked = 0
    for it in range(iterations):
        for j, name in enumerate(names):
            want = reference.expected(it, j) if reference else expected_dense(dumps, it, j)
            for r, d in enumerate(dumps):
                got = d["averaged"][it][j]
                if not torch.allclose(got, want, rtol=1e-5, atol=1e-7):
                    worst = (got - want).abs().argmax().item()
                    print(f"iteration {it}, {name}, rank {r}: element {worst} is "
                          f"{got.flatten()[worst].item()!r}, expected {want.flatten()[worst].item()!r}")
                    return 1
                checked += got.numel()
            if mode == "topk" and any(d["own"][it][j].flatten().ne(0).sum() > 0 for d in dumps):
                nonzero = int(want.ne(0).sum())
                k = max(1, math.floor(want.numel() * reference.density))
                assert nonzero <= ranks * k, (name, nonzero, k)
    print(f"{mode}: {iterations} iterations x {len(names)} tensors x {ranks} ranks, {checked} elements match")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
