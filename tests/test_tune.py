"""The search behind `compilebench tune`, on a fake clock with planted results: it finds the planted winner,
drops what fails or disagrees with eager, and keeps to its budget."""

import fakeresults as fr
import pytest

from compilebench import tune
from compilebench.core import drift, speedups, stats
from compilebench.core.case import Case
from compilebench.core.errors import UserError
from compilebench.core.shards import Shard
from compilebench.core.starts import AotPackage, Start
from compilebench.core.variant import Variant
from compilebench.tune import halving

BASE = Case("resnet-50", 1, Variant("eager"), device="cpu", model_size="tiny")


class Planted:
    """Measurements whose speed-ups are planted: each configuration's per-process means, and the fake seconds a
    measurement takes (a cold compile the first time, less when measured again)."""

    def __init__(self, clock, speedups, failures=(), compile_s=30.0):
        self.clock, self.speedups, self.failures, self.compile_s = clock, speedups, dict(failures), compile_s
        self.calls = []

    def __call__(self, cases, repeats, policy):
        self.calls.append(([c.key() for c in cases], repeats))
        out = {}
        for c in cases:
            config = None if not c.variant.compiled else next(
                k for k in [*self.speedups, *self.failures] if k.case(BASE) == c)
            if config in self.failures:
                status, message = self.failures[config]
                out[c.key()] = fr.result(c.model, 1, c.variant.name, None, env=fr.CPU, status=status, message=message)
                continue
            ms = 10.0 if config is None else 10.0 / self.speedups[config]
            processes = [ms * f for f in (1 / 1.01, 1.0, 1.01)][:repeats]
            r = fr.result(c.model, 1, "eager", ms, env=fr.CPU, processes=processes)
            r.case = c
            r.cold_compile_s = None if config is None else self.compile_s
            out[c.key()] = r
        self.clock[0] += self.compile_s if repeats == 1 else 5.0
        return out


def configs():
    return tune.space("cpu", vision=True)


