"""Independent reference for `sparsefuse train --dump-grads`: from every
rank's own gradients (as backward produced them), recompute what the
runtime's averaged gradients must be, with plain torch, and compare.

usage: check_grads.py DUMP_DIR RANKS dense
       check_grads.py DUMP_DIR RANKS topk DENSITY

dense: the average of the ranks' gradients.
topk:  per tensor and rank, error feedback (acc = residual + grad), the
       k = max(1, floor(n * density)) largest |acc| sent, the rest kept as
       the residual; the average of what the ranks sent.
Exits 1 with the first mismatch."""
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


def main(argv):
    directory, ranks, mode = argv[0], int(argv[1]), argv[2]
    dumps = load(directory, ranks)
    reference = TopkReference(dumps, float(argv[3])) if mode == "topk" else None
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
            if reference and any(d["own"][it][j].flatten().ne(0).sum() > 0 for d in dumps):
                nonzero = int(want.ne(0).sum())
                k = max(1, math.floor(want.numel() * reference.density))
                assert nonzero <= ranks * k, (name, nonzero, k)
    print(f"{mode}: {iterations} iterations x {len(names)} tensors x {ranks} ranks, {checked} elements match")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
