import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = Path(__file__).resolve().parent / "plugins"

# The fault models and backends register in this process and in every worker process it starts.
os.environ["COMPILEBENCH_PLUGINS"] = "compilebench_faults"
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
sys.path[:0] = [str(PLUGINS)]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Inductor's checks of this CPU's vector instructions (measure/cpu_checks) build and load a library per instruction
# set into the compiler's folder, which each case starts empty: 7 of a tiny ResNet-50's 24 s cold compile here, 1 s
# of its warm one. Told the base set is fine, inductor still checks AVX-512's bf16 and AMX (cpu_checks keeps timing
# something real); the end-to-end test in test_cli.py runs without this, as a user does.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")
# The tests' own device locks: a benchmark running on this machine neither waits for them nor they for it.
if "COMPILEBENCH_LOCK_DIR" not in os.environ:
    _LOCKS = os.environ["COMPILEBENCH_LOCK_DIR"] = tempfile.mkdtemp(prefix="compilebench-test-locks-")

    def pytest_sessionfinish(session, exitstatus):
        shutil.rmtree(_LOCKS, ignore_errors=True)  # a developer's /tmp does not gather one folder per session


def pytest_addoption(parser):
    parser.addoption(
        "--lock-per-worker", action="store_true",
        help="each xdist worker takes the device lock in a folder of its own, so two workers' runs time at once: "
             "for tests that read no measured time (the ones marked `alone` are refused)")


def pytest_configure(config):
    # Under one shared lock folder the slow tests' runs waited on each other (2026-11-28: 879 s on two workers where
    # one took 912; a folder per worker, 634 s where one took 841); what their overlap disturbs runs `alone`.
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        # Two workers' processes share the cores, and OpenMP's threads spin while they wait for work (libgomp's
        # default): each side's spinning took the cores the other's threads needed. The pipeline end-to-end test
        # beside test_cli's took 79 s, 28-32 s with waiting threads asleep (the pair 86-87 s to 51-65 s, alternated,
        # 2026-12-02). The tests marked `alone` run outside xdist with the library's default, as a user's runs do.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if config.getoption("lock_per_worker") and worker:
        os.environ["COMPILEBENCH_LOCK_DIR"] = os.path.join(os.environ["COMPILEBENCH_LOCK_DIR"], worker)
        os.makedirs(os.environ["COMPILEBENCH_LOCK_DIR"], exist_ok=True)


@pytest.hookimpl(trylast=True)  # after -m has deselected
def pytest_collection_modifyitems(config, items):
    alone = [item.nodeid for item in items if item.get_closest_marker("alone")]
    if config.getoption("lock_per_worker") and alone:
        raise pytest.UsageError(f"--lock-per-worker overlaps runs, and {alone[0]} needs the machine alone "
                                f"(leave it out: -m 'not alone')")


@pytest.fixture(autouse=True)
def _heap_frozen():
    """What this session imported and kept (over a million objects by the end) stays out of the garbage collector's
    passes: each timed loop measured in this process starts with a full collection (warmup.settled), which walked
    them all, 0.7 s a loop late in the session (148 s of the default selection's 400 s on 2 cores). gc.freeze is
    a constant-time move; a process that froze its heap keeps it frozen through a timed loop."""
    import gc

    gc.freeze()
    yield


def stored(db) -> list[dict]:
    """Every result a results file holds, oldest first, as Result.export gives it: as stored (its case, identity and
    repeats), with what it derives beside (status, stats, flops, ...), its environment and its runs' facts."""
    from compilebench.storage.store import Store

    with Store.open(str(db), create=False, write=False) as store:
        return [r.export() for r in store.results()]


def run_cli(*args, cwd, timeout=600, **kwargs) -> subprocess.CompletedProcess:
    """compilebench as a user runs it: a separate process."""
    return subprocess.run(
        [sys.executable, "-m", "compilebench", *map(str, args)],
        cwd=cwd, capture_output=True, text=True, timeout=timeout, **kwargs,
    )


@pytest.fixture
def cli(tmp_path):
    return lambda *args, **kw: run_cli(*args, cwd=tmp_path, **kw)


@pytest.fixture
def main_here(tmp_path, monkeypatch, capsys):
    """compilebench's entry point called in this process, in tmp_path: (exit code, stdout, stderr). For the many
    bad-input checks, which stop before any worker starts; a subprocess would spend seconds importing torch."""
    from compilebench import cli

    monkeypatch.chdir(tmp_path)

    def call(*args):
        try:
            code = cli.main(list(map(str, args)))
        except SystemExit as exc:  # argparse's own errors exit
            code = exc.code
        out, err = capsys.readouterr()
        return code, out, err

    return call


@pytest.fixture
def here(main_here):
    """main_here, its outcome read as a finished process's (returncode, stdout, stderr): for the commands that read
    results files alone (report, compare, check), where a process of their own spent a second or more a call importing
    what this one has."""
    return lambda *args: subprocess.CompletedProcess(args, *main_here(*args))


@pytest.fixture
def former_reading(monkeypatch):
    """Results read by the rules they were written under before issue 62: each process's mean as its figure, each
    look's confidence by the union bound over the looks' shares of 5%, two groups of processes called at a gap 3x
    their spread whatever their count, and a text-generation case's verdict (its undecided line, the suite's summary)
    read from whole generate() calls where its table read per token (the files read under it quantized nothing, whose
    table read per token already). Under it a file written before reports as it did then, which shows that nothing
    else changed."""
    import math as _math

    from compilebench.core import generation, sequential, stats

    def union_bound(design):
        fractions = [n / design[-1] for n in design]
        return tuple(1 - (sequential.spent(t) - (sequential.spent(b) if b else 0.0))
                     for b, t in zip([0.0, *fractions], fractions))

    monkeypatch.setattr(stats, "per_process", lambda samples: _math.fsum(samples) / len(samples))  # to the last bit
    monkeypatch.setattr(sequential, "look_confidences", union_bound)
    monkeypatch.setattr(stats, "NOISE_RATIO", {})
    monkeypatch.setattr(generation, "verdict_metric", lambda case: None)



@pytest.fixture(autouse=True)
def _publish_salt(tmp_path_factory, monkeypatch):
    """`compilebench publish` keeps its salt in the user's config folder: a test's is its own."""
    monkeypatch.setenv("COMPILEBENCH_PUBLISH_SALT", str(tmp_path_factory.getbasetemp() / "publish-salt"))
