"""Environments side by side in one run (`--env NAME=PATH`, `--env-set NAME KEY=VALUE`): each names a Python
interpreter (a virtual environment's, say, with another torch) and the variables its workers get. Every case is
measured under every environment, its repeats alternating between them, so drift over the run falls on all alike
and the speed-up between two environments is as decisive as one between two variants.

The workers of an environment run this compilebench's own code (put first on their PYTHONPATH through a private
folder holding only it), so driver and worker always speak the same protocol, with the environment's torch,
transformers and triton. An environment that cannot run the worker is refused before anything runs, by
`probe`, which also reads its fingerprint."""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile

from compilebench.core.errors import UserError
from compilebench.core.interpreter import Interpreter

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Variables compilebench sets for its workers itself: an environment may not change them.
RESERVED = {"PYTHONPATH": "compilebench puts its own code there for the workers",
            "CUDA_VISIBLE_DEVICES": "the device is chosen with --device or --gpus"}
MIN_PYTHON = (3, 10)
MIN_VERSIONS = {"torch": "2.4", "transformers": "4.45"}  # as pyproject.toml asks
PROBE_TIMEOUT_S = 300.0  # importing torch and transformers from a cold disk


def variables(environment: Interpreter) -> dict[str, str]:
    """What a process of this environment gets on top of the driver's environment: its variables, and this
    compilebench first on its PYTHONPATH."""
    inherited = os.environ.get("PYTHONPATH")
    return {**dict(environment.set), "PYTHONPATH": os.pathsep.join(filter(None, (own_code(), inherited)))}


def declare(envs: list[str], sets: list[list[str]]) -> tuple[Interpreter, ...]:
    """`--env NAME=PATH` (each) and `--env-set NAME KEY=VALUE` (each) as Environments, in the order given."""
    paths: dict[str, str] = {}
    for text in envs:
        name, eq, path = text.partition("=")
        if not eq or not path:
            raise UserError(f"--env {text!r}: expected NAME=PATH, PATH a Python interpreter or a virtual environment's folder")
        if not NAME.fullmatch(name):
            raise UserError(f"--env {text!r}: a name is 1-40 letters, digits, '.', '_' or '-', starting with a letter or digit")
        if name in paths:
            raise UserError(f"--env {name}: named twice; give each environment a name of its own")
        paths[name] = interpreter(name, path)
    variables: dict[str, dict[str, str]] = {name: {} for name in paths}
    for name, assignment in sets:
        if name not in paths:
            allowed = ", ".join(paths) or "none: declare one with --env NAME=PATH first"
            raise UserError(f"--env-set {name} {assignment}: no environment {name!r} (declared: {allowed})")
        key, eq, value = assignment.partition("=")
        if not eq or not VARIABLE.fullmatch(key):
            raise UserError(f"--env-set {name} {assignment!r}: expected KEY=VALUE, KEY a variable name such as OMP_NUM_THREADS")
        if key in RESERVED:
            raise UserError(f"--env-set {name} {key}: not allowed ({RESERVED[key]})")
        if key in variables[name]:
            raise UserError(f"--env-set {name} {key}: set twice; give it once")
        variables[name][key] = value
    return tuple(Interpreter(n, p, tuple(sorted(variables[n].items()))) for n, p in paths.items())


def interpreter(name: str, path: str) -> str:
    """The interpreter a PATH names: the file itself, a virtual environment's bin/python, or a command on PATH."""
    if os.path.isdir(path):
        for candidate in ("bin/python", "bin/python3", "Scripts/python.exe"):
            if os.path.isfile(os.path.join(path, candidate)):
                return os.path.abspath(os.path.join(path, candidate))
        raise UserError(f"--env {name}={path}: a folder without bin/python; give a Python interpreter or a virtual "
                        "environment's folder")
    if os.path.isfile(path):
        if not os.access(path, os.X_OK):
            raise UserError(f"--env {name}={path}: not executable; give a Python interpreter or a virtual environment's folder")
        return os.path.abspath(path)
    found = shutil.which(path) if os.sep not in path else None
    if found:
        return os.path.abspath(found)
    raise UserError(f"--env {name}={path}: no such file or folder; give a Python interpreter or a virtual environment's folder")


_own_code: list[str] = []


