"""OpenVINO (`--variant openvino`, and the torch.compile backend it ships, `--backend openvino`): the model exported
(`torch.export`) and converted (`openvino.convert_model`), saved as IR; compiled for the device with the latency
hint, the run's threads and its inference precision pinned to the case's dtype (OpenVINO picks bfloat16 by itself
on a CPU that has it): the precision it reports back is recorded. Its cache folder makes a later repeat's compile
warm."""

from __future__ import annotations

import os
import time

from compilebench.core.engines import EnginePrepared
from compilebench.core.environment import is_cuda
from compilebench.kinds import exported
from compilebench.kinds.engine import BUILDING, CONVERTING, EXPORTING, Engine

PRECISION_HINT = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}


class OpenVino(Engine):
    name, title, extra = "openvino", "OpenVINO", "openvino"
    packages = distributions = ("openvino",)
    # It takes the float32 model and computes in the case's dtype (its inference precision, pinned).
    dtypes = ("float32", "bfloat16", "float16")
    backends = {"openvino": "openvino.torch"}  # the torch.compile backend it ships: the module that registers it
    # Its converter sends each conversion's parameters to Google Analytics with a client id it writes to
    # ~/intel/openvino_ga_cid, unless a consent file or CI=true says no, from a process it forks: on a host without
    # network that child hung in getaddrinfo, holding the device lock it inherited, and the run waited on it for
    # good (2026-11-28). Without the module, the converter uses its own no-op stub.
    phones_home = ("openvino_telemetry",)
    code = ("program = torch.export.export(model, args=(), kwargs=inputs)",
            "openvino.save_model(openvino.convert_model(program), 'model.xml')  # once",
            "compiled = openvino.Core().compile_model('model.xml', 'CPU', {'PERFORMANCE_HINT': 'LATENCY', "
            "'INFERENCE_PRECISION_HINT': 'f32'})  # the precision pinned: your dtype's")

    def make(self, model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
        import openvino as ov
        import torch

        path, export = exported.kept(folder, case, ".xml", model)
        core = ov.Core()
        cache = exported.path(folder, case, ".openvino-cache")
        warm = os.path.isdir(cache) and bool(os.listdir(cache))
        core.set_property({"CACHE_DIR": cache})
        if export:
            prepared.built = True
            enter(EXPORTING)
            start = time.perf_counter()
            float_model = model.float() if case.dtype == "bfloat16" else model  # OpenVINO computes in bf16 by its hint
            try:
                program = torch.export.export(exported.flat(float_model, names), args=(),
                                              kwargs={k: _float(v, case) for k, v in inputs.items()})
                enter(CONVERTING)
                converted = ov.convert_model(program)
            except Exception as exc:
                raise exported.Unsupported(f"OpenVINO could not convert the model: {exported.why(exc)}") from exc
            tmp = f"{path[:-4]}.{os.getpid()}.tmp.xml"
            ov.save_model(converted, tmp, compress_to_fp16=False)
            os.replace(tmp[:-4] + ".bin", path[:-4] + ".bin")
            os.replace(tmp, path)
            prepared.export_s = time.perf_counter() - start
        prepared.model_bytes = os.path.getsize(path[:-4] + ".bin")
        device = "GPU" if is_cuda(case.device) else "CPU"
        config = {"PERFORMANCE_HINT": "LATENCY", "INFERENCE_NUM_THREADS": prepared.threads,
                  "INFERENCE_PRECISION_HINT": PRECISION_HINT[case.dtype]}
        enter(BUILDING)
        start = time.perf_counter()
        try:
            compiled = core.compile_model(path, device, config)  # from the file: what OpenVINO's cache is keyed by
        except Exception as exc:
            raise exported.Unsupported(
                f"OpenVINO could not compile the model for {device}: {exported.why(exc)}") from exc
        prepared.build_s, prepared.cache = time.perf_counter() - start, "warm" if warm else "cold"
        prepared.device = device
        prepared.precision = precision(str(compiled.get_property("INFERENCE_PRECISION_HINT")))
        request, outputs = compiled.create_infer_request(), list(compiled.outputs)

        def call(**given):
            done = request.infer({k: _float(v, case).contiguous().numpy() for k, v in given.items()}, share_inputs=True)
            return {name: torch.from_numpy(done[o].copy()).to(getattr(torch, case.dtype))
                    for name, o in zip(names, outputs)}

        return call


def _float(v, case):
    """A bfloat16 case's float inputs handed to OpenVINO as float32 (numpy has no bfloat16; the engine computes in
    bfloat16 by its pinned precision)."""
    import torch

    return v.float() if case.dtype == "bfloat16" and isinstance(v, torch.Tensor) and v.is_floating_point() else v


def precision(said: str) -> str:
    """OpenVINO's element type, as a dtype's name: 'bf16' -> 'bfloat16'."""
    said = said.lower().replace("<type: '", "").replace("'>", "")
    return {"f32": "float32", "float32": "float32", "bf16": "bfloat16", "bfloat16": "bfloat16", "f16": "float16",
            "float16": "float16"}.get(said, said)


KIND = OpenVino()
