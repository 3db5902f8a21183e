import json
import multiprocessing
import os
import shutil
import sqlite3
import stat
import statistics

import fakeresults as fr
import pytest

from compilebench.core.case import Case
from compilebench.core.environment import Environment
from compilebench.core.errors import SchemaError, UserError
from compilebench.core.repeat import Repeat
from compilebench.core.result import Result
from compilebench.core.variant import Variant
from compilebench.storage.schema import SCHEMA_VERSION
from compilebench.storage.store import Store

DATA = os.path.join(os.path.dirname(__file__), "data")


def make_result(model="vit", batch=1, mode="eager", machine="m1", samples=(1_000_000, 2_000_000), index=1,
                status="ok", result_id=None) -> Result:
    rep = Repeat(index=index, status=status, environment=Environment(torch="2.13.0", device="cpu"))
    rep.set_samples(list(samples))
    r = Result(Case(model, batch, Variant(mode)), [rep], machine_id=machine)
    if result_id:
        r.result_id = result_id
    return r


def done(i):
    return lambda stored: any(r.index == i for r in stored.repeats)


def test_round_trip_keeps_the_whole_result(tmp_path):
    path = tmp_path / "sub" / "results.db"  # missing folders are created
    r = make_result(samples=(1_000_000, 3_000_000))
    with Store.open(str(path)) as store:
        store.add_repeat(r)
    with Store.open(str(path), create=False, write=False) as store:
        (back,) = store.results()
    assert back.to_dict() == r.to_dict()
    assert back.repeats[0].samples_ms == [1.0, 3.0]
    assert back.stats.mean == 2.0 and back.stats.repeats == 1
    assert back.case == Case("vit", 1, Variant("eager"))


def test_repeats_join_one_result_and_a_retried_repeat_replaces_its_failed_attempt(tmp_path):
    with Store.open(str(tmp_path / "r.db")) as store:
        store.add_repeat(make_result(samples=(10_000_000,), result_id="a"))
        store.add_repeat(make_result(index=2, status="crashed", samples=(), result_id="a"))
        mid = store.latest(Case("vit", 1, Variant("eager")).key(), "m1")
        assert [r.status for r in mid.repeats] == ["ok", "crashed"] and mid.status == "crashed"
        store.add_repeat(make_result(index=2, samples=(40_000_000,), result_id="a"))
        (r,) = store.results()
    assert [rep.index for rep in r.repeats] == [1, 2] and r.status == "ok"
    assert r.stats.mean == pytest.approx(20.0)  # geometric mean of the processes' 10 and 40 ms


def test_the_same_result_is_not_stored_twice(tmp_path):
    r = make_result()
    with Store.open(str(tmp_path / "r.db")) as store:
        assert store.add(r)
        assert not store.add(r)
        assert len(store.results()) == 1


def test_latest_is_per_machine_and_per_ray_target(tmp_path):
    placement = "ray|H100|torch 2.11.0|transformers 5.17.0"
    with Store.open(str(tmp_path / "r.db")) as store:
        store.add_repeat(make_result(machine="m1", batch=1))
        store.add_repeat(make_result(machine="m2", batch=4))
        ray = make_result(machine="node-a|H100", batch=16)
        ray.placement = placement
        store.add_repeat(ray)
        key = Case("vit", 1, Variant("eager")).key()
        assert store.latest(key, "m1") is not None and store.latest(key, "m2") is None
        assert store.latest(Case("vit", 16, Variant("eager")).key(), placement) is not None


