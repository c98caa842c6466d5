"""The training loop of `sparsefuse train` on one rank."""
import argparse
import copy
import os
import sys
import tempfile

from sparsefuse_profile import cli as profile_cli
from sparsefuse_profile.errors import InputError


def _flush_probe(comm, model, iterations, trace_name):
    """A runtime flush probe (runtime/flush_probe.h) over MODEL's parameters
    for a profile of ITERATIONS iterations in all, or None where they are too
    few for the iteration learning its hooks, two warm-ups and one measured
    iteration of each kind (rank 0 says so)."""
    if iterations >= 5:
        from sparsefuse_torch.library import FlushProbe
        return FlushProbe([name for name, _ in model.named_parameters()])
    if comm.rank == 0:
        print(f"{trace_name}: profiled for under 5 iterations in all, so no flush probe: it has no runtime_flush",
              file=sys.stderr)
    return None


def _finish_probe(probe, comm, trace):
    """Rank 0 adds PROBE's medians, averaged over the ranks, to TRACE as its
    "runtime_flush"; every rank takes part and closes it."""
    if not probe:
        return
    summary = probe.summary(comm)
    if comm.rank == 0:
        trace["runtime_flush"] = summary
    probe.close()


def _trace(torch, args, comm, workload, argv):
    """(path of the trace this rank plans with, the path result.json names).
    --trace: that file. Otherwise every rank profiles the model (so the ranks
    load the machine as they will while training) from a copy of its state,
    and rank 0's trace is broadcast and written to DIR/trace.json."""
    from sparsefuse_profile import clocks, tracefile
    if args.trace:
        if not os.path.isfile(args.trace):
            raise InputError(f"--trace {args.trace}: no such file")
        path = os.path.abspath(args.trace)
        return path, path
    state = copy.deepcopy(workload.model.state_dict())
    profile_args = argparse.Namespace(model=args.model, warmup=1, iterations=args.profile_iterations, device="cpu",
                                      batch=args.batch, note="profiled by sparsefuse train before training, "
                                      f"{comm.size} ranks profiling at once")
    command = "sparsefuse train " + " ".join(argv)
    probe = _flush_probe(comm, workload.model, profile_args.warmup + profile_args.iterations, "trace.json")
    trace, _, _, _ = profile_cli.measure(torch, profile_args, command, workload, profile_cli.cpu_name(),
                                         clocks.CpuClock(), probe)
    _finish_probe(probe, comm, trace)
    workload.model.load_state_dict(state)
    text = comm.broadcast_text(tracefile.render(trace) if comm.rank == 0 else None)
    if comm.rank == 0:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(os.path.abspath(args.out), "trace.json")
    else:
        path = os.path.join(tempfile.mkdtemp(prefix="sparsefuse-train-"), "trace.json")
    tracefile.write_atomically(path, text)
    return path, "trace.json"


class _InterleavedProfile:
    """--profile interleaved: a second instance of the model, built with the
    same initial state before the runtime hooks the first, trained alone for
    one iteration after every training iteration (its own inputs and
    optimizer, no hooks of the runtime, no communication of its own) and
    profiled as profile-model profiles. Its measured iterations make the
    trace the run is validated on: the two alternate, so a change in this
    machine's speed between them (15-40 % within minutes on the 2-core VM)
    reaches both. The plan still comes from the trace taken before training.
    Its gradient-ready hooks also run a flush probe (runtime/flush_probe.h):
    what the engine's flush of a small bucket costs after this model's real
    backward steps, which the simulator charges per packed flush."""

    def __init__(self, torch, args, comm, state):
        from sparsefuse_profile import clocks, workloads
        gen = torch.Generator().manual_seed(args.seed + 7919 + 1000003 * comm.rank)  # its own inputs
        self.workload = workloads.resolve(args, torch.device("cpu"), gen)
        self.workload.model.load_state_dict(state)
        params = [p for p in self.workload.model.parameters() if p.requires_grad]
        self.optimizer, self.optimizer_name = profile_cli.optimizer_for(torch, self.workload.optimizer, params)
        self.clock = clocks.CpuClock()
        self.iterations = []
        self.probe = _flush_probe(comm, self.workload.model, args.warmup + args.iterations, "trace-interleaved.json")

    def step(self, torch, measured):
        from sparsefuse_profile import profiler
        with torch.random.fork_rng(devices=[]):  # the training's dropout draws stay its own
            done, _ = profiler.profile(self.workload, self.optimizer, self.clock, 0, 1, probe=self.probe)
        if measured:
            self.iterations += done

    def write(self, torch, args, comm, argv):
        """Rank 0 writes DIR/trace-interleaved.json, with the flush probe's
        medians as its "runtime_flush"; returns its name in DIR. Every rank
        closes its probe."""
        if comm.rank != 0:
            _finish_probe(self.probe, comm, None)
            return None
        from sparsefuse_profile import tracefile
        profile_args = argparse.Namespace(model=args.model, warmup=args.warmup, iterations=len(self.iterations),
                                          device="cpu", batch=args.batch,
                                          note="profiled by sparsefuse train --profile interleaved: one iteration "
                                          "of a second instance of the model after each training iteration, "
                                          f"{comm.size} ranks at once")
        trace, _, _, _ = profile_cli.trace_of(torch, profile_args, "sparsefuse train " + " ".join(argv),
                                              self.workload, profile_cli.cpu_name(), self.clock, self.iterations,
                                              [], self.optimizer_name)
        _finish_probe(self.probe, comm, trace)
        os.makedirs(args.out, exist_ok=True)
        tracefile.write_atomically(os.path.join(args.out, "trace-interleaved.json"), tracefile.render(trace))
        return "trace-interleaved.json"


