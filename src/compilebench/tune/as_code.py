"""A configuration as the lines a user pastes: a model prepared and compiled (or exported, or run by an engine)
that way, a pipeline's denoiser and decoder as diffusers' docs compile them, and a pick served under a dynamic-shape
setting. Reads a configuration's variant and settings; never the search."""

from __future__ import annotations

from compilebench import kinds
from compilebench.core.variant import Variant


def config_code(config, part: str | None = None) -> str:
    """The ready-to-paste lines that prepare and compile a model this way; `part`: a pipeline's denoiser (its
    attribute: unet, transformer), which is what is compiled and quantized of the pipeline `pipe`."""
    if part:
        return _pipeline_code(config, part)
    lines, settings, v = [], config.settings, config.variant
    if settings.dtype != "float32":
        lines.append(f"model = model.to(torch.{settings.dtype})  # and its floating-point inputs")
    if settings.quantize != "none":
        lines += kinds.quantization(settings.quantize).code
    if settings.channels_last:
        lines.append("model = model.to(memory_format=torch.channels_last)  # and 4-D inputs")
    if v.engine:
        return "\n".join([*lines, *kinds.of(v).code])
    if v.ahead_of_time:
        configs = f", inductor_configs={dict(v.options)!r}" if v.options else ""
        return "\n".join([*lines, "program = torch.export.export(model, args=(), kwargs=inputs)",
                          f"path = torch._inductor.aoti_compile_and_package(program{configs})  # once, ahead of time",
                          "compiled = torch._inductor.aoti_load_package(path)  # in each process that serves"])
    if v.scope == "regions":
        lines += ["for block in model.modules():  # each repeated layer: identical ones share a graph",
                  "    if type(block).__name__ in model._no_split_modules:",
                  f"        block.compile({', '.join(_args(v))})",
                  "compiled = model"]
        return "\n".join(lines)
    lines.append(f"compiled = torch.compile({', '.join(['model', *_args(v)])})")
    return "\n".join(lines)


def _pipeline_code(config, part: str) -> str:
    """A pipeline compiled as diffusers' docs do it: its denoiser whole, or its repeated blocks; its decoder."""
    lines, args, denoiser = [], _args(config.variant), f"pipe.{part}"
    if config.settings.dtype != "float32":
        lines.append(f"pipe = pipe.to(torch.{config.settings.dtype})")
    if config.settings.quantize != "none":
        quantized = kinds.quantization(config.settings.quantize).code
        lines += [line.replace("(model,", f"({denoiser},") for line in quantized]
    if config.variant.scope == "regions":
        lines.append(f"{denoiser}.compile_repeated_blocks({', '.join(args)})  # each repeated block: one graph")
    else:
        lines.append(f"{denoiser} = torch.compile({', '.join([denoiser, *args])})")
    if config.variant.decoder:
        lines.append(f"pipe.vae.decode = torch.compile({', '.join(['pipe.vae.decode', *args])})")
    return "\n".join(lines)


def _args(v: Variant) -> list[str]:
    """torch.compile's arguments other than the model."""
    args = []
    if v.options:
        from compilebench.measure.compiler import compile_kwargs

        merged = compile_kwargs(Variant(v.mode, options=v.options))["options"]
        args.append(f"options={merged!r}")
    elif v.compile_mode:
        args.append(f"mode={v.mode!r}")
    if v.fullgraph:
        args.append("fullgraph=True")
    if v.dynamic is not None:
        args.append(f"dynamic={v.dynamic}")
    return args


def shapes_code(config, variant: Variant, part: str | None = None) -> str:
    """The code of a configuration served with one dynamic-shape setting (report/shapes.setting_name's)."""
    if variant.pad_to:
        buckets = ", ".join(map(str, variant.pad_to))
        return "\n".join([config.compiled(dynamic=False).code(part),
                          f"# pad each batch up to the smallest of ({buckets}) items (repeat its last item), call "
                          "compiled, then keep each output's first rows"])
    if variant.mark_dynamic:
        marked = (f"# before each call of {part}: torch._dynamo.mark_dynamic on its inputs' dimensions that follow "
                  "the image's size" if part else
                  "# before each batch's first call: torch._dynamo.mark_dynamic(tensor, 0) for every input")
        return "\n".join([config.compiled(dynamic=None).code(part), marked])
    return config.compiled(dynamic=variant.dynamic).code(part)