def test_a_schema_1_file_reads_as_one_repeat_per_result_and_is_migrated_when_a_run_adds_to_it(tmp_path):
    # tests/data/schema1.db was written by compilebench before repeats existed (stop 10): two results.
    path = tmp_path / "old.db"
    shutil.copy(os.path.join(DATA, "schema1.db"), path)
    with Store.open(str(path), create=False, write=False) as store:
        old = store.results()
        assert store.schema == 1
    assert [len(r.repeats) for r in old] == [1, 1]
    samples = old[0].repeats[0].samples_ms
    assert samples and old[0].stats.mean_of_means == pytest.approx(sum(samples) / len(samples))
    assert old[0].stats.mean == pytest.approx(statistics.median(samples))  # one process: its median
    assert old[1].cold_compile_s is not None
    with Store.open(str(path)) as store:  # a run opens it: migrated in place, a copy of it as it was kept
        assert store.schema == SCHEMA_VERSION
        migrated = store.results()
    assert [r.to_dict() for r in migrated] == [r.to_dict() for r in old]
    assert [(r.status, r.stats, r.env) for r in migrated] == [(r.status, r.stats, r.env) for r in old]
    assert sqlite3.connect(path).execute("SELECT value FROM meta").fetchone() == (str(SCHEMA_VERSION),)
    kept = str(path) + ".schema1.bak"
    assert sqlite3.connect(kept).execute("SELECT value FROM meta").fetchone() == ("1",)
    assert sqlite3.connect(kept).execute("SELECT COUNT(*) FROM results").fetchone() == (2,)


def test_fields_a_newer_version_wrote_are_kept(tmp_path):
    d = make_result().to_dict()
    d["energy_joules"] = 12.5  # a field this version does not know
    d["repeats"][0]["gpu_energy"] = 3.0
    d["case"]["future_setting"] = "x"
    d["case_key"] = json.dumps({**json.loads(d["case_key"]), "future_setting": "x"}, sort_keys=True, separators=(",", ":"))
    path = str(tmp_path / "r.db")
    with Store.open(path) as store:
        store.add(Result.from_dict(d))
        (r,) = store.results()
        r.add(make_result(index=2).repeats[0])
        back = r.to_dict()
    assert back["energy_joules"] == 12.5 and back["repeats"][0]["gpu_energy"] == 3.0
    assert back["case"]["future_setting"] == "x" and back["case_key"] == d["case_key"] != Case("vit", 1, Variant()).key()


def test_a_newer_schema_is_refused_with_an_instruction(tmp_path):
    path = str(tmp_path / "r.db")
    Store.open(path).close()
    conn = sqlite3.connect(path)
    conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaError, match="newer compilebench.*upgrade"):
        Store.open(path)


def test_a_read_only_results_file_is_read_for_a_report_and_refused_for_a_run(tmp_path):
    path = tmp_path / "r.db"
    with Store.open(str(path)) as store:
        store.add_repeat(make_result())
    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP)
    os.chmod(tmp_path, stat.S_IRUSR | stat.S_IXUSR)  # nor may a -shm or -wal file be made beside it
    try:
        with Store.open(str(path), create=False, write=False) as store:
            assert len(store.results()) == 1
        if os.geteuid() != 0:  # root writes whatever the bits say
            with pytest.raises(UserError, match="is read-only"):
                Store.open(str(path))
    finally:
        os.chmod(tmp_path, stat.S_IRWXU)
        os.chmod(path, stat.S_IRUSR | stat.S_IWUSR)


def test_a_damaged_file_is_refused_before_a_run_measures_anything(tmp_path):
    path = tmp_path / "r.db"
    with Store.open(str(path)) as store:
        for b in range(1, 60):
            store.add_repeat(make_result(batch=b, samples=tuple(range(1000, 400_000, 997))))
    fr.damage(path)
    with pytest.raises(UserError, match="is damaged"):
        Store.open(str(path))


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


