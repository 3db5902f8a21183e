"""AOTInductor (`--variant aot-inductor`): the model exported, packaged ahead of time and loaded by each worker
(measure/aot_inductor.py builds and loads it). Its package stays on this host for later repeats."""

from __future__ import annotations

from compilebench.core.environment import is_cuda
from compilebench.core.variant import AOT_INDUCTOR
from compilebench.kinds.base import Asked, Kind

# Loading a CUDA package died of SIGSEGV under these torch releases in every process benchmarks/aot_load.py tried
# (an H200, 2026-11-27, torch 2.11.0+cu130: where it was built, in a fresh interpreter, forked from a launcher-like
# process, and forked then built; on an H100 and another H200 before, in the product's first repeat): there is no
# path that works, so a run refuses it there. On a CPU it loads and runs.
CRASHING_ON_CUDA = ((2, 11, 0),)


class AotInductor(Kind):
    name, title = AOT_INDUCTOR, "AOTInductor"
    keeps_files = True  # its package, which a later repeat loads

    def refusal(self, asked: Asked) -> str | None:
        from packaging.version import InvalidVersion, Version

        if not is_cuda(asked.device) or not asked.torch:
            return None
        try:
            release = Version(asked.torch).release[:3]
        except InvalidVersion:
            return None
        if release in CRASHING_ON_CUDA:
            return (f"--variant aot-inductor on CUDA under torch {asked.torch}: loading its package dies of SIGSEGV "
                    "in every process (built there, a fresh interpreter, forked: benchmarks/aot_load.py on an H200, "
                    "2026-11-27), so no number could come of it; measure it on a CPU (--device cpu), or under "
                    "another torch (--env), where benchmarks/aot_load.py loads it")
        return None


KIND = AotInductor()