def _scenario(args, batch, comm):
    from sparsefuse_torch.library import scenario_set
    doc = {"description": f"sparsefuse train: {args.model} with {args.scheme}, {comm.size} ranks",
           "batch_per_worker": batch, "iterations": args.iterations, "seed": args.seed + 1,
           "scheme": {"preset": args.scheme}}
    for assignment in args.set:
        doc = scenario_set(doc, assignment)
    return doc


def _loop(torch, args, workload, opt, comm, interleaved):
    """Warm-up plus measured iterations; returns this rank's loss per
    iteration and, with --dump-grads, saves every iteration's own and
    averaged gradients (a scheme that updates in the forward: the averages
    it applied there, the last iteration's once complete). INTERLEAVED (or
    None): the second model, one profiled iteration after each."""
    model = workload.model
    params = [p for p in model.parameters() if p.requires_grad]
    losses, own, averaged = [], [], []
    for it in range(args.warmup + args.iterations):
        inputs = workload.next_inputs()
        opt.begin_iteration()
        opt.zero_grad()
        loss = workload.loss(model(*inputs))
        opt.backward_started()
        loss.backward()
        if args.dump_grads:
            own.append([p.grad.detach().clone() for p in params])
        opt.step()
        if args.dump_grads and not opt.updates_in_forward:
            averaged.append([p.grad.detach().clone() for p in params])
        losses.append(float(loss.item()))
        if interleaved:
            interleaved.step(torch, measured=it >= args.warmup)
        if comm.rank == 0:
            print(f"\riteration {it + 1}/{args.warmup + args.iterations}  loss {losses[-1]:.5f}", end="",
                  file=sys.stderr, flush=True)
    if comm.rank == 0:
        print(file=sys.stderr)
    opt.complete()  # the last iteration's update, for a scheme that updates in the forward
    if args.dump_grads and opt.updates_in_forward:
        averaged = opt.applied_averages(params)
    if args.dump_grads:
        os.makedirs(args.dump_grads, exist_ok=True)
        names = [n for n, p in model.named_parameters() if p.requires_grad]
        torch.save({"names": names, "own": own, "averaged": averaged},
                   os.path.join(args.dump_grads, f"rank{comm.rank}.pt"))
    return losses


def _losses_of_every_rank(comm, losses):
    """Every rank's losses (rank-major), each rank filling its own slots of one sum."""
    n = len(losses)
    slots = [0.0] * (comm.size * n)
    slots[comm.rank * n:(comm.rank + 1) * n] = losses
    total = comm.allreduce_sum(slots)
    return [total[r * n:(r + 1) * n] for r in range(comm.size)]


def _summary(result, losses, args):
    times = result["iteration_time_s"]
    b = result["breakdown_s"]
    ms = 1e3
    print(f"iteration time  mean {times['mean'] * ms:.3f} ms  p50 {times['p50'] * ms:.3f} ms  "
          f"max {times['max'] * ms:.3f} ms (slowest rank)")
    print(f"breakdown       forward {b['forward'] * ms:.3f} ms  backward {b['backward'] * ms:.3f} ms  "
          f"compression {b['compression'] * ms:.3f} ms  exposed communication "
          f"{b['communication_exposed'] * ms:.3f} ms  optimizer {b['optimizer'] * ms:.3f} ms")
    print(f"buckets         {len(result['buckets'])} collectives per iteration, "
          f"{result['bytes_sent_per_worker'] / 2**20:.4f} MiB sent per rank")
    print(f"loss            first {losses[0]:.5f}  last {losses[-1]:.5f}  "
          f"(mean over the ranks' batches, {args.warmup} warm-up + {args.iterations} measured iterations)")


