"""`compilebench shapes`: a model serving a sequence of input shapes, under eager and each compile setting
compared (--dynamic, --pad-to), as `run` measures a case (the same results file, resumable, reported); then the
shapes tables: compiles and why, steady latency per shape, and the time to serve --requests of the --mix."""

from __future__ import annotations

from compilebench.cli import groups, run as runcmd
from compilebench.core import settings, spec as specmod, traffic, variant
from compilebench.report import markdown, shapes
from compilebench.report.view import View


def cmd_shapes(args) -> int:
    settings.integer("--requests", args.requests, 1)
    spec = runcmd.run_spec(args, shapes=True, variants=specmod.shape_variants(args.mode))
    return runcmd.execute(args, spec, _tables, lambda prepared: prepared.check_mix(args.mix))


def _tables(view: View) -> str:
    return markdown.tables(shapes.tables(view))


def add_parser(sub):
    """`compilebench shapes`: what it serves and the settings it compares; how to time, where and the results as
    `run` takes them."""
    shp = sub.add_parser("shapes", help="serve a sequence of input shapes: recompiles, dynamic-shape settings and the "
                                        "time to serve a mix of requests")
    g = shp.add_argument_group("what it serves")
    g.add_argument("--model", nargs="+", action="extend", dest="models", required=True, metavar="NAME",
                   help="zoo short names (`compilebench models`), hub ids or local checkpoint directories")
    g.add_argument("--batch-size", nargs="+", action="extend", type=int, default=None, dest="batch_sizes", metavar="N",
                   help="batch sizes served, in this order (default: 1)")
    g.add_argument("--image-size", nargs="+", action="extend", default=[], dest="image_sizes", metavar="WxH",
                   help="vision: the photo resized to each size before the processor, so models that keep the "
                        "aspect ratio (DETR's) see other shapes: 800x600 640x640 ...; text-to-image: the size of "
                        "each image made")
    g.add_argument("--resolution", nargs="+", action="extend", dest="image_sizes", type=_square, metavar="N|WxH",
                   help="text-to-image: the images' sizes, N for NxN: 512 768 1024 1024x576 (as --image-size)")
    g.add_argument("--lora", nargs="+", action="extend", type=int, default=[], dest="lora_ranks", metavar="RANK",
                   help="text-to-image: LoRA adapters (random, of these ranks, on the denoiser's attention), each "
                        "swapped in before the shapes it serves, in this order: the recompiles each swap causes, and "
                        "its time")
    g.add_argument("--lora-hotswap", action="store_true",
                   help="also: the first --dynamic setting with the adapters hot-swapped in place (diffusers' "
                        "enable_lora_hotswap), which should compile nothing on a swap")
    g.add_argument("--regional", action="store_true",
                   help="also: the first --dynamic setting (not mark) with each repeated block compiled alone (a "
                        "pipeline's denoiser: diffusers' compile_repeated_blocks)")
    g.add_argument("--prompt-len", nargs="+", action="extend", type=int, default=[], dest="prompt_lens", metavar="L",
                   help="text generation: prompt lengths served, in this order (default: the model's)")
    groups.task(g)
    groups.inputs_and_weights(g)
    g = shp.add_argument_group("settings compared (each beside eager)")
    g.add_argument("--dynamic", nargs="+", action="extend", default=None, dest="dynamic_settings", metavar="SETTING",
                   help=f"{', '.join(traffic.DYNAMIC_SETTINGS)}: torch's automatic dynamic shapes, dynamic=True, "
                        "dynamic=False (a graph per shape), mark_dynamic on the batch (text: sequence; text-to-image: "
                        "the latents' height and width) dimension before each first call "
                        f"(default: {' '.join(traffic.DEFAULT_DYNAMIC)})")
    g.add_argument("--pad-to", nargs="+", action="extend", type=int, default=[], metavar="SIZE",
                   help="also: each input padded up to the smallest of these bucket sizes (batch, or prompt length), "
                        "compiled with dynamic=False, its outputs sliced back")
    groups.mix(g)
    g.add_argument("--mode", default="default",
                   help=f"the compile mode of every compiled setting: {', '.join(variant.MODES)} (default: default; "
                        "reduce-overhead records a CUDA graph per shape)")
    groups.compile_flags(g, dynamic=False)
    groups.compile_cache(g)
    groups.model_settings(shp)
    groups.how_to_time(shp)
    groups.where_to_run(shp)
    groups.where_results_go(shp)
    return shp


def _square(text: str) -> str:
    """--resolution N is an NxN image; WxH as it is (traffic.parse_image_size checks both)."""
    return f"{text}x{text}" if text.isdigit() else text
