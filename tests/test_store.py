import multiprocessing
import sqlite3

import pytest

from compilebench.errors import SchemaError, UserError
from compilebench.result import Result
from compilebench.spec import Case, Variant
from compilebench.store import SCHEMA_VERSION, Store


def make_result(model="vit", batch=1, mode="eager", machine="m1", samples=(1_000_000, 2_000_000)) -> dict:
    r = Result(Case(model, batch, Variant(mode)), "ok", machine_id=machine, env={"torch": "2.13.0", "device": "cpu"})
    r.set_samples(list(samples))
    return r.to_dict()


def test_round_trip_keeps_the_whole_result(tmp_path):
    path = tmp_path / "sub" / "results.db"  # missing folders are created
    r = make_result(samples=(1_000_000, 3_000_000))
    with Store.open(str(path)) as store:
        assert store.add(r)
    with Store.open(str(path), create=False) as store:
        (back,) = store.results()
    assert back == r
    assert back["samples_ms"] == [1.0, 3.0]
    assert back["stats"]["mean"] == 2.0
    assert Result.from_dict(back).case == Case("vit", 1, Variant("eager"))


def test_the_same_result_is_not_stored_twice(tmp_path):
    r = make_result()
    with Store.open(str(tmp_path / "r.db")) as store:
        assert store.add(r)
        assert not store.add(r)
        assert len(store.results()) == 1


def test_finished_keys_are_per_machine(tmp_path):
    with Store.open(str(tmp_path / "r.db")) as store:
        store.add(make_result(machine="m1", batch=1))
        store.add(make_result(machine="m2", batch=4))
        keys = store.finished_keys("m1")
    assert keys == {Case("vit", 1, Variant("eager")).key()}


def test_a_ray_targets_finished_keys_come_from_its_placement_whatever_node_ran_them(tmp_path):
    placement = "ray|H100|torch 2.11.0|transformers 5.17.0"
    with Store.open(str(tmp_path / "r.db")) as store:
        for node, batch in (("node-a", 1), ("node-b", 4)):
            r = make_result(machine=f"{node}|NVIDIA H100 80GB HBM3|torch 2.11.0|transformers 5.17.0", batch=batch)
            store.add({**r, "placement": placement})
        store.add({**make_result(machine="node-c", batch=16), "placement": "ray|A100|torch 2.11.0|transformers 5.17.0"})
        keys = store.finished_keys(placement)
    assert keys == {Case("vit", b, Variant("eager")).key() for b in (1, 4)}


def test_a_newer_schema_is_refused_with_an_instruction(tmp_path):
    path = str(tmp_path / "r.db")
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaError, match="newer compilebench.*upgrade"):
        Store.open(path)


def test_a_file_that_is_not_sqlite_is_refused_and_left_alone(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("hello, not a database\n" * 100)
    with pytest.raises(UserError, match="not a compilebench results file"):
        Store.open(str(path))
    assert path.read_text() == "hello, not a database\n" * 100


def test_another_sqlite_database_is_refused(tmp_path):
    path = str(tmp_path / "other.db")
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(UserError, match="not a compilebench results file"):
        Store.open(path)


def test_an_unwritable_location_is_refused_before_anything_is_created(tmp_path):
    (tmp_path / "afile").write_text("x")  # a file where a folder would have to be: unwritable even for root
    with pytest.raises(UserError, match="not a writable directory"):
        Store.open(str(tmp_path / "afile" / "deeper" / "r.db"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(UserError, match="is a directory"):
        Store.open(str(tmp_path))


def _writer(path: str, machine: str, n: int) -> None:
    with Store.open(path) as store:
        for i in range(n):
            store.add(make_result(batch=i + 1, machine=machine))


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "r.db")
    Store.open(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, f"m{p}", 200)) for p in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store.open(path) as store:
        results = store.results()
        assert len(results) == 400
        assert len(store.finished_keys("m0")) == len(store.finished_keys("m1")) == 200
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)
