"""DistributedOptimizer: a Horovod-style wrapper that synchronizes a model's
gradients through the sparsefuse runtime.

Every parameter's AccumulateGrad node gets a post-hook (the profiler's,
sparsefuse_profile.hooks) that hands the gradient's memory to the runtime as
soon as backward has accumulated it; the runtime copies it, and the scheme's
policy compresses, fuses and flushes buckets to the communication thread
while backward goes on. step() waits for the last bucket, finds the averaged
gradients written into p.grad, and steps the wrapped optimizer. Error
feedback, when the scheme uses it, lives in the runtime.

A scheme whose averages arrive in the next forward pass (DeAR, ByteScheduler)
updates there instead, stage by stage (sparsefuse_torch.stages): step() then
only ends the iteration, and finish() applies the last iteration's update.

One forward and one backward per step (no gradient accumulation across
backward calls); CPU float32 parameters."""
import ctypes
import json
import os
import tempfile

import torch

from sparsefuse_profile import hooks
from sparsefuse_torch.library import BadInput, check, library, take_text
from sparsefuse_torch.stages import ForwardStages


def _scenario(trace, scheme, knobs, workers, warmup, scenario):
    """The scenario document: SCENARIO's keys (e.g. network, compression),
    then the trace, the scheme with its knobs and the worker count. Its
    compression calls come right after each layer's backward unless
    SCENARIO says otherwise (compression.calls, docs/simulator-model.md)."""
    doc = dict(scenario or {})
    compression = doc.get("compression", {})
    if isinstance(compression, dict):  # anything else the runtime reports, naming the key
        doc["compression"] = {"calls": "after-compute", **compression}
    doc["model"] = {"trace": trace}
    doc["workers"] = workers
    doc["warmup_iterations"] = warmup
    doc.setdefault("iterations", 1)  # the measured count is what finish() saw
    spec = dict(scheme) if isinstance(scheme, dict) else {"preset": scheme}
    spec.update(knobs)
    doc["scheme"] = spec
    return doc


