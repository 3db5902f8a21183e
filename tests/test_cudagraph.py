"""--variant eager-cudagraphs (issue 52): the eager model's call captured once in a CUDA graph and replayed,
checked against a fake as strict as the CUDA graph API; refused off CUDA and for generation, in one line."""

from __future__ import annotations

import pytest
import torch
from fakecuda import FakeGraphModel, FakeGraphs

from compilebench.core.variant import Variant
from compilebench.kinds import eager as cudagraph


def test_a_captured_call_replays_its_kernels_on_the_inputs_copied_in_and_never_calls_python(monkeypatch):
    fake = FakeGraphs().install(monkeypatch)
    model = FakeGraphModel(fake)
    x = torch.tensor([1.0, 2.0])
    call = cudagraph.capture(model, {"pixel_values": x})
    made = model.calls
    assert made == cudagraph.WARMUP_CALLS + 1  # warm-up on a side stream, then the capture
    assert call(pixel_values=x)["logits"].tolist() == [3.0, 5.0]
    assert call(pixel_values=torch.tensor([10.0, 0.0]))["logits"].tolist() == [21.0, 1.0]  # new inputs copied in
    assert model.calls == made  # replays ran the graph, not the model


def test_a_capture_without_warm_up_on_a_side_stream_fails_as_the_real_one_does(monkeypatch):
    fake = FakeGraphs().install(monkeypatch)
    with pytest.raises(RuntimeError, match="stream is capturing"):
        cudagraph.capture(FakeGraphModel(fake), {"pixel_values": torch.ones(2)}, warmup=0)
    with pytest.raises(RuntimeError, match="never captured"):
        torch.cuda.CUDAGraph().replay()


def test_eager_in_a_cuda_graph_is_an_eager_variant_read_against_plain_eager():
    v = Variant.named("eager-cudagraphs")
    assert (v.name, v.label, v.compiled, v.against_eager) == ("eager-cudagraphs", "no compile, CUDA graph", False, True)
    assert not Variant().against_eager and Variant.named("reduce-overhead").against_eager
    from compilebench.core.case import Case

    plain = Case("resnet-50", 1, Variant(), device="cuda")
    graphed = Case("resnet-50", 1, v, device="cuda")
    assert graphed.eager_key() == plain.key() != graphed.key()
    assert "cudagraph" not in plain.key()  # results stored before the variant keep their keys


@pytest.mark.parametrize("argv, said", [
    (["--model", "resnet-50", "--variant", "eager", "eager-cudagraphs", "--device", "cpu"],
     "--variant eager-cudagraphs captures the eager model in a CUDA graph: it needs a CUDA device (this run's is cpu)"),
    (["--model", "smollm2-135m", "--variant", "eager-cudagraphs", "--device", "cpu"],
     "--variant eager-cudagraphs captures one forward call (a vision model); smollm2-135m generates text"),
])
def test_eager_cudagraphs_is_refused_where_it_cannot_run(tmp_path, main_here, argv, said):
    code, _, err = main_here("run", *argv)
    assert code == 2 and err.count("\n") == 1 and said in err
    assert not (tmp_path / "compilebench-results").exists()


def test_the_report_sets_compiles_own_gain_beside_reduce_overheads_gain_over_eager():
    import fakeresults as fr

    from compilebench.report import cudagraphs, terminal
    from compilebench.report.view import View

    results = [fr.result("resnet-50", 1, "eager", 10.0), fr.result("resnet-50", 1, "eager-cudagraphs", 5.0),
               fr.result("resnet-50", 1, "reduce-overhead", 4.0, compile_s=30.0)]
    view = View(results)
    (table,) = cudagraphs.tables(view)
    (row,) = table.records()
    assert row["eager ms"] == "10.000" and row["eager in a CUDA graph ms"] == "5.000", row
    assert row["CUDA graph vs eager"].startswith("2.000x")
    assert row["compile (reduce-overhead) vs eager"].startswith("2.500x")
    assert row["compile (reduce-overhead) vs eager in a CUDA graph"].startswith("1.250x")
    assert cudagraphs.tables(View(results[::2])) == []  # no eager in a CUDA graph: no table
    said = terminal.summary(View(results[:2]))
    legend = said.index("\nms: ")  # the legend explains "never" for every table
    assert "ResNet: run (no compile, CUDA graph) - 2.00x" in said and "never" not in said[:legend]  # nothing to repay
