"""A model whose cost is set from outside, for benchmarks/decide.py: a chain of matrix products (real work on the
CPU, no sleep), COMPILEBENCH_MATMUL_EXTRA (a fraction: 0.1 is 10% more) adding products to the chain. Loaded
through COMPILEBENCH_PLUGINS=compilebench_matmul with this folder on PYTHONPATH; the model is `matmul`."""

import os
from dataclasses import dataclass

import torch
from torch import nn

from compilebench import zoo
from compilebench.zoo.entry import ModelEntry

SIZE, PRODUCTS = 192, 40  # about 10 ms a call on one core of this project's VM


class Chain(nn.Module):
    def __init__(self, products: int):
        super().__init__()
        self.products = products
        self.weight = nn.Parameter(torch.randn(SIZE, SIZE) / SIZE**0.5)

    def forward(self, pixel_values):
        h = pixel_values.reshape(-1)[:SIZE].expand(SIZE, SIZE).contiguous()
        for _ in range(self.products):
            h = torch.tanh(h @ self.weight)
        return {"logits": h[: pixel_values.shape[0], :10]}


@dataclass(frozen=True)
class MatmulModel(ModelEntry):
    def build(self, weights, size):
        torch.manual_seed(0)
        extra = float(os.environ.get("COMPILEBENCH_MATMUL_EXTRA", "0"))
        return Chain(round(PRODUCTS * (1 + extra))).eval()

    def inputs(self, image, batch_size, weights, size):
        return {"pixel_values": torch.randn(batch_size, 3, 16, 16, generator=torch.Generator().manual_seed(0))}


zoo.register(MatmulModel("matmul", "Test/matmul", "image-classification", "none"))
