"""run_command's guard: the bypass corpus is refused, real read-only commands really run, each layer
holds on its own, and git cannot be made to run programs from the repository's own config."""
from __future__ import annotations

import codecs
import os
import subprocess
from importlib import resources
from pathlib import Path

import pytest

from agent_loop import command_guard
from agent_loop.command_guard import (
    LAYER_ALLOWLIST,
    LAYER_EXECUTION,
    LAYER_SYNTAX,
    ApprovedCommand,
    CommandRefused,
    approve,
    check_argv,
    check_syntax,
    execute,
    load_allowlist,
    parse_allowlist,
    run_command,
    scrubbed_environment,
)

GIT_IDENTITY = ["-c", "user.name=Test", "-c", "user.email=test@example.com"]


def load_bypass_corpus() -> list[str]:
    text = resources.files("agent_loop").joinpath("data", "command_bypass_corpus.txt").read_text(encoding="utf-8")
    commands = []
    for line in text.split("\n"):
        if line.startswith("esc:"):
            commands.append(codecs.decode(line[len("esc:"):], "unicode_escape"))
        elif not line.strip() or line.lstrip().startswith("#"):
            continue
        elif line.startswith("long:"):
            _, length, prefix = line.split(":", 2)
            commands.append(prefix + "a" * (int(length) - len(prefix)))
        else:
            commands.append(line)
    return commands


