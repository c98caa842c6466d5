#!/usr/bin/python3
"""Checks the committed traces in traces/ (standard library only).

- Regenerating with tools/gen_traces.py into a temporary directory gives
  byte-identical files, and the same set of files (determinism; the committed
  files are up to date).
- Per model: tensor count and parameter total as expected; elements ==
  product(shape); ready_ns non-decreasing with the last equal to backward_ns;
  per-tensor forward_ns sums to forward_ns; exact key sets.

Usage: check_traces.py [--root REPO_ROOT]   (default: the repository holding this file)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

EXPECTED = {  # model: (tensors, parameters)
    "bert-base": (201, 109488386),
    "bert-large": (393, 335150082),
    "gpt2-large": (436, 774030080),
    "vit-large": (392, 304326632),
    "resnet50": (161, 25557032),
    "resnet50-cifar100": (161, 23705252),
    "resnet152": (467, 60192808),
    "vgg16": (32, 138357544),
}
TOP_KEYS = ["format", "model", "description", "batch_size", "dtype", "provenance",
            "forward_ns", "backward_ns", "optimizer_ns", "tensors"]
TENSOR_KEYS = {"name", "shape", "elements", "ready_ns", "forward_ns"}

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def check_trace(model, path):
    with open(path, encoding="utf-8") as f:
        d = json.load(f)
    if list(d) != TOP_KEYS:
        fail(f"{model}: top-level keys {list(d)} != {TOP_KEYS}")
        return
    if d["format"] != "sparsefuse-trace/1" or d["model"] != model or d["dtype"] != "float32":
        fail(f"{model}: bad format/model/dtype")
    prov = d["provenance"]
    if prov.get("kind") != "analytic" or not prov.get("method"):
        fail(f"{model}: provenance must be analytic with a method")
    if prov.get("sustained_tflops") != 100 or prov.get("memory_bandwidth_gbytes_per_s") != 2000:
        fail(f"{model}: provenance constants changed")
    for k in ("batch_size", "forward_ns", "backward_ns", "optimizer_ns"):
        if not is_int(d[k]) or d[k] <= 0:
            fail(f"{model}: {k} must be a positive integer")
    tensors = d["tensors"]
    want_tensors, want_params = EXPECTED[model]
    params = sum(t["elements"] for t in tensors)
    if len(tensors) != want_tensors or params != want_params:
        fail(f"{model}: {len(tensors)} tensors / {params} parameters, "
             f"expected {want_tensors} / {want_params}")
    names = [t["name"] for t in tensors]
    if len(set(names)) != len(names):
        fail(f"{model}: duplicate tensor names")
    prev_ready, fwd_sum = 0, 0
    for t in tensors:
        keys = set(t)
        if keys != TENSOR_KEYS and keys != TENSOR_KEYS | {"has_grad"}:
            fail(f"{model}: {t['name']}: keys {sorted(keys)}")
            continue
        if "has_grad" in t and t["has_grad"] is not False:
            fail(f"{model}: {t['name']}: has_grad may only appear as false")
        n = 1
        for dim in t["shape"]:
            if not is_int(dim) or dim <= 0:
                fail(f"{model}: {t['name']}: bad shape {t['shape']}")
            n *= dim
        if not t["shape"] or t["elements"] != n:
            fail(f"{model}: {t['name']}: elements {t['elements']} != product(shape) {n}")
        if not is_int(t["ready_ns"]) or t["ready_ns"] < prev_ready:
            fail(f"{model}: {t['name']}: ready_ns {t['ready_ns']} decreases (previous {prev_ready})")
        if not is_int(t["forward_ns"]) or t["forward_ns"] < 0:
            fail(f"{model}: {t['name']}: bad forward_ns {t['forward_ns']}")
        if t.get("has_grad", True) is False and t["ready_ns"] != prev_ready:
            fail(f"{model}: {t['name']}: a tensor without gradient must share the previous ready_ns")
        prev_ready = t["ready_ns"]
        fwd_sum += t["forward_ns"]
    if tensors and tensors[-1]["ready_ns"] != d["backward_ns"]:
        fail(f"{model}: last ready_ns {tensors[-1]['ready_ns']} != backward_ns {d['backward_ns']}")
    if fwd_sum != d["forward_ns"]:
        fail(f"{model}: sum of tensor forward_ns {fwd_sum} != forward_ns {d['forward_ns']}")
    # Model-specific facts the simulator relies on.
    if model.startswith("bert-"):
        no_grad = [t["name"] for t in tensors if t.get("has_grad", True) is False]
        if not no_grad or not all(".pooler." in n for n in no_grad) or len(no_grad) != 2:
            fail(f"{model}: expected exactly the two pooler tensors without gradient, got {no_grad}")
    elif any("has_grad" in t for t in tensors):
        fail(f"{model}: only BERT has tensors without gradient")
    if model == "gpt2-large" and tensors[-1]["name"] != "transformer.wte.weight":
        fail(f"{model}: the tied wte must be the last tensor")
    print(f"{model}: {len(tensors)} tensors, {params} parameters, forward "
          f"{d['forward_ns'] / 1e6:.3f} ms, backward {d['backward_ns'] / 1e6:.3f} ms, "
          f"optimizer {d['optimizer_ns'] / 1e6:.3f} ms")


def main():
    default_root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                 os.pardir, os.pardir))
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default=default_root)
    args = parser.parse_args()
    traces = os.path.join(args.root, "traces")
    generator = os.path.join(args.root, "tools", "gen_traces.py")

    committed = sorted(f for f in os.listdir(traces) if f.endswith(".json"))
    want = sorted(m + ".json" for m in EXPECTED)
    if committed != want:
        fail(f"traces/ holds {committed}, expected {want}")

    tmp_parent = os.environ.get("TEST_TMPDIR") or None
    with tempfile.TemporaryDirectory(dir=tmp_parent) as tmp:
        subprocess.run([sys.executable, generator, "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        generated = sorted(os.listdir(tmp))
        if generated != committed:
            fail(f"generator writes {generated}, traces/ holds {committed}")
        for name in generated:
            with open(os.path.join(tmp, name), "rb") as a:
                fresh = a.read()
            path = os.path.join(traces, name)
            if not os.path.exists(path):
                continue
            with open(path, "rb") as b:
                if b.read() != fresh:
                    fail(f"traces/{name} differs from a fresh run of tools/gen_traces.py "
                         "(rerun it and commit the result)")

    for name in committed:
        model = name[: -len(".json")]
        if model in EXPECTED:
            check_trace(model, os.path.join(traces, name))

    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("all traces OK")


if __name__ == "__main__":
    main()