def test_the_search_finds_the_planted_winner_and_drops_what_fails():
    space = configs()
    winner = tune.Config.make("max-autotune-no-cudagraphs", (("freezing", True),))
    wrong = tune.Config.make(dtype="bfloat16")
    broken = tune.Config.make(fullgraph=True)
    speedups = {c: 1.1 + 0.01 * i for i, c in enumerate(space) if c not in (wrong, broken)}
    speedups[winner] = 2.0
    clock = [0.0]
    planted = Planted(clock, speedups, {wrong: ("mismatch", "compiled output differs from eager"),
                                        broken: ("error", "fullgraph=True could not capture the model")})
    out = tune.search(BASE, space, planted, lambda: clock[0], budget_s=10_000)
    assert out.winner.config == winner and out.winner.speedup.verdict == "faster"
    assert out.winner.rungs == 3 and out.winner.speedup.value == pytest.approx(2.0)
    dropped = {t.config: t.dropped for t in out.tried if t.dropped}
    assert dropped[wrong].startswith("output differs from eager") and dropped[broken].startswith("error")
    assert not out.untried  # a large budget tries everything
    # successive halving: every configuration once, a third of them twice, two of them three times
    assert sum(1 for t in out.tried if t.rungs >= 2) == -(-(len(space) - 2) // 3)
    assert sum(1 for t in out.tried if t.rungs == 3) == 2
    code = winner.code()
    assert "torch.compile(model, options={" in code and "'freezing': True" in code and "'max_autotune': True" in code


@pytest.mark.parametrize("second, told", [(1.98, False), (1.5, True)])
def test_a_winner_the_search_could_not_tell_from_the_runner_up_says_so(second, told):
    from compilebench.cli.tune import render

    space = configs()
    winner, close = tune.Config.make("max-autotune-no-cudagraphs"), tune.Config.make(dtype="bfloat16")
    speedups = {c: 1.1 for c in space}
    speedups[winner], speedups[close] = 2.0, second
    clock = [0.0]
    out = tune.search(BASE, space, Planted(clock, speedups), lambda: clock[0], budget_s=10_000)
    assert out.winner.config == winner and out.winner.rungs == 3
    text = render(out, 0.05, "r.db")
    s = out.winner.speedup  # its break-even at the ends of its interval, beside the estimate's
    fewest, most = stats.break_even_range(30.0, out.eager.mean, s.low, s.high, drift.COMPILE_DEFAULT)
    assert f"calls ({fewest:,} to {most:,} at the interval's ends, with the compile 0.80x as long" in text
    assert "Compile cost: 30.0 [24.0-37.5] s cold" in text  # measured once, as far shorter or longer
    if told:  # 2.0x over 1.5x: the winner is faster than the runner-up beyond 5%
        assert out.rival(0.05) is None and "Not told apart" not in text
        return
    r, over = out.rival(0.05)
    assert r.config == close and over.verdict == "same" and over.value == pytest.approx(2.0 / 1.98)
    assert f"Not told apart from {close.describe()} (1.98x eager): the pick over it 1.01x (" in text


def test_a_small_budget_tries_the_likeliest_configurations_and_says_which_it_left():
    space = configs()
    clock = [0.0]
    speedups = {c: 1.5 if c == tune.Config.make(dtype="bfloat16") else 1.2 for c in space}
    out = tune.search(BASE, space, Planted(clock, speedups), lambda: clock[0], budget_s=200)
    assert out.untried and len(out.tried) < len(space)
    # plain torch.compile first, then one change at a time, a lower precision first
    assert [t.config for t in out.tried][:2] == [tune.Config.make(), tune.Config.make(dtype="bfloat16")]
    assert out.winner.config == tune.Config.make(dtype="bfloat16")
    assert clock[0] <= 200 + 2 * 5.0  # the final rung always runs: at most its own cost past the budget


def test_the_first_rung_climbs_from_the_best_so_far_one_change_at_a_time():
    space = configs()
    plain, bf16, cl, autotune = (tune.Config.make(), tune.Config.make(dtype="bfloat16"), tune.Config.make(channels_last=True),
                                 tune.Config.make("max-autotune-no-cudagraphs"))
    both = tune.Config.make(dtype="bfloat16", channels_last=True)
    best = tune.Config.make("max-autotune-no-cudagraphs", dtype="bfloat16", channels_last=True)
    speedups = {c: 0.9 for c in space}  # max-autotune alone is slower: only on top of the others does it pay
    speedups.update({plain: 1.0, bf16: 1.5, cl: 1.2, autotune: 0.8, both: 1.8, best: 2.5})
    aot_both = tune.Config.make("aot-inductor", dtype="bfloat16", channels_last=True)
    clock = [0.0]
    out = tune.search(BASE, space, Planted(clock, speedups), lambda: clock[0], budget_s=280)
    # five cold compiles fit in the first rung; of the modes added to the best, AOTInductor comes first (by name)
    assert [t.config for t in out.tried] == [plain, bf16, both, aot_both, best]
    assert out.winner.config == best and out.winner.rungs == 3
    assert cl in out.untried and autotune in out.untried


def test_where_nothing_adds_to_the_best_the_climb_takes_the_likeliest_left():
    plain, bf16, cl = tune.Config.make(), tune.Config.make(dtype="bfloat16"), tune.Config.make(channels_last=True)
    both = tune.Config.make(dtype="bfloat16", channels_last=True)
    assert halving._climb([cl, both], bf16) == both
    assert halving._climb([cl, both], None) == cl
    assert halving._climb([cl], bf16) == cl  # cl does not add to bf16: it changes something else
    assert halving._climb([bf16, cl], plain) == bf16


def test_nothing_faster_than_eager_is_said_plainly():
    space = configs()[:4]
    clock = [0.0]
    out = tune.search(BASE, space, Planted(clock, {c: 1.0 for c in space}), lambda: clock[0], budget_s=10_000)
    assert out.winner is None and out.ranked[0].speedup.verdict in ("same", "inconclusive")
    from compilebench.cli.tune import render

    said = render(out, 0.02, "r.db")
    assert "keep the model uncompiled" in said
    best = out.ranked[0].speedup
    if best.verdict == "inconclusive":  # issue 62: an undecided best says what the search could not see
        assert speedups.out_of_reach(best, 0.02) in said and f"inconclusive (±{best.reach:.0%} reach)" in said
    else:
        assert "out of this run's reach" not in said


def test_the_space_depends_on_the_device_and_the_model():
    cpu, gpu, text = tune.space("cpu", True), tune.space("cuda:0", True), tune.space("cpu", False)
    assert {c.variant.mode for c in cpu} == {"default", "max-autotune-no-cudagraphs", "aot-inductor"}
    assert "aot-inductor" not in {c.variant.mode for c in text}  # generation does not export
    assert all(any(c.variant.scope == "regions" for c in space) for space in (cpu, gpu, text))
    assert {"reduce-overhead", "max-autotune"} <= {c.variant.mode for c in gpu}
    assert any(c.variant.options == (("coordinate_descent_tuning", True),) for c in gpu)
    assert not any(c.settings.channels_last for c in text) and any(c.settings.channels_last for c in cpu)
    assert {c.settings.dtype for c in gpu} == {"float32", "bfloat16", "float16"}


def test_a_pipeline_is_tuned_as_diffusers_compiles_one_its_decoder_too():
    plain, pipeline = tune.space("cpu", False), tune.space("cpu", False, pipeline=True)
    decoder = [c for c in pipeline if c.variant.decoder]
    assert len(decoder) == 1 and not any(c.variant.decoder for c in plain) and len(pipeline) == len(plain) + 1
    assert decoder[0].describe() == "default, decoder compiled"
    regional = tune.Config.make(scope="regions", fullgraph=True).code("transformer")
    assert regional.splitlines() == ["pipe.transformer.compile_repeated_blocks(fullgraph=True)  # each repeated "
                                     "block: one graph"]
    code = tune.Config.make("max-autotune", decoder=True, dtype="bfloat16", quantize="int8-weight-only").code("unet")
    assert code.splitlines() == [
        "pipe = pipe.to(torch.bfloat16)",
        "torchao.quantization.quantize_(pipe.unet, torchao.quantization.Int8WeightOnlyConfig())",
        "pipe.unet = torch.compile(pipe.unet, mode='max-autotune')",
        "pipe.vae.decode = torch.compile(pipe.vae.decode, mode='max-autotune')"]


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("20m", 1200), ("1h", 3600), ("1h30m", 5400), ("45", 45)])
def test_budgets_read_as_times(text, seconds):
    assert tune.parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["soon", "0", "-5m", "10x"])
