"""The files a run keeps beside its results file (RESULTS.traces/): --profile's Chrome traces and --compile-trace's
TORCH_TRACE logs, with the HTML `tlparse` makes of a log when it is installed. One name per case and repeat, so a
later run of the same file adds to the folder without overwriting what an earlier one kept."""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import subprocess
import sys

TLPARSE_HINT = "pip install tlparse"
TLPARSE_TIMEOUT_S = 300


def folder(results_path: str) -> str:
    stem, _ = os.path.splitext(os.path.abspath(results_path))
    return stem + ".traces"


def name(case, repeat: int) -> str:
    """A readable, unique file stem for one repeat of one case: model, batch, variant and a hash of its key."""
    digest = hashlib.sha1(case.key().encode()).hexdigest()[:8]
    model = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in case.model.rsplit("/", 1)[-1])
    return f"{model}-b{case.batch_size}-{case.variant.name}-{digest}-r{repeat}"


def profile_path(where: str, case, repeat: int) -> str:
    return os.path.join(where, name(case, repeat) + ".profile.json")


def compile_trace_dir(where: str, case, repeat: int) -> str:
    return os.path.join(where, name(case, repeat) + ".torch_trace")


@contextlib.contextmanager
def compile_trace(trace_dir: str):
    """This process's TORCH_TRACE structured log into trace_dir while the block runs, then back as it was (a case
    run inline must not trace the next one). torch sets its trace handler up when it is imported: a worker forked
    from a launcher that imported it sets it up again here."""
    import torch._logging._internal as logs

    os.makedirs(trace_dir, exist_ok=True)
    before = os.environ.get(logs.TRACE_ENV_VAR)
    _trace_into(logs, trace_dir)
    try:
        yield
    finally:
        _trace_into(logs, before)


def _trace_into(logs, trace_dir: str | None) -> None:
    if trace_dir is None:
        os.environ.pop(logs.TRACE_ENV_VAR, None)
    else:
        os.environ[logs.TRACE_ENV_VAR] = trace_dir
    if logs.LOG_TRACE_HANDLER is not None:
        logs.trace_log.removeHandler(logs.LOG_TRACE_HANDLER)
        logs.LOG_TRACE_HANDLER.close()
        logs.LOG_TRACE_HANDLER = None
    logs._init_logs()


def render(trace_dir: str) -> dict:
    """The HTML tlparse makes of a compile trace (trace_dir/tlparse/index.html), or why there is none. Run by the
    driver after every measurement is done: tlparse must not share the machine with a timed loop."""
    logs = sorted(glob.glob(os.path.join(trace_dir, "*.log")))
    if not logs:
        return {"html": None, "why_not": "the compile wrote no trace (nothing was compiled in this process)"}
    tlparse = shutil.which("tlparse") or shutil.which("tlparse", path=os.path.dirname(sys.executable))
    if tlparse is None:
        return {"html": None, "why_not": f"tlparse is not installed ({TLPARSE_HINT})"}
    out = os.path.join(trace_dir, "tlparse")
    try:
        done = subprocess.run([tlparse, logs[-1], "-o", out, "--overwrite", "--no-browser"], capture_output=True,
                              text=True, timeout=TLPARSE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"html": None, "why_not": f"tlparse failed: {exc}"}
    html = os.path.join(out, "index.html")
    if done.returncode != 0 or not os.path.exists(html):
        last = (done.stderr.strip().splitlines() or ["no output"])[0]
        return {"html": None, "why_not": f"tlparse exited {done.returncode}: {last}"}
    return {"html": html, "why_not": None}
