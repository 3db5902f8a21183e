"""The words every part of compilebench shares, each declared once: what happened to a case (status), what may
be wrong with its conditions (flags, each with its remedy) and how a comparison reads (verdicts). Pure data."""

from __future__ import annotations

# ok: measured. oom: ran out of (device or host) memory, as the guide's "OOM" cells. error: raised.
# invalid: measured, but something (a recompile in the timed loop) voids the number.
# mismatch: measured, but the compiled model's output is outside tolerance of eager's: kept, never recommended.
# timeout: killed after --timeout. crashed: the worker process died (signal or exit without a result).
STATUSES = ("ok", "oom", "error", "invalid", "mismatch", "timeout", "crashed")
MEASURED = ("ok", "invalid", "mismatch")  # timed to the end: their samples are real, even where the number is voided
FAILED = ("oom", "error", "timeout", "crashed")  # no number at all
RETRIED = ("crashed", "timeout")  # tried again on resume by default: the machine, not the case, may be at fault
RETRIED_ON_REQUEST = ("error", "oom")  # tried again with --retry-failed
# When repeats disagree, the case shows the most telling status: a failure before a voided number before ok.
SEVERITY = ("crashed", "timeout", "error", "oom", "invalid", "mismatch", "ok")

# The sum of a pipelined loop's CUDA event times over its host wall time, outside which the clock is suspect.
CLOCK_LOW = 0.8  # lower: a fifth of the loop's time is in no event pair
CLOCK_HIGH = 1.05  # higher: the events overlap, or measure another device's time

# Conditions a result was measured in that make its number less trustworthy, each with what to do about it.
FLAGS = {
    "noisy": "within one process the calls vary by more than 10% (CV): close other programs, pin the clocks "
             "(GPU: `nvidia-smi -lgc`), raise --iters or --max-time, or use --interleave so drift hits the "
             "variants alike",
    "busy": "other processes used the CPU while the timed loop ran: stop them (or run on a quiet machine) and "
            "measure again with --rerun",
    "throttled": "the GPU slowed its clocks for heat or a hardware slowdown while the timed loop ran (a power cap "
                 "is recorded, not flagged: it is how a GPU runs at full power): cool it, check `nvidia-smi -q -d "
                 "PERFORMANCE`, and measure again with --rerun",
    "clock": f"the timed loop's CUDA event times add up to less than {CLOCK_LOW:.0%} or more than {CLOCK_HIGH:.0%} of "
             "its wall time: the events did not time the model's work on its stream, or the host could not keep the GPU busy; measure "
             "with --sync-each-call (each call timed to completion), and report it if the ratio stays off",
    "cudagraphs-skipped": "a CUDA-graph mode recorded no CUDA graph (the reason inductor gave is in the details), so "
                          "it ran as plain compile: fix the reason (often inputs the graph mutates) or compare it as "
                          "`default`",
}

# How a speed-up reads against the smallest effect worth acting on (--min-effect).
VERDICTS = {
    "faster": "the whole 95% interval of the speed-up lies above the minimum effect",
    "slower": "the whole 95% interval of the speed-up lies below the minimum effect",
    "same": "the whole 95% interval lies inside the minimum effect either way: no difference worth acting on",
    "inconclusive": "the interval reaches across the minimum effect: add repeats (run the same command with a larger "
                    "--repeats: the stored ones are kept), use --interleave, or measure on a quieter machine",
}
