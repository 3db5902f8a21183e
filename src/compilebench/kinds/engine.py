"""An engine beside torch.compile (ONNX Runtime, OpenVINO, TensorRT, ExecuTorch): the rules every engine shares and
the preparation they share. It runs the model's forward pass (not generate()), in the dtypes it computes in, on
the devices it has, in a process of its own (an export that fails would fail the variants sharing its process);
each is exported once per case (by the first repeat that finds no file: its export is the engine's cold cost) and
built in every repeat, cold or from what the first left (warm). Each is called with the case's inputs by name and
returns the eager output's tensors by the same names, so its output is checked against eager's as a compiled
one is. An export or build that fails raises Unsupported: the case's status says so with the engine's reason."""

from __future__ import annotations

from compilebench.core.engines import EnginePrepared
from compilebench.core.environment import is_cuda
from compilebench.kinds import exported
from compilebench.kinds.base import Asked, Kind

EXPORTING, CONVERTING, BUILDING = "exporting", "converting", "building the engine"


class Engine(Kind):
    """An engine: subclasses set the facts (name, title, packages, extra, dtypes, cuda_only, code) and `make`."""

    engine = prepares = True
    keeps_files = True  # the exported model, the engine's cache
    dtypes: tuple[str, ...] = ("float32",)  # what it computes a case in (in another, it would not run eager's math)
    cuda_only = False
    cpu_hint = "measure another engine on a CPU"  # what to do instead, said where it needs CUDA

    def refusal(self, asked: Asked) -> str | None:
        if self.cuda_only and asked.device is not None and not is_cuda(asked.device):
            return (f"--variant {self.name} needs a CUDA device (this run's is {asked.device}); {self.cpu_hint}")
        if asked.dtype not in self.dtypes:
            return (f"--variant {self.name} computes in {', '.join(self.dtypes)}; --dtype {asked.dtype} is not one of "
                    "them (it would run in another precision than eager's)")
        if asked.generation:
            return (f"--variant {self.name} runs the model's forward pass; {asked.generation} generates text "
                    "(generate() needs torch: compile it, with an engine's own --backend where it has one, or "
                    "measure a vision model)")
        if asked.interleave:
            return (f"--interleave times the variants of a model in one process; --variant {self.name} exports the "
                    "model there, and an export that fails would fail its partners: leave out --interleave")
        return None

    def prepare(self, model, inputs: dict, folder: str, case, enter=lambda phase: None):
        """The engine's callable (inputs by name -> eager's outputs by name) and its EnginePrepared: exported here
        where no earlier repeat left the exported model (one exported from other weights than this process's is
        refused, as an AOTInductor package is), then built cold, or warm from the engine's cache."""
        import torch

        self.no_telemetry()
        prepared = EnginePrepared(engine=self.name, version=self.version(), threads=torch.get_num_threads())
        names = exported.output_names(model, inputs)
        with torch.inference_mode(False), torch.no_grad():
            exported.as_normal_tensors(model)
            fresh = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
            call = self.make(model, fresh, names, folder, case, prepared, enter)
        return call, prepared

    def make(self, model, inputs: dict, names: list[str], folder: str, case, prepared: EnginePrepared, enter):
        """Export (where `exported.kept` says this process must), build, and return the callable; fill `prepared`."""
        raise NotImplementedError