def test_a_bad_budget_is_a_user_error(text):
    with pytest.raises(UserError, match="--budget"):
        tune.parse_budget(text)


@pytest.mark.slow
def test_tune_on_a_tiny_model_prints_a_pick_and_stores_every_measurement(tmp_path):
    """One convolution (the test plugin's image classifier): the search's real measurements, not a model's compile,
    are what is tested here; tiny ResNet-50's compile in a worker is the end-to-end test's (test_cli), and it took
    this test from 54 s to 88 s on 2026-12-02."""
    from conftest import run_cli, stored

    p = run_cli("tune", "--model", "fault-ok", "--device", "cpu", "--budget", "1s", "--db", "r.db", "--quiet",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "tuning fault-ok (batch 1)" in p.stderr and "27 configurations" in p.stderr
    # a budget this small measures the likeliest configuration alone, at every rung, and says what it left
    assert p.stdout.startswith(("Fastest correct configuration: ", "Nothing measured is faster than eager")), p.stdout
    assert "torch.compile(model" in p.stdout and "Not tried within the budget (26)" in p.stdout, p.stdout
    results = stored(tmp_path / "r.db")
    assert {r["case"]["variant"]["mode"] for r in results} == {"eager", "default"}
    assert all(r["status"] == "ok" for r in results) and max(len(r["repeats"]) for r in results) == 3


def test_the_python_entry_point_is_the_command(tmp_path, main_here, monkeypatch):
    """Issue 51: `tune` had no Python entry point. compilebench.fastest runs the search `tune` runs (tune.tuning,
    measured for real by the slow test above), with the same arguments for the same options."""
    import compilebench
    from compilebench import tune as tunemod

    asked = []

    class Stop(Exception):
        pass

    def tuning(model, db, **kw):
        asked.append((model, db, {k: v for k, v in kw.items() if k not in ("say", "command")}))
        raise Stop

    monkeypatch.setattr(tunemod, "tuning", tuning)
    with pytest.raises(Stop):
        main_here("tune", "--model", "resnet-50", "--tiny", "--device", "cpu", "--budget", "1s", "--db", "r.db",
                  "--quiet", "--batch-size", "1", "4", "--quantize", "int8-dynamic", "--engine", "onnxruntime",
                  "--shard", "2/3")
    with pytest.raises(Stop):
        compilebench.fastest("resnet-50", model_size="tiny", device="cpu", budget="1s", db="r.db",
                             batch_sizes=(1, 4), quantizations=("int8-dynamic",), engines=("onnxruntime",),
                             shard="2/3")
    (cli_model, cli_db, cli_kw), (api_model, api_db, api_kw) = asked
    assert (cli_model, cli_db) == (api_model, api_db) == ("resnet-50", "r.db")
    assert {k: tuple(v) if isinstance(v, list) else v for k, v in cli_kw.items()} == \
        {k: tuple(v) if isinstance(v, list) else v for k, v in api_kw.items()}
    assert cli_kw["shard"] == Shard(2, 3)


def test_a_sharded_search_takes_its_share_of_the_configurations_likeliest_first(tmp_path, monkeypatch):
    """tune --shard i/N: the configurations dealt round-robin in the order the search tries them, each shard's runs
    recording the search's plan, one plan for every shard of one command."""
    from compilebench.core import shards
    from compilebench.tune import session

    seen = []

    class Stop(Exception):
        pass

    def search(base, configs, *a, **kw):
        seen.append(list(configs))
        raise Stop

    monkeypatch.setattr(session, "search", search)
    every = tune.space("cpu", vision=True)
    plans = []
    monkeypatch.setattr(session.plan, "prepare", _keeping(session.plan.prepare, plans))
    for i in (1, 2, 3):
        with pytest.raises(Stop):
            session.tuning("resnet-50", str(tmp_path / f"s{i}.db"), model_size="tiny", device="cpu", budget="1s",
                           min_effect=0.05, shard=Shard(i, 3), command=f"compilebench tune --model resnet-50 "
                                                                        f"--shard {i}/3 --db s{i}.db")
    assert seen == [every[0::3], every[1::3], every[2::3]] and seen[0][0] == every[0]
    assert sorted(map(str, sum(seen, []))) == sorted(map(str, every))  # each configuration in one shard
    assert [p.shard.index for p in plans] == [1, 2, 3] and len({p.shard.plan for p in plans}) == 1
    assert all(p.shard.search and p.shard.cases == {} for p in plans)
    assert shards.dealt(list(range(7)), Shard(3, 3)) == [2, 5]


def _keeping(prepare, kept):
    def keep(*a, **kw):
        made = prepare(*a, **kw)
        kept.append(made)
        return made
    return keep


@pytest.mark.slow  # a tune process signalled mid-run (6 s): CI's second step
def test_sigterm_stops_tune_as_it_stops_run(tmp_path):
    import os
    import signal

    from test_faults import Fifo, start

    fifo, reply = Fifo(tmp_path / "fifo"), tmp_path / "reply"
    os.mkfifo(reply)
    run = start(["tune", "--model", "fault-handshake", "--device", "cpu", "--budget", "1m", "--db", "r.db", "--quiet"],
                tmp_path, env={"COMPILEBENCH_FAULT_FIFO": fifo.path, "COMPILEBENCH_FAULT_REPLY": str(reply)})
    fifo.next()  # the first measurement is running, and waits for a reply that never comes
    run.send_signal(signal.SIGTERM)
    out, err = run.communicate(timeout=120)
    assert run.returncode == 143, err
    assert err.strip().splitlines()[-1] == "interrupted before anything was stored in r.db"


@pytest.mark.parametrize("argv", [
    ["tune", "--model", "resnet-50", "--tiny"],  # issue 27.9: no 'tuning ...' line, no compiler-state folder
    ["run", "--model", "resnet-50", "--tiny", "--inductor-option", "max_autotune=True"],  # 27.11: checked, nothing made
])
def test_a_results_file_that_cannot_be_used_is_refused_before_anything_is_said_or_made(tmp_path, argv):
    import os
    import sqlite3

    from conftest import run_cli

    conn = sqlite3.connect(tmp_path / "other.db")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch), "COMPILEBENCH_PLUGINS": ""}  # the test plugins import dynamo
    p = run_cli(*argv, "--device", "cpu", "--db", "other.db", "--quiet", cwd=tmp_path, env=env)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "not a compilebench results file" in p.stderr, p.stderr
    assert os.listdir(scratch) == []


