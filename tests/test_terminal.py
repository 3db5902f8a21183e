"""The terminal summary (issue 39): the run's answer in at most 100 columns, with the same figures as the report."""

import math

import fakeresults as fr
import pytest

from compilebench.core import drift, speedups
from compilebench.core.vocab import Verdict
from compilebench.report import tables, terminal
from compilebench.report.view import View

GUIDE = ["vit", "beit", "convnext", "resnet-50", "segformer", "mask2former", "maskformer", "deeplabv3-mobilenet",
         "owlvit", "detr", "detr-resnet-101", "conditional-detr"]


def results():
    out = []
    for i, model in enumerate(GUIDE):
        eager = 10.0 + i
        out.append(fr.result(model, 1, "eager", eager))
        out.append(fr.result(model, 1, "default", eager / 1.6, compile_s=41.5))  # 1.6x: faster
        out.append(fr.result(model, 1, "max-autotune", eager / 1.9, compile_s=312.0, dtype="bfloat16",
                             channels_last=True))
    out.append(fr.result("resnet-50", 4, "eager", 30.0))
    out.append(fr.result("resnet-50", 4, "default", 30.3, compile_s=40.0))  # same
    out.append(fr.result("vit", 4, "eager", 30.0, status="oom"))
    out.append(fr.result("vit", 4, "default", 20.0, compile_s=40.0))
    out.append(fr.result("beit", 4, "eager", 30.0))
    out.append(fr.result("beit", 4, "default", 30.0, status="mismatch", message="max rel err 0.4"))
    return out


@pytest.mark.parametrize("width", [100, 80])
def test_the_summary_fits_the_width_and_holds_the_reports_figures(width):
    view = View(results())
    text = terminal.summary(view, width)
    lines = text.splitlines()
    assert max(map(len, lines)) <= width, [line for line in lines if len(line) > width]
    # one row per model and batch size, in the guide's order, under its hardware and batch size
    assert "A100 (batch size: 1)" in lines and "A100 (batch size: 4)" in lines
    b1 = lines[lines.index("A100 (batch size: 1)") + 2:][:len(GUIDE)]
    g = view.groups[0]
    shown = [line.split()[0] for line in b1]  # a name cut to fit ends in '~'
    assert len(shown) == len(GUIDE) and all(
        name.startswith(s.rstrip("~")) for s, name in zip(shown, [g.label(m).rsplit("/", 1)[-1] for m in g.models]))
    # the same figures as the report's recommendation: the fastest variant whose verdict is faster
    recommended = {r["Task/Model"]: r for r in tables.recommendation_table(view).records()
                   if r["batch"] == "1"}
    detr = recommended["Object Detection/DETR"]
    line = next(line for line in lines if line.startswith("DETR b1: compile"))
    assert detr["recommended"] in line or detr["recommended"].split(" (")[0] in line
    column = next(c for c in g.compiled_columns if c.variant.name == "max-autotune")
    s = view.speedup(g.result("detr", next(c for c in g.columns if not c.variant.compiled)), g.result("detr", column))
    assert s.verdict == Verdict.faster
    assert line.startswith("DETR b1: compile (max-autotune bfloat16")
    assert f"{s.value:.2f}x [{s.low:.2f}-{s.high:.2f}]" in line
    row = next(r for r in b1 if r.startswith("DETR "))
    assert f"{s.value:.2f}x" in row and "faster" in row and ("312.0" in row or width < 100)  # compile s: left out
    assert f"{g.result('detr', column).mean:.3f}" in row