def test_a_read_only_or_sizeless_file_system_is_named_as_such_not_as_a_full_disk(tmp_path, monkeypatch):
    """A read-only file system of a few KiB (a tmpfs mounted ro) and a file system with no size (/proc, /sys) have
    little or no free space; the reason a run cannot store there is that nothing can be written, so the refusal
    says that, not "the disk is full"."""
    import collections
    import errno

    from compilebench.storage import paths

    usage = collections.namedtuple("usage", "total used free")
    monkeypatch.setattr(paths.shutil, "disk_usage", lambda folder: usage(4096, 0, 4096))

    def read_only(**kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(paths.tempfile, "mkstemp", read_only)
    with pytest.raises(UserError, match=r"is not a writable directory \(Read-only file system\)"):
        Store.open(str(tmp_path / "r.db"))
    monkeypatch.setattr(paths.shutil, "disk_usage", lambda folder: usage(0, 0, 0))  # as /proc answers
    assert paths.why_full(str(tmp_path)) is None
    monkeypatch.setattr(paths.shutil, "disk_usage", lambda folder: usage(2**30, 2**30 - 4096, 4096))
    assert paths.why_full(str(tmp_path)).startswith("the disk is full (4 KiB free")
    assert list(tmp_path.iterdir()) == []


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(UserError, match="is a directory"):
        Store.open(str(tmp_path))


def _claimer(path: str, conn) -> None:
    """Claim repeat 1 of the vit case, say which result it starts, then hold the claim until told to end (or die
    holding it)."""
    with Store.open(path) as store:
        conn.send(store.claim(Case("vit", 1, Variant("eager")).key(), "m1", 1, None, done(1))[0])
        conn.recv()


def test_a_claimed_repeat_is_left_to_its_claimant_and_a_dead_claimants_claim_is_released(tmp_path):
    path = str(tmp_path / "r.db")
    Store.open(path).close()
    ctx = multiprocessing.get_context("spawn")
    mine_end, theirs = ctx.Pipe()
    other = ctx.Process(target=_claimer, args=(path, theirs))
    other.start()
    try:
        assert mine_end.poll(120)  # the handshake: it has claimed
        series = mine_end.recv()
        key = Case("vit", 1, Variant("eager")).key()
        with Store.open(path) as store:
            got, holder = store.claim(key, "m1", 1, None, done(1))
            assert got is None and holder.pid == other.pid  # held by a live process: left to it
            mine, _ = store.claim(key, "m1", 2, None, done(2))
            assert mine == series  # repeat 2 joins the result the other run started
            other.kill()
            other.join(30)
            got, holder = store.claim(key, "m1", 1, None, done(1))
            assert got == series and holder is None  # its claimant died: taken over
    finally:
        if other.is_alive():
            mine_end.send("end")
        other.join(30)


def test_a_repeat_stored_meanwhile_is_not_claimed_again(tmp_path):
    path = str(tmp_path / "r.db")
    key = Case("vit", 1, Variant("eager")).key()
    with Store.open(path) as store:
        store.add_repeat(make_result())
        assert store.claim(key, "m1", 1, None, done(1)) == (None, None)
        series, _ = store.claim(key, "m1", 2, None, done(2))
        assert series == store.results()[0].result_id
        store.release_claims()
        assert store._conn.execute("SELECT COUNT(*) FROM claims").fetchone() == (0,)


def _writer(path: str, machine: str, n: int) -> None:
    with Store.open(path) as store:
        for i in range(n):
            store.add_repeat(make_result(batch=i + 1, machine=machine))


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "r.db")
    Store.open(path).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, f"m{p}", 150)) for p in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    with Store.open(path) as store:
        results = store.results()
        assert len(results) == 300
        assert len({(r.machine_id, r.case_key) for r in results}) == 300
    assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def _opener(path: str, start, answers) -> None:
    """Wait for the others, then open a results file that may not exist yet; say what happened."""
    start.wait()
    try:
        with Store.open(path) as store:
            answers.put(("ok", store.schema))
    except Exception as exc:  # the answer the test checks
        answers.put(("error", str(exc)))


