"""How close to the hardware (issue 26, item 3): the bytes a call moves, the machine's peaks, decode GB/s and the
roofline position in the report."""

import fakeresults as fr
import pytest

from compilebench import zoo
from compilebench.core.environment import HostPeaks
from compilebench.core.generation import GenerateCalls
from compilebench.diagnostics import bandwidth, peaks
from compilebench.report import data, why
from compilebench.report.view import View
from compilebench.storage.store import Store


def _tiny_lm():
    return zoo.get("smollm2-135m").build("random", "tiny")


def _by_hand(model, batch, prompt_len, new_tokens):
    """The decode step's bytes from the config, written out: every distinct weight, and a key and a value of
    every layer at the mean length."""
    cfg = model.config
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    weights = sum(p.numel() * 4 for p in model.parameters())  # parameters() yields a tied weight once
    if not tied:
        table = model.get_input_embeddings().weight
        weights += -table.numel() * 4 + batch * cfg.hidden_size * 4
    head_dim = cfg.head_dim if getattr(cfg, "head_dim", None) else cfg.hidden_size // cfg.num_attention_heads
    kv = batch * 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * head_dim * 4 * (prompt_len + new_tokens / 2)
    return weights + kv


@pytest.mark.parametrize("tie", [True, False])
def test_decode_bytes_are_the_weights_once_and_the_kv_cache_at_its_mean_length(tie):
    model = _tiny_lm()
    if not tie:  # an output layer of its own: the input table is read a row per sequence, not whole
        import torch

        out = model.get_output_embeddings()
        out.weight = torch.nn.Parameter(out.weight.detach().clone())
    assert (model.get_output_embeddings().weight is model.get_input_embeddings().weight) == tie
    moved = bandwidth.decode_bytes(model, 2, 16, 8)
    assert moved["per_step"] == int(_by_hand(model, 2, 16, 8))
    assert moved["per_step"] == moved["weights"] + moved["kv_cache"] and moved["mean_len"] == 20


def test_decode_gbs_of_a_tiny_lm_is_its_bytes_over_its_time_per_token():
    from compilebench.core.case import Case
    from compilebench.core.job import TimingPolicy
    from compilebench.core.variant import Variant
    from compilebench.measure import worker

    case = Case("smollm2-135m", 1, Variant(), model_size="tiny", prompt_len=12, new_tokens=6)
    job = fr.job([case], TimingPolicy(iters=3, first_calls=1), count_flops=False)
    (r,) = fr.results_of(job, worker.run_cases(job, isolation="inline"))
    assert r.status == "ok", r.message
    per_token_ms = r.generation.per_token.mean
    expected = _by_hand(_tiny_lm(), 1, 12, 6) / (per_token_ms / 1e3) / 1e9
    mean, low, high = data.decode_gbs(r)
    assert mean == pytest.approx(expected, rel=1e-6) and low is high is None  # one process: no interval


def test_bytes_counter_counts_each_operators_inputs_and_outputs_and_no_view():
    import torch

    layer = torch.nn.Linear(32, 16)
    x = torch.randn(4, 32)
    with torch.inference_mode(), bandwidth.BytesCounter() as moved:
        layer(x)
    # addmm(bias, x, weight.t()): the bias, the input, the weight (its transpose is a view), the output
    assert moved.total == (16 + 4 * 32 + 16 * 32 + 4 * 16) * 4
    with torch.inference_mode(), bandwidth.BytesCounter() as views:
        x.t().unsqueeze(0)
    assert views.total == 0


def test_host_peaks_measure_a_copy_and_a_matmul_in_the_cases_dtype():
    found = bandwidth.host_peaks("float32")
    assert set(found) == {"stream_gbs", "matmul_gflops"}
    assert found["stream_gbs"] > 0.1 and found["matmul_gflops"] > 0.1


@pytest.mark.parametrize("flops, moved, bound", [(100, 10, "compute"), (100, 1000, "memory"), (None, 10, None)])
def test_the_ridge_point_tells_memory_from_compute_bound(flops, moved, bound):
    assert bandwidth.bound(flops, moved, 1e12, 1e11) == bound  # ridge: 10 FLOP per byte


@pytest.mark.parametrize("name, board, gbs", [
    ("NVIDIA H100 80GB HBM3", "H100 SXM", 3350), ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM", 2039),
    ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe", 1935), ("NVIDIA A100-SXM4-40GB", "A100 40GB", 1555),
    ("Tesla T4", "T4", 320), ("NVIDIA GeForce RTX 4090", None, None)])
