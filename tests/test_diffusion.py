"""Text-to-image pipelines (issue 64): built offline from their checkpoints' configs, timed one image end to end,
their denoiser compiled (whole, or its repeated blocks) and quantized while the loop and decoder run as they are,
their images checked against eager's, their resolutions served by `compilebench shapes`."""

import dataclasses
import functools
import sys

import pytest
import torch

import compilebench
from compilebench import kinds, zoo
from compilebench.core import traffic
from compilebench.core.errors import UserError
from compilebench.core.job import DEFAULT_IMAGE_ITERS, DEFAULT_IMAGE_WARMUP, TimingPolicy
from compilebench.core.spec import asked
from compilebench.core.variant import Variant
from compilebench.measure import compiler, correctness, forward, quantization
from compilebench.measure.worker import run_case
from compilebench.report import diffusion
from compilebench.zoo.pipelines import PIPELINES, TASK

FAST = dict(iters=3, warmup=1, backend="eager", repeats=1, device="cpu", model_size="tiny", steps=2)


def _tiny(name, steps=2):
    entry = zoo.get(name)
    pipeline = entry.build("random", "tiny")
    pipeline.steps = steps
    return entry, pipeline, entry.inputs(None, 1, "random", "tiny")


@pytest.mark.parametrize("name, billions, steps", [("sd-1.5", 0.943, 50), ("sdxl-turbo", 2.651, 1),
                                                   ("flux-schnell", 11.975, 4)])
def test_each_pipeline_is_its_checkpoints_architecture_at_full_size(name, billions, steps):
    entry = zoo.get(name)
    assert entry.task == TASK and entry.kind == "image" and entry.default_steps == steps
    assert "(prompt embeddings)" in entry.label  # no text encoder offline: the report says what stands for it
    with torch.device("meta"):  # no memory, no weights: the denoiser's and the decoder's parameters
        params = sum(p.numel() for p in entry.build("random", "full").parameters())
    assert params / 1e9 == pytest.approx(billions, abs=0.001)


@pytest.mark.parametrize("entry", [p for p in PIPELINES if p.kind == "image"], ids=lambda e: e.name)
def test_a_tiny_pipeline_makes_the_same_image_on_every_call(entry):
    _, pipeline, inputs = _tiny(entry.name)
    first, again = pipeline(**inputs), pipeline(**inputs)
    assert first["image"].shape == (1, 3, entry.tiny_resolution, entry.tiny_resolution)
    assert 0 <= first["image"].min() and first["image"].max() <= 1 and first["image"].std() > 0
    assert torch.equal(first["image"], again["image"]) and torch.equal(first["latents"], again["latents"])


@pytest.mark.parametrize("name, sample", [("sd-1.5", (2, 4, 8, 8)), ("sdxl-turbo", (1, 4, 8, 8)),
                                          ("flux-schnell", (1, 16, 16))])
def test_a_denoiser_step_alone_takes_what_its_pipeline_hands_it_at_the_first_step(name, sample):
    """sd-1.5 guides each image with a negative prompt: its denoiser sees the batch twice; Flux's, latents packed."""
    step = zoo.get(f"{name}-step")
    assert step.kind == "vision" and step.default_steps is None and step.task == TASK
    assert step.label.endswith(", one step (prompt embeddings)")
    model, inputs = step.build("random", "tiny"), step.inputs(None, 1, "random", "tiny")
    out = model(**inputs)
    assert tuple(out["sample"].shape) == sample and len(model.caught) == 1
    again = model(**inputs)
    assert torch.equal(out["sample"], again["sample"]) and len(model.caught) == 1  # caught once a shape
    model(**step.sized_inputs(None, (32, 32), 1, "random", "tiny"))
    assert len(model.caught) == 2
    compiler.reset_dynamo()
    fn = compiler.apply(model, Variant("default", backend="eager"), shared=True)
    assert correctness.output_error(correctness.snapshot(out), correctness.snapshot(fn(**inputs)))[1] < 1e-5
    assert compiler.graph_count() >= 1  # the compiled denoiser was called, not the eager one