BYPASS_CORPUS = load_bypass_corpus()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_IDENTITY, *args], cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory) -> Path:
    """A git repository with two commits, plus an outside directory it links to."""
    base = tmp_path_factory.mktemp("guard")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET outside the repo\n")
    (base / "outside.txt").write_text("outside file\n")
    repo = base / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "informal").mkdir()
    (repo / "README.md").write_text("# Demo\nA demo repository.\n")
    (repo / "file.txt").write_text("alpha\nthe format of the file\nbeta\nperformance notes\n")
    (repo / "firmware.txt").write_text("firmware version 3\n")
    (repo / "informal" / "notes.md").write_text("informal notes\n")
    (repo / "src" / "app.py").write_text("import sys\n\n\ndef main():\n    return 42\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "first commit")
    (repo / "src" / "app.py").write_text("import sys\n\n\ndef main():\n    return 43\n")
    _git(repo, "commit", "-qam", "bump the answer")
    os.symlink(outside, repo / "link_out")
    os.symlink(base / "outside.txt", repo / "link_file")
    os.symlink(repo / "README.md", repo / "link_inside")
    return repo


# ---- the corpus --------------------------------------------------------------------------------

def test_bypass_corpus_is_large_enough():
    assert len(BYPASS_CORPUS) >= 150


@pytest.mark.parametrize("command", BYPASS_CORPUS, ids=lambda c: repr(c[:40]))
def test_bypass_corpus_entry_is_refused(sandbox: Path, command: str):
    with pytest.raises(CommandRefused) as refused:
        approve(command, sandbox)
    message = str(refused.value)
    assert message.startswith(f"refused by layer {refused.value.layer} ({refused.value.layer_name}): ")
    assert refused.value.reason


# ---- allowed commands really run --------------------------------------------------------------

def _lines_of(repo: Path, name: str) -> list[str]:
    return (repo / name).read_text().splitlines()


def test_benign_word_containing_rm_is_not_refused(sandbox: Path):
    # "format", "performance", "firmware", "informal" all contain "rm": a substring filter would refuse them.
    result = run_command("grep format file.txt", sandbox)
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [line for line in _lines_of(sandbox, "file.txt") if "format" in line]
    assert run_command("grep -c performance file.txt", sandbox).stdout.strip() == "1"
    assert run_command("cat firmware.txt", sandbox).stdout == (sandbox / "firmware.txt").read_text()
    assert run_command("ls informal", sandbox).stdout.split() == sorted(os.listdir(sandbox / "informal"))


@pytest.mark.parametrize("command, expected", [
    ("cat src/app.py", lambda repo: (repo / "src/app.py").read_text()),
    ("cat src/../README.md", lambda repo: (repo / "README.md").read_text()),
    ("cat link_inside", lambda repo: (repo / "README.md").read_text()),
    ("head -n 2 file.txt", lambda repo: "".join(f"{line}\n" for line in _lines_of(repo, "file.txt")[:2])),
    ("tail -n 1 file.txt", lambda repo: _lines_of(repo, "file.txt")[-1] + "\n"),
    ("wc -l file.txt", lambda repo: f"{len(_lines_of(repo, 'file.txt'))} file.txt\n"),
    ("grep -rn \"def main\" src", lambda repo: "src/app.py:4:def main():\n"),
    ("ls src", lambda repo: "\n".join(sorted(os.listdir(repo / "src"))) + "\n"),
    ("stat -c %s README.md", lambda repo: f"{(repo / 'README.md').stat().st_size}\n"),
    ("git rev-parse HEAD", lambda repo: _git(repo, "rev-parse", "HEAD")),
    ("git log --format=%s", lambda repo: _git(repo, "log", "--format=%s")),
    ("git --no-pager log -1 --format=%an", lambda repo: "Test\n"),
    ("git ls-files", lambda repo: _git(repo, "ls-files")),
    ("git show HEAD~1:src/app.py", lambda repo: _git(repo, "show", "HEAD~1:src/app.py")),
    ("git grep -n return", lambda repo: _git(repo, "grep", "-n", "return")),
])
def test_allowed_command_runs_and_returns_real_output(sandbox: Path, command: str, expected):
    result = run_command(command, sandbox)
    assert result.exit_code == 0, result.render()
    assert result.stdout == expected(sandbox)


def test_find_with_allowed_predicates_lists_real_files(sandbox: Path):
    result = run_command("find . -name '*.py' -not -path './.git/*'", sandbox)
    assert result.stdout.split() == ["./src/app.py"]
    recent = run_command("find src -type f -mtime -7", sandbox)   # a negative number is a value, not a predicate
    assert recent.stdout.split() == ["src/app.py"]


def test_git_diff_and_blame_show_real_history(sandbox: Path):
    diff = run_command("git diff HEAD~1 -- src/app.py", sandbox)
    assert "-    return 42" in diff.stdout and "+    return 43" in diff.stdout
    blame = run_command("git blame src/app.py", sandbox)
    assert len(blame.stdout.splitlines()) == len(_lines_of(sandbox, "src/app.py"))
    assert run_command("git status --porcelain", sandbox).exit_code == 0


def test_failing_command_reports_exit_code_and_stderr(sandbox: Path):
    result = run_command("cat missing.txt", sandbox)
    assert result.exit_code == 1
    assert "missing.txt" in result.stderr
    assert "[exit code 1]" in result.render()


def test_git_gets_hardening_flags_the_model_did_not_write(sandbox: Path):
    approved = approve("git log -p -1", sandbox)
    assert approved.argv[1:6] == ("--no-pager", "log", "--no-ext-diff", "--no-textconv", "-p")
    assert os.path.isabs(approved.argv[0])


# ---- each layer on its own ---------------------------------------------------------------------

@pytest.mark.parametrize("command", ["grep a;b file.txt", "grep a|b file.txt", "ls $x", "ls `x`", "ls (x)"])
def test_layer1_refuses_operators_even_around_allowed_programs(command: str):
    with pytest.raises(CommandRefused) as refused:
        check_syntax(command)
    assert refused.value.layer == LAYER_SYNTAX


def test_layer1_names_multi_character_operators():
    with pytest.raises(CommandRefused, match="'&&'"):
        check_syntax("ls && id")
    with pytest.raises(CommandRefused, match=r"U\+FF1B \(FULLWIDTH SEMICOLON\)"):
        check_syntax("ls；id")


def test_layer1_allows_tilde_inside_a_word_and_glob_characters():
    check_syntax("git show HEAD~1")
    check_syntax("find . -name '*.py'")
    check_syntax("grep -rn 'x[0-9]?' src")


def test_layer2_refuses_without_layer1(sandbox: Path):
    # argv built directly, as if layer 1 did not exist
    for argv, why in [
        (["python3", "-c", "print(1)"], "interpreter"),
        (["/usr/bin/cat", "README.md"], "path to a program"),
        (["find", ".", "-exec", "id", ";"], "-exec"),
        (["cat", "../outside.txt"], "outside the repository"),
        (["git", "-c", "core.pager=id", "log"], "global option"),
        (["unknowncmd"], "not on the allowlist"),
    ]:
        with pytest.raises(CommandRefused, match=why) as refused:
            check_argv(argv, sandbox)
        assert refused.value.layer == LAYER_ALLOWLIST


def test_layer3_never_uses_a_shell(sandbox: Path, tmp_path: Path):
    # An argv layers 1 and 2 would refuse, handed straight to layer 3: no shell, so nothing expands.
    marker = tmp_path / "pwned"
    approved = ApprovedCommand(argv=("/usr/bin/grep", "-r", "x", f"$(touch {marker})", ";", "touch", str(marker)),
                               executable="grep", display="grep ...")
    result = execute(approved, sandbox)
    assert not marker.exists()
    assert result.exit_code == 2 and "No such file" in result.stderr


def test_layer3_reports_a_program_that_cannot_start(sandbox: Path):
    approved = ApprovedCommand(argv=("/nonexistent/bin/tool",), executable="tool", display="tool")
    with pytest.raises(CommandRefused) as refused:
        execute(approved, sandbox)
    assert refused.value.layer == LAYER_EXECUTION


def test_layer3_environment_is_scrubbed(sandbox: Path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    env = scrubbed_environment(sandbox, load_allowlist().search_path)
    assert not any("secret" in value for value in env.values())
    assert "ANTHROPIC_API_KEY" not in env and "HOME" not in env
    assert env["PAGER"] == env["GIT_PAGER"] == "cat"
    assert env["GIT_CONFIG_NOSYSTEM"] == "1" and env["LC_ALL"] == "C"
    assert env["PATH"] == load_allowlist().search_path


def test_layer3_caps_output_and_kills_the_process(sandbox: Path, tmp_path: Path):
    repo = tmp_path / "big"
    repo.mkdir()
    (repo / "big.txt").write_text("x" * 200 + "\n" * 1 + ("line\n" * 100_000))
    result = run_command("cat big.txt", repo)
    assert result.stdout_truncated and result.exit_code is None
    assert len(result.stdout.encode()) == command_guard.MAX_STDOUT_BYTES
    assert "output truncated" in result.render()


def test_layer3_times_out_a_blocked_command(tmp_path: Path):
    os.mkfifo(tmp_path / "fifo")   # cat blocks on a FIFO nobody writes to
    result = run_command("cat fifo", tmp_path, timeout_s=0.5)
    assert result.timed_out and result.exit_code is None
    assert "killed" in result.render()


# ---- git cannot run programs named in the repository's own config ------------------------------

def test_git_ignores_programs_in_repository_config(tmp_path: Path):
    repo = tmp_path / "evil"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / ".gitattributes").write_text("* diff=evil\n")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "init")
    (repo / "a.txt").write_text("one\ntwo\n")
    markers = {name: tmp_path / f"ran-{name}" for name in ("textconv", "fsmonitor", "external", "filter")}
    _git(repo, "config", "diff.evil.textconv", f"touch {markers['textconv']}; cat")
    _git(repo, "config", "core.fsmonitor", f"touch {markers['fsmonitor']}; true")
    _git(repo, "config", "diff.external", f"touch {markers['external']}; true")
    (repo / ".gitattributes").write_text("* diff=evil filter=evil.v2\n")
    _git(repo, "config", "filter.evil.v2.clean", f"touch {markers['filter']}; cat")
    _git(repo, "config", "filter.evil.v2.smudge", "cat")
    _git(repo, "config", "filter.evil.v2.required", "true")
    os.utime(repo / "a.txt", (1_000_000_000, 1_000_000_000))   # stale stat data: git must re-read the file

    for command in ["git log -p -1", "git show", "git diff", "git status", "git blame a.txt", "git grep one"]:
        result = run_command(command, repo)
        assert result.exit_code == 0, result.render()
    assert not any(marker.exists() for marker in markers.values())

    # The same repository run by plain git does run them: the test above is not vacuous.
    subprocess.run(["git", "diff"], cwd=repo, capture_output=True, check=False)
    assert markers["fsmonitor"].exists() and markers["external"].exists() and markers["filter"].exists()


