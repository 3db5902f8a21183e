"""The documentation is checked like code (issue 39): the site builds with `mkdocs build --strict` (a broken link,
a page missing from the navigation or an API reference that does not resolve fails it), and every `compilebench
...` command the README and the docs show is parsed by the real argument parser, so an option that no longer
exists, or a value it no longer takes, fails here before a reader meets it."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from compilebench.cli import _commands, options

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = [os.path.join(ROOT, "README.md")] + sorted(
    os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
INLINE = re.compile(r"`(compilebench [^`]+)`")
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*(\.\w+)?$|\.\.\.|\[")  # `--repeats R`, `DB ...`, `[--out DIR]`: a synopsis


def commands(text: str) -> list[str]:
    """The `compilebench ...` command lines of a page: in shell code blocks (continuation lines joined, comments
    dropped) and in inline code, where a synopsis with placeholders (`--repeats R`) is left to the prose."""
    found = []
    for lang, body in FENCE.findall(text):
        if lang not in ("", "bash", "sh", "shell", "console"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            line = line.strip().removeprefix("$ ")
            if line.startswith("compilebench ") or line == "compilebench":
                found.append(shlex.split(line, comments=True))
    for span in INLINE.findall(FENCE.sub("", text)):
        words = shlex.split(span)
        if len(words) > 2 and not any(PLACEHOLDER.search(w) for w in words):  # `compilebench tune` names a command
            found.append(words)
    return [" ".join(map(shlex.quote, w)) for w in found]


def refusal(command: str) -> str | None:
    """Why the real parser refuses a command line; None where it takes it."""
    parser = options.parser(_commands())
    try:
        parser.parse_args(shlex.split(command)[1:])
    except SystemExit as exc:
        return f"exit {exc.code}"
    return None


def test_every_command_in_the_readme_and_the_docs_parses(capsys):
    shown = {(os.path.relpath(p, ROOT), c) for p in PAGES for c in commands(open(p).read())}
    assert len(shown) > 40  # the pages' examples were found, not skipped
    refused = [(page, c, why) for page, c in sorted(shown) if (why := refusal(c))]
    assert not refused, (refused, capsys.readouterr().err)


def test_a_removed_option_in_the_docs_fails_the_check(capsys):
    page = "Run it:\n\n```bash\ncompilebench run --model resnet-50 \\\n    --turbo   # faster\n```\n"
    (command,) = commands(page)
    assert command == "compilebench run --model resnet-50 --turbo" and refusal(command) == "exit 2"
    assert "unrecognized arguments: --turbo" in capsys.readouterr().err
    assert commands("`compilebench run --repeats R`, `compilebench report a.db`, `compilebench tune`") == [
        "compilebench report a.db"]


def _build(config_dir: str, site: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", site], cwd=config_dir,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_documentation_site_builds_strict(tmp_path):
    done = _build(ROOT, str(tmp_path / "site"))
    assert done.returncode == 0, done.stderr
    reference = (tmp_path / "site" / "reference" / "index.html").read_text()
    assert "compilebench.api.benchmark" in reference and "Measure" in reference  # rendered from the docstrings
    assert (tmp_path / "site" / "report.png").exists()


@pytest.mark.parametrize("breakage, said", [
    ("[the options](usage.md#no-such-heading)", "no-such-heading"),
    ("[a page](no-such-page.md)", "no-such-page.md"),
    ("::: compilebench.api.no_such_function", "no_such_function"),
])
def test_a_broken_link_or_reference_fails_the_build(tmp_path, breakage, said):
    for part in ("docs", "examples"):
        shutil.copytree(os.path.join(ROOT, part), tmp_path / part)
    shutil.copy(os.path.join(ROOT, "mkdocs.yml"), tmp_path)
    os.symlink(os.path.join(ROOT, "src"), tmp_path / "src")
    with open(tmp_path / "docs" / "tune.md", "a") as f:
        f.write(f"\n{breakage}\n")
    done = _build(str(tmp_path), str(tmp_path / "site"))
    assert done.returncode != 0 and said in done.stdout + done.stderr, done.stderr
