"""Models and data for the training tests (sparsefuse train --model
tasks.py:FACTORY --data tasks.py:FUNC): a small classifier whose forward
takes (features, labels) and returns the cross-entropy loss, and a synthetic
task labelled by a fixed random teacher, each rank drawing its own shard
(mpirun's OMPI_COMM_WORLD_RANK)."""
import os

import torch
from torch import nn
from torch.nn import functional as F

FEATURES, CLASSES = 32, 8


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, CLASSES)

    def forward(self, x, y):
        return F.cross_entropy(self.head(self.body(x)), y)


def classifier():
    return Classifier()


def shards(batch):
    """16 batches of (features, labels) for this rank; labels from a teacher
    that is the same on every rank."""
    teacher = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(7))
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    gen = torch.Generator().manual_seed(100 + rank)
    out = []
    for _ in range(16):
        x = torch.randn(batch, FEATURES, generator=gen)
        out.append((x, (x @ teacher).argmax(1)))
    return out


def correlated(batch):
    """Like shards, but every rank draws mostly the same examples (three
    quarters of each batch shared): the ranks' gradients are strongly
    correlated, as in large-batch training, so their selections overlap."""
    teacher = torch.randn(FEATURES, CLASSES, generator=torch.Generator().manual_seed(7))
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    shared, own = torch.Generator().manual_seed(100), torch.Generator().manual_seed(200 + rank)
    out = []
    for _ in range(16):
        x = torch.cat([torch.randn(batch - batch // 4, FEATURES, generator=shared),
                       torch.randn(batch // 4, FEATURES, generator=own)])
        out.append((x, (x @ teacher).argmax(1)))
    return out
