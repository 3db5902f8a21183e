"""What leaves the machine (issue 65): results as `compilebench publish` writes them, with nothing that names the
machine or the person who ran them unless asked. Every string of every result and run is read (so a hostname in a
traceback or a path in a command is found wherever it is):

- a hostname (the machines' and the driver's) becomes a machine key, `machine-` and 12 hex digits of a salted hash:
  the same machine gets the same key every time one publisher publishes (so history, drift and `compare` still tell
  machines apart), and nobody learns its name from it; the salt is kept in the publisher's config folder, never
  published;
- a GPU's UUID (GPU-..., MIG-...) becomes `gpu-` and its salted hash;
- an absolute path is shown relative to what it is under: a package's own path from its site-packages (or the
  Python library), `./` under the working directory, `~/` under a home folder (anyone's), else `.../` and its name;
- a `NAME=value` whose NAME looks like an environment variable keeps its value only where the run set it itself
  (`--env-set`); a token of a known shape (hf_..., ghp_..., github_pat_..., sk-..., AKIA...) is redacted anywhere.

The local results file keeps everything. `--keep-identifying` publishes as measured, and the card says so; the card
always says which fields were removed or replaced."""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass

from compilebench.core.result import Result
from compilebench.core.run import Run

SALT_ENV = "COMPILEBENCH_PUBLISH_SALT"  # a file holding the salt, instead of the config folder's
UUID = re.compile(r"\b(?:GPU|MIG)-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}\b"
                  r"|\b(?:GPU|MIG)-[0-9A-Fa-f]{8,}\b")
PATH = re.compile(r"(?<![\w.~:/-])/(?:[^\s\"'`,;:()\[\]{}<>|=]+)")
HOME = re.compile(r"^/(?:home|Users)/[^/]+|^/root(?=/|$)")  # anyone's home folder, whoever publishes
ANCHORS = (re.compile(r"/(?:site-packages|dist-packages)/"), re.compile(r"/lib/python\d+(?:\.\d+)?/"))
ASSIGNED = re.compile(r"\b([A-Z][A-Z0-9_]{2,})=([^\s\"',;]+)")
TOKENS = re.compile(r"\b(?:hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|"
                    r"sk-[A-Za-z0-9_-]{20,}|xox[abposr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b")
REDACTED = "<redacted>"
# What the card says was replaced or removed, field by field.
FIELDS = ("hostnames (env_hostname, machine_id, each run's host): a salted machine key, the same for one publisher's "
          "machine in every publish",
          "GPU UUIDs (env_gpu_uuid, CUDA_VISIBLE_DEVICES, MIG instances): a salted key",
          "absolute paths (tracebacks, commands, interpreters, checkpoints): relative to their package, the working "
          "directory or ~",
          "environment variables' values in messages and commands, but those the run set itself (--env-set), and "
          "anything shaped like a token: redacted")


@dataclass(frozen=True)
class Scrubbed:
    """What a publish did to its results: replaced and removed (kept: published as measured)."""

    kept: bool
    machines: int = 0  # hostnames replaced by keys
    gpus: int = 0

    def card(self) -> list[str]:
        """The card's lines on what was removed or replaced."""
        if self.kept:
            return ["## What identifies the machines", "", "Published with `--keep-identifying`: hostnames, GPU "
                    "UUIDs, absolute paths and the messages' environment variables are as measured. Keep this "
                    "dataset private.", ""]
        return ["## What identifies the machines", "",
                f"Replaced or removed before publishing ({self.machines} machine(s), {self.gpus} GPU(s)):", "",
                *[f"- {f}" for f in FIELDS], ""]


