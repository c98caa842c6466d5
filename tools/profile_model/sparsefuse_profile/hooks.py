"""Gradient-ready hooks, shared by the profiler and the training front end
(sparsefuse_torch): a post-hook on each parameter's AccumulateGrad node
(p.expand_as(p).grad_fn.next_functions[0][0], the node Horovod hooks) runs
once backward has accumulated the gradient into p.grad."""


def on_gradient_ready(params, callback):
    """Calls CALLBACK(k) whenever PARAMS[k]'s gradient has been accumulated
    (parameters without requires_grad are skipped). Returns the
    AccumulateGrad nodes, which the caller must keep referenced: the graph
    holds them only weakly, and a node that is collected loses its hook."""
    accumulators = []
    for index, p in enumerate(params):
        if not p.requires_grad:
            continue
        node = p.expand_as(p).grad_fn.next_functions[0][0]
        if type(node).__name__ != "AccumulateGrad":
            raise RuntimeError(f"parameter {index}: expected an AccumulateGrad node, got {type(node).__name__}")
        node.register_hook(lambda grad_in, grad_out, index=index: callback(index))
        accumulators.append(node)
    return accumulators