def test_the_break_even_is_the_range_its_speed_ups_interval_gives():
    """A count to the call beside a speed-up known to ±15%, or a compile measured once, would read surer than it is:
    the table gives the calls at each end of the interval, the compile as much shorter or longer as one moves from
    another (the default here: one run), the line in words the estimate with that range; an end that saves nothing
    reads never."""
    eager = fr.result("resnet-50", 1, "eager", 4.0, env=fr.CPU, processes=[4.0, 4.2, 3.8])
    decided = fr.result("resnet-50", 1, "default", 2.0, env=fr.CPU, processes=[2.0, 2.05, 1.95], compile_s=12.0)
    view = View([eager, decided])
    s, d = view.speedup(eager, decided), drift.COMPILE_DEFAULT
    fewest, most = (c / ((eager.mean - eager.mean / x) / 1e3) for c, x in ((12.0 / (1 + d), s.high),
                                                                          (12.0 * (1 + d), s.low)))
    text = terminal.summary(view, 100)
    row = next(line for line in text.splitlines() if line.startswith("ResNet "))
    assert row.endswith(f"{math.ceil(fewest):,}-{math.ceil(most):,}")
    point = math.ceil(12.0 / ((eager.mean - decided.mean) / 1e3))
    assert f"pays off after {point:,} calls [{math.ceil(fewest):,}-{math.ceil(most):,}]" in text
    unsure = fr.result("resnet-50", 1, "default", 3.9, env=fr.CPU, processes=[3.6, 4.1, 3.9], compile_s=12.0)
    s = View([eager, unsure]).speedup(eager, unsure)
    assert s.low < 1 < s.high and s.verdict == Verdict.inconclusive
    row = next(line for line in terminal.summary(View([eager, unsure]), 100).splitlines() if line.startswith("ResNet "))
    assert row.endswith("-never") and f"{math.ceil(12.0 / 1.25 / ((eager.mean - eager.mean / s.high) / 1e3)):,}-" in row


def test_the_break_even_range_holds_how_far_one_compile_moves_from_another_in_the_file():
    """Four runs of one case whose compile moved 10% at most between runs: the range takes the compile 1.1x shorter
    and longer, not the default 1.25x, and the legend says where that came from, and what it makes of compile s."""
    runs = [(fr.result("resnet-50", 1, "eager", 4.0, env=fr.CPU, run=f"r{i}"),
             fr.result("resnet-50", 1, "default", 2.0, env=fr.CPU, compile_s=c, run=f"r{i}"))
            for i, c in enumerate([12.0, 13.2, 12.5, 12.0])]
    view = View([r for pair in runs for r in pair])
    assert view.compile_drift.value == pytest.approx(0.1)
    eager, compiled = runs[-1]
    s = view.speedup(eager, compiled)
    fewest, most = (math.ceil(round(c / ((eager.mean - eager.mean / x) / 1e3), 6))
                    for c, x in ((12.0 / 1.1, s.high), (12.0 * 1.1, s.low)))
    text = terminal.summary(view, 100)
    assert f"[{fewest:,}-{most:,}]" in text
    said = " ".join(text.split())
    assert "the compile 0.91x as long at the fewest and 1.10x at the most" in said and "the largest of 3 moves" in said
    assert "compile s: one cold compile, measured once a case; another of the same case may take 0.91x to 1.10x" in said


def test_a_compile_no_repeat_made_cold_is_said_to_be_the_warm_ones_median():
    """A run on a --compile-cache folder that already held the case compiles warm in every repeat: its compile s is
    the warm ones' median, and the legend, which said 'one cold compile' whatever the row held, says so."""
    eager = fr.result("resnet-50", 1, "eager", 4.0, env=fr.CPU)
    compiled = fr.result("resnet-50", 1, "default", 2.0, env=fr.CPU, compile_s=3.0)
    said = " ".join(terminal.summary(View([eager, compiled]), 100).split())
    assert "compile s: one cold compile, measured once a case; another" in said
    for rep in compiled.repeats:
        rep.compile_cache = "dir"
    compiled.derive()
    assert (compiled.cold_compile_s, compiled.compile_s) == (None, 3.0)
    said = " ".join(terminal.summary(View([eager, compiled]), 100).split())
    assert f"compile s: one cold compile, measured once a case {' '.join(terminal.WARM_WORDS.split())}; another" in said