def test_regions_and_aot_inductor_configurations_make_their_own_cases_and_code():
    regions, aot = tune.Config.make(scope="regions"), tune.Config.make("aot-inductor", dtype="bfloat16")
    assert regions.case(BASE).variant == Variant("default", scope="regions")
    assert aot.case(BASE).variant.ahead_of_time and aot.case(BASE).dtype == "bfloat16"
    assert regions.describe() == "default, regions" and ("scope", "regions") in halving._changes(regions)
    assert "block.compile()" in regions.code() and "model._no_split_modules" in regions.code()
    code = aot.code()
    assert "torch.export.export(model" in code and "aoti_compile_and_package" in code and "aoti_load_package" in code
    assert code.startswith("model = model.to(torch.bfloat16)")
    assert "block.compile(mode='max-autotune-no-cudagraphs')" in tune.Config.make(
        "max-autotune-no-cudagraphs", scope="regions").code()


def test_the_table_gives_each_configurations_start_beside_its_speed():
    from compilebench.cli.tune import render

    space = [tune.Config(), tune.Config.make("aot-inductor")]
    clock = [0.0]
    planted = Planted(clock, {space[0]: 1.5, space[1]: 2.0})
    out = tune.search(BASE, space, planted, lambda: clock[0], budget_s=10_000)
    for t in out.tried:  # what the workers record: a cold compile's start, a package's load
        for rep in t.result.repeats:
            aot = t.config.variant.mode == "aot-inductor"
            rep.start = Start(load_s=0.5, first_call_s=0.01) if aot else Start(build_s=1.0, first_call_s=30.0)
            rep.compile_cache = "cold"
            rep.aot_inductor = AotPackage(built=True, load_s=0.5) if aot else AotPackage()
    text = render(out, 0.02, "r.db")
    assert "start s (how)" in text
    # the first call holds the compile: 30 s of it 25% shorter or longer (one search: the default); the package's
    # 0.01 s first call as far, too little to move its seconds said
    assert "| 31.00 [25.00-38.50] (cold start) |" in text and "| 0.51 (package loaded) |" in text


