"""TensorRT (`--variant tensorrt`, a CUDA device only): Torch-TensorRT's compile of the exported model in the case's
dtype, its engines cached for later repeats (warm)."""

from __future__ import annotations

import os
import time

from compilebench.core.engines import EnginePrepared
from compilebench.kinds import exported
from compilebench.kinds.engine import BUILDING, Engine


class TensorRt(Engine):
    name, title, extra = "tensorrt", "TensorRT", "tensorrt"
    packages = ("torch_tensorrt",)
    distributions = ("torch_tensorrt", "torch-tensorrt")
    dtypes = ("float32", "float16", "bfloat16")
    cuda_only = True
    cpu_hint = "compare onnxruntime or openvino on a CPU"
    code = ("compiled = torch_tensorrt.compile(model, ir='dynamo', arg_inputs=(), kwarg_inputs=inputs)",)

    def make(self, model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
        import torch
        import torch_tensorrt

        cache = exported.path(folder, case, ".tensorrt-cache")
        warm = os.path.isdir(cache) and bool(os.listdir(cache))
        prepared.built = not warm
        enter(BUILDING)
        start = time.perf_counter()
        try:
            compiled = torch_tensorrt.compile(exported.flat(model, names), ir="dynamo", arg_inputs=(),
                                              kwarg_inputs=inputs, enabled_precisions={getattr(torch, case.dtype)},
                                              min_block_size=1, cache_built_engines=True, reuse_cached_engines=True,
                                              engine_cache_dir=cache)
        except Exception as exc:
            raise exported.Unsupported(f"Torch-TensorRT could not compile the model: {exported.why(exc)}") from exc
        prepared.build_s, prepared.cache = time.perf_counter() - start, "warm" if warm else "cold"
        prepared.device, prepared.precision = "TensorRT", case.dtype

        def call(**given):
            return dict(zip(names, compiled(**given)))

        return call


KIND = TensorRt()