def own_code() -> str:
    """A private folder holding only a link to this compilebench package: first on a worker's PYTHONPATH, it brings
    this compilebench and nothing else of the driver's (its site-packages hold the driver's torch)."""
    if not _own_code:
        folder = tempfile.mkdtemp(prefix="compilebench-code-")
        os.symlink(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), os.path.join(folder, "compilebench"))
        atexit.register(shutil.rmtree, folder, True)
        _own_code.append(folder)
    return _own_code[0]


# Run by the environment's interpreter: old Pythons must be able to read it, so it reports its version before it
# imports anything of compilebench's.
_PROBE = r"""
import json, sys
out = {"python": "%d.%d.%d" % sys.version_info[:3], "executable": sys.executable}
if sys.version_info[:2] >= MIN_PYTHON:
    for module in ("torch", "transformers"):
        try:
            out[module] = __import__(module).__version__
        except Exception as exc:
            out["missing"], out["why"] = module, "%s: %s" % (type(exc).__name__, exc)
            break
    else:
        try:
            import compilebench.measure.worker, compilebench.measure.forward, compilebench.measure.generation, compilebench.zoo
        except ImportError as exc:
            out["missing"], out["why"] = exc.name or "?", "%s: %s" % (type(exc).__name__, exc)
        except Exception as exc:
            out["missing"], out["why"] = "compilebench", "%s: %s" % (type(exc).__name__, exc)
    from importlib.metadata import version  # as the worker's fingerprint reads them (envinfo.collect)
    for key, packages in (("transformers", ("transformers",)), ("triton", ("triton", "pytorch-triton"))):
        for package in packages:
            try:
                out[key] = version(package)
                break
            except Exception:
                pass
print("\n" + json.dumps(out))
""".replace("MIN_PYTHON", repr(MIN_PYTHON))

PIP_NAMES = {"PIL": "pillow", "yaml": "pyyaml", "sklearn": "scikit-learn"}


def probe(environments: tuple[Interpreter, ...]) -> dict[str, dict]:
    """Each environment's fingerprint (python, torch, transformers, triton), all asked at once; a UserError for the
    first that cannot run compilebench's worker, naming what it lacks and how to install it."""
    started = {e.name: subprocess.Popen([e.python, "-c", _PROBE], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env={**os.environ, **variables(e)})
               for e in environments}
    found = {}
    try:
        for e in environments:
            try:
                out, err = started[e.name].communicate(timeout=PROBE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                raise UserError(f"--env {e.name}={e.python}: did not answer within {PROBE_TIMEOUT_S:g} s "
                                "(importing torch and transformers)") from None
            found[e.name] = refusal_or_fingerprint(e, started[e.name].returncode, out, err)
    finally:
        for proc in started.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return found


def refusal_or_fingerprint(e: Interpreter, returncode: int, out: str, err: str) -> dict:
    """What a probe said, as a fingerprint; a UserError where the environment cannot run the worker."""
    where = f"--env {e.name}={e.python}"
    try:
        answer = json.loads(out.strip().splitlines()[-1])
    except (IndexError, ValueError):
        last = (err.strip().splitlines() or [f"exit code {returncode}"])[-1]
        raise UserError(f"{where}: not a Python interpreter compilebench can use ({last})") from None
    version = tuple(int(x) for x in answer["python"].split(".")[:2])
    if version < MIN_PYTHON:
        raise UserError(f"{where}: Python {answer['python']} is too old for compilebench's worker (it needs "
                        f"{'.'.join(map(str, MIN_PYTHON))} or newer)")
    if "missing" in answer:
        module = answer["missing"].split(".")[0]
        package = PIP_NAMES.get(module, module)
        hint = ("install compilebench's requirements there: "
                f"{e.python} -m pip install 'torch>={MIN_VERSIONS['torch']}' 'transformers>={MIN_VERSIONS['transformers']}' "
                "pillow numpy scipy tqdm packaging" if module == "compilebench"
                else f"install it: {e.python} -m pip install {package}")
        raise UserError(f"{where}: cannot run compilebench's worker, {answer['why']} ({hint})")
    from packaging.version import InvalidVersion, Version

    for package, least in MIN_VERSIONS.items():
        try:
            old = Version(answer[package].split("+")[0]) < Version(least)
        except InvalidVersion:
            old = False  # a version packaging cannot read is a build of its own: let the worker say
        if old:
            raise UserError(f"{where}: {package} {answer[package]} is older than compilebench supports "
                            f"({least} or newer: {e.python} -m pip install -U '{package}>={least}')")
    return {k: answer.get(k) for k in ("python", "torch", "transformers", "triton")}
