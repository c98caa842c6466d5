"""Writes bounds.json from a fidelity.json: each calibration (microbenchmark) case's error today, plus a margin.

usage: /usr/bin/python3 tests/fidelity/record_bounds.py out/fidelity/fidelity.json > tests/fidelity/bounds.json

bound = ceil_to_0.01(error * 1.25 + 0.05): the relative 25 % and absolute 5 points absorb changes that
should not fail CI (a constant retuned elsewhere); a bound is meant to be tightened whenever the model
improves, never loosened to let a regression in.
"""
import json
import math
import sys


def main(path):
    with open(path, encoding="utf-8") as f:
        report = json.load(f)
    bounds = {c["id"]: math.ceil((c["summary_error"] * 1.25 + 0.05) * 100) / 100
              for c in report["cases"] if c["role"] == "calibration"}
    json.dump({"what": "largest allowed summary |error| per microbenchmark case (fraction); see record_bounds.py",
               "bounds": dict(sorted(bounds.items()))}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
