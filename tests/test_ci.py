"""The README's test command is what CI runs, and its slow steps keep what needs the machine alone out of the step
whose runs overlap (tests/conftest.py: --lock-per-worker, the `alone` marker)."""

import ast
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _marks(decorators) -> set[str]:
    """The pytest marks among decorators (or a pytestmark value): 'slow' for pytest.mark.slow, and so on."""
    names = set()
    for d in decorators:
        for node in ast.walk(d):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr == "mark":
                names.add(node.attr)
    return names


def test_the_readmes_test_command_runs_the_pytest_steps_ci_runs():
    readme = (ROOT / "README.md").read_text()
    (command,) = [line for line in readme.splitlines() if line.startswith("apt-get") and "pytest" in line]
    said = [part.strip() for part in command.split("&&") if "pytest" in part]
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines() if line.startswith("python -m pytest")]
    assert said == ci and len(ci) == 3, (said, ci)


def test_every_test_marked_alone_is_slow_so_no_step_on_two_workers_runs_it():
    alone, slow = [], []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text())
        module = set().union(*[_marks([n.value]) for n in tree.body if isinstance(n, ast.Assign)
                               and any(getattr(t, "id", None) == "pytestmark" for t in n.targets)])
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                marks = module | _marks(node.decorator_list)
                if "alone" in marks:
                    alone.append(node.name)
                    slow += ["slow" in marks]
    assert len(alone) >= 3 and all(slow), alone  # the gate, the runs compared across files, the headers' folder


def test_lock_per_worker_refuses_a_test_that_needs_the_machine_alone():
    p = subprocess.run([sys.executable, "-m", "pytest", "tests/test_drift.py", "-m", "alone", "--lock-per-worker",
                        "--collect-only", "-q", "-p", "no:cacheprovider"], cwd=ROOT, capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 4, p.stdout + p.stderr  # pytest's usage error
    assert re.search(r"--lock-per-worker overlaps runs, and tests/test_drift\.py::\w+ needs the machine alone",
                     p.stderr), p.stderr
