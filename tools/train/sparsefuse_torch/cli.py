"""Entry point of `sparsefuse train` (see ../README.md): trains a model
(profile-model's models and loader, sparsefuse_profile.workloads) with a
scheme under the runtime, one process per rank under mpirun, and writes
DIR/result.json (the run schema, per-bucket timings, the loss per
iteration) on rank 0.

Exit status: 0 success; 2 bad input (one line on stderr, nothing written);
1 anything else (a failed collective ends the process at once)."""
import os
import sys
import tempfile

from sparsefuse_profile.cli import Parser, positive
from sparsefuse_profile.errors import InputError

PROG = "sparsefuse train"


def parser():
    p = Parser(prog=PROG, description="Train a PyTorch model with a scheme under the sparsefuse runtime "
                "(mpirun -np P: P data-parallel ranks) and write DIR/result.json with per-bucket timings and "
                "the loss per iteration.")
    p.add_argument("--model", required=True, help="as for profile-model: a seed model, torchvision:NAME or "
                                                  "FILE.py:FACTORY (with --input or --data)")
    p.add_argument("--scheme", required=True, help="a preset the runtime runs (wfbp, ddp, fgbuff, ssfusion, ...)")
    p.add_argument("--out", required=True, help="directory for result.json (and trace.json when profiled here)")
    p.add_argument("--iterations", type=positive("--iterations"), default=10, help="measured iterations (10)")
    p.add_argument("--warmup", type=positive("--warmup", 0), default=2, help="warm-up iterations (2)")
    p.add_argument("--trace", help="the model's trace (profile-model --out); default: every rank profiles the "
                                   "model first (--profile-iterations) and rank 0's trace is used and written "
                                   "to DIR/trace.json")
    p.add_argument("--profile-iterations", type=positive("--profile-iterations"), default=10,
                   help="measured iterations of the profile taken without --trace (10)")
    p.add_argument("--profile", choices=["before", "interleaved"], default="before",
                   help="the trace result.json names for validation: the one taken before training (before), "
                        "or one measured on a second instance of the model for one iteration after each "
                        "training iteration, written to DIR/trace-interleaved.json (interleaved; the plan still "
                        "comes from the trace before training)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="scenario key (dotted) = JSON value, e.g. compression.density=0.01 or "
                        "scheme.tensors_per_buffer=4")
    p.add_argument("--input", action="append", default=[], help="as for profile-model")
    p.add_argument("--data", help="FILE.py:FUNC giving batches (as for profile-model); default synthetic inputs")
    p.add_argument("--batch", type=positive("--batch"), help="batch per rank (default: the seed set-up's, else 32)")
    p.add_argument("--seq-len", type=positive("--seq-len"))
    p.add_argument("--image-size", type=positive("--image-size"))
    p.add_argument("--threads", type=positive("--threads"), default=1, help="torch.set_num_threads per rank (1)")
    p.add_argument("--seed", type=positive("--seed", 0), default=0,
                   help="model initialisation (the same on every rank) and inputs (seed + rank)")
    p.add_argument("--lr", type=float, default=0.01, help="learning rate of SGD with momentum 0.9 (0.01)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds any one collective may take (120)")
    p.add_argument("--dump-grads", metavar="DIR", help="for tests: every rank saves, per iteration, its own "
                                                       "gradients and the averaged ones (DIR/rank<R>.pt)")
    return p


def _check_out(path):
    if os.path.exists(path) and not os.path.isdir(path):
        raise InputError(f"--out {path}: exists and is not a directory")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise InputError(f"--out {path}: directory {parent} does not exist")


def write_atomically(path, text):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    try:
        args = parser().parse_args(argv)
        _check_out(args.out)
        if not 0 < args.timeout <= 86400:
            raise InputError(f"--timeout: expected seconds in (0, 86400], got {args.timeout}")
        from sparsefuse_torch import training
        return training.run(args, argv)
    except InputError as e:
        print(f"sparsefuse: error: {e}", file=sys.stderr)
        return 2


