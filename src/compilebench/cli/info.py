"""`compilebench env` and `compilebench models`: what this machine is, and what the zoo holds."""

from __future__ import annotations

import json

from compilebench import zoo
from compilebench.cli import groups
from compilebench.run import devices


def cmd_env(args) -> int:
    env = devices.probe(args.device)["env"].shown()
    if args.json:
        print(json.dumps(env, indent=2))
    else:
        width = max(map(len, env))
        for k, v in env.items():
            print(f"{k:<{width}}  {v}")
    return 0


def cmd_models(args) -> int:
    """Every zoo model with its full-size parameter count (built on the meta device: no memory, no weights) and
    its inputs at batch 1: the shapes its processor gives for the shipped photo, its default prompt length, or a
    pipeline's latents and prompt embeddings and its steps."""
    import torch

    from compilebench.zoo.entry import default_image_path, load_image

    image = load_image(default_image_path())
    header = ("name", "label", "task", "checkpoint", "params", "inputs (batch 1)")
    rows = []
    for m in zoo.models():
        with torch.device("meta"):
            params = sum(p.numel() for p in m.build("random", "full").parameters())
        if m.kind == "generation":
            shapes = f"prompt {m.default_prompt_len} tokens"
        else:
            shapes = ", ".join(f"{k} {'x'.join(map(str, v.shape))}" for k, v in m.inputs(image, 1, "random", "full").items())
            if m.kind == "image":
                shapes += f"; {m.default_steps} step{'s' if m.default_steps != 1 else ''}"
        size = f"{params / 1e9:.2f}B" if params >= 1e9 else f"{params / 1e6:.2f}M"
        rows.append((m.name, m.label, m.task, m.checkpoint, size, shapes))
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
    return 0


def env_parser(sub):
    """`compilebench env`: its options."""
    env = sub.add_parser("env", help="print this machine's environment fingerprint")
    groups.device(env)
    env.add_argument("--json", action="store_true", help="print JSON")
    return env


def models_parser(sub):
    """`compilebench models`: no options."""
    return sub.add_parser("models", help="list the model zoo")
