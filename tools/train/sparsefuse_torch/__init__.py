"""sparsefuse_torch: train PyTorch models under the sparsefuse runtime.

    from sparsefuse_torch import Communicator, DistributedOptimizer
    opt = DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), model,
                               scheme="topk-layerwise", trace="trace.json")

See tools/train/README.md. The runtime is the shared library
libsparsefuse_c.so (runtime/capi/), found through $SPARSEFUSE_TORCH_LIB."""
from sparsefuse_torch.library import BadInput, CommFailed, Communicator, RuntimeFailure
from sparsefuse_torch.optimizer import DistributedOptimizer

__all__ = ["BadInput", "CommFailed", "Communicator", "DistributedOptimizer", "RuntimeFailure"]
