"""The engines beside torch.compile, made ready in the worker that times them (core/engines.py names them):

- onnxruntime: the model exported once per case by `torch.onnx.export(..., dynamo=True)` (by the first repeat that
  finds no file: its export is the engine's cold cost), an InferenceSession with every graph optimization and the
  run's threads; the session saves its optimized model, which a later repeat's session loads as it is (warm). On a
  GPU the CUDA execution provider on torch's own stream, inputs and outputs bound on the device (IO binding), so
  no host copy is timed; on a CPU the CPU provider, inputs handed over without a copy.
- openvino: the model exported (`torch.export`) and converted (`openvino.convert_model`), saved as IR; compiled for
  the device with the latency hint, the run's threads and its inference precision pinned to the case's dtype
  (OpenVINO picks bfloat16 by itself on a CPU that has it): the precision it reports back is recorded. Its cache
  folder makes a later repeat's compile warm.
- tensorrt (CUDA): Torch-TensorRT's compile of the exported model in the case's dtype, its engines cached for
  later repeats.

Each is called with the case's inputs by name and returns the eager output's tensors by the same names, so its
output is checked against eager's as a compiled one is. An export or conversion that fails raises Unsupported:
the case's status says so with the exporter's own reason."""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import time

from compilebench.core.engines import BACKENDS, EXTRAS, ONNXRUNTIME, OPENVINO, PACKAGES, TENSORRT, EnginePrepared
from compilebench.core.environment import is_cuda
from compilebench.measure import aot_inductor, correctness

EXPORTING, CONVERTING, BUILDING = "exporting", "converting", "building the engine"
OV_PRECISION = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


class Unsupported(Exception):
    """The engine (or its exporter) could not take the model: the case's status is `unsupported`."""


def missing(engine: str) -> str | None:
    """Why an engine cannot be used here (its package is not installed), in one line with the extra to install;
    None where it can."""
    for module in PACKAGES[engine]:
        if importlib.util.find_spec(module) is None:
            return (f"--variant {engine} needs {module}, which is not installed: pip install "
                    f"compilebench[{EXTRAS[engine]}]")
    return None


def register_backend(backend: str) -> None:
    """A torch.compile backend an engine ships (`--backend openvino`), registered with dynamo by importing it; a
    UserError-worthy line where its package is missing (raised as ImportError with that line)."""
    if backend in BACKENDS:
        try:
            importlib.import_module(BACKENDS[backend])
        except ImportError as exc:
            raise ImportError(f"--backend {backend} needs {BACKENDS[backend]} ({exc}): pip install "
                              f"compilebench[{EXTRAS.get(backend, backend)}]") from None


def version(engine: str) -> str | None:
    name = {ONNXRUNTIME: "onnxruntime", OPENVINO: "openvino", TENSORRT: "torch_tensorrt"}[engine]
    for dist in (name, name.replace("_", "-"), f"{name}-gpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def _flat(model, names: list[str]):
    """The model as an exporter sees it: keyword inputs in, a tuple of the eager output's tensors out (in the order
    correctness names them), so an engine's outputs map back to eager's names."""
    import torch

    class Flat(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, **inputs):
            found = dict(correctness.named_tensors(self.model(**inputs)))
            return tuple(found[name] for name in names)

    return Flat().eval()  # as the model (dropout off): a new module trains


def _names(model, inputs: dict) -> list[str]:
    import torch

    with torch.no_grad():
        return list(correctness.snapshot(model(**inputs)))


def _path(folder: str, case, suffix: str) -> str:
    return os.path.join(folder, hashlib.sha1(case.key().encode()).hexdigest()[:16] + suffix)


def prepare(model, inputs: dict, folder: str, case, enter=lambda phase: None):
    """The engine's callable (inputs by name -> eager's outputs by name) and its EnginePrepared: exported here where
    no earlier repeat left the exported model (a model built from other weights than this process's is refused, as
    an AOTInductor package is), then built cold, or warm from the engine's cache."""
    import torch

    engine = case.variant.mode
    prepared = EnginePrepared(engine=engine, version=version(engine), threads=torch.get_num_threads())
    names = _names(model, inputs)
    make = {ONNXRUNTIME: _onnxruntime, OPENVINO: _openvino, TENSORRT: _tensorrt}[engine]
    with torch.inference_mode(False), torch.no_grad():
        aot_inductor._as_normal_tensors(model)
        fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        call = make(model, fresh, names, folder, case, prepared, enter)
    return call, prepared


def _exported(folder: str, case, suffix: str, model, prepared: EnginePrepared) -> tuple[str, bool]:
    """The exported model's path and whether this process must export it (no earlier repeat did); its weights'
    fingerprint kept beside it, and held against this process's where it exists."""
    import json
    import math

    path = _path(folder, case, suffix)
    mine = aot_inductor.weights_fingerprint(model)
    if os.path.exists(path):
        with open(path + ".weights.json") as f:
            theirs = json.load(f)
        if len(theirs) != len(mine) or not all(math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-6)
                                               for a, b in zip(theirs, mine)):
            raise ValueError(f"the {case.variant.mode} model on disk was exported from other weights than this "
                             "process's model, so its outputs cannot be checked against eager")
        return path, False
    with open(path + ".weights.json", "w") as f:
        json.dump(mine, f)
    prepared.built = True
    return path, True


def _why(exc: BaseException) -> str:
    """The exporter's own reason in one line: its innermost cause's first line (torch.onnx.export wraps torch.export's
    'Could not guard on data-dependent expression ...' in 'Failed to export the model')."""
    while exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(exc).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return f"{type(exc).__name__}: {first}"[:400] if first else type(exc).__name__


