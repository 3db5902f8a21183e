"""Checkpoints given by path (the from_pretrained path), offline operation, and bad model/task/image input."""

import sys
import textwrap

import pytest
import torch
from conftest import run_cli, stored

from compilebench import zoo
from compilebench.core.errors import UserError
from compilebench.zoo.hub import HubModel

GUARD = textwrap.dedent(
    """
    import os, socket

    def _refuse(*args, **kwargs):
        with open(os.environ["NETWORK_ATTEMPTS"], "a") as f:
            f.write(repr(args) + "\\n")
        raise OSError("network access attempted in an offline test")

    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.create_connection = _refuse
    """
)


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """Every Python process started from here (CLI and its workers) fails, and logs, any socket connect.
    HF_HUB_OFFLINE is deliberately not set: the guard alone must find nothing."""
    guard_dir = tmp_path / "guard"
    guard_dir.mkdir()
    (guard_dir / "sitecustomize.py").write_text(GUARD)
    attempts = tmp_path / "network-attempts.log"
    monkeypatch.setenv("PYTHONPATH", f"{guard_dir}:{__import__('os').environ['PYTHONPATH']}")
    monkeypatch.setenv("NETWORK_ATTEMPTS", str(attempts))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    return attempts


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny ResNet classifier and its processor, saved as a hub checkpoint would be."""
    path = tmp_path_factory.mktemp("ckpt") / "my-resnet"
    entry = zoo.get("resnet-50")
    torch.manual_seed(1)
    model = entry.build("random", "tiny")
    model.save_pretrained(path)
    entry.processor("random", "tiny").save_pretrained(path)
    return path, model.state_dict()


def test_the_guard_really_blocks_the_network(tmp_path, offline):
    import subprocess

    p = subprocess.run([sys.executable, "-c", "import socket; socket.create_connection(('127.0.0.1', 9))"],
                       capture_output=True, text=True)
    assert p.returncode != 0 and "offline test" in p.stderr
    assert offline.read_text()


@pytest.mark.slow  # real worker processes: CI's second step (the default selection stays under 4 minutes)
def test_random_weights_make_no_network_call(tmp_path, offline):
    p = run_cli("run", "--model", "owlvit", "--model", "detr", "--tiny", "--variant", "eager", "default",
                "--backend", "eager", "--iters", "2", "--warmup", "0", "--repeats", "1", "--device", "cpu", "--db",
                "r.db", "--quiet", "--format", "csv", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert [r["status"] for r in stored(tmp_path / "r.db")] == ["ok"] * 4
    assert not offline.exists(), offline.read_text()


def test_a_local_checkpoint_is_loaded_with_from_pretrained(checkpoint):
    path, saved = checkpoint
    entry = zoo.get(str(path))
    assert isinstance(entry, HubModel)
    assert entry.task == "image-classification" and entry.label == "Image Classification/my-resnet"
    loaded = entry.build("pretrained", "full").state_dict()
    assert loaded.keys() == saved.keys()
    assert all(torch.equal(loaded[k], saved[k]) for k in saved)


@pytest.mark.slow  # a new interpreter end to end (10 s): CI's second step keeps the default under 4 minutes
def test_run_with_pretrained_weights_from_a_local_directory(tmp_path, checkpoint, offline):
    path, _ = checkpoint
    p = run_cli("run", "--weights", "pretrained", "--model", path, "--variant", "eager", "default", "--backend", "eager",
                "--iters", "3", "--warmup", "0", "--repeats", "1", "--device", "cpu", "--db", "r.db", "--format", "csv",
                cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    results = stored(tmp_path / "r.db")
    assert [r["status"] for r in results] == ["ok", "ok"], [r.get("message") for r in results]
    assert all(r["case"]["weights"] == "pretrained" and r["label"] == "Image Classification/my-resnet" for r in results)
    assert any(line.startswith("my-resnet ") for line in p.stdout.splitlines()), p.stdout  # the summary's row
    assert not offline.exists()


def test_a_checkpoint_of_another_task_names_the_supported_tasks(tmp_path, main_here):
    from transformers import BertConfig

    BertConfig(hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8,
               architectures=["BertForMaskedLM"]).save_pretrained(tmp_path / "bert")
    code, _, err = main_here("run", "--model", tmp_path / "bert", "--device", "cpu", "--db", "r.db")
    assert code == 2 and err.count("\n") == 1
    assert "'BertForMaskedLM' is not a model compilebench measures" in err and "image-classification" in err
    assert not (tmp_path / "r.db").exists()


def test_an_unknown_task_is_refused(checkpoint):
    path, _ = checkpoint
    with pytest.raises(UserError, match="unknown task 'audio-classification'"):
        zoo.get(str(path), "audio-classification")


def test_tiny_is_refused_for_a_checkpoint(tmp_path, checkpoint, main_here):
    code, _, err = main_here("run", "--model", checkpoint[0], "--tiny", "--device", "cpu", "--db", "r.db")
    assert code == 2 and "--tiny" in err and not (tmp_path / "r.db").exists()


def test_an_image_file_that_is_not_an_image_is_refused(tmp_path, main_here):
    (tmp_path / "photo.jpg").write_text("not really a jpeg")
    code, _, err = main_here("run", "--model", "vit", "--image", "photo.jpg", "--device", "cpu", "--db", "r.db")
    assert code == 2 and err.count("\n") == 1
    assert "--image 'photo.jpg' is not an image file" in err and not (tmp_path / "r.db").exists()
    code, _, err = main_here("run", "--model", "vit", "--image", "missing.png", "--device", "cpu", "--db", "r.db")
    assert code == 2 and "no such file" in err


def test_another_image_can_be_given(tmp_path, main_here):
    from PIL import Image

    Image.new("RGB", (300, 200), (200, 30, 60)).save(tmp_path / "red.png")
    code, out, err = main_here("run", "--model", "detr", "--tiny", "--image", "red.png", "--variant", "eager", "--iters",
                               "2", "--warmup", "0", "--repeats", "1", "--device", "cpu", "--db", "r.db", "--isolation",
                               "inline", "--quiet", "--format", "csv")
    assert code == 0, err
    (result,) = stored(tmp_path / "r.db")
    assert result["status"] == "ok" and result["case"]["image"] == str(tmp_path / "red.png")