def test_runs_starting_together_on_a_new_results_file_all_open_it(tmp_path):
    """Issue 27.1: creating the schema is one transaction a second opener waits for; nobody is told the file being
    created is foreign."""
    ctx = multiprocessing.get_context("fork")
    for trial in range(6):
        path = str(tmp_path / f"new-{trial}" / "r.db")
        start, answers = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_opener, args=(path, start, answers)) for _ in range(4)]
        for p in procs:
            p.start()
        got = [answers.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(60)
        assert got == [("ok", SCHEMA_VERSION)] * 4, got
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_an_empty_results_file_is_called_empty_by_a_report(tmp_path):
    """Issue 27.5: a 0-byte file exists; it holds no results."""
    path = tmp_path / "r.db"
    path.write_bytes(b"")
    with pytest.raises(UserError, match="is empty") as caught:
        Store.open(str(path), create=False, write=False)
    assert "does not exist" not in str(caught.value)
    assert path.read_bytes() == b""  # left as it was


def test_a_damaged_file_is_named_in_one_line():
    """Issue 27.6: SQLite's integrity text can hold newlines; the message is one line."""
    from compilebench.storage import schema

    message = schema._damaged("r.db", "*** in database main ***\nrow 1 missing from index x\nrow 2 missing")
    assert "\n" not in message and "row 1 missing from index x; row 2 missing" in message


def test_reading_a_results_file_leaves_no_side_files(tmp_path):
    """Issue 27.10: a report opens its files read-only and leaves no -wal or -shm beside them."""
    path = tmp_path / "r.db"
    with Store.open(str(path)) as store:
        store.add_repeat(make_result())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]  # a run's side files go when it closes
    with Store.open(str(path), create=False, write=False) as store:
        assert len(store.results()) == 1
        assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.db"]


def test_a_full_disk_before_a_run_is_said_so_not_called_a_foreign_file(tmp_path, monkeypatch):
    """Issue 27.4: SQLite's 'disk is full' while opening a healthy file is the environment's failure (exit 1), not
    bad input."""
    import compilebench.storage.store as storemod
    from compilebench.core.errors import EnvironmentFailure

    path = tmp_path / "r.db"
    Store.open(str(path)).close()
    real = sqlite3.connect

    class Full:
        def __init__(self, conn):
            self.conn = conn

        def execute(self, sql, *a):
            raise sqlite3.OperationalError("database or disk is full")

        def __getattr__(self, name):
            return getattr(self.conn, name)

    monkeypatch.setattr(storemod.sqlite3, "connect", lambda *a, **kw: Full(real(*a, **kw)))
    with pytest.raises(EnvironmentFailure, match="disk is full") as caught:
        Store.open(str(path))
    assert "not a compilebench results file" not in str(caught.value)


def test_a_result_that_cannot_be_kept_anywhere_leaves_no_empty_folder(tmp_path, monkeypatch):
    """Issue 27.11: a full disk: the result is saved elsewhere (or nowhere), and no empty .unsaved folder stays."""
    import builtins

    from compilebench.run import storing

    real_open = builtins.open
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(storing.tempfile, "gettempdir", lambda: str(scratch))

    def full(path, *a, **kw):
        if str(path).startswith(str(tmp_path / "r.db.unsaved")):
            raise OSError(28, "No space left on device")
        return real_open(path, *a, **kw)

    monkeypatch.setattr(builtins, "open", full)
    where = storing.save_beside(str(tmp_path / "r.db"), {"result_id": "abc"})
    assert where is not None and where.startswith(str(scratch))  # kept in the temporary folder instead
    assert not (tmp_path / "r.db.unsaved").exists()


