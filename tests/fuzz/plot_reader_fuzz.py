"""Fuzzes the plot package's reader (sparsefuse_plot.results.ResultSet: every result.json,
sweep.json and validation.json under a results directory), which libFuzzer cannot reach:
it is Python. Each run writes one to three mutated documents into a fresh results
directory and loads it. InputProblem (the CLI's exit status 2) is the expected answer to
bad input; any other exception is a finding: the input is kept and the run fails.

Mutations, from the seed documents: a JSON value somewhere replaced (by null, a bool, a
negative, zero, huge or non-finite number, a string, an empty or nested container), a key
removed, a subtree copied elsewhere; or the text itself cut, its bytes flipped or spliced.

usage: plot_reader_fuzz.py (--runs N | --seconds S) [--seed S] [--findings DIR] [--replay DIR]... SEED_FILE...
Each --replay DIR (a results directory that once found a bug: regressions/plot_reader/) is
loaded first, unmutated.
"""
import argparse
import copy
import json
import os
import random
import shutil
import sys
import tempfile
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "plot"))
from sparsefuse_plot.results import InputProblem, ResultSet  # noqa: E402

REPLACEMENTS = [None, True, False, -1, 0, 1, 2 ** 70, -1e308, 1e308, float("nan"), float("inf"), "", "x",
                "sparsefuse-result/1", [], {}, [[]], {"preset": "x"}, [1, "a"], {"": {}}]


def paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from paths(v, prefix + (i,))


def get(node, path):
    for p in path:
        node = node[p]
    return node


def mutate_document(rng, doc):
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 4)):
        all_paths = list(paths(doc))
        path = rng.choice(all_paths)
        if not path:
            doc = rng.choice(REPLACEMENTS + [doc])
            continue
        parent, key = get(doc, path[:-1]), path[-1]
        choice = rng.random()
        if choice < 0.6:
            parent[key] = copy.deepcopy(rng.choice(REPLACEMENTS))
        elif choice < 0.8 and isinstance(parent, dict):
            del parent[key]
        else:
            parent[key] = copy.deepcopy(get(doc, rng.choice(all_paths)))
    return json.dumps(doc)


def mutate_text(rng, text):
    data = bytearray(text.encode())
    for _ in range(rng.randint(1, 8)):
        if not data:
            break
        i = rng.randrange(len(data))
        op = rng.random()
        if op < 0.3:
            data[i] = rng.randrange(256)
        elif op < 0.5:
            del data[i:i + rng.randint(1, 16)]
        elif op < 0.7:
            data[i:i] = bytes(rng.choice(b'{}[]",:0123456789.eE-+ntf') for _ in range(rng.randint(1, 4)))
        else:
            del data[i:]
    return bytes(data)


def one_run(rng, seeds, root):
    os.makedirs(root)
    for n in range(rng.randint(1, 3)):
        name, text = rng.choice(seeds)
        body = mutate_text(rng, text) if rng.random() < 0.2 else mutate_document(rng, json.loads(text)).encode()
        directory = os.path.join(root, f"run{n}")
        os.makedirs(directory)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(body)
    try:
        ResultSet(root)
    except InputProblem:
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument("--runs", type=int)
    budget.add_argument("--seconds", type=float)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--findings", default=os.environ.get("SPARSEFUSE_FUZZ_FINDINGS", tempfile.gettempdir()))
    parser.add_argument("--replay", action="append", default=[])
    parser.add_argument("seeds", nargs="+")
    args = parser.parse_args()
    for directory in args.replay:
        try:
            ResultSet(directory)
        except InputProblem:
            pass
    seeds = []
    for path in args.seeds:
        with open(path, encoding="utf-8") as f:
            seeds.append((os.path.basename(path).split("-")[-1], f.read()))
    rng = random.Random(args.seed)
    work = tempfile.mkdtemp()
    start = time.time()
    run = 0
    try:
        while (run < args.runs) if args.runs is not None else (time.time() - start < args.seconds):
            root = os.path.join(work, str(run))
            try:
                one_run(rng, seeds, root)
            except Exception:  # a finding: anything but InputProblem
                kept = os.path.join(args.findings, f"plot_reader-run{run}")
                shutil.copytree(root, kept, dirs_exist_ok=True)
                traceback.print_exc()
                print(f"plot_reader: finding at run {run}; the results directory is kept in {kept}")
                return 1
            shutil.rmtree(root)
            run += 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"plot_reader: {run} runs, 0 crashes, {time.time() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
