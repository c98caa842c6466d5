"""Updates inside the forward pass, for schemes whose averages arrive there
(DeAR, ByteScheduler: the runtime's forward stages, runtime/training.h).

Stage g covers some of the model's parameters. Before the first module that
uses one of them runs (a forward pre-hook), the stage is opened: the runtime
waits for what the stage needs and writes the previous iteration's averages
of its tensors, and a per-stage copy of the wrapped optimizer steps those
parameters with them. Stages open in order, so a module whose parameters sit
in stage k opens every stage before k too: no module ever runs with
parameters still waiting for their update.

The per-stage optimizers are the wrapped optimizer's class with its one
parameter group's hyperparameters. For an element-wise optimizer (SGD with
momentum, Adam, ...) stepping the parameters stage by stage is the same as
stepping them together; one that couples parameters (a global gradient
norm, LARS) is not, and is not supported here."""
import ctypes
import inspect

import torch

from sparsefuse_torch.library import BadInput, check


def _stage_optimizer(optimizer, params):
    """OPTIMIZER's class over PARAMS, with its hyperparameters."""
    groups = optimizer.param_groups
    if len(groups) != 1:
        raise BadInput("a scheme that updates inside the forward steps per-stage copies of the optimizer: "
                       f"expected one parameter group, got {len(groups)}")
    accepted = inspect.signature(type(optimizer).__init__).parameters
    hyper = {k: v for k, v in groups[0].items() if k != "params" and k in accepted}
    return type(optimizer)(params, **hyper)


class ForwardStages:
    """The session's forward stages over PARAMS (the session's tensors, in
    its order). BEGIN starts the iteration (called before any stage opens).
    KEEP_AVERAGES: remember every applied average (for checking)."""

    def __init__(self, lib, session, params, optimizer, model, begin, keep_averages=False):
        self._lib, self._session, self._params, self._begin = lib, session, params, begin
        first, end = ctypes.c_int(), ctypes.c_int()
        self.tensors = []
        for g in range(lib.sf_session_stages(session)):
            check(lib.sf_session_stage_tensors(session, g, ctypes.byref(first), ctypes.byref(end)))
            self.tensors.append(range(first.value, end.value))
        self._optimizers = [_stage_optimizer(optimizer, [params[t] for t in ts]) for ts in self.tensors]
        self._averages = [torch.empty_like(p) for p in params]  # written by the runtime, reused
        self._outputs = [(ctypes.c_void_p * len(ts))(*[self._averages[t].data_ptr() for t in ts])
                         for ts in self.tensors]
        stage_of = {id(params[t]): g for g, ts in enumerate(self.tensors) for t in ts}
        for module in model.modules():
            mine = [stage_of[id(p)] for p in module.parameters(recurse=False) if id(p) in stage_of]
            if mine:
                module.register_forward_pre_hook(lambda m, inputs, last=max(mine): self.open_through(last))
        self.opened = 0  # stages opened in this iteration's forward
        self._kept = [] if keep_averages else None
        self._pending = {}

    def open_through(self, last):
        """Opens (waits for, and updates) every stage up to LAST not yet open."""
        self._begin()
        while self.opened <= last:
            g = self.opened
            updated = ctypes.c_int()
            check(self._lib.sf_session_open_stage(self._session, g, self._outputs[g], len(self.tensors[g]),
                                                  ctypes.byref(updated)))
            self.opened += 1
            if updated.value:
                self._apply(g)
                check(self._lib.sf_session_stage_updated(self._session))

    def open_all(self):
        self.open_through(len(self.tensors) - 1)

    def complete(self):
        """After the last iteration: its averages, and the final update."""
        outputs = (ctypes.c_void_p * len(self._params))(*[a.data_ptr() for a in self._averages])
        check(self._lib.sf_session_complete(self._session, outputs, len(self._params)))
        for g in range(len(self.tensors)):
            self._apply(g)

    def _apply(self, g):
        """Steps stage G's parameters with the averages; their .grad (what
        backward accumulates into) is left as it was."""
        params = [self._params[t] for t in self.tensors[g]]
        kept = [p.grad for p in params]
        for p, t in zip(params, self.tensors[g]):
            p.grad = self._averages[t]
        self._optimizers[g].step()
        for p, grad in zip(params, kept):
            p.grad = grad
        if self._kept is not None:
            for t in self.tensors[g]:
                self._pending[t] = self._averages[t].clone()
            if len(self._pending) == len(self._params):
                self._kept.append([self._pending[t] for t in range(len(self._params))])
                self._pending = {}

    def applied(self):
        """Per iteration whose averages were applied, in order: the average of
        each of the session's tensors (keep_averages only)."""
        if self._kept is None:
            raise BadInput("applied averages were not kept (keep_averages=False)")
        return self._kept
