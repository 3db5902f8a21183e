"""A model built by the user's own code, for the Python API's tests: importable by worker processes."""

import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.head = nn.Linear(8, 4)

    def forward(self, pixel_values):
        return {"logits": self.head(self.conv(pixel_values).mean((2, 3)))}


def make_model():
    torch.manual_seed(0)
    return Net()


def make_inputs(batch_size):
    return {"pixel_values": torch.randn(batch_size, 3, 16, 16, generator=torch.Generator().manual_seed(1))}
