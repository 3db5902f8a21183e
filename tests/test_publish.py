"""What leaves the machine (issue 65): `compilebench publish` writes no hostname, GPU UUID, user name, absolute path
or environment variable's value unless asked (--keep-identifying), machines still told apart by a salted key, and
the card says which fields were removed or replaced. The local results file keeps everything."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

from fakeresults import CPU, result

from compilebench.core.run import Run
from compilebench.report import data, scrub
from compilebench.storage.store import Store

H200_QUANTIZE = Path(__file__).parent / "data" / "h200-quantize.db"
HOST, UUID, USER, TOKEN = "gpu-node-17.cluster.internal", "GPU-9f6bfce4-08e9-5158-cfd1-c0b6fa35a447", "alice", \
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
PLANTED = (HOST, UUID, f"/home/{USER}", USER, TOKEN, "s3cr3t-v4lue-0042")


def _planted(tmp_path) -> Path:
    """A results file of an eager and a compiled case measured on a machine named HOST, on the GPU UUID, the compiled
    one failed with a traceback through alice's home folder, printed with an unrelated variable holding a token."""
    run = Run(tag="t", host=HOST, command=f"compilebench run --model /home/{USER}/ckpt --db /home/{USER}/r.db",
              spec={"environments": [{"name": "b", "python": f"/home/{USER}/venv/bin/python",
                                      "set": {"OMP_NUM_THREADS": "1"}}]})
    env = {**CPU, "hostname": HOST, "device": "cuda:0", "device_name": "NVIDIA H200", "gpu_uuid": UUID,
           "cuda_visible_devices": UUID}
    eager = result("resnet-50", 1, "eager", 10.0, env=env, run=run)
    failed = result("resnet-50", 1, "default", None, env=env, run=run, status="error",
                    message=f"RuntimeError: boom in /home/{USER}/work/model.py (OMP_NUM_THREADS=1 "
                            f"MY_SERVICE_KEY=s3cr3t-v4lue-0042 HF_TOKEN={TOKEN})")
    failed.repeats[0].traceback = (f'  File "/home/{USER}/.venv/lib/python3.11/site-packages/torch/nn/module.py", '
                                   f'line 1, in forward\n  File "/home/{USER}/work/model.py", line 7\n'
                                   f"RuntimeError: boom ({TOKEN})")
    failed.repeats[0].environment = dataclasses.replace(failed.repeats[0].environment, environment_python=
                                                        f"/home/{USER}/venv/bin/python", environment_set="OMP_NUM_THREADS=1")
    failed.derive()
    path = tmp_path / "planted.db"
    with Store.open(str(path)) as store:
        store.add_run(run)
        store.add(eager)
        store.add(failed)
    return path


def _texts(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()
            and p.suffix in (".jsonl", ".json", ".md", ".html", ".csv")}


def test_nothing_identifying_leaves_unless_asked_and_the_card_says_which(tmp_path, main_here):
    db = _planted(tmp_path)
    code, _, err = main_here("publish", db, "--out", "pub")
    assert code == 0, err
    texts = _texts(tmp_path / "pub")
    assert {"README.md", "compilebench.json", "report/report.html"} <= set(texts)
    for name, text in texts.items():
        assert not [p for p in PLANTED if p in text], name
        if not name.endswith(".html"):
            assert not re.search(r"(?<![\w.~:/<-])/(?:home|opt|usr|root|tmp)/", text), name
    card = texts["README.md"]
    assert "## What identifies the machines" in card and "salted machine key" in card and "redacted" in card
    lines = texts[next(n for n in texts if n.startswith("data/"))]
    assert "site-packages" not in lines and "torch/nn/module.py" in lines  # a package's own path, kept
    assert "OMP_NUM_THREADS=1" in lines and "MY_SERVICE_KEY=<redacted>" in lines  # the run's own setting kept
    (read,) = {r.machine_id for r in data.load([str(tmp_path / "pub")])}
    assert re.fullmatch(r"machine-[0-9a-f]{12}\|NVIDIA H200\|.*", read)  # one machine, told apart by its key
    # the same publisher's next publish gives the same machine the same key; the local file keeps every name
    assert main_here("publish", db, "--out", "again")[0] == 0
    assert {r.machine_id for r in data.load([str(tmp_path / "again")])} == {read}
    assert {r.env.hostname for r in data.load([str(db)])} == {HOST}
    # asked for: as measured, and the card says so
    assert main_here("publish", db, "--out", "kept", "--keep-identifying")[0] == 0
    kept = _texts(tmp_path / "kept")
    assert all(any(p in text for text in kept.values()) for p in PLANTED)
    assert "Published with `--keep-identifying`" in kept["README.md"]


def test_another_publisher_cannot_learn_the_name_from_the_key(tmp_path, main_here, monkeypatch):
    db = _planted(tmp_path)
    assert main_here("publish", db, "--out", "mine")[0] == 0
    monkeypatch.setenv("COMPILEBENCH_PUBLISH_SALT", str(tmp_path / "another-salt"))
    assert main_here("publish", db, "--out", "theirs")[0] == 0
    keys = [{r.machine_id for r in data.load([str(tmp_path / d)])} for d in ("mine", "theirs")]
    assert keys[0] != keys[1]  # salted per publisher: the hash of the name alone would be the same for both
    assert (tmp_path / "another-salt").stat().st_mode & 0o077 == 0  # readable by its owner alone


def test_the_h200_files_publish_without_the_vm_its_gpu_or_a_path_and_report_the_same_tables(tmp_path, main_here):
    """The issue's own check: ../shared/data/h200-2026-11-27/quantize.db (copied into tests/data)."""
    db = tmp_path / "quantize.db"
    shutil.copy(H200_QUANTIZE, db)
    assert main_here("publish", db, "--out", "pub")[0] == 0
    for name, text in _texts(tmp_path / "pub").items():
        if name.endswith(".html"):
            continue
        assert "GPU-9f6bfce4" not in text and '"vm' not in text and "vm|" not in text, name
        assert not re.search(r'"/|\s/(?:opt|tmp|usr|home|root)/', text), name
    for source in (str(db), "pub"):
        assert main_here("report", source, "--out", f"r-{Path(source).name}", "--format", "md")[0] == 0
    tables = [(tmp_path / f"r-{n}" / "report.md").read_text().split("## Environment")[0] for n in ("quantize.db", "pub")]
    assert tables[0].replace(f"read from {db}.", "read from pub.") == tables[1]


def test_a_path_reads_relative_to_what_it_is_under():
    clean = scrub._Cleaner("salt", [], set())
    home = clean.home
    assert clean.path("/opt/torch/.venv/lib/python3.12/site-packages/torch/export/x.py") == "torch/export/x.py"
    assert clean.path("/usr/lib/python3.12/threading.py") == "threading.py"
    assert clean.path(f"{clean.cwd}/results.db") == "./results.db"
    assert clean.path("/home/bob/x/y.py") == "~/x/y.py" and clean.path("/Users/carol/z") == "~/z"
    assert clean.path(f"{home}/a") == "~/a" or home in ("/", "")
    assert clean.path("/data/bob/experiment/run.db") == ".../run.db"
    assert clean.text("see https://github.com/pytorch/ao/issues/2376") == "see https://github.com/pytorch/ao/issues/2376"
    assert clean.text("ok 3.2 tokens/s") == "ok 3.2 tokens/s"
