"""Lines other libraries print in every process that say nothing of a case, dropped where they are logged (from
the package's import on, so in the driver, launchers and workers alike). torchao is imported by transformers
itself wherever it is installed (its quantizers), by every process that builds a model: on a torch built
without CUDA it logs each of its CUDA kernels' libraries failing to load, and torch logs a deprecation of its
Enum registrations. On a CUDA build a library that fails to load is still said: there it may matter."""

from __future__ import annotations

import logging
import sys


def _keep(record: logging.LogRecord) -> bool:
    said = record.getMessage()
    if "is an Enum subclass and is now natively supported" in said:
        return False
    torch = sys.modules.get("torch")
    cpu_build = torch is not None and getattr(getattr(torch, "version", None), "cuda", "") is None
    return not (cpu_build and said.startswith("Failed to load") and "torchao" in said)


def install() -> None:
    for name in ("torchao", "torch.utils._pytree"):
        log = logging.getLogger(name)
        if _keep not in log.filters:
            log.addFilter(_keep)
