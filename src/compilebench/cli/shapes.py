"""`compilebench shapes`: a model serving a sequence of input shapes, under eager and each compile setting
compared (--dynamic, --pad-to), as `run` measures a case (the same results file, resumable, reported); then the
shapes tables: compiles and why, steady latency per shape, and the time to serve --requests of the --mix."""

from __future__ import annotations

import dataclasses

from compilebench.cli import run as runcmd
from compilebench.core import settings, spec as specmod, traffic
from compilebench.report import markdown, shapes
from compilebench.report.view import View

# The `run` options this command does not take, at the values run_spec reads.
RUN_DEFAULTS = dict(suite=None, variant=None, dynamic=None, compile_scope=None, region=[], compile_cache="cold",
                    profile=False, compile_trace=False, prompt_len=None)


def cmd_shapes(args) -> int:
    settings.integer("--requests", args.requests, 1)
    spec = shapes_spec(args)
    return runcmd.execute(args, spec, _tables, lambda prepared: prepared.check_mix(args.mix))


def shapes_spec(args) -> specmod.RunSpec:
    """run's spec of the same options, serving the shapes: warm-up 2 calls per shape unless given."""
    spec = runcmd.run_spec(args)
    timing = spec.timing if args.warmup is not None else dataclasses.replace(spec.timing, warmup=traffic.DEFAULT_SHAPE_WARMUP)
    return dataclasses.replace(
        spec, shapes=True, timing=timing, image_sizes=tuple(traffic.parse_image_size(t) for t in args.image_size),
        prompt_lens=tuple(args.prompt_lens), dynamic_settings=tuple(dict.fromkeys(args.dynamic_settings or
                                                                                  traffic.DEFAULT_DYNAMIC)),
        pad_to=tuple(sorted(set(args.pad_to))))


def _tables(view: View) -> str:
    return markdown.tables(shapes.tables(view))
