"""`compilebench publish RESULTS... --out DIR [--push ORG/NAME]`: results files as a Hub dataset folder
(report/publish.py), with what identifies a machine or a person replaced (report/scrub.py; --keep-identifying
keeps it), and with --push that folder uploaded as a dataset with huggingface_hub: each run's data file
added beside those already there (never replacing another's), the card only where the dataset has none. The token
is huggingface_hub's own login (`hf auth login`, HF_TOKEN): compilebench never reads, asks for or writes one.
Offline (HF_HUB_OFFLINE, or no network) it says in one line how to push the folder later, and exits 0."""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import sys

from compilebench import __version__
from compilebench.cli import groups
from compilebench.core import shards, stats
from compilebench.core.errors import EnvironmentFailure, UserError
from compilebench.report import data as reportdata, exporters, publish as publishmod, scrub
from compilebench.report.view import View
from compilebench.storage import published

REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def cmd_publish(args) -> int:
    stats.check_min_effect(args.min_effect)
    if args.push is not None and not REPO_ID.match(args.push):
        raise UserError(f"--push {args.push!r}: expected a dataset id ORG/NAME (letters, digits, '.', '_', '-')")
    exporters.check_out_dir(args.out)  # a file, or a folder that cannot be written: refused first
    if os.path.isdir(args.out) and os.listdir(args.out) and not published.is_published(args.out):
        raise UserError(f"--out {args.out!r} holds other files: give an empty or new folder (or one publish wrote)")
    results, runs = reportdata.read(args.results)
    results, runs, scrubbed = scrub.scrub(results, runs, keep=args.keep_identifying)  # the local file keeps all
    view = View(results, args.min_effect, shards=shards.coverage(runs, results))
    written = publishmod.write(view, args.out, [os.path.basename(p) for p in args.results], __version__, scrubbed)
    data_files = [p for p in written if os.sep + published.DATA + os.sep in p]
    print(f"wrote {len(results)} result(s) in {len(data_files)} run file(s), the dataset card and the report to "
          f"{args.out}", file=sys.stderr)
    if args.push is not None:
        print(push(args.out, args.push), file=sys.stderr)
    return 0


def push(folder: str, repo_id: str) -> str:
    """Upload the folder as the dataset `repo_id`: the runs' files it lacks, its marker, the card where it has none
    and this report under a folder of its own. Returns the line to say."""
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.errors import HfHubHTTPError, OfflineModeIsEnabled

    later = (f"{folder} is ready to push: `compilebench publish ... --push {repo_id}` online, or `hf upload "
             f"{repo_id} {folder} --repo-type dataset`")
    if constants.is_offline_mode():
        return f"offline (HF_HUB_OFFLINE is set): nothing pushed; {later}"
    api = huggingface_hub.HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", exist_ok=True)
        there = set(api.list_repo_files(repo_id, repo_type="dataset"))
        mine = [f"{published.DATA}/{n}" for n in sorted(os.listdir(os.path.join(folder, published.DATA)))]
        new = [f for f in mine if f not in there]
        allow = [*new, published.MARKER, *([publishmod.CARD] if publishmod.CARD not in there else [])]
        runs = ", ".join(os.path.splitext(os.path.basename(f))[0][:12] for f in new) or "none new"
        ids = hashlib.sha256(" ".join(sorted(mine)).encode()).hexdigest()[:12]  # names this set of runs
        report = f"{publishmod.REPORT_DIR}/{ids}"
        api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=folder, allow_patterns=allow,
                          commit_message=f"compilebench {__version__}: runs {runs}")
        api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=os.path.join(folder, publishmod.REPORT_DIR),
                          path_in_repo=report, commit_message="compilebench: the report of these runs")
    except OfflineModeIsEnabled:
        return f"offline: nothing pushed; {later}"
    except HfHubHTTPError as exc:
        status = getattr(exc.response, "status_code", None)
        if status in (401, 403):
            raise EnvironmentFailure(f"the Hub refused to write {repo_id} ({status}): log in with `hf auth login` (a "
                                     "token that may write there); nothing else was pushed") from None
        raise EnvironmentFailure(f"pushing to {repo_id} failed: {str(exc).splitlines()[0]}") from None
    except (OSError, *_transport_errors()) as exc:  # no network: the connection fails before any answer
        return f"offline ({type(exc).__name__}): nothing pushed; {later}"
    skipped = len(mine) - len(new)
    return (f"pushed {len(new)} run file(s) to https://huggingface.co/datasets/{repo_id}"
            + (f" ({skipped} already there, left as they are)" if skipped else ""))


def _transport_errors() -> tuple[type, ...]:
    """The HTTP client's connection errors (huggingface_hub's client: httpx2, formerly httpx)."""
    for name in ("httpx2", "httpx"):
        try:
            return (importlib.import_module(name).TransportError,)
        except (ImportError, AttributeError):
            continue
    return ()


def add_parser(sub):
    pub = sub.add_parser("publish", help="results files as a Hugging Face Hub dataset folder (JSON lines per run, "
                                         "a dataset card, the report), and optionally pushed")
    pub.add_argument("results", nargs="+", metavar="RESULTS", help="results files, folders of them, or published folders")
    pub.add_argument("--out", required=True, metavar="DIR", help="the folder to write (new, empty, or one publish wrote)")
    pub.add_argument("--push", default=None, metavar="ORG/NAME",
                     help="upload the folder as this Hub dataset with huggingface_hub's login (`hf auth login`): "
                          "a new file per run, never replacing another's")
    pub.add_argument("--keep-identifying", action="store_true",
                     help="publish hostnames, GPU UUIDs, absolute paths and the messages' environment variables as "
                          "measured (default: replaced by salted keys, relative paths and <redacted>; the card says "
                          "which): for a private dataset")
    groups.min_effect(pub, "the smallest difference the card's verdicts call faster or slower")
    return pub