def _train(torch, args, argv, comm):
    from sparsefuse_profile import workloads
    from sparsefuse_torch.optimizer import DistributedOptimizer
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)  # the same initial model on every rank
    gen = torch.Generator().manual_seed(args.seed + 1000003 * comm.rank)  # each rank its own inputs
    if args.batch is None:
        args.batch = workloads.default_batch(args.model)
    workload = workloads.resolve(args, torch.device("cpu"), gen)
    interleaved = None
    if args.profile == "interleaved":
        interleaved = _InterleavedProfile(torch, args, comm, copy.deepcopy(workload.model.state_dict()))
    trace_path, recorded = _trace(torch, args, comm, workload, argv)
    doc = _scenario(args, args.batch, comm)
    params = [p for p in workload.model.parameters() if p.requires_grad]
    inner, optimizer_name = torch.optim.SGD(params, lr=args.lr, momentum=0.9), f"SGD, momentum 0.9, lr {args.lr}"
    scheme = doc.pop("scheme")
    # Rank 0 keeps the scenario it planned with in DIR; the others in a temporary directory.
    directory = os.path.abspath(args.out) if comm.rank == 0 else tempfile.mkdtemp(prefix="sparsefuse-train-")
    os.makedirs(directory, exist_ok=True)
    opt = DistributedOptimizer(inner, workload.model, scheme, trace=trace_path, comm=comm, scenario=doc,
                               warmup=args.warmup, scenario_file=os.path.join(directory, "scenario.json"),
                               keep_averages=bool(args.dump_grads))
    if opt.updates_in_forward:
        optimizer_name += ", stepped stage by stage inside the next forward"
    if comm.rank == 0:
        print(f"training {workload.name} with {args.scheme} on {comm.size} rank(s), batch {args.batch} per rank, "
              f"{torch.get_num_threads()} thread(s), trace {recorded}", flush=True)
    per_rank = _losses_of_every_rank(comm, _loop(torch, args, workload, opt, comm, interleaved))
    losses = [sum(column) / comm.size for column in zip(*per_rank)]
    result = opt.finish()
    opt.close()
    # The run is validated on the interleaved trace where there is one (the plan came from RECORDED).
    validated_on = interleaved.write(torch, args, comm, argv) if interleaved else recorded
    result["scenario"]["model"] = {"trace": validated_on}
    result["training"] = {"loss_per_iteration": losses, "loss_of": "the mean of the ranks' losses, each on its own batch",
                          "loss_per_rank": per_rank, "model": workload.description,
                          "batch_per_rank": args.batch, "input": workload.input_description,
                          "threads": torch.get_num_threads(), "optimizer": optimizer_name,
                          "warmup_iterations": args.warmup, "command": "sparsefuse train " + " ".join(argv),
                          "profile": args.profile, "planned_with_trace": recorded}
    return result, losses


def run(args, argv):
    import json
    torch = profile_cli.import_torch()
    from sparsefuse_torch.library import BadInput, CommFailed, Communicator
    comm = Communicator(args.timeout)
    try:
        result, losses = _train(torch, args, argv, comm)
    except (InputError, BadInput) as e:
        # Every rank meets the same bad input: rank 0 says it once, and all
        # finalize MPI together before exiting 2.
        if comm.rank == 0:
            print(f"sparsefuse: error: {e}", file=sys.stderr, flush=True)
        comm.close()
        return 2
    except CommFailed as e:
        print(f"sparsefuse train: rank {comm.rank}: error: {e}", file=sys.stderr, flush=True)
        os._exit(1)  # the communication thread may be blocked inside MPI: mpirun ends the others
    if comm.rank == 0:
        os.makedirs(args.out, exist_ok=True)
        from sparsefuse_torch.cli import write_atomically
        write_atomically(os.path.join(args.out, "result.json"), json.dumps(result, indent=2) + "\n")
        _summary(result, losses, args)
        print(f"wrote {os.path.join(args.out, 'result.json')}")
    comm.close()
    return 0