def test_a_dead_drivers_interleaved_job_is_stored_case_by_case_in_its_claims_order(tmp_path, monkeypatch):
    """An interleaved job's worker returns one repeat per case, in the job's order: the claim, written in that order,
    is all the next run reads to store each under its own case and result."""
    import subprocess
    import tempfile

    from compilebench.core.job import Job, Timing
    from compilebench.run import storing
    from compilebench.run.dispatch import Target, Unit

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    folder = tmp_path / "tmp" / "compilebench-job-i"
    folder.mkdir(parents=True)
    eager, compiled = make_result(mode="eager", samples=(5_000_000,)), make_result(mode="default", samples=(2_000_000,))
    dead = subprocess.Popen(["true"])
    dead.wait()
    db = tmp_path / "r.db"
    with Store.open(str(db)) as store:
        unit = Unit(Target("cpu", "m1", Environment(device="cpu")), (eager.case, compiled.case), 1)
        mine = storing.claim(store, unit, {eager.case.key(): "e-1", compiled.case.key(): "c-1"}, "run-1",
                             {"vit": ("Image Classification/ViT", "image")})
        mine.update(pid=dead.pid, started="1")
        job = Job([eager.case, compiled.case], Timing(), claim=mine)
        (folder / "job.json").write_text(json.dumps(job.to_dict()))
        (folder / "result.json").write_text(json.dumps([eager.repeats[0].to_dict(), compiled.repeats[0].to_dict()]))
        assert storing.take_in(store, done) == 2
        stored = {r.case.variant.mode: r for r in store.results()}
    assert {m: (r.result_id, r.repeats[0].samples_ms) for m, r in stored.items()} == {
        "eager": ("e-1", [5.0]), "default": ("c-1", [2.0])}
    assert not folder.exists()


def test_a_results_file_where_no_file_can_be_made_is_named_before_the_report_folder(tmp_path, main_here):
    """Issue 27.11: /proc takes no file, whatever its permission bits say to root."""
    code, _, err = main_here("run", "--model", "fault-ok", "--variant", "eager", "--device", "cpu",
                             "--db", "/proc/compilebench-test/r.db")
    assert code == 2 and "cannot write results file '/proc/compilebench-test/r.db'" in err and "report" not in err, err


def _left_job(folder, db, repeat_index, result, pid, started="1"):
    """A job folder as a driver that died (pid, started) left it, holding a finished result."""
    folder.mkdir()
    claim = {"db": os.path.realpath(db), "host": __import__("socket").gethostname(), "pid": pid, "started": started,
             "resume_id": result.machine_id, "placement": "", "run": "run-1",
             "cases": {result.case.key(): ["series-1", result.case.to_dict(), "Image Classification/ViT", "image"]}}
    (folder / "job.json").write_text(json.dumps({"cases": [result.case.to_dict()], "timing": {}, "repeat": repeat_index,
                                                 "claim": claim}))
    (folder / "result.json").write_text(json.dumps([rep.to_dict() for rep in result.repeats]))


def test_a_dead_drivers_result_is_taken_in_once_and_only_by_a_run_on_its_results_file(tmp_path, monkeypatch):
    import subprocess
    import tempfile

    from compilebench.run import storing

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    dead = subprocess.Popen(["true"])  # a driver that has died
    dead.wait()
    ours, theirs = tmp_path / "r.db", tmp_path / "other.db"
    _left_job(tmp_path / "tmp" / "compilebench-job-a", ours, 1, make_result(index=1), dead.pid)
    _left_job(tmp_path / "tmp" / "compilebench-job-b", ours, 2, make_result(index=2), dead.pid)
    _left_job(tmp_path / "tmp" / "compilebench-job-c", theirs, 1, make_result(index=1), dead.pid)
    _left_job(tmp_path / "tmp" / "compilebench-job-d", ours, 3, make_result(index=3), os.getpid(),
              storing.process_started(os.getpid()))  # its driver is alive: still its own
    with Store.open(str(ours)) as store:
        store.add_repeat(make_result(index=2, result_id="series-1"))  # repeat 2 was measured again meanwhile
        assert storing.take_in(store, done) == 1
        (result,) = store.results()
    assert result.result_id == "series-1" and [r.index for r in result.repeats] == [1, 2]
    assert result.repeats[0].run == "run-1" and result.label == "Image Classification/ViT"
    assert sorted(p.name for p in (tmp_path / "tmp").iterdir()) == ["compilebench-job-c", "compilebench-job-d"]