def test_git_does_not_climb_to_a_parent_repository(tmp_path: Path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "private.txt").write_text("parent repository content\n")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "parent")
    inner = tmp_path / "project"
    inner.mkdir()
    result = run_command("git log --format=%s", inner)
    assert result.exit_code != 0 and "parent" not in result.stdout
    assert "not a git repository" in result.stderr


# ---- the allowlist is frozen data with reasons -------------------------------------------------

def test_allowlist_cannot_be_changed_at_run_time():
    allowlist = load_allowlist()
    with pytest.raises(TypeError):
        allowlist.executables["python3"] = allowlist.executables["cat"]  # type: ignore[index]
    with pytest.raises(TypeError):
        allowlist.executables["git"].subcommands["config"] = "no"  # type: ignore[index]
    assert load_allowlist() is allowlist


def test_every_allowlist_entry_has_a_reason():
    allowlist = load_allowlist()
    for rule in allowlist.executables.values():
        assert rule.reason.strip()
        assert all(reason.strip() for reason in [*rule.refused_short.values(), *rule.refused_long.values()])
        assert all(reason.strip() for reason in (rule.subcommands or {}).values())
    assert all(reason.strip() for reason in allowlist.refused_executables.values())


def test_allowlist_without_reason_is_rejected():
    with pytest.raises(ValueError, match="no reason"):
        parse_allowlist({"search_path": "/usr/bin", "executables": {"cat": {"reason": ""}},
                         "refused_executables": {}})
