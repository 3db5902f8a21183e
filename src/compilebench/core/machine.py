"""Which machine a result comes from, in the words a report and resume use: the guide's hardware heading and the
machine id (host, device, torch and transformers) that resume matches. Pure: both read a fingerprint
(measure/fingerprint.py collects it)."""

from __future__ import annotations

import re


def hardware_name(env: dict) -> str:
    """The guide's hardware heading: 'A100', 'H100', or 'CPU (AMD EPYC 7B13, 2 threads)'."""
    if not str(env.get("device", "cpu")).startswith("cuda"):
        return f"CPU ({env.get('cpu')}, {env.get('torch_threads')} threads)"
    name = str(env.get("device_name") or "GPU")
    m = re.search(r"\b([A-Z]{1,3}\d{1,4}[A-Z]?)\b", name.replace("NVIDIA ", ""))
    return m.group(1) if m else name


def machine_id(env: dict) -> str:
    """Which machine and software produced a result: resume skips only cases finished here."""
    return f"{env['hostname']}|{env['device_name']}|torch {env['torch']}|transformers {env['transformers']}"
