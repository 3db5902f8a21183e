"""The eager model, as torch runs it: plain (`eager`, every speed-up's baseline), with the static KV cache compiled
generation uses (`eager-static-cache`: the control that tells what the cache does from what the compiler does,
text generation only), and its forward call captured once in a CUDA graph and replayed (`eager-cudagraphs`: the
control that tells what reduce-overhead's CUDA graphs do from what the compiler does, a vision model on a GPU;
measure/cudagraph.py captures it)."""

from __future__ import annotations

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

    def refusal(self, asked: Asked) -> str | None:
        if asked.generation:
            return (f"--variant eager-cudagraphs captures one forward call (a vision model); {asked.generation} "
                    "generates text (its KV cache grows with each token: compiled reduce-overhead graphs it)")
        if asked.device is not None and not is_cuda(asked.device):
            return (f"--variant eager-cudagraphs captures the eager model in a CUDA graph: it needs a CUDA device "
                    f"(this run's is {asked.device})")
        return None


KINDS = (Eager(), StaticCache(), CudaGraph())
