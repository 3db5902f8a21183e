"""ExecuTorch (`--variant executorch`) with its XNNPACK delegate, which runs on x86 and Arm CPUs: the model exported
once per case (`torch.export`), lowered to XNNPACK (`to_edge_transform_and_lower` with the XnnpackPartitioner)
and written as a `.pte` program by the first repeat that finds none (its export is the engine's cold cost); each
repeat loads the program and its `forward` method through ExecuTorch's runtime (the load is its build: warm where
an earlier repeat left the program). What XNNPACK took of the graph is recorded (`xnnpack_partitions`, and
`portable_ops`: the operators it left to ExecuTorch's portable kernels), as is the precision the program computes
in: the case's dtype, float32 alone (XNNPACK's float16 needs an Arm CPU)."""

from __future__ import annotations

import json
import os
import time

from compilebench.core.engines import EnginePrepared
from compilebench.kinds import exported
from compilebench.kinds.engine import BUILDING, CONVERTING, EXPORTING, Engine


class ExecuTorch(Engine):
    name, title, extra = "executorch", "ExecuTorch", "executorch"
    packages = distributions = ("executorch",)
    dtypes = ("float32",)
    code = ("from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner",
            "from executorch.exir import to_edge_transform_and_lower",
            "program = to_edge_transform_and_lower(torch.export.export(model, args=(), kwargs=inputs),",
            "                                      partitioner=[XnnpackPartitioner()]).to_executorch()",
            "open('model.pte', 'wb').write(program.buffer)  # once",
            "from executorch.runtime import Runtime",
            "method = Runtime.get().load_program('model.pte').load_method('forward')  # in each process that serves",
            "compiled = lambda **inputs: method.execute(list(inputs.values()))")

    def make(self, model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
        import torch

        path, export = exported.kept(folder, case, ".pte", model)
        if export:
            prepared.built = True
            enter(EXPORTING)
            start = time.perf_counter()
            try:
                program = torch.export.export(exported.flat(model, names), args=(), kwargs=inputs)
                enter(CONVERTING)
                buffer, split = _lowered(program)
            except Exception as exc:  # the exporter's (or the partitioner's) own reason, as the case's
                raise exported.Unsupported(f"ExecuTorch could not lower the model: {exported.why(exc)}") from exc
            tmp = f"{path[:-4]}.{os.getpid()}.tmp.pte"
            with open(tmp, "wb") as f:
                f.write(buffer)
            os.replace(tmp, path)
            with open(path + ".split.json", "w") as f:
                json.dump(split, f)
            prepared.export_s = time.perf_counter() - start
        prepared.model_bytes = os.path.getsize(path)
        with open(path + ".split.json") as f:
            split = json.load(f)
        prepared.extra.update(split)
        from executorch.runtime import Runtime

        prepared.threads = _threads(prepared.threads)
        enter(BUILDING)
        start = time.perf_counter()
        try:
            method = Runtime.get().load_program(path).load_method("forward")
        except Exception as exc:
            raise exported.Unsupported(f"ExecuTorch could not load its program: {exported.why(exc)}") from exc
        prepared.build_s, prepared.cache = time.perf_counter() - start, "cold" if export else "warm"
        left = split["portable_ops"]  # where it ran, as the CSV's engine_device says it: XNNPACK took all, or not
        prepared.device = "XNNPACK" + (f" and {left} portable operator(s)" if left else "")
        prepared.precision = case.dtype
        order = list(inputs)  # the exported program's inputs: the keyword inputs in the order they were given

        def call(**given):
            return dict(zip(names, method.execute([given[k].contiguous() for k in order])))

        return call


def _threads(wanted: int) -> int | None:
    """XNNPACK's threadpool set to the run's threads (torch's and the other engines'; by itself it takes every
    core), and the count it says back; None where this ExecuTorch cannot say."""
    from executorch.extension.pybindings import portable_lib

    try:
        if portable_lib._threadpool_get_thread_count() != wanted:
            portable_lib._unsafe_reset_threadpool(wanted)  # no program runs yet in this process
        return portable_lib._threadpool_get_thread_count()
    except AttributeError:
        return None


def _lowered(program) -> tuple[bytes, dict]:
    """The program lowered to XNNPACK, as the bytes of a .pte file, and how the graph was split: the partitions
    XNNPACK took and the operators it left to ExecuTorch's portable kernels (0: the whole model runs in XNNPACK)."""
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    lowered = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
    calls = [str(n.target) for n in lowered.exported_program().graph.nodes if n.op == "call_function"]
    partitions = sum("executorch_call_delegate" in c for c in calls)
    left = sum("executorch_call_delegate" not in c and "getitem" not in c for c in calls)
    return lowered.to_executorch().buffer, {"xnnpack_partitions": partitions, "portable_ops": left}


KIND = ExecuTorch()
