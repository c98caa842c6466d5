"""Every seed model of sparsefuse_profile has exactly the inventory of its
analytic trace: the same tensors (names, shapes, element counts) in reverse
registration order, and the same totals.

usage: check_inventories.py PACKAGE_DIR TRACES_DIR
"""
import json
import os
import sys


def main(package_dir, traces_dir):
    sys.path.insert(0, package_dir)
    import torch
    from sparsefuse_profile import workloads

    failures = 0
    for name, seed in workloads.SEEDS.items():
        with open(os.path.join(traces_dir, name + ".json"), encoding="utf-8") as f:
            trace = json.load(f)
        # The transformers and the CIFAR ResNet are built on the meta device
        # (no memory, no init); torchvision's builders take no device, so
        # those are built on the CPU.
        device = "cpu" if seed[0] == "torchvision" else "meta"
        model = workloads.build_seed_model(name, torch.device(device))
        got = [(n, list(p.shape), p.numel()) for n, p in reversed(list(model.named_parameters()))]
        want = [(t["name"], t["shape"], t["elements"]) for t in trace["tensors"]]
        del model
        if got == want:
            print(f"ok   {name}: {len(got)} tensors, {sum(g[2] for g in got)} parameters")
            continue
        failures += 1
        print(f"FAIL {name}: {len(got)} tensors / {sum(g[2] for g in got)} parameters, trace has "
              f"{len(want)} / {sum(w[2] for w in want)}")
        for k, (g, w) in enumerate(zip(got, want)):
            if g != w:
                print(f"     first difference at {k}: model {g}, trace {w}")
                break
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
