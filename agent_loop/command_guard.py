"""The run_command guard: three independent layers, always applied in this order.

  layer 1 (syntax)   the raw string: no shell operator or expansion, no control or non-ASCII
                     character, not overlong. Needs no parse, so nothing can hide from it in quoting.
  layer 2 (allowlist) shlex-parsed argv: a bare executable name on the allowlist
                     (agent_loop/data/command_allowlist.json, one reason per entry), resolved
                     with shutil.which against a fixed PATH; per-executable option rules; every
                     argument that names an existing path must resolve inside the repository.
  layer 3 (execution) subprocess with shell=False, cwd=repo, stdin closed, a scrubbed environment
                     built from nothing (no secrets; pagers are cat; git ignores system/global
                     config, and the repository's own config cannot make it run a program: no
                     fsmonitor, hooks, signature programs, external diff, textconv or filter
                     drivers), a timeout, capped output.

Each layer stands on its own: layer 3 never involves a shell even for argv layer 1 would refuse,
and layer 2 does not rely on layer 1 having removed anything. A refusal raises CommandRefused
naming the layer and the reason.

The guard is pure code over frozen data: the allowlist is read once from the installed package,
and no argument, tool result or model output can change what it allows.

Deliberate choices, for the record:
  * glob characters * ? [ ] are allowed: no shell ever expands them here, so they reach the
    program literally, and find -name / grep --include / git pathspecs need them. `!` (history
    expansion) is refused, and so is `~` where a shell would expand it (a word's start, after
    `=` or `:`); `HEAD~2` is fine.
  * every non-ASCII character is refused, which also refuses Unicode look-alikes (fullwidth
    `；`, Cyrillic letters in a program name). Searching for non-ASCII text needs read_file.
  * every argument (and every `--opt=` value, and every tail of a `-xVALUE` cluster) is treated
    as a possible path: read relative to the repository root, or as absolute, with symlinks
    followed, it must stay inside the repository. Which token is a path depends on the program,
    so patterns are checked too: a pattern that starts with '/' is refused (write `[/]api`).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from io import BufferedReader
from pathlib import Path
from types import MappingProxyType

MAX_COMMAND_CHARS = 1000          # a real read-only command fits easily; longer input is refused unread
MAX_ARGS = 64
COMMAND_TIMEOUT_S = 10.0
MAX_STDOUT_BYTES = 16_000         # what the model sees of standard output; the process is killed past it
MAX_STDERR_BYTES = 4_000
_READ_CHUNK_BYTES = 8192
ALLOWLIST_RESOURCE = "command_allowlist.json"

LAYER_SYNTAX = 1
LAYER_ALLOWLIST = 2
LAYER_EXECUTION = 3
LAYER_NAMES = {LAYER_SYNTAX: "syntax", LAYER_ALLOWLIST: "allowlist", LAYER_EXECUTION: "execution"}

# Layer 1 tables. Multi-character operators are named first so the message says "&&", not "&".
_MULTI_CHAR_OPERATORS = ("&&", "||", "$(", "${", ">>", "<<", "<(", ">(", "|&", ";;")
_SHELL_METACHARACTERS = {
    ";": "command separator", "&": "background/chaining operator", "|": "pipe",
    "<": "input redirection", ">": "output redirection", "$": "variable or command expansion",
    "`": "command substitution", "(": "subshell or substitution", ")": "subshell or substitution",
    "{": "brace expansion or group", "}": "brace expansion or group",
    "!": "history expansion or negation",
}
# A shell expands ~ only where a word (or an assignment value) starts; HEAD~2 stays allowed.
_TILDE_EXPANSION = re.compile(r"(^|[\s=:])~")
_NEGATIVE_NUMBER = re.compile(r"^-\d+[a-zA-Z]?$")   # find -mtime -7, -size -10k, head -5


class CommandRefused(Exception):
    """run_command refused a command. `layer` is 1, 2 or 3; the message says which and why."""

    def __init__(self, layer: int, reason: str):
        self.layer = layer
        self.layer_name = LAYER_NAMES[layer]
        self.reason = reason
        super().__init__(f"refused by layer {layer} ({self.layer_name}): {reason}")


# ----------------------------------------------------------------------------------------------
# The allowlist, loaded once and frozen.

@dataclass(frozen=True)
class ExecutableRule:
    name: str
    reason: str
    refused_short: Mapping[str, str]      # "R" -> reason
    refused_long: Mapping[str, str]       # "--dereference-recursive" -> reason
    allowed_predicates: Mapping[str, str] | None = None   # find: every -word must be listed
    subcommands: Mapping[str, str] | None = None          # git: the subcommand must be listed
    allowed_global_options: Mapping[str, str] | None = None
    hardening_flags: Mapping[str, tuple[str, ...]] | None = None


@dataclass(frozen=True)
class Allowlist:
    search_path: str
    executables: Mapping[str, ExecutableRule]
    refused_executables: Mapping[str, str]


def _split_options(options: dict[str, str]) -> tuple[Mapping[str, str], Mapping[str, str]]:
    short: dict[str, str] = {}
    long: dict[str, str] = {}
    for option, reason in options.items():
        if option.startswith("--"):
            long[option] = reason
        elif len(option) == 2 and option.startswith("-"):
            short[option[1]] = reason
        else:
            raise ValueError(f"allowlist: malformed option {option!r}")
    return MappingProxyType(short), MappingProxyType(long)


def parse_allowlist(raw: dict) -> Allowlist:
    executables: dict[str, ExecutableRule] = {}
    for name, entry in raw["executables"].items():
        if not entry.get("reason"):
            raise ValueError(f"allowlist: {name} has no reason")
        short, long = _split_options(entry.get("refused_options", {}))
        predicates = entry.get("allowed_predicates")
        subcommands = entry.get("subcommands")
        globals_ = entry.get("allowed_global_options")
        hardening = entry.get("hardening_flags")
        executables[name] = ExecutableRule(
            name=name,
            reason=entry["reason"],
            refused_short=short,
            refused_long=long,
            allowed_predicates=MappingProxyType(dict(predicates)) if predicates is not None else None,
            subcommands=MappingProxyType(dict(subcommands)) if subcommands is not None else None,
            allowed_global_options=MappingProxyType(dict(globals_)) if globals_ is not None else None,
            hardening_flags=(MappingProxyType({k: tuple(v) for k, v in hardening.items()})
                             if hardening is not None else None),
        )
    overlap = set(executables) & set(raw["refused_executables"])
    if overlap:
        raise ValueError(f"allowlist: both allowed and refused: {sorted(overlap)}")
    return Allowlist(
        search_path=raw["search_path"],
        executables=MappingProxyType(executables),
        refused_executables=MappingProxyType(dict(raw["refused_executables"])),
    )


@lru_cache(maxsize=1)
def load_allowlist() -> Allowlist:
    text = resources.files("agent_loop").joinpath("data", ALLOWLIST_RESOURCE).read_text(encoding="utf-8")
    return parse_allowlist(json.loads(text))


# ----------------------------------------------------------------------------------------------
# Layer 1: the raw string.

def check_syntax(command: str) -> None:
    """Layer 1. Refuses anything a shell would treat specially, before any parsing."""
    if len(command) > MAX_COMMAND_CHARS:
        raise CommandRefused(LAYER_SYNTAX,
                             f"command is {len(command)} characters long; the limit is {MAX_COMMAND_CHARS}")
    if not command.strip():
        raise CommandRefused(LAYER_SYNTAX, "empty command")
    for char in command:
        code = ord(char)
        if code == 0:
            raise CommandRefused(LAYER_SYNTAX, "NUL byte in command")
        if code > 127:
            name = unicodedata.name(char, "unnamed")
            raise CommandRefused(LAYER_SYNTAX,
                                 f"non-ASCII character U+{code:04X} ({name}); only plain ASCII commands run")
        if char == "\n" or char == "\r":
            raise CommandRefused(LAYER_SYNTAX, "newline in command; run one command per call")
        if code < 32 or code == 127:
            raise CommandRefused(LAYER_SYNTAX, f"control character 0x{code:02X} in command")
    for operator in _MULTI_CHAR_OPERATORS:
        if operator in command:
            raise CommandRefused(LAYER_SYNTAX, f"shell operator {operator!r}; nav runs one program, without a shell")
    if _TILDE_EXPANSION.search(command):
        raise CommandRefused(LAYER_SYNTAX,
                             "'~' at the start of a word (home-directory expansion); use repository-relative paths")
    for char in command:
        if char in _SHELL_METACHARACTERS:
            raise CommandRefused(
                LAYER_SYNTAX,
                f"shell character {char!r} ({_SHELL_METACHARACTERS[char]}); nav runs one program, without a shell",
            )


# ----------------------------------------------------------------------------------------------
# Layer 2: the parsed argv.

@dataclass(frozen=True)
class ApprovedCommand:
    """What layer 2 hands to layer 3: an absolute binary path plus arguments, and the display form."""
    argv: tuple[str, ...]
    executable: str
    display: str


def _long_option_refusal(token: str, refused_long: Mapping[str, str]) -> str | None:
    name = token.split("=", 1)[0]
    if name == "--":
        return None
    for refused, reason in refused_long.items():
        # Refused also when abbreviated: getopt_long and git accept unique prefixes (--deref, --outp).
        if refused == name or (len(name) > 2 and refused.startswith(name)):
            return f"option {refused} {reason}"
    return None


def _short_option_refusal(token: str, refused_short: Mapping[str, str]) -> str | None:
    for char in token[1:]:
        if char in refused_short:
            return f"option -{char} {refused_short[char]}"
    return None


def _check_options(rule: ExecutableRule, args: list[str]) -> None:
    for token in args:
        if rule.allowed_predicates is not None:
            if token.startswith("-") and token not in rule.allowed_predicates and not _NEGATIVE_NUMBER.match(token):
                raise CommandRefused(
                    LAYER_ALLOWLIST,
                    f"{rule.name} predicate {token!r} is not on the allowlist (it may run, delete or write, "
                    f"or follow symlinks); allowed: {' '.join(sorted(rule.allowed_predicates))}",
                )
            continue
        if token.startswith("--"):
            refusal = _long_option_refusal(token, rule.refused_long)
        elif token.startswith("-") and len(token) > 1:
            refusal = _short_option_refusal(token, rule.refused_short)
        else:
            refusal = None
        if refusal:
            raise CommandRefused(LAYER_ALLOWLIST, f"{rule.name}: {refusal}")


def _check_git(rule: ExecutableRule, args: list[str]) -> list[str]:
    """Validates `git [--no-pager] <subcommand> ...` and returns the args with nav's hardening flags."""
    assert rule.subcommands is not None and rule.allowed_global_options is not None
    position = 0
    while position < len(args) and args[position].startswith("-"):
        if args[position] not in rule.allowed_global_options:
            raise CommandRefused(
                LAYER_ALLOWLIST,
                f"git global option {args[position]!r} is refused: options before the subcommand "
                "(-c, -C, --git-dir, --work-tree, --exec-path, -p, ...) change the config, the repository, "
                "the pager or the programs git runs",
            )
        position += 1
    if position == len(args):
        raise CommandRefused(LAYER_ALLOWLIST, "git without a subcommand")
    subcommand = args[position]
    if subcommand not in rule.subcommands:
        raise CommandRefused(
            LAYER_ALLOWLIST,
            f"git subcommand {subcommand!r} is not on the read-only list (aliases are never run); "
            f"allowed: {' '.join(sorted(rule.subcommands))}",
        )
    rest = args[position + 1:]
    _check_options(rule, rest)
    hardening = list((rule.hardening_flags or {}).get(subcommand, ()))
    return ["--no-pager", subcommand, *hardening, *rest]


