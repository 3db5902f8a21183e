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


class Block(nn.Module):
    def __init__(self, width_in, width_out):
        super().__init__()
        self.linear = nn.Linear(width_in, width_out)

    def forward(self, x):
        return torch.nn.functional.gelu(self.linear(x))


class Stacked(nn.Module):
    """A stem and a stack of blocks, which transformers would list as its repeated layer (`_no_split_modules`):
    identical blocks, or (widths) blocks of as many shapes."""

    _no_split_modules = ["Block"]

    def __init__(self, widths):
        super().__init__()
        self.stem = nn.Conv2d(3, widths[0], 3)
        self.blocks = nn.ModuleList(Block(a, b) for a, b in zip(widths, widths[1:]))

    def forward(self, pixel_values):
        x = self.stem(pixel_values).mean((2, 3))
        for block in self.blocks:
            x = block(x)
        return {"logits": x}


def make_stacked():
    torch.manual_seed(0)
    return Stacked([8] * 7)  # six identical blocks


def make_widening():
    torch.manual_seed(0)
    return Stacked([8 + i for i in range(11)])  # ten blocks, ten shapes


class Branchy(Net):
    """Its control flow depends on its data: torch.export cannot capture it in one graph."""

    def forward(self, pixel_values):
        out = super().forward(pixel_values)
        return out if out["logits"].sum() > 0 else {"logits": -out["logits"]}


def make_branchy():
    torch.manual_seed(0)
    return Branchy()
