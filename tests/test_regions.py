"""--compile-scope regions: each repeated block compiled alone, identical blocks sharing one graph, the recompile
limit raised to the number of blocks and recorded when it is hit anyway."""

import pytest
import torch
from tiny_factories import make_inputs, make_stacked, make_widening

import compilebench
from compilebench.core.case import Case, key_of
from compilebench.core.repeat import Repeat
from compilebench.core.spec import RunSpec
from compilebench.core.variant import Variant
from compilebench.core.vocab import RECOMPILE_LIMIT
from compilebench.measure import compiler, recording
from compilebench.report import why

FAST = dict(iters=5, warmup=1, backend="eager", repeats=1)


def _compiled(results):
    (r,) = [r for r in results.view.results if r.case.variant.compiled]
    return r


def test_identical_blocks_share_one_graph_and_the_blocks_are_recorded(tmp_path):
    results = compilebench.benchmark(make_stacked(), inputs=make_inputs, compile_scope="regions",
                                     db=str(tmp_path / "r.db"), **FAST)
    r = _compiled(results)
    assert r.status == "ok" and r.case.variant.label == "compile (regions, backend=eager)"
    assert r.regions == {"Block": 6} and r.graphs == 1  # the stem stays eager; six blocks, one graph
    assert r.max_abs_err is not None  # checked against eager like any compiled variant
    row = results.to_pandas().set_index("variant").loc["regional"]  # the default mode on its blocks: a variant of its own
    assert row.regions == "Block=6" and row.recompile_limit_hits == 0
    (compiled,) = why.compiler_table(results.view).records()
    assert compiled["blocks compiled (regions)"] == "6 Block" and compiled["graphs"] == "1"


def test_blocks_of_as_many_shapes_each_compile_past_dynamos_default_limit(tmp_path):
    """Ten blocks of ten widths need ten graphs: more than dynamo's default limit of 8, which would have run two
    of them eagerly without a word."""
    results = compilebench.benchmark(make_widening(), inputs=make_inputs, compile_scope="regions", regions=["Block"],
                                     db=str(tmp_path / "r.db"), **FAST)
    r = _compiled(results)
    assert r.regions == {"Block": 10} and r.graphs == 10 and r.recompile_limit_hits == 0
    assert RECOMPILE_LIMIT.name not in r.flags
    assert r.case.variant.label == "compile (regions Block, backend=eager)"


def test_interleaved_with_eager_the_blocks_are_compiled_only_during_the_regions_calls():
    model = make_stacked()
    regions = compiler.apply(model, Variant("default", backend="eager", scope="regions"), shared=True)
    x = make_inputs(2)
    compiler.reset_dynamo()
    with torch.inference_mode():
        model(**x)
        assert compiler.graph_count() == 0  # the model itself: eager
        regions(**x)
        assert compiler.graph_count() == 1
    assert all(b.__dict__["_compiled_call_impl"] is None for b in regions.blocks)


def test_a_block_class_the_model_lacks_is_an_error_naming_the_classes_it_repeats():
    with pytest.raises(ValueError, match=r"Stacked has no block of class Layer; classes it repeats: 6 Block"):
        compiler.apply(make_stacked(), Variant("default", backend="eager", scope="regions", regions=("Layer",)))


def test_the_recompile_limit_hit_is_counted_and_flags_the_result():
    compiler.reset_dynamo()
    f = torch.compile(lambda x: x.sin() + 1, backend="eager", dynamic=False)
    for n in range(1, 12):  # eleven shapes, static: one graph each until the limit (8)
        f(torch.ones(n))
    stats = compiler.compile_stats()
    assert stats.limit_hits >= 1 and stats.graphs == 8
    rep = Repeat()
    case = Case("m", 1, Variant("default"))
    recording.record_compile(rep, stats, 0, recording.invariants.CudaGraphs(), case)
    assert rep.recompile_limit_hits == stats.limit_hits and RECOMPILE_LIMIT.name in rep.flags
    compiler.reset_dynamo()


def test_the_scope_is_part_of_the_case_and_an_older_key_still_matches():
    plain, regions = Variant("default"), Variant("default", scope="regions")
    case = Case("m", 1, plain)
    old = case.to_dict()
    old["variant"] = {k: v for k, v in old["variant"].items() if k not in ("scope", "regions")}  # as 0.3 wrote it
    assert key_of(old) == case.key()
    assert Case("m", 1, regions).key() != case.key()
    assert Variant("eager", scope="regions", regions=("X",)) == Variant("eager")  # one eager baseline


@pytest.mark.parametrize("args, message", [
    (("--compile-scope", "layers"), "unknown compile scope 'layers'"),
    (("--compile-scope", "model", "--region", "Block"), "--region names the blocks --compile-scope regions compiles"),
])
def test_a_bad_scope_is_one_line_and_exit_2(main_here, args, message):
    code, _, err = main_here("run", "--model", "resnet-50", *args)
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_region_alone_implies_the_regions_scope():
    from compilebench import cli
    from compilebench.cli import options, run as runcmd

    args = options.parser(cli._commands()).parse_args(
        ["run", "--model", "resnet-50", "--region", "ResNetConvLayer"])
    spec = runcmd.run_spec(args)
    assert spec.compile.scope == "regions" and spec.compile.regions == ("ResNetConvLayer",)
    assert {c.variant.scope for c in spec.cases() if c.variant.compiled} == {"regions"}
    assert RunSpec(models=("m",)).compile.scope == "model"
