"""Entry point of `sparsefuse profile-model` (see ../README.md).

Exit status: 0 success; 2 bad input (unknown model, a factory that raises, a
model without parameters, --device cuda without a GPU, PyTorch missing), with
one line on stderr and no output file; 1 anything else.
"""
import argparse
import datetime
import os
import platform
import socket
import sys

from sparsefuse_profile.errors import InputError

PROG = "sparsefuse profile-model"
INSTALL_HINT = ("install Debian's PyTorch with 'apt-get install python3-torch python3-torchvision' "
                "(tools/setup does), or point SPARSEFUSE_PYTHON at a python3 that has torch")


class Parser(argparse.ArgumentParser):
    """Bad options as one line and exit 2 (InputError), not argparse's usage
    block; shared with `sparsefuse train`."""

    def error(self, message):
        raise InputError(f"{message} (see {self.prog} --help)")


def positive(name, low=1):
    def parse(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: expected an integer >= {low}, got \"{text}\"") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"{name}: expected an integer >= {low}, got {value}")
        return value
    return parse


def parser():
    p = Parser(prog=PROG, description="Train a PyTorch model on synthetic inputs for warm-up plus N measured "
                "iterations and write a measured sparsefuse-trace/1 file: per-tensor gradient-ready offsets "
                "(AccumulateGrad hooks) with their spread, per-module forward times, optimizer and iteration time.")
    p.add_argument("--model", required=True,
                   help="a seed model (bert-base, bert-large, gpt2-large, vit-large, resnet50, resnet50-cifar100, "
                        "resnet152, vgg16), torchvision:NAME, or FILE.py:FACTORY (with --input)")
    p.add_argument("--out", required=True, help="trace file to write (written to a temporary name, then renamed)")
    p.add_argument("--input", action="append", default=[],
                   help="FILE.py models: per-sample input shape, e.g. 3x32x32 or 128:int64:30522 "
                        "(SHAPE:int64:HIGH draws integers in [0, HIGH)); repeat for several inputs")
    p.add_argument("--data", help="FILE.py models: FILE.py:FUNC, FUNC(batch) returns an iterable of batches, each a "
                                  "tensor or tuple of tensors (the forward's arguments); instead of --input")
    p.add_argument("--batch", type=positive("--batch"), help="batch size (default: the seed set-up's, else 32)")
    p.add_argument("--seq-len", type=positive("--seq-len"), help="sequence length (BERT 384, GPT-2 1024 by default)")
    p.add_argument("--image-size", type=positive("--image-size"),
                   help="image side in pixels (default 224; 32 for resnet50-cifar100)")
    p.add_argument("--iterations", type=positive("--iterations"), default=10, help="measured iterations (10)")
    p.add_argument("--warmup", type=positive("--warmup", 0), default=2, help="warm-up iterations, not recorded (2)")
    p.add_argument("--unhooked-iterations", type=positive("--unhooked-iterations", 0), default=5,
                   help="iterations run after the measured ones with every hook removed, to measure what the "
                        "hooks cost (5; 0: none); recorded in the provenance, not used in the trace")
    p.add_argument("--threads", type=positive("--threads"), default=1,
                   help="torch.set_num_threads (default 1; recorded in the trace)")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="cpu (monotonic clock) or cuda (events)")
    p.add_argument("--seed", type=positive("--seed", 0), default=0, help="seed of the synthetic inputs (0)")
    p.add_argument("--note", default="", help="a sentence stored in the provenance (e.g. that the host was shared)")
    p.add_argument("--gradients-out", metavar="FILE",
                   help="also write the last iteration's gradients, every parameter's in ready order, as raw "
                        "float32: the inputs of `sparsefuse profile-kernels --gradients FILE`")
    return p


def import_torch():
    try:
        import torch
    except ImportError as e:
        raise InputError(f"PyTorch is not available to {sys.executable} ({e}); {INSTALL_HINT}") from None
    return torch


def cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _check_out(path, option="--out", example="trace.json"):
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(f"{option} {path}: directory {directory} does not exist")
    if os.path.isdir(path):
        raise InputError(f"{option} {path}: is a directory; expected a file name such as {example}")