def test_a_pick_the_run_could_not_tell_from_the_next_fastest_says_so():
    """Two compiled modes both faster than eager, a few percent apart within their noise: the faster by its estimate
    is the pick, and its line and the recommendation say the run could not tell it from the other."""
    eager = fr.result("resnet-50", 1, "eager", 10.0, env=fr.CPU, processes=[10.0, 10.1, 9.9])
    default = fr.result("resnet-50", 1, "default", 5.0, env=fr.CPU, processes=[5.0, 5.4, 4.7], compile_s=20.0)
    close = fr.result("resnet-50", 1, "reduce-overhead", 4.8, env=fr.CPU, processes=[4.5, 5.1, 4.8], compile_s=20.0)
    view = View([eager, default, close])
    over = view.speedup(default, close)
    assert over.verdict == Verdict.inconclusive and over.value > 1
    text = terminal.summary(view, 1000)  # its line unwrapped
    line = next(line for line in text.splitlines() if line.startswith("ResNet: compile (reduce-overhead)"))
    theirs = view.speedup(eager, default)
    assert line.endswith(f"; not told apart from default ({theirs.value:.2f}x [{theirs.low:.2f}-{theirs.high:.2f}]): "
                         f"reduce-overhead over it {over.value:.2f}x [{over.low:.2f}-{over.high:.2f}], inconclusive")
    (pick,) = tables.recommendation_table(view).records()
    assert pick["recommended"] == "compile (reduce-overhead)"
    assert pick["why"].startswith(f"not told apart from compile: {over.value:.3f}x (")
    apart = fr.result("resnet-50", 1, "reduce-overhead", 2.5, env=fr.CPU, processes=[2.5, 2.51, 2.49], compile_s=20.0)
    tight = fr.result("resnet-50", 1, "default", 5.0, env=fr.CPU, processes=[5.0, 5.01, 4.99], compile_s=20.0)
    view = View([eager, tight, apart])  # 2x the other: told apart, nothing to say
    assert "told apart" not in terminal.summary(view, 1000)
    assert tables.recommendation_table(view).records()[0]["why"] == ""


def test_each_case_that_is_not_a_speed_up_says_why_in_words():
    text = terminal.summary(View(results()), 100)
    said = text.replace("\n  ", " ").splitlines()  # a line in words wraps, indented
    assert any(line.startswith("ResNet b1: compile (") for line in said)  # batch 1: faster
    b4 = text[text.index("(batch size: 4)"):]
    assert "ViT" in b4 and "OOM" in b4.splitlines()[2 + [x.split()[0] for x in b4.splitlines()[2:5]].index("ViT")]
    assert any(line.startswith("ResNet b4: no compile - nothing measured is faster than eager beyond 5%") and
               "same" in line for line in said)
    assert "BeiT b4: no compile - no compiled variant measured ok" in said
    assert "ViT b4: eager OOM, so no speed-up to read (compiled: 20.000)" in said


def test_an_eager_only_run_gets_its_rows_and_no_recommendation():
    text = terminal.summary(View([fr.result("vit", 1, "eager", 12.0), fr.result("detr", 1, "eager", 30.0,
                                                                                  status="crashed")]), 100)
    lines = text.splitlines()
    assert any(line.startswith("ViT") and "12.000" in line for line in lines)
    assert any(line.startswith("DETR") and "crashed" in line for line in lines)
    assert not any(" - " in line for line in lines)  # nothing compiled, nothing to recommend


def test_long_names_are_cut_not_wrapped():
    long = [fr.result("vit", 1, "eager", 10.0, label="Image Classification/" + "V" * 80),
            fr.result("vit", 1, "max-autotune", 5.0, compile_s=3.0, dtype="bfloat16", channels_last=True,
                      label="Image Classification/" + "V" * 80)]
    lines = terminal.summary(View(long), 100).splitlines()
    row = next(line for line in lines if line.startswith("VVV"))
    assert len(row) <= 100 and "~" in row and "2.00x" in row


