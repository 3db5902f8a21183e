"""ONNX Runtime (`--variant onnxruntime`): the model exported once per case by `torch.onnx.export(..., dynamo=True)`,
an InferenceSession with every graph optimization and the run's threads; the session saves its optimized model,
which a later repeat's session loads as it is (warm). On a GPU the CUDA execution provider on torch's own stream,
inputs and outputs bound on the device (IO binding), so no host copy is timed; on a CPU the CPU provider, inputs
handed over without a copy. It computes in the case's dtype (float32, float16: no bfloat16 kernels)."""

from __future__ import annotations

import os
import time

from compilebench.core.engines import EnginePrepared
from compilebench.core.environment import is_cuda
from compilebench.kinds import exported
from compilebench.kinds.engine import BUILDING, EXPORTING, Engine


class OnnxRuntime(Engine):
    name, title, extra = "onnxruntime", "ONNX Runtime", "onnx"
    packages = ("onnxruntime", "onnx", "onnxscript")
    distributions = ("onnxruntime", "onnxruntime-gpu")
    # 1.32 on Linux writes a device id and an event store under ~/.cache/Microsoft/DeveloperTools as it loads, for
    # Microsoft's collector; disable_telemetry_events() after loading does not stop that, this variable does
    telemetry_off = {"ORT_DISABLE_TELEMETRY": "1"}
    dtypes = ("float32", "float16")
    code = ("torch.onnx.export(model, args=(), kwargs=inputs, f='model.onnx', dynamo=True)  # once",
            "session = onnxruntime.InferenceSession('model.onnx')  # in each process that serves",
            "compiled = lambda **inputs: session.run(None, {k: v.numpy() for k, v in inputs.items()})")

    def make(self, model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
        import onnxruntime as ort
        import torch

        path, export = exported.kept(folder, case, ".onnx", model)
        if export:
            prepared.built = True
            enter(EXPORTING)
            start = time.perf_counter()
            tmp = f"{path[:-5]}.{os.getpid()}.tmp.onnx"
            try:
                torch.onnx.export(exported.flat(model, names), args=(), kwargs=inputs, f=tmp, dynamo=True,
                                  verbose=False)
            except Exception as exc:  # the exporter's own reason, as the case's
                raise exported.Unsupported(
                    f"torch.onnx.export could not export the model: {exported.why(exc)}") from exc
            os.replace(tmp, path)
            prepared.export_s = time.perf_counter() - start
        prepared.model_bytes = os.path.getsize(path)
        optimized = path[:-5] + ".optimized.onnx"
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = prepared.threads, 1
        warm = os.path.exists(optimized)
        if warm:  # optimized by an earlier repeat: loaded as it is
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        else:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            options.optimized_model_filepath = optimized
        options.log_severity_level = 3  # the serialized model's "same environment only" warning: it is
        cuda = is_cuda(case.device)
        index = (torch.device(case.device).index or 0) if cuda else None
        providers = ([("CUDAExecutionProvider", {"device_id": index,
                                                 "user_compute_stream": str(torch.cuda.current_stream().cuda_stream)})]
                     if cuda else ["CPUExecutionProvider"])
        enter(BUILDING)
        start = time.perf_counter()
        try:
            session = ort.InferenceSession(warm and optimized or path, options, providers=providers)
        except Exception as exc:
            raise exported.Unsupported(f"ONNX Runtime could not load the exported model: {exported.why(exc)}") from exc
        prepared.build_s, prepared.cache = time.perf_counter() - start, "warm" if warm else "cold"
        prepared.device = session.get_providers()[0]
        prepared.precision = case.dtype
        if cuda and prepared.device != "CUDAExecutionProvider":
            raise exported.Unsupported(f"ONNX Runtime ran on {prepared.device}, not CUDA: install onnxruntime-gpu "
                                       "(pip install compilebench[onnx-gpu])")
        return bound(session, names, inputs, index) if cuda else on_host(session, names)


def on_host(session, names: list[str]):
    import torch

    def call(**inputs):
        out = session.run(None, {k: v.contiguous().numpy() for k, v in inputs.items()})  # no copy for a CPU tensor
        return {name: torch.from_numpy(o) for name, o in zip(names, out)}

    return call


def bound(session, names: list[str], example: dict, index: int):
    """IO binding on the GPU: inputs read where torch holds them, outputs written into tensors torch owns (their
    shapes from a first run), so a timed call copies nothing across the bus."""
    import torch

    kinds = {torch.float32: "float32", torch.float16: "float16", torch.int64: "int64", torch.int32: "int32"}
    binding = session.io_binding()
    for name in (o.name for o in session.get_outputs()):
        binding.bind_output(name, "cuda", index)
    feed = {k: v.contiguous() for k, v in example.items()}
    for k, v in feed.items():
        binding.bind_input(k, "cuda", index, kinds[v.dtype], list(v.shape), v.data_ptr())
    session.run_with_iobinding(binding)
    said = {"tensor(float)": torch.float32, "tensor(float16)": torch.float16, "tensor(int64)": torch.int64,
            "tensor(int32)": torch.int32}
    device = next(iter(feed.values())).device  # the GPU torch holds the inputs on (cuda:index)
    outs = [torch.empty(o.shape(), dtype=said[o.data_type()], device=device) for o in binding.get_outputs()]
    for o, t in zip(session.get_outputs(), outs):
        binding.bind_output(o.name, "cuda", index, kinds[t.dtype], list(t.shape), t.data_ptr())

    def call(**inputs):
        for k, v in inputs.items():
            if v.data_ptr() != feed[k].data_ptr():  # another tensor than the one bound: copied into the bound one
                feed[k].copy_(v)
        session.run_with_iobinding(binding)
        return dict(zip(names, outs))

    return call


KIND = OnnxRuntime()
