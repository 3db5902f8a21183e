"""A fault run (issue 27): compilebench driven as a user and an operator would drive it badly, and checked as
they would check it. Bad input through every command, signals at every phase of a run (Ctrl-C, SIGTERM,
SIGKILL at spread times, then the same command again), runs started together on one new results file, the
Python API beside a run, and results files that are full, locked, read-only, empty, foreign or damaged.

Each scenario passes when: its exit code is the one promised (2 bad input, 1 the machine's fault, 130/143 an
interrupt, 0 otherwise); an error or interrupt is said in one line and never with a traceback; bad input writes
nothing; and, once every run has ended (an interrupted one run again), every repeat asked for is stored exactly
once and every repeat stored before a fault is stored unchanged after it. Prints one line per scenario and the
totals (scenarios passed, repeats lost, repeats duplicated, tracebacks) beside the goal: all pass, 0, 0, 0.

Usage: python benchmarks/faults.py [--only WORD]   (about 15 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

from _runs import TREE, results

COMMON = ["run", "--model", "resnet-50", "--tiny", "--variant", "eager", "--iters", "5", "--warmup", "1", "--min-iters",
          "1", "--device", "cpu", "--format", "md,csv"]
RUN = [*COMMON, "--batch-size", "1", "2", "--repeats", "2"]
ASKED = 4  # repeats RUN asks for: 2 batch sizes x 2 repeats
ENV = {**os.environ, "PYTHONPATH": os.path.join(TREE, "src"), "HF_HUB_OFFLINE": "1"}


@dataclass
class Tally:
    passed: int = 0
    failed: list = field(default_factory=list)
    lost: int = 0
    duplicated: int = 0
    tracebacks: int = 0


def start(args, cwd, env=None, preexec=None) -> subprocess.Popen:
    def setup():
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal gives it
        if preexec:
            preexec()

    return subprocess.Popen([sys.executable, "-m", "compilebench", *map(str, args)], cwd=cwd, env={**ENV, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=setup)


def cli(args, cwd, env=None, preexec=None) -> subprocess.CompletedProcess:
    p = start(args, cwd, env, preexec)
    out, err = p.communicate(timeout=900)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def repeats_of(db: str) -> dict[tuple[str, int], list[dict]]:
    """(case key, repeat index) -> every stored repeat at it (more than one is a duplicate)."""
    found: dict[tuple[str, int], list[dict]] = {}
    if not os.path.exists(db) or os.path.getsize(db) == 0:
        return found
    for r in results(db):
        key = json.dumps(r["case"], sort_keys=True)
        for rep in r["repeats"]:
            found.setdefault((key, rep["index"]), []).append(rep)
    return found


def whole(db: str, before: dict, tally: Tally) -> list[str]:
    """Every asked repeat stored once and ok; what was stored before the fault unchanged."""
    now = repeats_of(db)
    problems = []
    dup = sum(len(v) - 1 for v in now.values())
    lost = sum(1 for k, reps in before.items() if k not in now or now[k][0]["samples_ms"] != reps[0]["samples_ms"])
    tally.duplicated += dup
    tally.lost += lost
    if dup or lost:
        problems.append(f"{lost} lost, {dup} duplicated")
    if len(now) != ASKED or any(v[0]["status"] != "ok" for v in now.values()):
        problems.append(f"{len(now)} of {ASKED} repeats stored ok")
    return problems


def said(p: subprocess.CompletedProcess, code: int, words: str, tally: Tally) -> list[str]:
    problems = []
    if "Traceback" in p.stderr:
        tally.tracebacks += 1
        problems.append("a traceback")
    if p.returncode != code:
        problems.append(f"exit {p.returncode}, not {code}")
    lines = [l for l in p.stderr.splitlines() if l.startswith(("error:", "interrupted"))]
    if len(lines) != 1 or words not in lines[0]:
        problems.append(f"said {lines or p.stderr.strip().splitlines()[-1:]!r}, not one line with {words!r}")
    return problems


# -- scenarios: each returns its problems (none: it passed) ----------------------------------------------------------

def bad_input(args, words, setup=None):
    def scenario(tmp, tally):
        made = setup(tmp) if setup else []
        p = cli(args, tmp)
        problems = said(p, 2, words, tally)
        if sorted(os.listdir(tmp)) != sorted(made):
            problems.append(f"left {sorted(set(os.listdir(tmp)) - set(made))}")
        return problems
    return scenario


def a_good_file(tmp):
    p = cli([*COMMON, "--db", "good.db"], tmp)
    if p.returncode != 0:
        raise SystemExit(f"the good results file could not be made: {p.stderr[-2000:]}")
    return ["good.db", "report"]


def signal_at(sig, after_s):
    def scenario(tmp, tally):
        temp = {"TMPDIR": os.path.join(tmp, "t")}  # this scenario's job folders alone
        os.mkdir(temp["TMPDIR"])
        run = start([*RUN, "--db", "r.db"], tmp, env=temp)
        time.sleep(after_s)  # spread over the run's phases: start, probe, imports, workers, report
        run.send_signal(sig)
        out, err = run.communicate(timeout=600)
        p = subprocess.CompletedProcess(run.args, run.returncode, out, err)
        before = repeats_of(os.path.join(tmp, "r.db"))
        problems = []
        if run.returncode == 0:  # it had finished when the signal came
            if "Traceback" in err:
                tally.tracebacks += 1
                problems.append("a traceback")
        elif sig == signal.SIGKILL:
            problems += [] if run.returncode == -9 else [f"exit {run.returncode}"]
        else:
            problems += said(p, 128 + sig, "interrupted", tally)
            # the note, then the command alone on the last line, pastable (issue 39)
            if before and not ("to resume, run the same command again:" in err
                               and err.strip().splitlines()[-1].startswith("compilebench run ")):
                problems.append("no resume command though results are stored")
        again = cli([*RUN, "--db", "r.db"], tmp, env=temp)
        if again.returncode != 0:
            problems.append(f"the resume exited {again.returncode}: {again.stderr.strip().splitlines()[-1:]}")
        left = [f for f in os.listdir(temp["TMPDIR"]) if f.startswith("compilebench-job-")]
        if sig == signal.SIGKILL and left:
            problems.append(f"{len(left)} job folder(s) left")
        return problems + whole(os.path.join(tmp, "r.db"), before, tally)
    return scenario


def together(n):
    def scenario(tmp, tally):
        runs = [start([*RUN, "--db", "r.db", "--out", f"report{i}"], tmp) for i in range(n)]
        outs = [r.communicate(timeout=900) for r in runs]
        problems = [f"run {i} exited {r.returncode}: {e.strip().splitlines()[-1:]}"
                    for i, (r, (_, e)) in enumerate(zip(runs, outs)) if r.returncode != 0]
        for i in range(n):  # each run's report holds both batch sizes with every repeat, whoever measured them
            with open(os.path.join(tmp, f"report{i}", "results.csv")) as f:
                rows = list(csv.DictReader(f))
            if sorted((r["batch_size"], r["status"], r["repeats"]) for r in rows) != [("1", "ok", "2"), ("2", "ok", "2")]:
                problems.append(f"run {i}'s report holds {[(r['batch_size'], r['status'], r['repeats']) for r in rows]}")
        return problems + whole(os.path.join(tmp, "r.db"), {}, tally)
    return scenario


def api_beside_a_run(tmp, tally):
    run = start([*RUN, "--db", "r.db"], tmp)
    code = ("import compilebench; r = compilebench.benchmark('resnet-50', model_size='tiny', variants=('eager',), "
            "batch_sizes=(1, 2), iters=5, warmup=1, min_iters=1, device='cpu', repeats=2, db='r.db'); "
            "print(sum(len(x.repeats) for x in r.results))")
    api = subprocess.run([sys.executable, "-c", code], cwd=tmp, env=ENV, capture_output=True, text=True, timeout=900)
    run.communicate(timeout=900)
    problems = [] if api.returncode == 0 and api.stdout.strip() == str(ASKED) else [
        f"benchmark() returned {api.stdout.strip() or api.stderr.strip().splitlines()[-1:]} repeats, not {ASKED}"]
    return problems + whole(os.path.join(tmp, "r.db"), {}, tally)


def full_disk_mid_run(tmp, tally):
    limit = 200 * 1024  # the schema and the claims fit; the results do not all fit
    p = cli([*RUN, "--db", "r.db"], tmp, preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit)))
    before = repeats_of(os.path.join(tmp, "r.db"))
    problems = said(p, 1, "cannot write to the results file", tally) if p.returncode else []
    again = cli([*RUN, "--db", "r.db"], tmp)
    if again.returncode != 0 or os.path.exists(os.path.join(tmp, "r.db.unsaved")):
        problems.append("the next run did not take the saved result in")
    return problems + whole(os.path.join(tmp, "r.db"), before, tally)


def full_disk_before(tmp, tally):
    a_good_file(tmp)
    size = os.path.getsize(os.path.join(tmp, "good.db"))
    p = cli([*RUN, "--db", "good.db"], tmp, preexec=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (size, size)))
    return said(p, 1, "", tally) + (["called the file foreign"] if "not a compilebench results file" in p.stderr else [])


def locked(tmp, tally):
    a_good_file(tmp)
    other = sqlite3.connect(os.path.join(tmp, "good.db"), isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        p = cli([*RUN, "--db", "good.db"], tmp, env={"COMPILEBENCH_DB_TIMEOUT": "1"})
    finally:
        other.execute("ROLLBACK")
        other.close()
    return said(p, 1, "locked", tally)


def read_only_report(tmp, tally):
    a_good_file(tmp)
    os.chmod(os.path.join(tmp, "good.db"), 0o444)
    problems = []
    for args in (["report", "good.db", "--out", "out"], ["compare", "good.db", "good.db"]):
        p = cli(args, tmp)
        if p.returncode != 0 or "Traceback" in p.stderr:
            problems.append(f"{args[0]} exited {p.returncode}")
    side = [f for f in os.listdir(tmp) if f.endswith(("-wal", "-shm"))]
    return problems + ([f"side files {side}"] if side else [])


def read_only_run(tmp, tally):
    a_good_file(tmp)
    os.chmod(os.path.join(tmp, "good.db"), 0o444)
    if os.geteuid() == 0:  # root writes a read-only file: the case says nothing here
        return []
    return said(cli([*RUN, "--db", "good.db"], tmp), 2, "good.db", tally)


def file_of(content: bytes | None, name="x.db"):
    def setup(tmp):
        path = os.path.join(tmp, name)
        if content is None:  # another program's SQLite database
            conn = sqlite3.connect(path)
            conn.execute("CREATE TABLE notes (t TEXT)")
            conn.commit()
            conn.close()
        else:
            with open(path, "wb") as f:
                f.write(content)
        return [name]
    return setup


def damaged(tmp):
    made = a_good_file(tmp)
    with open(os.path.join(tmp, "good.db"), "r+b") as f:
        f.seek(4096)
        f.write(b"\xff" * 4096)
    return made


SCENARIOS = {
    "bad: --batch-size 0": bad_input([*RUN, "--batch-size", "0", "--db", "r.db"], "--batch-size"),
    "bad: --dtype bogus": bad_input([*RUN, "--dtype", "bogus", "--db", "r.db"], "dtype"),
    "bad: --iters twice": bad_input([*RUN, "--iters", "30", "--db", "r.db"], "--iters"),
    "bad: run --min-effect 200": bad_input([*RUN, "--min-effect", "200", "--db", "r.db"], "--min-effect"),
    "bad: report --min-effect 200": bad_input(["report", "good.db", "--min-effect", "200"], "--min-effect", a_good_file),
    "bad: report --min-effect -5": bad_input(["report", "good.db", "--min-effect", "-5"], "--min-effect", a_good_file),
    "bad: compare --min-effect -5": bad_input(["compare", "good.db", "good.db", "--min-effect", "-5"], "--min-effect",
                                              a_good_file),
    "bad: tune --min-effect 200": bad_input(["tune", "--model", "resnet-50", "--tiny", "--min-effect", "200"],
                                            "--min-effect"),
    "bad: report missing.db": bad_input(["report", "missing.db"], "does not exist"),
    "bad: report empty file": bad_input(["report", "x.db"], "is empty", file_of(b"")),
    "bad: report foreign database": bad_input(["report", "x.db"], "not a compilebench results file", file_of(None)),
    "bad: report text file": bad_input(["report", "x.db"], "x.db", file_of(b"hello\n" * 100)),
    "bad: report damaged file": bad_input(["report", "good.db", "--out", "o"], "damaged", damaged),
    "bad: run on damaged file": bad_input([*RUN, "--db", "good.db", "--out", "o"], "damaged", damaged),
    "bad: tune on foreign --db": bad_input(["tune", "--model", "resnet-50", "--tiny", "--db", "x.db"],
                                           "not a compilebench results file", file_of(None)),
    "bad: --db under a file": bad_input([*RUN, "--db", "afile/r.db"], "afile", file_of(b"x", "afile")),
    "bad: --out is a file": bad_input([*RUN, "--db", "r.db", "--out", "afile"], "afile", file_of(b"x", "afile")),
    "bad: --model unknown": bad_input([*RUN, "--model", "nope", "--db", "r.db"], "nope"),
    "file: full disk mid-run": full_disk_mid_run,
    "file: full disk before the run": full_disk_before,
    "file: locked by another program": locked,
    "file: read-only, report and compare": read_only_report,
    "file: read-only, run": read_only_run,
    "together: 2 runs on a new file": together(2),
    "together: 3 runs on a new file": together(3),
    "together: benchmark() beside a run": api_beside_a_run,
    **{f"signal: {s.name} at {t:g} s": signal_at(s, t) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
       for t in (0.5, 2, 5, 9, 14)},
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", help="run the scenarios whose name holds this word")
    only = ap.parse_args().only
    tally = Tally()
    chosen = {n: s for n, s in SCENARIOS.items() if not only or only in n}
    t0 = time.perf_counter()
    for name, scenario in chosen.items():
        with tempfile.TemporaryDirectory() as tmp:
            problems = scenario(tmp, tally)
        if problems:
            tally.failed.append(name)
        else:
            tally.passed += 1
        print(f"{'ok  ' if not problems else 'FAIL'} {name}" + (f": {'; '.join(problems)}" if problems else ""), flush=True)
    print(f"\n{tally.passed} of {len(chosen)} scenarios passed (goal: all); repeats lost: {tally.lost} (goal 0), "
          f"duplicated: {tally.duplicated} (goal 0); tracebacks: {tally.tracebacks} (goal 0); "
          f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
