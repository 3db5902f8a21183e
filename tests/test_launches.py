"""How a GPU model's calls cost the host (measure/launches.py): the launches' CPU time per call, recorded where the
clock can tell it, and the Triton kernels by launcher, read from the very objects inductor keeps (torch's own
classes: a CPU build holds them)."""

import types

from compilebench.core.repeat import Repeat
from compilebench.measure import launches, recording, timing, warmup


def test_the_launches_cpu_time_per_call_is_recorded_only_where_the_loop_ran_pipelined_on_cuda_events():
    m = timing.Measurement(0, warmup.WarmUp(0, 0, warmup.FIXED), 4, 1, [1_000_000] * 4, 4_000_000, False, None,
                           loop_cpu_ns=3_600_000)
    cuda = Repeat()
    recording.record(cuda, m, timing.CudaClock("cuda:0"), sync_each_call=False, alone=True)
    assert cuda.launch_cpu_ms == 0.9
    for clock, synced in ((timing.HostClock(), False), (timing.CudaClock("cuda:0"), True)):
        other = Repeat()  # a CPU model's thread is its compute; a synchronized call's thread time holds its wait
        recording.record(other, m, clock, sync_each_call=synced, alone=True)
        assert other.launch_cpu_ms is None
    assert launches.launch_cpu_ms(None, 4) is None and launches.launch_cpu_ms(10, 0) is None


def test_triton_kernels_are_counted_by_launcher_over_every_module_inductor_loaded(monkeypatch):
    from torch._inductor import codecache
    from torch._inductor.runtime import static_triton_launcher, triton_heuristics

    def launcher(runner, marked=False):
        scope = {"runner": runner}
        exec("def launcher(stream):\n    runner(stream)\n", scope)
        if marked:
            scope["launcher"]._is_static = True
        return scope["launcher"]

    def autotuner(*made):
        tuner = object.__new__(triton_heuristics.CachingAutotuner)  # the class inductor's output code holds
        tuner.launchers = list(made)
        return tuner

    static_kernel = object.__new__(static_triton_launcher.StaticallyLaunchedCudaKernel)
    graph = types.ModuleType("graph")
    graph.triton_poi_fused_0 = autotuner(launcher(print, marked=True))
    graph.triton_poi_fused_1 = autotuner(launcher(static_kernel.run))  # a torch that does not mark them
    graph.triton_red_fused_2 = autotuner(launcher(print))  # Triton's own launcher
    graph.not_a_kernel = 3
    monkeypatch.setattr(codecache.PyCodeCache, "modules", [graph, types.ModuleType("cpp_graph")])
    assert launches.triton_launchers() == {"static": 2, "triton": 1}
    from compilebench.core.case import Case
    from compilebench.core.variant import Variant
    from compilebench.measure import compiler, invariants

    stats = compiler.CompileStats(compile_s=11.1, graphs=1, cache_hits=0, graph_breaks=0)
    for device, expected in (("cuda:0", {"static": 2, "triton": 1}), ("cpu", {})):
        rep = Repeat(compile_cache="cold")  # a compiled case records them where its kernels are Triton's: on a GPU
        recording.record_compile(rep, stats, 0, invariants.CudaGraphs(), Case("resnet-50", 1, Variant("default"),
                                                                                 device=device))
        assert rep.triton_launchers.to_dict() == expected
    monkeypatch.setattr(codecache.PyCodeCache, "modules", [])
    assert launches.triton_launchers() == {}


def test_a_case_keeps_the_process_that_launched_most_through_triton():
    from compilebench.core.repeat import most_through_triton
    from compilebench.core.why import Launchers

    worst = Launchers(static=20, triton=40)
    assert most_through_triton([Launchers(static=60), worst, Launchers()], [], Launchers()) is worst
    assert most_through_triton([], [], Launchers()) == Launchers() and worst.total == 60


def test_a_case_whose_kernels_went_through_tritons_launcher_says_so_in_the_details():
    from compilebench.core.case import Case
    from compilebench.core.environment import Environment
    from compilebench.core.result import Result
    from compilebench.core.variant import Variant
    from compilebench.report import details
    from compilebench.report.view import View

    def result(*launched):
        reps = []
        for counts in launched:
            rep = Repeat.from_dict({"triton_launchers": counts, "launch_cpu_ms": 2.9})
            rep.set_samples([3_000_000] * 3)
            rep.environment = Environment(device="cuda:0", torch="2.11")
            reps.append(rep)
        return Result(Case("resnet-50", 1, Variant("default"), device="cuda:0"), reps, machine_id="m")

    mixed = result({"static": 60}, {"static": 44, "triton": 16})
    assert mixed.triton_launchers.to_dict() == {"static": 44, "triton": 16} and mixed.launch_cpu_ms == 2.9
    notes = details.details_table(View([mixed])).notes
    said = notes.index(next(n for n in notes if n.startswith("Triton kernels launched through Triton's own")))
    assert notes[said + 1] == "- resnet-50 b1 compile: 16 of 60"
    assert not any("Triton's own" in n for n in details.details_table(View([result({"static": 60})])).notes)
