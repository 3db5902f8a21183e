"""Text-to-image pipelines in the report: per table (hardware and batch size), each pipeline's image under every
variant measured, with its steps, the image's time, the steps it makes per second, its speed-up over eager, its
cold compile and its peak memory. A pipeline's image is one call: the guide's tables hold it too, this one says it
in a pipeline's terms."""

from __future__ import annotations

from compilebench.report.cells import Table, cell, compile_note, compile_s, ratio_said
from compilebench.report.view import Group, View


def tables(view: View) -> list[Table]:
    """One table per group that holds a pipeline's images; none where no run measured one."""
    out = [t for g in view.groups if (t := _table(g, view.compile_drift.value)) is not None]
    if out:
        out[-1].notes += [NOTE, compile_note(view.compile_drift)]
    return out


def _table(g: Group, spread: float) -> Table | None:
    header = ["pipeline", "variant", "steps", "image ms", "steps/s", "decoder share", "vs eager", "compile s",
              "peak memory MiB"]  # the unit of every other table's and check's (it read MiB under "MB")
    rows = []
    for m in g.models:
        for c in g.columns:
            r = g.result(m, c)
            if r is None or r.case.steps is None:
                continue
            # three significant digits: a slow machine's 0.935 steps/s is not "0.9"
            per_s = f"{r.case.steps / (r.stats.mean / 1e3):.3g}" if r.status == "ok" and r.stats.mean else ""
            rows.append([g.label(m), c.variant.label, str(r.case.steps), cell(r), per_s,
                         f"{r.decoder_share:.0%}" if r.decoder_share is not None else "",
                         ratio_said(g.speedup(m, c)) if c.variant.compiled else "",
                         compile_s(r, spread, cold_only=True),
                         f"{r.peak_mem_bytes / 2**20:,.0f}" if r.peak_mem_bytes else ""])
    return Table(g.title, header, rows) if rows else None


NOTE = ("A text-to-image pipeline's call is one image end to end: every denoiser step with its guidance, the "
        "scheduler and the decoder; steps/s counts the denoiser's steps over the image's time (the decoder's time "
        "included); decoder share: the part of an image's time after its last step (the decoder's and the image's "
        "post-processing), from three images timed step by step to the device's end after the timed loop. Compiled "
        "variants compile the denoiser alone (regional: its repeated blocks; --compile-decoder: its decoder too); "
        "compile s is the cold compile of a repeat that started from an empty compiler state.")