# -- ONNX Runtime ------------------------------------------------------------------------------------------------

def _onnxruntime(model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
    import onnxruntime as ort
    import torch

    path, export = _exported(folder, case, ".onnx", model, prepared)
    if export:
        enter(EXPORTING)
        start = time.perf_counter()
        tmp = f"{path[:-5]}.{os.getpid()}.tmp.onnx"
        try:
            torch.onnx.export(_flat(model, names), args=(), kwargs=inputs, f=tmp, dynamo=True, verbose=False)
        except Exception as exc:  # the exporter's own reason, as the case's
            raise Unsupported(f"torch.onnx.export could not export the model: {_why(exc)}") from exc
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
        raise Unsupported(f"ONNX Runtime could not load the exported model: {_why(exc)}") from exc
    prepared.build_s, prepared.cache = time.perf_counter() - start, "warm" if warm else "cold"
    prepared.device = session.get_providers()[0]
    prepared.precision = case.dtype
    if cuda and prepared.device != "CUDAExecutionProvider":
        raise Unsupported(f"ONNX Runtime ran on {prepared.device}, not CUDA: install onnxruntime-gpu "
                          "(pip install compilebench[onnx-gpu])")
    return _bound(session, names, inputs, index) if cuda else _on_host(session, names)


def _on_host(session, names: list[str]):
    import torch

    def call(**inputs):
        out = session.run(None, {k: v.contiguous().numpy() for k, v in inputs.items()})  # no copy for a CPU tensor
        return {name: torch.from_numpy(o) for name, o in zip(names, out)}

    return call


def _bound(session, names: list[str], example: dict, index: int):
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


# -- OpenVINO ----------------------------------------------------------------------------------------------------

def _openvino(model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
    import openvino as ov
    import torch

    path, export = _exported(folder, case, ".xml", model, prepared)
    core = ov.Core()
    cache = _path(folder, case, ".openvino-cache")
    warm = os.path.isdir(cache) and bool(os.listdir(cache))
    core.set_property({"CACHE_DIR": cache})
    if export:
        enter(EXPORTING)
        start = time.perf_counter()
        float_model = model.float() if case.dtype == "bfloat16" else model  # OpenVINO computes in bf16 by its hint
        try:
            program = torch.export.export(_flat(float_model, names), args=(),
                                          kwargs={k: _float(v, case) for k, v in inputs.items()})
            enter(CONVERTING)
            converted = ov.convert_model(program)
        except Exception as exc:
            raise Unsupported(f"OpenVINO could not convert the model: {_why(exc)}") from exc
        tmp = f"{path[:-4]}.{os.getpid()}.tmp.xml"
        ov.save_model(converted, tmp, compress_to_fp16=False)
        os.replace(tmp[:-4] + ".bin", path[:-4] + ".bin")
        os.replace(tmp, path)
        prepared.export_s = time.perf_counter() - start
    prepared.model_bytes = os.path.getsize(path[:-4] + ".bin")
    device = "GPU" if is_cuda(case.device) else "CPU"
    config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": prepared.threads,
              "INFERENCE_PRECISION_HINT": OV_PRECISION[case.dtype]}
    enter(BUILDING)
    start = time.perf_counter()
    try:
        compiled = core.compile_model(path, device, config)  # from the file: what OpenVINO's cache is keyed by
    except Exception as exc:
        raise Unsupported(f"OpenVINO could not compile the model for {device}: {_why(exc)}") from exc
    prepared.build_s, prepared.cache, prepared.device = time.perf_counter() - start, "warm" if warm else "cold", device
    prepared.precision = _precision(str(compiled.get_property("INFERENCE_PRECISION_HINT")))
    request, outputs = compiled.create_infer_request(), list(compiled.outputs)

    def call(**given):
        done = request.infer({k: _float(v, case).contiguous().numpy() for k, v in given.items()}, share_inputs=True)
        return {name: torch.from_numpy(done[o].copy()).to(getattr(torch, case.dtype)) for name, o in zip(names, outputs)}

    return call


def _float(v, case):
    """A bfloat16 case's float inputs handed to OpenVINO as float32 (numpy has no bfloat16; the engine computes in
    bfloat16 by its pinned precision)."""
    import torch

    return v.float() if case.dtype == "bfloat16" and isinstance(v, torch.Tensor) and v.is_floating_point() else v


def _precision(said: str) -> str:
    """OpenVINO's element type, as a dtype's name: 'bf16' -> 'bfloat16'."""
    said = said.lower().replace("<type: '", "").replace("'>", "")
    return {"f32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16", "f16": "float16",
            "float16": "float16"}.get(said, said)


# -- TensorRT (CUDA only) ----------------------------------------------------------------------------------------

def _tensorrt(model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
    import torch
    import torch_tensorrt

    cache = _path(folder, case, ".tensorrt-cache")
    warm = os.path.isdir(cache) and bool(os.listdir(cache))
    prepared.built = not warm
    enter(BUILDING)
    start = time.perf_counter()
    try:
        compiled = torch_tensorrt.compile(_flat(model, names), ir="dynamo", arg_inputs=(), kwarg_inputs=inputs,
                                          enabled_precisions={getattr(torch, case.dtype)}, min_block_size=1,
                                          cache_built_engines=True, reuse_cached_engines=True,
                                          engine_cache_dir=cache)
    except Exception as exc:
        raise Unsupported(f"Torch-TensorRT could not compile the model: {_why(exc)}") from exc
    prepared.build_s, prepared.cache = time.perf_counter() - start, "warm" if warm else "cold"
    prepared.device, prepared.precision = "TensorRT", case.dtype

    def call(**given):
        return dict(zip(names, compiled(**given)))

    return call