def test_an_undecided_case_is_told_to_interleave_only_if_it_did_not():
    """'--interleave may decide' is no remedy for a comparison that shared its processes already."""
    spread = [9.0, 10.0, 11.0]  # a wide interval around 1.0x: inconclusive
    shared = ["p1", "p2", "p3"]
    interleaved = View([fr.result("resnet-50", 1, "eager", 10.0, processes=spread, process_ids=shared,
                                  interleave=True),
                        fr.result("resnet-50", 1, "default", 10.0, processes=spread[::-1], process_ids=shared,
                                  compile_s=20.0, interleave=True)])
    apart = View([fr.result("resnet-50", 1, "eager", 10.0, processes=spread),
                  fr.result("resnet-50", 1, "default", 10.0, processes=spread[::-1], compile_s=20.0)])
    for view, remedy in ((interleaved, "more repeats may decide"), (apart, "more repeats or --interleave may decide")):
        g = view.groups[0]
        s = view.speedup(*(g.result("resnet-50", c) for c in g.columns))
        assert s.verdict == Verdict.inconclusive and s.paired_by == ("process" if view is interleaved else None)
        said = terminal.summary(view, 100).replace("\n  ", " ")
        # the pair's shared setting names neither side apart: the suite's line says it once
        assert f"not shown faster beyond 5% (default {s.value:.2f}x" in said and "default interleaved" not in said
        assert ("compile, interleaved," in said) == (view is interleaved)
        assert said.count(remedy) == 1
        (why,) = [r["why"] for r in tables.recommendation_table(view).records()]
        assert why == (f"nothing measured is faster than eager beyond 5% (1 inconclusive: "
                       f"{speedups.out_of_reach(s, 0.05)}; {remedy})")
        assert f"{speedups.out_of_reach(s, 0.05)}; {remedy}" in said  # what it could not see, then what may decide


def test_an_interleaved_comparison_read_from_one_process_is_not_told_to_interleave():
    # A run interrupted after its first interleaved process printed "more repeats or --interleave may decide":
    # with one shared process its speed-up had been read as two unpaired sides.
    one = ["p1"]
    eager = fr.result("resnet-50", 1, "eager", 0.678, processes=[0.678], process_ids=one, interleave=True)
    compiled = fr.result("resnet-50", 1, "default", 0.370, processes=[0.370], process_ids=one, interleave=True,
                         compile_s=20.8)
    s = speedups.speedup(eager, compiled)
    assert s.paired_by == "process" and s.n == 1 and s.low is None and s.verdict == Verdict.inconclusive
    said = " ".join(terminal.summary(View([eager, compiled])).split())  # its lines wrapped at 100 columns
    assert "(default 1.83x, inconclusive); more repeats may decide" in said, said
    assert "--interleave may decide" not in said


def test_a_summary_that_shows_no_break_even_does_not_explain_one():
    """Text generation's table has no break-even column (its verdict is per token): its legend leaves the
    break-even's sentence out, which a vision model's table beside it brings back."""
    lm = [fr.generation("smollm2-135m", "eager", [50.0, 50.5, 49.5], [10.0, 10.1, 9.9]),
          fr.generation("smollm2-135m", "default", [40.0, 40.4, 39.6], [8.0, 8.1, 7.9], compile_s=20.0)]
    assert "break-even" not in terminal.summary(View(lm), 100)
    vision = [fr.result("resnet-50", 1, "eager", 4.0, env=fr.CPU),
              fr.result("resnet-50", 1, "default", 2.0, env=fr.CPU, compile_s=12.0)]
    assert "break-even: calls until compiling has paid" in " ".join(terminal.summary(View(lm + vision), 100).split())