def test_gpu_bandwidth_comes_from_the_datasheet_of_a_listed_board(name, board, gbs):
    assert peaks.bandwidth_gbs(name) == ((board, gbs) if board else None)


def test_the_report_places_each_case_against_its_machines_peaks():
    eager = fr.result("resnet-50", 1, "eager", 10.0, env=fr.CPU)
    compiled = fr.result("resnet-50", 1, "default", 5.0, env=fr.CPU)
    # the machine's peaks, measured by one worker: ridge 5 FLOP per byte
    eager.repeats[1].host_peaks = HostPeaks(dtype="float32", stream_gbs=40.0, matmul_gflops=200.0)
    for r in (eager, compiled):
        r.repeats[0].flops = 4_000_000_000
    eager.repeats[0].bytes_moved, compiled.repeats[0].bytes_moved = 2_000_000_000, 400_000_000
    for r in (eager, compiled):
        r.derive()
    gpu = fr.result("smollm2-135m", 1, "eager", 100.0, env={**fr.A100, "device_name": "NVIDIA H100 80GB HBM3"},
                    prompt_len=32, new_tokens=8)
    for rep in gpu.repeats:
        rep.generation = GenerateCalls.from_dict({
            "ttft_ms": [5.0], "per_token_ms": [2.0], "new_tokens": 8, "batch_size": 1,
            "decode_bytes": {"per_step": 670_000_000, "weights": 600_000_000, "kv_cache": 70_000_000, "mean_len": 36}})
    gpu.derive()
    forward, decode = why.hardware_tables(View([eager, compiled, gpu]))
    rows = {r["Variant"]: r for r in forward.records()}
    assert rows["no compile"]["FLOP per byte"] == "2" and rows["no compile"]["bound"] == "memory"
    assert rows["compile"]["FLOP per byte"] == "10" and rows["compile"]["bound"] == "compute"
    assert rows["compile"]["ridge FLOP per byte"] == "5"
    assert rows["no compile"]["GB/s (of peak)"] == f"{2e9 / 10e-3 / 1e9:.3g} ({2e9 / 10e-3 / 40e9:.0%})"
    (row,) = decode.records()
    assert row["decode GB/s (95% CI)"].startswith("335 ")  # 670 MB per step / 2 ms
    assert row["of peak bandwidth"] == f"{335 / 3350:.0%}"
    assert "H100 SXM datasheet 3350 GB/s" in decode.notes[-1] and "streaming copy measured here 40" in decode.notes[-1]


def test_a_cpus_peaks_are_measured_once_per_run_and_dtype_after_the_timed_loop(main_here, monkeypatch, tmp_path):

    from compilebench.run.executors import InlineExecutor

    jobs, phases = [], []
    run = InlineExecutor.run

    def recording(self, job, env, on_phase):
        jobs.append((job.cases[0].variant.mode, job.cases[0].dtype, job.repeat, job.measure_machine))
        return run(self, job, env, lambda p: (phases.append(p), on_phase(p)))

    monkeypatch.setattr(InlineExecutor, "run", recording)
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "default", "--backend", "eager",
                             "--iters", "3", "--warmup", "0", "--min-iters", "1", "--device", "cpu", "--quiet",
                             "--format", "csv", "--repeats", "2", "--isolation", "inline", "--db", "r.db")
    assert code == 0, err
    assert [j for j in jobs if j[3]] == [("eager", "float32", 1, True)] and len(jobs) == 4
    assert phases.index("measuring the machine") > phases.index("timing")  # never before or during a timed loop
    peaks = [rep.host_peaks for r in Store.open(str(tmp_path / "r.db"), write=False).results() for rep in r.repeats]
    assert [(p.dtype, p.stream_gbs > 0, p.matmul_gflops > 0) for p in peaks if p] == [("float32", True, True)]


def test_a_machine_that_cannot_be_measured_keeps_its_case_and_says_why(monkeypatch):
    from compilebench.core.case import Case
    from compilebench.core.job import TimingPolicy
    from compilebench.core.variant import Variant
    from compilebench.measure import worker

    def fails(dtype):
        raise MemoryError("cannot allocate 256 MiB")

    monkeypatch.setattr(bandwidth, "host_peaks", fails)
    case = Case("resnet-50", 1, Variant(), model_size="tiny")
    job = fr.job([case], TimingPolicy(iters=3, warmup=0, min_iters=1), count_flops=False, measure_machine=True)
    (r,) = worker.run_cases(job, isolation="inline")
    assert r.status == "ok" and r.host_peaks.error == "MemoryError: cannot allocate 256 MiB"
