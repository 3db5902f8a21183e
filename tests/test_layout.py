"""The tree reads one way (issue 16): no import cycle between compilebench's modules, the command line and the
Python API on top of everything, reports readable from results files alone, and workers that never touch the
results file. Imports are read from the source (function-level ones too), not from what happens to be loaded."""

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "compilebench"


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    path = SRC / name.replace(".", "/")
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def _imports(path: pathlib.Path) -> set[str]:
    """The compilebench modules a file imports: `from compilebench.x import y` is x.y where y is a module, else x."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "compilebench"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "compilebench":
            assert node.level == 0, f"{path}: relative import"
            for a in node.names:
                full = f"{node.module}.{a.name}"
                found.add(full if _is_module(full) else node.module)
    return found


GRAPH = {_module_name(p): _imports(p) - {_module_name(p)} for p in PACKAGE.rglob("*.py")}


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_graph_was_read():
    assert {"compilebench.run.sweep", "compilebench.cli.run", "compilebench.report.data", "compilebench.measure.worker"} <= set(GRAPH)
    assert "compilebench.storage.store" in GRAPH["compilebench.run.sweep"]


def test_no_module_imports_one_that_imports_it_back():
    done, path = set(), []

    def visit(module):
        if module in path:
            pytest.fail("import cycle: " + " -> ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for dep in sorted(GRAPH.get(module, ())):
            if dep != "compilebench":  # the package's lazy re-exports (its __getattr__) are not imports
                visit(dep)
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        visit(module)


@pytest.mark.parametrize("lower, upper", [
    ("compilebench", "compilebench.cli"),  # the command line is on top: nothing beneath imports it
    ("compilebench", "compilebench.api"),  # and so is the Python API (the package re-exports it lazily)
    ("compilebench.report", "compilebench.run.sweep"),  # reports come from results files alone
    ("compilebench.report", "compilebench.measure.worker"),
    ("compilebench.report", "compilebench.run.executors"),
    ("compilebench.measure.worker", "compilebench.storage.store"),  # workers measure; only the driver writes the results file
    ("compilebench.measure.forward", "compilebench.storage.store"),
    ("compilebench.measure.generation", "compilebench.storage.store"),
    ("compilebench.measure.timing", "compilebench.storage.store"),
    ("compilebench.zoo", "compilebench.run.sweep"),
    # the report is below everything that runs cases: it reads results files alone
    *(("compilebench.report", f"compilebench.{m}") for m in ("plan", "dispatch", "launcher", "ray_executor", "probe",
                                                             "locks", "tune", "api")),
    ("compilebench.tune", "compilebench.report"),  # tune takes its speed-ups and its best pick from comparison
    ("compilebench.core.speedups", "compilebench.report"),
    ("compilebench.core.speedups", "compilebench.tune"),
    ("compilebench.core.settings", "compilebench.core.spec"),  # a setting is declared below the case that holds it
    ("compilebench.core.vocab", "compilebench.core.stats"),  # the vocabulary is pure data and its own tests
])
def test_lower_layers_never_import_upper_ones(lower, upper):
    offenders = [(m, dep) for m, deps in GRAPH.items() if _under(m, lower) and not _under(m, upper)
                 and m not in ("compilebench", "compilebench.__main__") for dep in deps if _under(dep, upper)]
    assert offenders == [], offenders


def test_every_speed_up_a_report_shows_comes_from_its_view():
    """The report's model is built once (report/view.py): no table, chart or CSV row computes a speed-up of its own
    (compare.py and check.py hold two files against each other, which share no view)."""
    callers = sorted(p.name for p in (PACKAGE / "report").glob("*.py") if "speedups.speedup(" in p.read_text())
    assert callers == ["check.py", "compare.py", "view.py"]