def test_an_image_size_is_the_image_made_not_a_photo_resized():
    entry = zoo.get("sd-1.5")
    inputs = entry.sized_inputs(None, (24, 16), 2, "random", "tiny")  # width 24, height 16
    assert inputs["latents"].shape == (2, 4, 8, 12) and inputs["prompt_embeds"].shape[0] == 2
    assert inputs["negative_prompt_embeds"].shape == inputs["prompt_embeds"].shape  # guidance: both prompts
    with pytest.raises(UserError, match=r"--resolution 18x18: flux-schnell makes images whose sides are multiples "
                                        r"of 4 \(its tiny config\)"):  # Flux: latents in 2x2 patches
        zoo.get("flux-schnell").sized_inputs(None, (18, 18), 1, "random", "tiny")


def test_a_resolution_the_pipeline_cannot_make_is_refused_before_anything_runs(tmp_path, capsys):
    from compilebench.cli import main

    db = tmp_path / "r.db"
    code = main(["shapes", "--model", "sd-1.5", "--resolution", "512", "500x512", "--dynamic", "false",
                 "--db", str(db)])
    assert code == 2 and not db.exists()
    assert "--resolution 500x512: sd-1.5 makes images whose sides are multiples of 8" in capsys.readouterr().err


def test_the_denoiser_is_compiled_for_each_call_alone_and_the_pipeline_left_as_it_was():
    _, pipeline, inputs = _tiny("sd-1.5")
    expected = correctness.snapshot(pipeline(**inputs))
    compiler.reset_dynamo()
    fn = compiler.apply(pipeline, Variant("default", backend="eager"), shared=True)
    with torch.inference_mode():
        pipeline(**inputs)
        assert compiler.graph_count() == 0  # the pipeline itself, shared with eager: untouched
        out = correctness.snapshot(fn(**inputs))
        assert compiler.graph_count() >= 1
    assert pipeline.pipe.unet is pipeline.denoiser  # swapped back after the call
    assert correctness.output_error(expected, out)[1] < 1e-5 and compiler.regions_of(fn) == {}


@pytest.mark.slow  # a real compile, export or import: seconds on 2 cores
@pytest.mark.parametrize("name, decoder", [("sd-1.5", True), ("flux-schnell", False)])
def test_marked_dynamic_a_pipeline_makes_every_resolution_with_its_first_graph(name, decoder):
    """mark_dynamic on the dimensions of the denoiser's inputs that follow the image's size (a UNet's latents'
    height and width, Flux's patches and their ids; a compiled decoder's latents), marked on each step's new
    inputs: no size specialized on a new resolution, where dynamic=False compiles one graph per resolution."""
    entry, pipeline, _ = _tiny(name)
    sizes = [(32, 32), (48, 48), (64, 48)]
    inputs = [entry.sized_inputs(None, size, 1, "random", "tiny") for size in sizes]
    expected = [correctness.snapshot(pipeline(**kw)) for kw in inputs]
    graphs = {}
    # dynamic=False is the contrast: its first and last sizes show a graph per resolution (its third one took sd-1.5's
    # case from 35 s to 51 s on 2026-12-02)
    for setting, made in ((dict(mark_dynamic=True, decoder=decoder), (0, 1, 2)), (dict(dynamic=False), (0, 2))):
        compiler.reset_dynamo()
        fn = compiler.apply(pipeline, Variant("default", backend="eager", **setting), shared=True)
        outs = [correctness.snapshot(fn(**inputs[i])) for i in made]
        graphs[next(iter(setting))] = (compiler.graph_count(), compiler.compile_stats().recompile_reasons)
        assert all(correctness.output_error(expected[i], o)[1] < 1e-5 for i, o in zip(made, outs))
    # a guard the decoder's own code makes on its size (diffusers' upsampler checks its numel) may still recompile
    # it, as dynamo says: never a size specialized
    assert not any("size mismatch" in r for r in graphs["mark_dynamic"][1])
    assert graphs["mark_dynamic"][0] == 1 or decoder
    assert graphs["dynamic"][0] == 2 and all("size mismatch" in r for r in graphs["dynamic"][1])


