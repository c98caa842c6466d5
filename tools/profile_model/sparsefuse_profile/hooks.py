"""Gradient-ready hooks, shared by the profiler and the training front end
(sparsefuse_torch): a post-hook on each parameter's AccumulateGrad node
(p.expand_as(p).grad_fn.next_functions[0][0], the node Horovod hooks) runs
once backward has accumulated the gradient into p.grad."""


class GradientHooks:
    """The hooked AccumulateGrad nodes, which the owner must keep referenced
    (the graph holds them only weakly, and a node that is collected loses its
    hook), and the hooks' handles."""

    def __init__(self):
        self.nodes, self.handles = [], []

    def remove(self):
        for h in self.handles:
            h.remove()
        self.nodes, self.handles = [], []


def on_gradient_ready(params, callback):
    """Calls CALLBACK(k) whenever PARAMS[k]'s gradient has been accumulated
    (parameters without requires_grad are skipped). Returns a GradientHooks."""
    hooks = GradientHooks()
    for index, p in enumerate(params):
        if not p.requires_grad:
            continue
        node = p.expand_as(p).grad_fn.next_functions[0][0]
        if type(node).__name__ != "AccumulateGrad":
            raise RuntimeError(f"parameter {index}: expected an AccumulateGrad node, got {type(node).__name__}")
        hooks.handles.append(node.register_hook(lambda grad_in, grad_out, index=index: callback(index)))
        hooks.nodes.append(node)
    return hooks