def write_gradients(path, workload, order):
    """The last iteration's gradients of WORKLOAD's parameters ORDER (indices
    into named_parameters, ready order), concatenated as raw float32 into
    PATH (tracefile.write_atomically: never a partial file)."""
    import torch
    from sparsefuse_profile import tracefile
    params = [p for _, p in workload.model.named_parameters()]
    missing = [i for i in order if params[i].grad is None]
    if missing:
        raise InputError(f"--gradients-out {path}: parameter {missing[0]} has no gradient after the last iteration")
    flat = torch.cat([params[i].grad.detach().float().flatten().cpu() for i in order])
    tracefile.write_atomically(path, flat.numpy().astype("<f4").tobytes())
    return flat.numel()


def optimizer_for(torch, kind, params):
    # The seed set-ups: Adam for transformers, SGD with momentum for CNNs.
    if kind == "adam":
        return torch.optim.Adam(params, lr=1e-4), "Adam (lr 1e-4)"
    return torch.optim.SGD(params, lr=0.01, momentum=0.9), "SGD with momentum 0.9 (lr 0.01)"


def _ms(ns):
    return f"{ns / 1e6:.3f} ms"


def measure(torch, args, command, workload, device_name, clock, probe=None):
    """Profiles WORKLOAD (warm-up plus measured iterations, as ARGS say) and
    returns (the trace document, the parameter names, their measured order
    and the positions where it differs from reverse registration). Shared
    with `sparsefuse train`, which profiles before it trains with a runtime
    flush PROBE in the hooks (profiler.profile)."""
    from sparsefuse_profile import profiler

    named = list(workload.model.named_parameters())
    if not named:
        raise InputError(f"--model {args.model}: the model has no parameters, so there is no gradient to time")
    trainable = [p for _, p in named if p.requires_grad]
    if not trainable:
        raise InputError(f"--model {args.model}: no parameter requires a gradient")
    if any(p.dtype != torch.float32 for _, p in named):
        raise InputError(f"--model {args.model}: expected float32 parameters (the only gradient type the "
                         "simulator models)")
    optimizer, optimizer_name = optimizer_for(torch, workload.optimizer, trainable)
    iterations, bare = profiler.profile(workload, optimizer, clock, args.warmup, args.iterations,
                                        getattr(args, "unhooked_iterations", 0), probe)
    return trace_of(torch, args, command, workload, device_name, clock, iterations, bare, optimizer_name)


