"""compilebench: what torch.compile does for a Hugging Face model, on this machine, with numbers you can trust.

The Python API (benchmark, shapes, fastest, load, Results) is imported on first use, so the command line starts
fast."""

__version__ = "0.2.0"

from compilebench.core import quiet as _quiet  # noqa: E402 - other libraries' noise, dropped in every process

_quiet.install()


def __getattr__(name: str):
    if name in ("benchmark", "shapes", "fastest", "load", "Results", "ShapesResults", "Tuned"):
        from compilebench import api

        return getattr(api, name)
    raise AttributeError(f"module 'compilebench' has no attribute {name!r}")