def test_the_decoder_is_compiled_beside_the_denoiser_when_asked_and_put_back_after():
    _, pipeline, inputs = _tiny("sd-1.5")
    expected = correctness.snapshot(pipeline(**inputs))
    compiled = {}
    for decoder in (False, True):
        compiler.reset_dynamo()
        fn = compiler.apply(pipeline, Variant("default", backend="eager", decoder=decoder), shared=True)
        out = correctness.snapshot(fn(**inputs))
        compiled[decoder] = compiler.graph_count()
        assert correctness.output_error(expected, out)[1] < 1e-5
        assert "decode" not in pipeline.vae.__dict__ and pipeline.pipe.unet is pipeline.denoiser  # put back
    assert compiled[True] > compiled[False] >= 1  # the decoder's graphs beside the denoiser's
    v = Variant("default", decoder=True)
    assert v.label == "compile (decoder compiled)" and Variant.from_dict(v.to_dict()) == v
    assert not Variant("eager", decoder=True).decoder and Variant().to_dict()["decoder"] is False


def test_compile_decoder_is_a_setting_of_the_run_and_refused_for_a_model_without_one(tmp_path, capsys):
    from compilebench.cli import main

    spec = asked(models=("sd-1.5",), variants=("eager", "default"), compile_decoder=True)
    eager, compiled = spec.cases({"sd-1.5": zoo.get("sd-1.5")})
    assert not eager.variant.decoder and compiled.variant.decoder
    assert "decoder" not in asked(models=("sd-1.5",)).cases({"sd-1.5": zoo.get("sd-1.5")})[1].key()  # keys as before
    db = tmp_path / "r.db"
    assert main(["run", "--model", "vit", "--compile-decoder", "--db", str(db)]) == 2 and not db.exists()
    assert "--compile-decoder compiles a text-to-image pipeline's decoder; vit has none" in capsys.readouterr().err


def test_regional_compiles_the_denoisers_repeated_blocks_as_diffusers_declares_them():
    _, pipeline, inputs = _tiny("flux-schnell")
    compiler.reset_dynamo()
    fn = compiler.apply(pipeline, Variant("regional", backend="eager"), shared=True)
    fn(**inputs)
    assert compiler.regions_of(fn) == {"FluxTransformerBlock": 1, "FluxSingleTransformerBlock": 1}
    blocks = fn.compiled.blocks
    assert all(b.__dict__["_compiled_call_impl"] is None for b in blocks)  # installed only during the call


def test_regional_is_a_variant_of_its_own_beside_the_whole_models_compile():
    v = Variant.named("regional", Variant("default", backend="eager"))
    assert (v.mode, v.scope, v.name, v.label) == ("default", "regions", "regional", "compile (regions, backend=eager)")
    assert kinds.of(v).name == "regional" and Variant.from_dict(v.to_dict()) == v
    spec = asked(models=("sd-1.5",), variants=("eager", "default", "regional"))
    cases = spec.cases({"sd-1.5": zoo.get("sd-1.5")})
    assert [c.variant.name for c in cases] == ["eager", "default", "regional"]
    assert len({c.key() for c in cases}) == 3


def test_a_pipelines_cases_make_their_images_in_its_steps_timed_as_images():
    entry = zoo.get("sd-1.5")
    (case,) = asked(models=("sd-1.5",), variants=("eager",)).cases({"sd-1.5": entry})
    assert case.steps == 50 and case.kind == "image" and case.timed_unit == "image"
    assert "50 steps" in case.words()
    (case,) = asked(models=("sd-1.5",), variants=("eager",), steps=4).cases({"sd-1.5": entry})
    assert case.steps == 4
    (vision,) = asked(models=("vit",), variants=("eager",), steps=4).cases({"vit": zoo.get("vit")})
    assert vision.steps is None and vision.timed_unit == "forward"  # a vision model makes no steps
    timing = TimingPolicy().resolve("image", "cpu")
    assert (timing.iters, timing.warmup) == (DEFAULT_IMAGE_ITERS, DEFAULT_IMAGE_WARMUP)
    (_, served) = asked(models=("sd-1.5",), shapes=True, image_sizes=("16x16", "32x32"),
                        dynamic_settings=("false",)).cases({"sd-1.5": entry})
    assert served.timed_unit == "serving image" and TimingPolicy().resolve("serving image", "cpu").iters == 5
    built = forward.build(entry, dataclasses.replace(case, model_size="tiny"))
    assert built.steps == 4  # the case's steps reach the pipeline


