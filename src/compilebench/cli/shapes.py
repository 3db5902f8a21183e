"""`compilebench shapes`: a model serving a sequence of input shapes, under eager and each compile setting
compared (--dynamic, --pad-to), as `run` measures a case (the same results file, resumable, reported); then the
shapes tables: compiles and why, steady latency per shape, and the time to serve --requests of the --mix."""

from __future__ import annotations

from compilebench.cli import run as runcmd
from compilebench.core import settings, spec as specmod
from compilebench.report import markdown, shapes
from compilebench.report.view import View


def cmd_shapes(args) -> int:
    settings.integer("--requests", args.requests, 1)
    spec = runcmd.run_spec(args, shapes=True, variants=specmod.shape_variants(args.mode))
    return runcmd.execute(args, spec, _tables, lambda prepared: prepared.check_mix(args.mix))


def _tables(view: View) -> str:
    return markdown.tables(shapes.tables(view))
