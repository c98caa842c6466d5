"""Factories for the profile-model CLI test: a small model that profiles in
milliseconds, and the bad cases (a factory that raises, a model without
parameters, a factory returning something else)."""
import torch
from torch import nn


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 10)
        self.unused = nn.Linear(64, 3)  # runs in forward, output unused: no gradient

    def forward(self, tokens, features):
        x = self.embed(tokens).mean(1) + features
        h = self.body(x)
        self.unused(h)
        return self.head(h)


def make():
    return Tiny()


def raises():
    raise ValueError("the factory is broken on purpose")


def no_params():
    return nn.ReLU()


def not_a_module():
    return torch.zeros(3)


def batches(batch):
    """--data: three batches of (tokens, features), the forward's arguments."""
    gen = torch.Generator().manual_seed(1)
    return [(torch.randint(0, 100, (batch, 16), generator=gen), torch.randn(batch, 32, generator=gen))
            for _ in range(3)]


def not_batches(batch):
    return ["a string is not a batch"]