def test_a_shards_estimate_of_an_image_counts_its_steps():
    from compilebench.run import costs

    entries = {"sd-1.5": zoo.get("sd-1.5")}
    few, many = (asked(models=("sd-1.5",), variants=("eager",), steps=n, model_size="tiny", device="cpu")
                 for n in (2, 50))
    seconds = [next(iter(costs.estimated(s, s.cases(entries), entries).values())) for s in (few, many)]
    assert seconds[1] > seconds[0]


def test_steps_below_one_are_refused_in_one_line():
    with pytest.raises(UserError, match="--steps must be an integer >= 1, got 0"):
        compilebench.benchmark("sd-1.5", steps=0, **{k: v for k, v in FAST.items() if k != "steps"})


def test_quantization_quantizes_the_denoiser_alone():
    _, pipeline, _ = _tiny("sd-1.5")
    vae_linears = quantization.linear_layers(pipeline.vae)
    before = {n: type(m.weight) for n, m in pipeline.vae.named_modules() if isinstance(m, torch.nn.Linear)}
    quantization.apply(pipeline, "int8-weight-only")
    assert vae_linears and before == {n: type(m.weight) for n, m in pipeline.vae.named_modules()
                                      if isinstance(m, torch.nn.Linear)}
    assert any(type(m.weight) is not torch.nn.Parameter for m in pipeline.denoiser.modules()
               if isinstance(m, torch.nn.Linear))


def test_pretrained_weights_load_from_the_checkpoints_folders(tmp_path):
    entry, pipeline, inputs = _tiny("sdxl-turbo")
    pipeline.denoiser.save_pretrained(tmp_path / "unet")
    pipeline.vae.save_pretrained(tmp_path / "vae")
    pipeline.pipe.scheduler.save_pretrained(tmp_path / "scheduler")
    local = dataclasses.replace(entry, checkpoint=str(tmp_path))
    loaded = local.build("pretrained", "tiny")
    loaded.steps = pipeline.steps
    assert local.pretrained_from == str(tmp_path)
    assert all(torch.equal(a, b) for a, b in zip(loaded.denoiser.state_dict().values(),
                                                 pipeline.denoiser.state_dict().values()))
    torch.testing.assert_close(loaded(**inputs)["image"], pipeline(**inputs)["image"])  # its image, within rounding


def test_without_diffusers_a_pipeline_is_refused_with_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "diffusers", None)
    with pytest.raises(UserError, match=r"pip install compilebench\[diffusion\]"):
        zoo.get("sd-1.5").build("random", "tiny")


@pytest.mark.slow  # processes and pipelines end to end: tens of seconds on 2 cores
def test_a_pipeline_is_measured_end_to_end_eager_compiled_and_regional(tmp_path):
    results = compilebench.benchmark("sd-1.5", variants=["eager", "default", "regional"], db=str(tmp_path / "r.db"),
                                     **FAST)
    by = {r.case.variant.name: r for r in results.view.results}
    assert set(by) == {"eager", "default", "regional"} and all(r.status == "ok" for r in by.values())
    assert all(r.case.steps == 2 and len(r.repeats[0].samples_ms) == 3 for r in by.values())
    assert by["regional"].regions == {"BasicTransformerBlock": 4} and by["default"].regions == {}
    assert by["default"].max_rel_err is not None and by["default"].graphs >= 1  # checked against eager's image
    (table,) = diffusion.tables(results.view)  # the pipeline's own table: its steps, image ms and steps/s
    rows = {row[1]: dict(zip(table.header, row)) for row in table.rows}
    assert set(rows) == {"no compile", "compile (backend=eager)", "compile (regions, backend=eager)"}
    eager = rows["no compile"]
    assert eager["steps"] == "2" and float(eager["steps/s"]) == pytest.approx(2e3 / float(eager["image ms"]), rel=0.01)
    assert rows["compile (backend=eager)"]["vs eager"] and not eager["vs eager"]
    assert all(0 < r.decoder_share < 1 for r in by.values())  # the part of an image after its last step
    assert eager["decoder share"] == f"{by['eager'].decoder_share:.0%}"


