"""The tree shows the architecture (issue 38): the layers are import-linter contracts (pyproject.toml), checked here
by `lint-imports` on the code and shown to catch an upward import; what a contract cannot say is read from the
source: the top of the package stays small, every module has one job (under 350 lines, no function over 60), each
subpackage says what it owns, and every speed-up a report shows comes from its view."""

import ast
import importlib
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "compilebench"
LAYERS = ("core", "kinds", "storage", "diagnostics", "measure", "run", "report", "tune", "cli", "zoo")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 350, 60


def lint_imports(src: pathlib.Path) -> subprocess.CompletedProcess:
    """import-linter on the package under `src`, with the project's contracts."""
    lint = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    assert lint, "lint-imports is not installed: pip install -e '.[test]'"
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run([lint, "--config", str(ROOT / "pyproject.toml"), "--no-cache"], cwd=src, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_layers_hold():
    out = lint_imports(ROOT / "src")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


def test_an_upward_import_breaks_the_layers(tmp_path):
    """A copy of the package where the results import the report (core -> report): lint-imports says so."""
    shutil.copytree(PACKAGE, tmp_path / "compilebench", ignore=shutil.ignore_patterns("__pycache__"))
    with open(tmp_path / "compilebench" / "core" / "result.py", "a") as f:
        f.write("\nfrom compilebench.report import view  # noqa: E402,F401\n")
    out = lint_imports(tmp_path)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "compilebench.core is not allowed to import compilebench.report" in out.stdout
    assert "compilebench.core.result -> compilebench.report.view" in out.stdout


def test_the_top_of_the_package_holds_the_entry_points_alone():
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "__main__.py", "api.py"]
    for layer in LAYERS:
        doc = ast.get_docstring(ast.parse((PACKAGE / layer / "__init__.py").read_text()))
        assert doc and len(doc.split()) > 20, f"{layer}/__init__.py says what it owns and may import"


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_module_has_one_job(path):
    text = path.read_text()
    lines = len(text.splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.name}: {lines} lines; split it along a seam"
    long = [f"{node.name} ({node.end_lineno - node.lineno + 1} lines)" for node in ast.walk(ast.parse(text))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]
    assert long == []


def test_every_speed_up_a_report_shows_comes_from_its_view():
    """The report's model is built once (report/view.py): no table, chart or CSV row computes a speed-up of its own
    (compare.py and check.py hold two files against each other, history.py each run's own pair over time: they share
    no view)."""
    callers = sorted(p.name for p in (PACKAGE / "report").glob("*.py") if "speedups.speedup(" in p.read_text())
    assert callers == ["check.py", "compare.py", "history.py", "view.py"]


@pytest.mark.parametrize("name", [".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
                                  for p in _modules() if p.name != "__main__.py"])
def test_every_module_imports(name):
    """What only a slow test or a real GPU would run (Ray, the launcher's child, the device probe) still imports: a
    name a module takes from another exists there."""
    importlib.import_module(name)