def trace_of(torch, args, command, workload, device_name, clock, iterations, bare, optimizer_name):
    """The trace document of measured ITERATIONS of WORKLOAD (profiler.profile's), and what
    measure() returns with it. `sparsefuse train --profile interleaved` collects its
    iterations one at a time between training iterations and builds its trace here."""
    from sparsefuse_profile import profiler, tracefile

    named = list(workload.model.named_parameters())
    _, owner_index = profiler.parameter_owners(workload.model, [p for _, p in named])
    names = [n for n, _ in named]
    order, _ = tracefile.measured_order(names, iterations)
    if not order:
        raise InputError(f"--model {args.model}: no parameter received a gradient from the loss")
    moved = tracefile.order_differences(order)
    provenance = {
        "kind": "measured",
        "method": ("Measured by sparsefuse profile-model: synthetic inputs (or a user's batches, moved to the "
                   "device before each timed iteration), warm-up then measured training "
                   "iterations; ready offsets from AccumulateGrad post-hooks, per-module forward times from "
                   "forward pre/post hooks (exclusive of nested parameter owners), " + clock.method +
                   "; each value is the median over the measured iterations. forward_ns = iteration start to "
                   "backward start (zero_grad, forward, loss), backward_ns = to loss.backward() returning, "
                   "optimizer_ns = optimizer.step(); they add up to the iteration."),
        "device": args.device,
        "device_name": device_name,
        "pytorch_version": torch.__version__,
        "threads": torch.get_num_threads(),
        "dtype": "float32",
        "batch_size": args.batch,
        "iterations": args.iterations,
        "warmup_iterations": args.warmup,
        "host": socket.gethostname(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "input": workload.input_description,
        "optimizer": optimizer_name,
        "spread_statistic": "interquartile range over the measured iterations (ready_spread_ns, *_spread_ns)",
        "iteration_spread_ns": tracefile.spread_ns([it.total for it in iterations]),
        "forward_spread_ns": tracefile.spread_ns([it.forward for it in iterations]),
        "backward_spread_ns": tracefile.spread_ns([it.backward for it in iterations]),
        "optimizer_spread_ns": tracefile.spread_ns([it.optimizer for it in iterations]),
        "order_positions_differing_from_reverse_registration": len(moved),
        "command": command,
    }
    if args.note:
        provenance["note"] = args.note
    if bare:
        provenance["unhooked"] = tracefile.unhooked_summary(bare, iterations)
    trace = tracefile.build(workload, names, [tuple(p.shape) for _, p in named], owner_index, iterations,
                            provenance, args.batch)
    return trace, names, order, moved


def run(args, argv):
    torch = import_torch()  # before the modules that import it, for the one-line error
    from sparsefuse_profile import clocks, tracefile, workloads

    _check_out(args.out)
    if args.gradients_out:
        _check_out(args.gradients_out, "--gradients-out", "gradients.f32")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise InputError(f"--device cuda: PyTorch {torch.__version__} sees no CUDA GPU "
                         "(torch.cuda.is_available() is false); use --device cpu or a machine with a GPU")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    if args.batch is None:
        args.batch = workloads.default_batch(args.model)
    workload = workloads.resolve(args, torch.device(args.device), gen)
    if args.device == "cuda":
        clock = clocks.CudaClock(torch)
        device_name = torch.cuda.get_device_name()
    else:
        clock = clocks.CpuClock()
        device_name = cpu_name()
    print(f"profiling {workload.name} on {args.device} ({device_name}), batch {args.batch}, "
          f"{args.warmup} warm-up + {args.iterations} measured iterations, {torch.get_num_threads()} thread(s)",
          flush=True)
    trace, names, order, moved = measure(torch, args, "sparsefuse profile-model " + " ".join(argv), workload,
                                         device_name, clock)
    provenance = trace["provenance"]
    tracefile.write_atomically(args.out, tracefile.render(trace))

    params = sum(t["elements"] for t in trace["tensors"])
    spreads = [t["ready_spread_ns"] for t in trace["tensors"] if "ready_spread_ns" in t]
    print(f"model       {trace['model']}: {len(names)} tensors ({len(order)} with gradients), "
          f"{params / 1e6:.2f} M parameters, batch {args.batch}, {workload.input_description}")
    print(f"iteration   median {_ms(trace['iteration_ns'])}  IQR {_ms(provenance['iteration_spread_ns'])}  "
          f"cv {trace['iteration_cv']:.4f}" + (f" (clamped from {provenance['iteration_cv_unclamped']:.4f}: a noisy "
                                               "host; use more iterations)" if "iteration_cv_unclamped" in provenance
                                               else ""))
    # A simulated worker replays the sum of the phase medians; stalls that hit
    # different phases in different iterations raise the median iteration
    # above that sum, so the gap is a measure of how noisy the host was.
    phases = trace["forward_ns"] + trace["backward_ns"] + trace["optimizer_ns"]
    print(f"phases      forward {_ms(trace['forward_ns'])}  backward {_ms(trace['backward_ns'])}  "
          f"optimizer {_ms(trace['optimizer_ns'])} (medians); sum {_ms(phases)}, "
          f"{100 * (phases / trace['iteration_ns'] - 1):+.2f}% against the median iteration")
    if "unhooked" in provenance:
        bare = provenance["unhooked"]
        print(f"hooks       cost {100 * bare['hook_overhead']:+.1f}%: the median iteration without them is "
              f"{_ms(bare['iteration_ns'])} over {bare['iterations']} iterations (forward "
              f"{_ms(bare['forward_ns'])}, backward {_ms(bare['backward_ns'])})")
    print(f"ready       per-tensor IQR median {_ms(sorted(spreads)[len(spreads) // 2])}, max {_ms(max(spreads))}")
    if moved:
        first = ", ".join(names[order[k]] for k in moved[:3])
        print(f"order       differs from reverse registration at {len(moved)} of {len(order)} positions "
              f"(first: {first})")
    else:
        print(f"order       equals reverse registration order ({len(order)} tensors with gradients)")
    print(f"wrote       {args.out}")
    if args.gradients_out:
        count = write_gradients(args.gradients_out, workload, order)
        print(f"wrote       {args.gradients_out} ({count} float32 gradient values in ready order)")
    return 0


def main(argv):
    try:
        args = parser().parse_args(argv)
        return run(args, argv)
    except InputError as e:
        print(f"sparsefuse: error: {e}", file=sys.stderr)
        return 2