def _path_candidates(token: str) -> list[str]:
    if not token.startswith("-"):
        return [token]
    if token.startswith("--"):
        return [token.split("=", 1)[1]] if "=" in token else []
    # -fFILE, -rnf../x: the value of a short option may start at any position of the cluster.
    return [token[start:] for start in range(1, len(token))]


def _check_paths(repo_root: Path, args: list[str]) -> None:
    """Every argument is a possible path: read relative to the repository (or as absolute) and with
    symlinks followed, it must stay inside. Patterns are checked too, since which token is a path
    depends on the program; the cost is a rare false refusal (a pattern starting with '/')."""
    repo_real = repo_root.resolve()
    for token in args:
        for candidate in _path_candidates(token):
            if not candidate:
                continue
            path = Path(candidate) if os.path.isabs(candidate) else repo_real / candidate
            try:
                resolved = path.resolve(strict=False)
            except (OSError, RuntimeError) as err:   # RuntimeError: a symlink loop
                raise CommandRefused(LAYER_ALLOWLIST, f"path {candidate!r} cannot be resolved ({err})") from err
            if not resolved.is_relative_to(repo_real):
                raise CommandRefused(
                    LAYER_ALLOWLIST,
                    f"argument {candidate!r} is a path outside the repository (it resolves to {resolved}); "
                    "name only paths inside the repository, relative to its root",
                )


