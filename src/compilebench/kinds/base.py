"""The protocol every way of running a model answers, one module each under kinds/ (the registry, kinds/__init__.py,
lists them): its name as --variant says it and its title as a report says it, what it needs installed (the extra
that installs it), what it refuses and why (device, dtype, a model that generates text, --interleave, the torch
on the machine), whether it leaves files on this host for later repeats (an executor that runs elsewhere cannot
take it), its version, and, where it is made ready by something else than torch.compile (an engine, an AOTInductor
package, a CUDA graph), how, in a worker: `prepare` returns the callable and the record it adds to its repeat (an
engine's core/engines.EnginePrepared: export, build, cold or warm, the precision it really computed in).

A kind's facts are read at import; its preparation imports torch and its engine only when called, in a worker."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Asked:
    """What a run asks of a kind, for its refusal. None where it is not known yet: the device before the machines
    are found (a device that is None is not refused), the torch of the machine before it was probed."""

    device: str | None = None
    dtype: str = "float32"
    generation: str | None = None  # a model of the run that generates text (the first), or None
    vision: str | None = None  # a model of the run that does not (the first), or None
    interleave: bool = False  # --interleave: its variants timed in one process
    torch: str | None = None  # the torch version the cases will run under
    capability: str | None = None  # the CUDA device's compute capability ("9.0"), where known


class Kind:
    """A way of running a model. Subclasses set the facts and override what they refuse; an engine (kinds/engine.py)
    also how it is prepared."""

    name: str = ""  # as --variant names it
    title: str = ""  # as a report titles it
    packages: tuple[str, ...] = ()  # the modules it imports
    distributions: tuple[str, ...] = ("torch",)  # the distributions its version is read from, the first installed
    extra: str | None = None  # pip install compilebench[EXTRA] installs its packages
    keeps_files = False  # leaves files on this host that a later repeat loads (a package, an exported model)
    engine = False  # run by another engine than torch: prepared by `prepare`, recorded as an EnginePrepared
    prepares = False  # made ready by its own `prepare` (an engine, AOTInductor, a CUDA graph); else by torch.compile
    code: tuple[str, ...] = ()  # how a user runs the model this way, as lines of Python (tune prints them)
    backends: dict[str, str] = {}  # torch.compile backends it ships (`--backend NAME`): the module registering each
    # What its packages send off this machine unless told not to (no_telemetry): optional modules that send usage
    # data, kept from importing, and the variables that turn it off, set before its library loads
    phones_home: tuple[str, ...] = ()
    telemetry_off: dict[str, str] = {}

    def refusal(self, asked: Asked) -> str | None:
        """Why it cannot run what is asked, in one line; None where it can."""
        return None

    def missing(self) -> str | None:
        """Why it cannot be used here (a package is not installed), with the extra to install; None where it can."""
        for module in self.packages:
            if importlib.util.find_spec(module) is None:
                return (f"--variant {self.name} needs {module}, which is not installed: pip install "
                        f"compilebench[{self.extra}]")
        return None

    def no_telemetry(self) -> None:
        """Before its packages are imported in this process: each module of `phones_home` made unimportable, so that
        its package takes the path it has for it missing, and `telemetry_off` set where the user has not set it
        (nothing sent, no id written to the user's home; the publish issue's rule, for a run as for a report)."""
        for module in self.phones_home:
            sys.modules.setdefault(module, None)  # `import module` now raises ImportError
        for name, value in self.telemetry_off.items():
            os.environ.setdefault(name, value)

    def version(self) -> str | None:
        for dist in self.distributions:
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        return None

    def prepare(self, model, inputs: dict, folder: str, case, enter=lambda phase: None):
        """(the callable to time, what preparing it recorded) where `prepares`: an engine's EnginePrepared, an
        AOTInductor package's build and load, a CUDA graph's nothing. Eager and torch.compile's modes are applied
        by the worker's compiler (measure/compiler.py), which every timed unit shares (a forward pass, generate(),
        serving shapes)."""
        raise TypeError(f"--variant {self.name} is applied by the worker's compiler, not prepared by its kind")

    def __repr__(self) -> str:
        return f"<kind {self.name}>"