def test_a_lora_adapter_is_part_of_a_shapes_token_and_words():
    s = traffic.Shape.parse("b1:16x16:r8")
    assert (s.batch, s.image, s.lora, s.token) == (1, (16, 16), 8, "b1:16x16:r8")
    assert s.words == "batch 1, 16x16, LoRA rank 8" and traffic.Shape.parse("b2:r4").lora == 4
    assert [x.token for x in traffic.shapes_of((1,), images=((16, 16),), loras=(4, 8))] == ["b1:16x16:r4", "b1:16x16:r8"]


def test_lora_is_refused_where_no_pipeline_serves_it_and_hotswap_needs_ranks():
    with pytest.raises(UserError, match="--lora: vit is not a text-to-image pipeline"):
        asked(models=("vit",), shapes=True, batch_sizes=(1, 2), lora_ranks=(4,)).cases({"vit": zoo.get("vit")})
    with pytest.raises(UserError, match="--lora-hotswap swaps LoRA adapters in place: name their ranks"):
        asked(models=("sd-1.5",), shapes=True, lora_hotswap=True)
    spec = asked(models=("sd-1.5",), shapes=True, lora_ranks=(4, 8), lora_hotswap=True, dynamic_settings=("false",))
    settings = spec.shape_settings()
    assert [(v.compiled, v.dynamic, v.lora_hotswap) for v in settings] == [(False, None, False), (True, False, False),
                                                                           (True, False, True)]
    assert "LoRA hot-swap" in settings[-1].label and settings[-1].to_dict() != settings[1].to_dict()


def _served(variant, ranks=(4, 8)):
    spec = asked(models=("sd-1.5",), shapes=True, lora_ranks=ranks, dynamic_settings=("false",), model_size="tiny",
                 steps=2, device="cpu")
    (shape_case, *_) = spec.cases({"sd-1.5": zoo.get("sd-1.5")})
    case = dataclasses.replace(shape_case, variant=variant)
    r = run_case(case, TimingPolicy(iters=2, warmup=1, min_iters=1, warmup_cap_s=0), isolation="inline")
    assert r.status == "ok", r.message
    return r.repeats[0].shapes.per_shape


@pytest.mark.slow  # processes and pipelines end to end: tens of seconds on 2 cores
def test_a_lora_swap_recompiles_unless_hotswap_is_prepared_and_its_time_is_kept():
    plain = _served(Variant("default", backend="eager", dynamic=False))
    assert plain["b1:r4"].compiles == 1 and plain["b1:r8"].compiles == 1  # a new adapter's rank: a new graph
    assert any("lora" in reason.lower() or "size mismatch" in reason for reason in plain["b1:r8"].recompile_reasons)
    hot = _served(Variant("default", backend="eager", dynamic=False, lora_hotswap=True))
    assert hot["b1:r4"].compiles == 1 and hot["b1:r8"].compiles == 0  # swapped in place: nothing to compile
    assert all(p.swap_s is not None and p.swap_s > 0 for p in (*plain.values(), *hot.values()))
    # back to rank 4 in the second pass: its graph was compiled before rank 8 was loaded beside it, and recompiles;
    # hot-swapped, nothing does
    assert plain["b1:r4"].second_compiles == 1 and plain["b1:r8"].second_compiles == 0
    assert all(p.second_compiles == 0 for p in hot.values())
    assert all(p.max_rel_err is not None and not p.problems
               for p in (*plain.values(), *hot.values()))  # each image checked against eager's with its adapter


def test_a_pipelines_random_weights_are_drawn_on_the_cases_device_itself():
    """Flux's 12B parameters drawn on a CPU take minutes: a GPU case draws them on the GPU (the meta device stands
    in for it here: nothing is drawn on the CPU and moved)."""
    (case,) = asked(models=("flux-schnell",), variants=("eager",), model_size="tiny").cases(
        {"flux-schnell": zoo.get("flux-schnell")})
    drawn = []
    entry = zoo.get("flux-schnell")

    class Watched(type(entry)):
        def build(self, weights, size):
            drawn.append(torch.get_default_device().type)
            return super().build(weights, size)

    watched = Watched(**{f.name: getattr(entry, f.name) for f in dataclasses.fields(entry)})
    model = forward.build(watched, dataclasses.replace(case, device="meta"))
    assert drawn == ["meta"] and all(p.is_meta for p in model.parameters())
    forward.build(watched, dataclasses.replace(case, device="cpu"))
    assert drawn == ["meta", "cpu"]