def check_argv(argv: list[str], repo_root: Path, allowlist: Allowlist | None = None) -> ApprovedCommand:
    """Layer 2. Takes a parsed argv and returns the approved, absolute-path argv, or refuses."""
    rules = allowlist or load_allowlist()
    if not argv:
        raise CommandRefused(LAYER_ALLOWLIST, "empty command")
    if len(argv) > MAX_ARGS:
        raise CommandRefused(LAYER_ALLOWLIST, f"{len(argv)} arguments; the limit is {MAX_ARGS}")
    if any("\0" in token for token in argv):
        raise CommandRefused(LAYER_ALLOWLIST, "NUL byte in an argument")
    name, args = argv[0], list(argv[1:])
    if "/" in name or "\\" in name:
        raise CommandRefused(
            LAYER_ALLOWLIST, f"{name!r} is a path to a program; give a bare name from the allowlist"
        )
    if name in rules.refused_executables:
        raise CommandRefused(LAYER_ALLOWLIST, f"{name!r} is refused: {rules.refused_executables[name]}")
    rule = rules.executables.get(name)
    if rule is None:
        raise CommandRefused(
            LAYER_ALLOWLIST,
            f"{name!r} is not on the allowlist of read-only programs; allowed: {' '.join(sorted(rules.executables))}",
        )
    if rule.subcommands is not None:
        args = _check_git(rule, args)
    else:
        _check_options(rule, args)
    _check_paths(repo_root, args)
    # Looked up last, so a refused option is reported as such even where the program is missing.
    executable = shutil.which(name, path=rules.search_path)
    if executable is None:
        raise CommandRefused(LAYER_ALLOWLIST, f"{name!r} is allowed but not installed on this machine")
    return ApprovedCommand(argv=(executable, *args), executable=name, display=shlex.join([name, *args]))