def test_with_several_batch_sizes_the_pick_serves_them_under_each_dynamic_setting_and_the_best_is_code():
    """The shapes stage after the search: its spec, what it prints from the shapes view (measured by a fake)."""
    from test_shapes import _served_result

    from compilebench.cli import tune as tunecmd
    from compilebench.core.spec import RunSpec
    from compilebench.report.view import View

    spec = RunSpec(models=("resnet-50",), batch_sizes=(4,), variants=("eager", "default"), device="cpu", repeats=1)
    pick = tune.Config.make("max-autotune-no-cudagraphs", dtype="bfloat16")
    served = tune.served_spec(spec, pick, (1, 4))
    cases = served.cases()
    assert [c.variant.label for c in cases] == [
        "no compile", "compile (max-autotune-no-cudagraphs)", "compile (max-autotune-no-cudagraphs, dynamic)",
        "compile (max-autotune-no-cudagraphs, static)", "compile (max-autotune-no-cudagraphs, mark dynamic)",
        "compile (max-autotune-no-cudagraphs, static, pad to 4)"]
    assert all(c.dtype == "bfloat16" and c.shapes == ("b1", "b4") for c in cases) and served.repeats == 3

    first, slow = {"b1": 0.01, "b4": 0.01}, {"b1": 10.0, "b4": 40.0}
    made = {v: _served_result(v, first if not v.compiled else {"b1": 1.0, "b4": 0.5}, slow if not v.compiled else
                              ({"b1": 4.0, "b4": 16.0} if v.dynamic is False and not v.pad_to else {"b1": 6.0, "b4": 24.0}))
            for v in (c.variant for c in cases)}
    outcome = tune.Outcome(None, [tune.Tried(pick, speedup=speedups.Speedup(2.0, 1.9, 2.1, "faster", False))])
    outcome.tried[0].rungs = 3
    view = View([made[c.variant] for c in cases], 0.02, 10_000, None)
    text = tunecmd._served(outcome, view)
    # the pick's mode is part of every setting's name: the shapes were served compiled in it
    assert "dynamic=False, max-autotune-no-cudagraphs: serves 10,000 requests of this mix soonest" in text
    assert "torch.compile(model, mode='max-autotune-no-cudagraphs', dynamic=False)" in text
    assert "| mark_dynamic, max-autotune-no-cudagraphs |" in text and "model = model.to(torch.bfloat16)" in text


def test_a_mix_that_names_no_batch_size_is_refused_before_tune_measures_anything(main_here, tmp_path):
    code, out, err = main_here("tune", "--model", "resnet-50", "--tiny", "--device", "cpu", "--batch-size", "1", "4",
                               "--mix", "2:1", "--db", "r.db")
    assert code == 2 and "--mix" in err and not (tmp_path / "r.db").exists()


