"""A run's label where --tag gives none: COMPILEBENCH_TAG, else the git commit of the folder the run starts in (a
series read by commit), else none. Asked once per run, before anything is measured."""

from __future__ import annotations

import os
import subprocess

ENV = "COMPILEBENCH_TAG"


def default() -> str | None:
    given = os.environ.get(ENV, "").strip()
    if given:
        return given
    try:
        done = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):  # no git here: a run without a label
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None