def scrub(results: list[Result], runs: list[tuple[str, Run]], keep: bool = False,
          salt_path: str | None = None) -> tuple[list[Result], list[tuple[str, Run]], Scrubbed]:
    """Copies of the results and runs with what identifies the machine or person replaced (above); as they are where
    `keep`."""
    if keep:
        return results, runs, Scrubbed(kept=True)
    salt = _salt(salt_path or os.environ.get(SALT_ENV) or _salt_path())
    hosts = sorted({h for r in results for e in r.environments + [r.env] if (h := e.hostname)}
                   | {run.host for r in results for run in r.runs if run.host}
                   | {run.host for _, run in runs if run.host} | {_host_of(r.machine_id) for r in results} - {""},
                   key=len, reverse=True)  # the longest first: a name inside another is replaced after it
    set_by_runs = {name for run in [run for _, run in runs] + [run for r in results for run in r.runs]
                   for name in _set_names(run)}
    clean = _Cleaner(salt, hosts, set_by_runs)
    out_runs, by_id = [], {}
    for where, run in runs:
        by_id[run.run_id] = Run.from_dict(clean.walk(run.to_dict()))
        out_runs.append((where, by_id[run.run_id]))
    out = []
    for r in results:
        own = tuple(by_id.get(run.run_id) or Run.from_dict(clean.walk(run.to_dict())) for run in r.runs)
        out.append(Result.from_dict(clean.walk(r.to_dict()), own))
    return out, out_runs, Scrubbed(kept=False, machines=len(hosts), gpus=len(clean.gpus))


def _host_of(machine_id: str) -> str:
    return (machine_id or "").split("|", 1)[0]


def _set_names(run: Run) -> set[str]:
    """The variables a run set itself (--env-set): their values are its own settings, kept."""
    return {k for e in (run.spec or {}).get("environments") or [] for k in (e.get("set") or {})}


class _Cleaner:
    def __init__(self, salt: str, hosts: list[str], kept_names: set[str]):
        self.salt, self.kept_names, self.gpus = salt, kept_names, set()
        self.hosts = [(re.compile(r"(?<![\w.-])" + re.escape(h) + r"(?![\w-]|\.\w)"), self.key("machine", h))
                      for h in hosts]
        self.cwd, self.home = os.getcwd(), os.path.expanduser("~")

    def key(self, kind: str, name: str) -> str:
        return f"{kind}-{hashlib.sha256(f'{self.salt}|{name}'.encode()).hexdigest()[:12]}"

    def walk(self, value):
        if isinstance(value, dict):
            return {k: self.walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.walk(v) for v in value]
        return self.text(value) if isinstance(value, str) else value

    def text(self, s: str) -> str:
        s = TOKENS.sub(REDACTED, s)
        s = UUID.sub(self._gpu, s)
        s = ASSIGNED.sub(lambda m: m.group(0) if m.group(1) in self.kept_names else f"{m.group(1)}={REDACTED}", s)
        s = PATH.sub(lambda m: self.path(m.group(0)), s)
        for pattern, key in self.hosts:
            s = pattern.sub(key, s)
        return s

    def _gpu(self, m: re.Match) -> str:
        self.gpus.add(m.group(0))
        return self.key("gpu", m.group(0))

    def path(self, p: str) -> str:
        """An absolute path relative to what it is under (the module docstring); a bare / stays."""
        ends = [m.end() for pattern in ANCHORS for m in pattern.finditer(p)]
        if ends:  # the last: a venv's site-packages inside another's path, below its Python library
            return p[max(ends):] or "."
        for root, shown in ((self.cwd, "."), (self.home, "~")):
            if root not in ("", "/") and (p == root or p.startswith(root + "/")):
                return shown + p[len(root):]
        if HOME.match(p):
            return HOME.sub("~", p)
        return ".../" + os.path.basename(p.rstrip("/")) if p.strip("/") else p


def _salt(path: str) -> str:
    """This publisher's salt: read from its file, or made once (random) and kept there, readable by its owner alone."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    salt = secrets.token_hex(16)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(salt + "\n")
    return salt


def _salt_path() -> str:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "compilebench", "publish-salt")