def parse_command(command: str) -> list[str]:
    """shlex, POSIX rules, no comments. An unbalanced quote is a layer-2 refusal."""
    try:
        return shlex.split(command, comments=False, posix=True)
    except ValueError as err:
        raise CommandRefused(LAYER_ALLOWLIST, f"cannot parse the command ({err})") from err


def approve(command: str, repo_root: Path) -> ApprovedCommand:
    """Layers 1 and 2."""
    check_syntax(command)
    return check_argv(parse_command(command), repo_root)


# ----------------------------------------------------------------------------------------------
# Layer 3: execution.

# Config that git reads from the repository's own .git/config can name programs. These settings
# come in at command-line scope (GIT_CONFIG_COUNT), which outranks every config file.
_GIT_CONFIG_OVERRIDES = (
    ("core.fsmonitor", "false"),        # an fsmonitor hook runs on status/diff
    ("core.hooksPath", os.devnull),     # no hooks
    ("core.pager", "cat"),
    ("log.showSignature", "false"),     # would run gpg.program
    # --format=%G? and friends verify signatures, which runs these programs.
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("protocol.allow", "never"),        # no network, even for a lazy fetch in a partial clone
)
# Clean/smudge filters (filter.<driver>.*) run on status and diff for files whose attributes name
# the driver. Driver names are the repository's own, so nav asks git for them and empties each one.
_FILTER_KEYS = (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
_GIT_QUERY_TIMEOUT_S = 5.0


def scrubbed_environment(repo_root: Path, search_path: str,
                         filter_drivers: tuple[str, ...] = ()) -> dict[str, str]:
    """Built from nothing, never copied from os.environ: no API key or other secret can leak."""
    repo_real = repo_root.resolve()
    env = {
        "PATH": search_path,
        "LC_ALL": "C",
        "LANG": "C",
        "TERM": "dumb",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",      # git status must not rewrite the index
        # git must not climb out of the repository to a parent repository (a home-directory repo).
        "GIT_CEILING_DIRECTORIES": str(repo_real.parent),
    }
    if (repo_real / ".git").exists():
        # Pin both, so a core.worktree in the repository's config cannot point git elsewhere.
        env["GIT_DIR"] = str(repo_real / ".git")
        env["GIT_WORK_TREE"] = str(repo_real)
    overrides = list(_GIT_CONFIG_OVERRIDES)
    for driver in filter_drivers:
        overrides.extend((f"filter.{driver}.{key}", value) for key, value in _FILTER_KEYS)
    env["GIT_CONFIG_COUNT"] = str(len(overrides))
    for index, (key, value) in enumerate(overrides):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env


def git_filter_drivers(git_executable: str, repo_root: Path, search_path: str) -> tuple[str, ...]:
    """The filter driver names configured for the repository (config files only; runs nothing else)."""
    try:
        completed = subprocess.run(
            [git_executable, "config", "--name-only", "--get-regexp", r"^filter\."],
            shell=False, cwd=repo_root, env=scrubbed_environment(repo_root, search_path),
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=_GIT_QUERY_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise CommandRefused(LAYER_EXECUTION, f"could not read the repository's git config to disarm filters: {err}") \
            from err
    drivers = []
    for name in completed.stdout.splitlines():   # filter.<driver>.<key>; a driver name may contain dots
        driver = name.removeprefix("filter.").rpartition(".")[0]
        if driver and driver not in drivers:
            drivers.append(driver)
    return tuple(drivers)


@dataclass(frozen=True)
class CommandResult:
    command: str
    exit_code: int | None       # None when nav killed it (timeout or output cap)
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool

    def render(self) -> str:
        """The text handed back to the model."""
        lines = [f"$ {self.command}"]
        if self.timed_out:
            lines.append(f"[killed: no result after {COMMAND_TIMEOUT_S:g} s]")
        elif self.exit_code is None:
            lines.append(f"[stopped after {MAX_STDOUT_BYTES} bytes of output]")
        else:
            lines.append(f"[exit code {self.exit_code}]")
        lines.append(self.stdout if self.stdout else "(no output)")
        if self.stdout_truncated:
            lines.append(f"[output truncated at {MAX_STDOUT_BYTES} bytes; narrow the command]")
        if self.stderr:
            lines.append("[stderr]")
            lines.append(self.stderr)
            if self.stderr_truncated:
                lines.append(f"[stderr truncated at {MAX_STDERR_BYTES} bytes]")
        return "\n".join(lines)


class _CappedReader(threading.Thread):
    """Drains one pipe, keeping at most `cap` bytes; calls `on_overflow` once past it."""

    def __init__(self, stream: BufferedReader, cap: int, on_overflow: Callable[[], None]):
        super().__init__(daemon=True)
        self._stream = stream
        self._cap = cap
        self._on_overflow = on_overflow
        self.data = bytearray()
        self.truncated = False

    def run(self) -> None:
        while True:
            chunk = self._stream.read1(_READ_CHUNK_BYTES)
            if not chunk:
                break
            room = self._cap - len(self.data)
            if len(chunk) > room:
                self.data.extend(chunk[:max(room, 0)])
                if not self.truncated:
                    self.truncated = True
                    self._on_overflow()
            else:
                self.data.extend(chunk)
        self._stream.close()


def execute(approved: ApprovedCommand, repo_root: Path, *, timeout_s: float = COMMAND_TIMEOUT_S) -> CommandResult:
    """Layer 3. shell=False always; the argv is never joined into a string."""
    search_path = load_allowlist().search_path
    drivers = git_filter_drivers(approved.argv[0], repo_root, search_path) if approved.executable == "git" else ()
    env = scrubbed_environment(repo_root, search_path, drivers)
    try:
        process = subprocess.Popen(
            list(approved.argv), shell=False, cwd=repo_root, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,   # its own process group, so a kill reaches its children too
            close_fds=True,
        )
    except OSError as err:
        raise CommandRefused(LAYER_EXECUTION, f"could not start {approved.executable}: {err}") from err
    output_capped = threading.Event()

    def kill_group() -> None:
        # Only while the process is unreaped: its id (and so its group id) is still ours.
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop_on_overflow() -> None:
        output_capped.set()
        kill_group()

    assert process.stdout is not None and process.stderr is not None
    stdout_reader = _CappedReader(process.stdout, MAX_STDOUT_BYTES, stop_on_overflow)
    stderr_reader = _CappedReader(process.stderr, MAX_STDERR_BYTES, lambda: None)
    stdout_reader.start()
    stderr_reader.start()
    timed_out = False
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        kill_group()
        process.wait()
    stdout_reader.join()
    stderr_reader.join()
    killed = timed_out or output_capped.is_set()
    return CommandResult(
        command=approved.display,
        exit_code=None if killed else process.returncode,
        stdout=stdout_reader.data.decode("utf-8", errors="replace"),
        stderr=stderr_reader.data.decode("utf-8", errors="replace"),
        stdout_truncated=stdout_reader.truncated,
        stderr_truncated=stderr_reader.truncated,
        timed_out=timed_out,
    )


def run_command(command: str, repo_root: Path, *, timeout_s: float = COMMAND_TIMEOUT_S,
                allow_secrets: bool = False) -> CommandResult:
    """All three layers, in order. Raises CommandRefused when a layer refuses. Unless secrets are allowed, a
    command naming a secret-shaped file is refused, and secrets are kept out of what it prints
    (withhold_secrets)."""
    approved = approve(command, repo_root)
    if not allow_secrets:
        _refuse_secret_paths(repo_root, approved.argv[1:])
    result = execute(approved, repo_root, timeout_s=timeout_s)
    return result if allow_secrets else withhold_secrets(result)


def _refuse_secret_paths(repo_root: Path, args: Sequence[str]) -> None:
    from navigator.index.secrets import is_secret_file
    repo_real = repo_root.resolve()
    for token in args:
        for candidate in _path_candidates(token):
            path = Path(candidate) if os.path.isabs(candidate) else repo_real / candidate
            try:
                resolved = path.resolve(strict=False)
            except (OSError, RuntimeError):
                continue
            if resolved.is_relative_to(repo_real) and resolved.is_file() and \
                    is_secret_file(resolved.relative_to(repo_real).as_posix()):
                raise CommandRefused(LAYER_ALLOWLIST, f"argument {candidate!r} is a secret-shaped file (keys, "
                                     "credentials, .env); nav does not read it out")


def withhold_secrets(result: CommandResult) -> CommandResult:
    """Output lines of a secret-shaped file (grep's `path:line`) are withheld; secret values in the others
    are redacted (navigator.index.secrets)."""
    from dataclasses import replace
    from navigator.index.secrets import REDACTION_MARKER, LineRedactor, is_secret_file

    def clean(text: str) -> str:
        redactor = LineRedactor("command-output")
        out = []
        for line in text.split("\n"):
            head = line.split(":", 1)[0].removeprefix("./")
            if head and ":" in line and is_secret_file(head):
                out.append(f"{head}:{REDACTION_MARKER} (a secret-shaped file: withheld)")
            else:
                out.append(redactor(line))
        return "\n".join(out)

    return replace(result, stdout=clean(result.stdout), stderr=clean(result.stderr))