def test_quantization_is_searched_only_when_asked_and_never_below_the_quality_floor():
    """Issue 52: tune trades no quality silently. Quantized configurations join the space only when asked; one whose
    quality falls below --min-agreement is dropped with its figure, however fast."""
    assert not any(c.settings.quantize != "none" for c in configs())
    space = tune.space("cpu", vision=True, quantizations=("int8-weight-only",))
    quantized = [c for c in space if c.settings.quantize != "none"]
    assert quantized and all(c.variant.mode != "aot-inductor" for c in quantized)
    fast, kept = tune.Config.make(quantize="int8-weight-only"), tune.Config.make(dtype="bfloat16", quantize="int8-weight-only")
    speedups = {c: 1.2 for c in space}
    speedups[fast], speedups[kept] = 3.0, 2.5
    clock = [0.0]
    planted = Planted(clock, speedups)
    quality = {fast: {"top1": 0.95, "top5": 1.0}, kept: {"top1": 0.995, "top5": 1.0}}

    def measure(cases, repeats, policy):
        out = planted(cases, repeats, policy)
        for c in cases:
            config = next((k for k in quality if k.case(BASE) == c), None)
            if config is None and c.quantize != "none":
                config = "other"
            for rep in out[c.key()].repeats:
                rep.quality = dict(quality.get(config, {"top1": 1.0}) if c.quantize != "none" else {})
            out[c.key()].derive()
        return out

    out = tune.search(BASE, space, measure, lambda: clock[0], budget_s=100_000, min_agreement=0.99)
    dropped = {t.config: t.dropped for t in out.tried if t.dropped}
    assert dropped[fast] == "quality top1 95.0% of the float model's predictions, below --min-agreement 99.0%"
    assert out.winner.config == kept
    assert "torchao.quantization.quantize_(model, torchao.quantization.Int8WeightOnlyConfig())" in kept.code()


def test_a_language_model_is_tuned_by_its_time_per_token():
    """The configuration that decodes fastest wins, as a run's verdict would call it, though another makes whole
    generate() calls (its prefill) faster."""
    from compilebench.cli.tune import render

    base = Case("smollm2-135m", 1, Variant("eager"), device="cpu", model_size="tiny", prompt_len=16, new_tokens=8)
    prefill, decode = tune.Config.make("default"), tune.Config.make("max-autotune-no-cudagraphs")
    figures = {None: ([50.0, 50.5, 49.5], [10.0, 10.1, 9.9]), prefill: ([30.0, 30.3, 29.7], [9.8, 9.9, 9.7]),
               decode: ([45.0, 45.4, 44.6], [5.0, 5.05, 4.95])}
    clock = [0.0]

    def measure(cases, repeats, policy):
        out = {}
        for c in cases:
            config = next((k for k in (prefill, decode) if k.case(base) == c), None)
            calls, per_token = figures[config]
            r = fr.generation("smollm2-135m", "eager", calls[:repeats], per_token[:repeats])
            r.case, r.cold_compile_s = c, None if config is None else 30.0
            out[c.key()] = r
        clock[0] += 30.0
        return out

    out = tune.search(base, [prefill, decode], measure, lambda: clock[0], budget_s=100_000)
    assert out.winner.config == decode and out.winner.speedup.value == pytest.approx(2.0, rel=0.02)
    text = render(out, 0.05, "r.db")
    assert "2.00x eager per token" in text
    # its compile pays off in whole generate() calls, with the range of their own interval (a count alone read surer)
    calls = speedups.speedup(out.eager, out.winner.result, 0.05)
    fewest, most = stats.break_even_range(30.0, out.eager.mean, calls.low, calls.high, drift.COMPILE_DEFAULT)
    assert f"calls ({fewest:,} to {most:,} at the interval's ends, with the compile 0.80x as long" in text


def test_tune_refuses_a_quality_floor_out_of_range(main_here):
    code, _, err = main_here("tune", "--model", "resnet-50", "--min-agreement", "99", "--device", "cpu")
    assert code == 2 and "--min-agreement must be a fraction above 0 and at most 1" in err


def test_a_quality_floor_alone_tries_every_quantization_this_device_runs_on_this_model():
    from compilebench.core.spec import asked
    from compilebench.run import plan
    from compilebench.tune import session

    def runnable(model):
        return session._runnable(plan.prepare(asked(models=(model,), device="cpu", model_size="tiny", repeats=1)))

    assert runnable("vit") == ("int8-weight-only", "int8-dynamic")  # int4 and float8 need CUDA
    assert runnable("fault-ok") == ()  # no linear layer: nothing to quantize