class DistributedOptimizer:
    """Wraps OPTIMIZER (any torch.optim optimizer over MODEL's parameters).

    scheme: a preset name or a scheme object ({"preset": ..., knobs});
    knobs: more scheme knobs (e.g. tensors_per_buffer=...);
    trace: the model's trace (sparsefuse profile-model), which fixes the
      tensors' backward order and sizes the scheme is planned with;
    comm: a sparsefuse_torch.Communicator (one per process);
    scenario: other scenario keys (network, compression, seed, batch_per_worker);
    warmup: iterations not counted in finish()'s statistics;
    scenario_file: where the scenario document is written for the runtime
      (default: a temporary file); relative paths in it resolve from its
      directory, and messages name it;
    keep_averages: a scheme that updates in the forward remembers every
      average it applied (applied_averages), for checking."""

    def __init__(self, optimizer, model, scheme="wfbp", *, trace, comm, scenario=None, warmup=0,
                 scenario_file=None, keep_averages=False, **knobs):
        self.optimizer = optimizer
        self._lib = library()
        doc = _scenario(trace, scheme, knobs, comm.size, warmup, scenario)
        if scenario_file is None:
            fd, scenario_file = tempfile.mkstemp(prefix="sparsefuse-scenario-", suffix=".json")
            os.close(fd)
        with open(scenario_file, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2)
        self.scenario_file = scenario_file
        self._session = ctypes.c_void_p()
        check(self._lib.sf_session_create(comm.handle, scenario_file.encode(), ctypes.byref(self._session)))
        self._params = self._map_parameters(model)
        self._tensor_of = {id(p): t for t, p in enumerate(self._params)}
        self._reported = [False] * len(self._params)
        self._in_iteration = False
        self._steps = 0
        self._completed = False
        by_position = list(model.parameters())
        self._nodes = hooks.on_gradient_ready(by_position, lambda k: self._ready(by_position[k]))
        model.register_forward_pre_hook(lambda module, inputs: self.begin_iteration())
        self._stages = None
        if self._lib.sf_session_stages(self._session) > 0:
            self._stages = ForwardStages(self._lib, self._session, self._params, optimizer, model,
                                         self.begin_iteration, keep_averages)

    @property
    def updates_in_forward(self):
        """Whether the scheme's averages are applied in the next forward (DeAR, ByteScheduler)."""
        return self._stages is not None

    def _map_parameters(self, model):
        """The session's tensors (backward order) as MODEL's parameters, by name."""
        named = dict(model.named_parameters())
        params = []
        for t in range(self._lib.sf_session_tensors(self._session)):
            name = self._lib.sf_session_tensor_name(self._session, t).decode()
            elements = self._lib.sf_session_tensor_elements(self._session, t)
            p = named.get(name)
            if p is None:
                raise BadInput(f"the trace's tensor {t} \"{name}\" is not a parameter of the model")
            if p.numel() != elements or p.dtype != torch.float32 or p.device.type != "cpu":
                raise BadInput(f"parameter \"{name}\": expected {elements} float32 elements on the CPU (the trace's), "
                               f"got {p.numel()} {p.dtype} on {p.device}")
            params.append(p)
        return params

    def begin_iteration(self):
        """Starts the iteration's clock; the model's forward pre-hook calls it if the caller does not."""
        if not self._in_iteration:
            check(self._lib.sf_session_begin_iteration(self._session))
            self._reported = [False] * len(self._params)
            self._in_iteration = True
            if self._stages:
                self._stages.opened = 0

    def backward_started(self):
        """Optional, just before loss.backward(): marks the end of the forward
        pass in the statistics (else the first gradient does)."""
        self.begin_iteration()
        if self._stages:
            self._stages.open_all()  # a stage no module opened (its parameters unused) is updated now
        check(self._lib.sf_session_backward_started(self._session))

    def _hand_over(self, t, grad):
        grad = grad.contiguous()
        check(self._lib.sf_session_tensor_ready(self._session, t, ctypes.c_void_p(grad.data_ptr()), grad.numel()))
        self._reported[t] = True

    def _ready(self, p):
        t = self._tensor_of.get(id(p))
        if t is None:
            return  # a parameter the trace does not list (no gradient there): not synchronized
        self.begin_iteration()
        if self._stages and self._stages.opened < len(self._stages.tensors):
            self._stages.open_all()  # backward began without backward_started()
        self._hand_over(t, p.grad)

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def synchronize(self):
        """Waits for the iteration's buckets; p.grad then holds the average.
        A parameter whose gradient never arrived (unused this step) is sent as zeros."""
        for t, p in enumerate(self._params):
            if p.grad is None:
                p.grad = torch.zeros_like(p)
            elif not p.grad.is_contiguous():
                p.grad = p.grad.contiguous()  # the average is written as one block of numel floats
            if not self._reported[t]:
                self._hand_over(t, p.grad)
        if self._stages:  # the averages come in the next forward
            check(self._lib.sf_session_wait(self._session, None, 0))
            return
        outputs = (ctypes.c_void_p * len(self._params))(*[p.grad.data_ptr() for p in self._params])
        check(self._lib.sf_session_wait(self._session, outputs, len(self._params)))

    def step(self, closure=None):
        if closure is not None:
            raise BadInput("DistributedOptimizer.step: closures are not supported (one backward per step)")
        self.synchronize()
        result = None if self._stages else self.optimizer.step()
        check(self._lib.sf_session_end_iteration(self._session))
        self._in_iteration = False
        self._steps += 1
        return result

    def complete(self):
        """After the last step, for a scheme that updates in the forward:
        waits for the last iteration's averages and applies them (collective).
        No further iteration may follow; finish() calls it if needed."""
        if self._stages and not self._completed and self._steps > 0:
            self._stages.complete()
            self._completed = True

    def applied_averages(self, params):
        """A scheme that updates in the forward, with keep_averages: per
        iteration, the average applied to each of PARAMS."""
        if not self._stages:
            raise BadInput("applied_averages: the scheme updates after backward (p.grad holds its averages)")
        index = {id(p): t for t, p in enumerate(self._params)}
        return [[averages[index[id(p)]] for p in params] for averages in self._stages.applied()]

    def buckets(self):
        """The last iteration's buckets: dicts of tensors, collective, sent
        elements and times (seconds since the iteration start)."""
        out = []
        times, info = (ctypes.c_double * 5)(), (ctypes.c_int64 * 4)()
        for k in range(self._lib.sf_session_buckets(self._session)):
            check(self._lib.sf_session_bucket(self._session, k, times, info))
            out.append({"tensors": [info[0], info[1]],
                        "collective": ("allreduce", "allgather", "reduce_scatter")[info[2]],
                        "sent_elements": info[3], "posted_s": times[0], "started_s": times[1],
                        "finished_s": times[2], "decompressed_s": times[3], "compression_s": times[4]})
        return out

    def finish(self):
        """Collective (every rank): result.json's document for the iterations so far."""
        self.complete()
        out = ctypes.c_void_p()
        check(self._lib.sf_session_finish(self._session, ctypes.byref(out)))
        return json.loads(take_text(out))

    def close(self):
        if self._session:
            self._lib.sf_session_destroy(self._session)
            self._session = ctypes.c_void_p()
