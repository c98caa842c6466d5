"""Runs warm-up plus measured training iterations and records, per iteration,
when every parameter's gradient is ready (AccumulateGrad post-hooks), the
exclusive forward time of every module that owns parameters, and the phase
boundaries: start, backward start, backward end, iteration end.

Phases (what the simulator replays): forward = start -> backward start
(zero_grad, the model's forward, the loss); backward = backward start ->
loss.backward() returning; optimizer = backward end -> end (optimizer.step()).
They partition the iteration, so forward + backward + optimizer is the
measured iteration time.
"""
from sparsefuse_profile import hooks
from sparsefuse_profile.errors import InputError


class Iteration:
    """Raw measurements of one iteration, in ns from its start."""

    def __init__(self, forward, backward, optimizer, ready, module_ns):
        self.forward = forward      # start -> backward start
        self.backward = backward    # backward start -> backward() returned
        self.optimizer = optimizer  # backward end -> end: optimizer.step()
        self.ready = ready          # param index -> ns from backward start (absent: no gradient)
        self.module_ns = module_ns  # module index -> exclusive forward ns

    @property
    def total(self):
        return self.forward + self.backward + self.optimizer


class _ForwardTimer:
    """Pre/post forward hooks on modules owning parameters; exclusive time =
    a call's span minus the spans of hooked modules called inside it, so
    nested parameter owners (ViT's embeddings around its patch conv) are not
    counted twice."""

    def __init__(self, clock, modules):
        self.clock = clock
        self.calls = []  # [module index, start token, end token, parent call index]
        self.stack = []
        self.handles = []
        for index, module in enumerate(modules):
            self.handles.append(module.register_forward_pre_hook(lambda m, i, index=index: self._enter(index)))
            self.handles.append(module.register_forward_hook(lambda m, i, o: self._leave()))

    def _enter(self, index):
        parent = self.stack[-1] if self.stack else -1
        self.calls.append([index, self.clock.mark(), None, parent])
        self.stack.append(len(self.calls) - 1)

    def _leave(self):
        self.calls[self.stack.pop()][2] = self.clock.mark()

    def reset(self):
        self.calls, self.stack = [], []

    def exclusive(self):
        span = [self.clock.ns(c[1], c[2]) for c in self.calls]
        out = {}
        for k, (index, _, _, parent) in enumerate(self.calls):
            out[index] = out.get(index, 0) + span[k]
            if parent >= 0:
                out[self.calls[parent][0]] = out.get(self.calls[parent][0], 0) - span[k]
        return out

    def remove(self):
        for h in self.handles:
            h.remove()


def parameter_owners(model, params):
    """The modules that own parameters directly, and for each parameter (by
    identity, in the order of PARAMS) the index of its first owner."""
    owners, owner_of = [], {}
    for module in model.modules():
        direct = list(module.parameters(recurse=False))
        if direct:
            owners.append(module)
            for p in direct:
                owner_of.setdefault(id(p), len(owners) - 1)
    return owners, [owner_of[id(p)] for p in params]


def _first_forward(workload, inputs):
    """The first forward and loss: a failure here is the inputs not fitting
    the model (bad --input shapes, say), so it is reported as bad input."""
    try:
        return workload.loss(workload.model(*inputs))
    except InputError:
        raise
    except Exception as e:
        shapes = ", ".join("x".join(map(str, t.shape)) + f" {t.dtype}".replace("torch.", "") for t in inputs)
        raise InputError(f"--model {workload.name}: the forward pass on inputs {shapes} raised "
                         f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from None


def _iteration(workload, optimizer, clock, first):
    """One training iteration; returns its four phase marks."""
    inputs = workload.next_inputs()  # a user's next batch: not timed, as the simulator has no data loading
    start = clock.mark()
    optimizer.zero_grad(set_to_none=True)
    loss = _first_forward(workload, inputs) if first else workload.loss(workload.model(*inputs))
    backward_start = clock.mark()
    loss.backward()
    backward_end = clock.mark()
    optimizer.step()
    end = clock.mark()
    clock.finish()
    return start, backward_start, backward_end, end


def _phases(clock, marks):
    start, backward_start, backward_end, end = marks
    return clock.ns(start, backward_start), clock.ns(backward_start, backward_end), clock.ns(backward_end, end)


def profile(workload, optimizer, clock, warmup, iterations, unhooked=0, probe=None):
    """Returns the measured iterations (warm-up ones are run and dropped) and,
    when UNHOOKED > 0, that many more iterations' (forward, backward,
    optimizer) times with every hook removed: what the hooks cost. PROBE (or
    None): a runtime flush probe (sparsefuse_torch.library.FlushProbe) run
    at every gradient-ready hook after its mark, in every iteration, with
    the gradient made ready; its microseconds per hook land in the next
    gap's compute."""
    model, params = workload.model, [p for _, p in workload.model.named_parameters()]
    owners, _ = parameter_owners(model, params)
    ready_marks = {}

    def ready(index):
        ready_marks[index] = clock.mark()
        if probe:
            probe.hook(index, params[index].grad)

    grad_hooks = hooks.on_gradient_ready(params, ready)
    timer = _ForwardTimer(clock, owners)
    model.train()
    measured = []
    try:
        for it in range(warmup + iterations):
            ready_marks.clear()
            timer.reset()
            if probe:
                probe.begin_iteration()
            marks = _iteration(workload, optimizer, clock, it == 0)
            if probe:
                probe.end_iteration()
            if it < warmup:
                continue
            ready = {i: clock.ns(marks[1], t) for i, t in ready_marks.items()}
            measured.append(Iteration(*_phases(clock, marks), ready, timer.exclusive()))
    finally:
        timer.remove()
        grad_hooks.remove()
    bare = [_phases(clock, _iteration(workload, optimizer, clock, False)) for _ in range(unhooked)]
    return measured, bare