def test_after_eagers_reference_the_adapters_loaded_side_by_side_are_unloaded_hot_swapped_ones_kept():
    _, pipeline, inputs = _tiny("sd-1.5")
    pipeline.prepare_lora([4, 8], hotswap=False)
    pipeline.swap_lora(4)
    with_4 = pipeline(**inputs)["image"]
    pipeline.swap_lora(8)
    assert pipeline.loaded == {"rank4", "rank8"} and not torch.equal(with_4, pipeline(**inputs)["image"])
    pipeline.unload_lora()
    assert pipeline.loaded == set() and not getattr(pipeline.denoiser, "peft_config", {})
    pipeline.swap_lora(4)  # loaded anew: the same image as the first time
    assert torch.equal(with_4, pipeline(**inputs)["image"])
    _, hot, _ = _tiny("sd-1.5")
    hot.prepare_lora([4, 8], hotswap=True)
    hot.swap_lora(4)
    hot.unload_lora()
    assert hot.loaded == {"served"}  # hot-swap needs its adapter in place from before the compile on


def test_eager_in_a_cuda_graph_replays_a_pipelines_denoiser_at_each_step_its_loop_and_decoder_as_they_are(monkeypatch):
    """The denoiser captured at the first step's inputs (the strict fake: a replay runs the kernels recorded, on the
    inputs captured, and no Python): every step's latents and timestep copied in, the image eager's."""
    from fakecuda import FakeGraphs

    from compilebench.kinds import eager as cudagraph

    _, pipeline, inputs = _tiny("sd-1.5", steps=3)
    expected = correctness.snapshot(pipeline(**inputs))
    fake = FakeGraphs().install(monkeypatch)
    unet, forward_of = pipeline.denoiser, pipeline.denoiser.forward
    calls = []

    @functools.wraps(forward_of)  # its signature: the pipeline's arguments named as the real denoiser names them
    def launched(sample, *args, **kwargs):  # a GPU's kernels: the output buffer made once, the math launched
        calls.append(1)
        out = torch.empty_like(sample)
        fake.launch(lambda: out.copy_(forward_of(sample, *args, **kwargs)[0]))
        return (out,)

    monkeypatch.setattr(unet, "forward", launched)
    call, _ = kinds.get("eager-cudagraphs").prepare(pipeline, inputs, "", None)
    made = len(calls)
    assert made == cudagraph.WARMUP_CALLS + 1  # warm-up on a side stream, the capture
    out = correctness.snapshot(call(**inputs))
    assert len(calls) == made  # every step a replay: the denoiser's Python never ran
    assert correctness.output_error(expected, out)[1] < 1e-5  # each step's own latents and timestep reached it
    assert pipeline.pipe.unet is unet and torch.equal(call(**inputs)["image"], out["image"])


def test_a_pipelines_table_keeps_three_digits_of_steps_per_second_and_gives_a_cold_compiles_range():
    """Two steps in 2,139 ms, as a pipeline takes on a busy 2-core CPU: 0.935 steps/s, not "0.9" (7% off); a cold
    compile with its range, as every table gives one."""
    import fakeresults as fr

    from compilebench.report.view import View

    cpu = {**fr.A100, "device": "cpu", "gpu": None}
    eager = fr.result("sd-1.5", 1, "eager", 2139.0, env=cpu, steps=2)
    for rep in eager.repeats:
        rep.peak_mem_bytes = 5 * 2**30
    eager.derive()
    (table,) = diffusion.tables(View([eager, fr.result("sd-1.5", 1, "default", 1500.0, env=cpu, steps=2,
                                                       compile_s=80.0)]))
    row = dict(zip(table.header, table.rows[0]))
    assert row["steps/s"] == "0.935" and row["image ms"].startswith("2139.")
    assert row["peak memory MiB"] == "5,120"  # it read 5120 under "MB", 5% short of the bytes
    # its cold compile, measured once, with how far one moves from another (the default 25%: one run)
    assert dict(zip(table.header, table.rows[1]))["compile s"] == "80.0 [64.0-100.0]"
    assert any(n.startswith("compile s: a cold compile, measured once a case") for n in table.notes)
