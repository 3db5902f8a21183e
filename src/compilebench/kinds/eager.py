"""The eager model, as torch runs it: plain (`eager`, every speed-up's baseline), with the static KV cache compiled
generation uses (`eager-static-cache`: the control that tells what the cache does from what the compiler does,
text generation only), and its forward call captured once in a CUDA graph and replayed (`eager-cudagraphs`: the
control that tells what reduce-overhead's CUDA graphs do from what the compiler does, a vision model on a GPU;
a text-to-image pipeline's denoiser, its loop and decoder left as they are).

The CUDA graph is captured as PyTorch's CUDA graph documentation does it by hand: warm-up calls on a side stream
(lazy initialization, cuDNN's and cuBLAS's workspaces, must not happen during capture), one capture on static
inputs, then each call copies its inputs into the static ones and replays. Warm-up and capture happen before the
timed loop, as reduce-overhead's recording does on its first calls. What it measures beside reduce-overhead: the
part of that mode's gain that CUDA graphs alone give an eager model (pytorch/pytorch#120733), and so the
compiler's own part."""

from __future__ import annotations

from typing import Callable

from compilebench.core.environment import is_cuda
from compilebench.kinds.base import Asked, Kind


class Eager(Kind):
    name, title = "eager", "no compile"


class StaticCache(Kind):
    name, title = "eager-static-cache", "no compile, static cache"

    def refusal(self, asked: Asked) -> str | None:
        if asked.vision:
            return f"--variant eager-static-cache is for text generation; {asked.vision} does not generate text"
        return None


class CudaGraph(Kind):
    name, title = "eager-cudagraphs", "no compile, CUDA graph"
    prepares = True

    def prepare(self, model, inputs: dict, folder: str, case, enter=lambda phase: None):
        enter("capturing a CUDA graph")
        if getattr(model, "optimized_part", None) is not None:
            return capture_part(model, inputs), None
        return capture(model, inputs), None

    def refusal(self, asked: Asked) -> str | None:
        if asked.generation:
            return (f"--variant eager-cudagraphs captures one forward call (a vision model); {asked.generation} "
                    "generates text (its KV cache grows with each token: compiled reduce-overhead graphs it)")
        if asked.device is not None and not is_cuda(asked.device):
            return (f"--variant eager-cudagraphs captures the eager model in a CUDA graph: it needs a CUDA device "
                    f"(this run's is {asked.device})")
        return None


WARMUP_CALLS = 3  # PyTorch's example warms up 3 iterations on a side stream before capturing


def capture(model, inputs: dict, warmup: int = WARMUP_CALLS) -> Callable[..., object]:
    """A callable taking the model's keyword inputs that replays one captured call: the inputs given are copied
    into the graph's static ones (a device-to-device copy, as cudagraph trees copy a compiled graph's inputs), and
    the output returned is the graph's static output, overwritten by the next replay."""
    import torch
    from torch.utils._pytree import tree_leaves, tree_map

    static = tree_map(lambda v: v.clone() if torch.is_tensor(v) else v, inputs)  # a dict of tensors inside too
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            model(**static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        output = model(**static)

    def replay(**given):
        for k, v in given.items():
            for into, value in zip(tree_leaves(static[k]), tree_leaves(v)):
                if torch.is_tensor(value) and value is not into:
                    into.copy_(value)
        graph.replay()
        return output

    replay.graph = graph  # kept reachable: its private memory pool lives as long as the graph
    return replay


def capture_part(pipeline, inputs: dict) -> Callable[..., object]:
    """A text-to-image pipeline whose denoiser runs in a CUDA graph, captured at the inputs the pipeline hands it at
    the first step (their shapes hold for every step of an image of this size: the latents, timestep and prompt
    are copied in at each step), the loop, scheduler and decoder running as they are."""
    replay = capture(pipeline.optimized_part, pipeline.denoiser_inputs(**inputs))
    graphed = pipeline.stand_in(lambda named: replay(**named), pipeline.optimized_part)

    def call(**given):
        with pipeline.part_replaced(graphed):
            return pipeline(**given)

    call.graph = replay.graph
    return call


KINDS = (Eager(), StaticCache(), CudaGraph())
