import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = Path(__file__).resolve().parent / "plugins"

# The fault models and backends register in this process and in every worker process it starts.
os.environ["COMPILEBENCH_PLUGINS"] = "compilebench_faults"
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
sys.path[:0] = [str(PLUGINS)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def run_cli(*args, cwd, timeout=600, **kwargs) -> subprocess.CompletedProcess:
    """compilebench as a user runs it: a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "compilebench", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs,
    )


@pytest.fixture
def cli(tmp_path):
    return lambda *args, **kw: run_cli(*args, cwd=tmp_path, **kw)
