"""Secrets stay out of the index and out of everything nav serves.

Two rules, both on by default:

- **Secret-shaped files are not indexed or served**: `.env` and `.env.*` (but `.env.example`, `.sample`,
  `.template`, `.dist`), private keys and key stores (`*.pem`, `*.key`, `*.p12`, `*.pfx`, `*.jks`, `*.keystore`,
  `id_rsa*`, `id_dsa*`, `id_ed25519*`, `id_ecdsa*`, but not `*.pub`), credential files (`.netrc`, `.pypirc`,
  `.npmrc`, `.git-credentials`, `.htpasswd`, `credentials*` unless it is source code such as `credentials.py`,
  `*.kdbx`, `kubeconfig`, `.dockercfg`, `terraform.tfstate`). `nav index` counts them as skipped `secret`;
  `read_span` (MCP), `read_file` and `run_command` (`nav ask`) refuse them.
- **Secret values inside every other file are redacted** before anything is stored, embedded or served: each
  value a detector finds is replaced by `<redacted:secret>`, on its own line, so the line stays searchable by
  its key name (`ANTHROPIC_API_KEY=<redacted:secret>`) and every line keeps its number. The detectors are
  detect-secrets' (the well-kept scanner, used here as a library: its plugins' patterns and entropy checks,
  never its verification, which would send a found value over the network) plus a few token formats it does
  not know (Anthropic, OpenAI project keys, Google API keys) and whole PEM private-key blocks. A cheap
  pre-filter picks the lines worth scanning, so a file without a secret-looking line costs one regex pass
  (bench/secrets.py measures the cost per MB and the false positives on click, werkzeug and django).

`--allow-secrets` (`NAV_ALLOW_SECRETS=1`) turns both off, with a warning on every run.
"""
from __future__ import annotations

import os
import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Set

REDACTION_MARKER = "<redacted:secret>"
ALLOW_ENV = "NAV_ALLOW_SECRETS"
SKIP_REASON = "secret"
# Bump when the detectors change: an index whose chunks another redaction produced is re-chunked.
REDACTION_VERSION = "1"

# gitignore syntax, matched against the repository-relative path.
SECRET_FILE_PATTERNS = (
    ".env", ".env.*", "!.env.example", "!.env.sample", "!.env.template", "!.env.dist", "!.env.defaults",
    "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", "*.ppk",
    "id_rsa*", "id_dsa*", "id_ed25519*", "id_ecdsa*", "!*.pub",
    ".netrc", "_netrc", ".pypirc", ".npmrc", ".git-credentials", ".htpasswd", ".dockercfg", ".pgpass",
    "credentials", "credentials.*", ".credentials", "kubeconfig", "*.kubeconfig", "terraform.tfstate",
    "terraform.tfstate.*", "secrets.env",
)
# `credentials.py` in a library is source code about credentials, not a credential file.
_SOURCE_SUFFIXES = (".py", ".pyi", ".go", ".rs", ".java", ".kt", ".ts", ".tsx", ".js", ".mjs", ".cjs", ".jsx",
                    ".rb", ".php", ".cs", ".c", ".h", ".cc", ".cpp", ".hpp", ".swift", ".scala", ".md", ".rst")

# Lines worth a detector's time: a known token prefix, a long quoted run (what the entropy detectors read), or a
# secret-sounding name being assigned (matched on the lower-cased line: IGNORECASE alternations cost ~5x).
_TOKEN_PREFIX = re.compile(r"AKIA|ASIA|gh[pousr]_|github_pat_|xox[abposr]-|sk-|sk_live|rk_live|SG\.|glpat-|npm_|"
                           r"pypi-|eyJ|AIza|AccountKey=|://[^/\s:@]+:[^/\s:@]+@")
_SECRET_WORD_ASSIGNED = re.compile(r"(?:key|secret|token|passw|pwd|auth|credential|private)[^=:\n]{0,40}[=:]")
_LONG_QUOTED = re.compile(r"[\"'][A-Za-z0-9+/=_\-]{20,}[\"']")


_SUSPECTS = (_TOKEN_PREFIX, _LONG_QUOTED)


def _suspect(text: str) -> bool:
    """Whether a line (or a whole file) may hold a secret value: three cheap passes."""
    return bool(_TOKEN_PREFIX.search(text) or _LONG_QUOTED.search(text) or _SECRET_WORD_ASSIGNED.search(text.lower()))


# Formats detect-secrets 1.5 does not know.
_EXTRA_TOKENS = (
    re.compile(r"sk-ant-(?:[a-z]{3}\d\d-)?[A-Za-z0-9_\-]{20,}"),         # Anthropic
    re.compile(r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{20,}"),         # OpenAI project / service keys
    re.compile(r"\bsk-[A-Za-z0-9]{40,}\b"),                              # OpenAI legacy keys
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),                           # Google API keys
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}\b"),                     # GitHub fine-grained tokens
)
# An unquoted assignment to a secret-sounding name (`aws_secret_access_key = wJalr...` in a .py, a .sh, a
# README), which detect-secrets' keyword patterns leave to config files: the value, when it looks random.
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)(?:secret_access_key|secret_key|secretkey|api_key|apikey|access_token|auth_token|client_secret|"
    r"private_key|password|passwd|token)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=_\-.]{16,})")
MIN_ASSIGNED_ENTROPY = 3.5
_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = re.compile(r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
_PEM_BODY_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")
MIN_SECRET_CHARS = 6
# The detect-secrets plugins used (class names), chosen on the cost and false-positive measurements of
# bench/secrets.py: the token-format detectors, the keyword detector (password = "..." and friends) and the
# two entropy detectors at their default limits; not the public-IP detector (addresses are not secrets), nor
# the private-key detector (it flags the BEGIN line; the PEM block rule below redacts the key itself).
PLUGINS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector", "CloudantDetector",
    "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector", "IbmCloudIamDetector",
    "IbmCosHmacDetector", "JwtTokenDetector", "MailchimpDetector", "NpmDetector", "OpenAIDetector",
    "PypiTokenDetector", "SendGridDetector", "SlackDetector", "SoftlayerDetector",
    "SquareOAuthDetector", "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector", "KeywordDetector",
    "Base64HighEntropyString", "HexHighEntropyString",
)


def redaction_mode(extra: "Mapping[str, str] | None" = None) -> str:
    """What the index records of the rule its chunks were made under: "redact-<version>" or "allowed"."""
    return "allowed" if secrets_allowed(extra) else f"redact-{REDACTION_VERSION}"


ALLOWED_WARNING = ("secrets are allowed (--allow-secrets / NAV_ALLOW_SECRETS=1): secret-shaped files and secret "
                   "values are indexed and served as they are")


def secrets_allowed(extra: "Mapping[str, str] | None" = None) -> bool:
    """Whether the user turned both rules off (`--allow-secrets` sets the variable for the run)."""
    value = (extra if extra is not None else os.environ).get(ALLOW_ENV, "")
    return value.strip().lower() in ("1", "true", "yes", "on")


@lru_cache(maxsize=1)
def _secret_files():
    import pathspec
    return pathspec.GitIgnoreSpec.from_lines(list(SECRET_FILE_PATTERNS))


def is_secret_file(path: str) -> bool:
    """A secret-shaped file name (the repository-relative path, '/'-separated)."""
    name = path.rsplit("/", 1)[-1]
    if name.lower().startswith("credentials") and name.lower().endswith(_SOURCE_SUFFIXES):
        return False
    return _secret_files().match_file(path)


@dataclass(frozen=True)
class Redacted:
    text: str
    count: int          # secret values replaced


class _Detectors:
    """detect-secrets' plugins, built once, asked line by line (its settings machinery is bypassed: it would
    reconfigure global state on every call, and its verification step makes network requests)."""

    def __init__(self) -> None:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
        from detect_secrets.filters import heuristic
        from detect_secrets.plugins.keyword import REGEX_BY_FILETYPE, QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
        from detect_secrets.util.filetype import determine_file_type
        classes = {cls.__name__: cls for cls in get_mapping_from_secret_type_to_class().values()}
        plugins = [classes[name]() for name in PLUGINS if name in classes]
        self.token_plugins = [p for p in plugins if hasattr(p, "denylist")]
        self.keyword = next(p for p in plugins if type(p).__name__ == "KeywordDetector")
        self.entropy = [p for p in plugins if type(p).__name__.endswith("HighEntropyString")]
        # One pass decides whether any token format can be in a line (the plugins' own patterns, or-ed).
        self.token_formats = re.compile("|".join(f"(?:{pattern.pattern})" for plugin in self.token_plugins
                                                 for pattern in plugin.denylist))
        self.heuristic = heuristic
        self.keyword_regexes = REGEX_BY_FILETYPE
        self.keyword_default = QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP
        self.file_type = determine_file_type

    def values(self, path: str, line: str) -> set[str]:
        """The secret values detect-secrets' plugins find in one line. Each family of plugins runs only on a
        line that can hold what it looks for (one combined regex decides for the token formats), which keeps
        a line of ordinary code to a few regex passes."""
        found: set[str] = set()
        if self.token_formats.search(line):
            for plugin in self.token_plugins:
                found.update(_value_of(m) for pattern in plugin.denylist for m in pattern.finditer(line))
        if _SECRET_WORD_ASSIGNED.search(line.lower()):
            regexes = self.keyword_regexes.get(self.file_type(path), self.keyword_default)
            found.update(v for v in self.keyword.analyze_string(line, denylist_regex_to_group=regexes)
                         if isinstance(v, str) and not self._guess_rejected(v, line, self.keyword))
        if _LONG_QUOTED.search(line):
            for plugin in self.entropy:
                found.update(v for v in plugin.analyze_string(line)
                             if isinstance(v, str) and plugin.calculate_shannon_entropy(v) > plugin.entropy_limit
                             and not self._guess_rejected(v, line, plugin) and not _is_alphabet(v))
        h = self.heuristic
        return {v for v in found if len(v) >= MIN_SECRET_CHARS and not (
            h.is_sequential_string(v) or h.is_potential_uuid(v) or h.is_templated_secret(v))}

    def _guess_rejected(self, value: str, line: str, plugin) -> bool:
        """The keyword and entropy detectors guess; a token format is a fact and is not second-guessed."""
        h = self.heuristic
        return (h.is_prefixed_with_dollar_sign(value) or h.is_indirect_reference(line)
                or h.is_likely_id_string(value, line, plugin) or _is_placeholder(value))


def _value_of(match: re.Match) -> str:
    group = match.group(1) if match.re.groups else None
    return group if group and len(group) >= MIN_SECRET_CHARS else match.group(0)


_PLACEHOLDER = re.compile(r"^(?:x+|\*+|\.+|<[^>]*>|\{[^}]*\}|(?:your|my|example|dummy|changeme|test)[-_a-z]*|"
                          r"(?:none|null|true|false|password|secret|token)|"
                          r"[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_]\w*)+(?:\(.*\))?)$", re.IGNORECASE)


def _is_placeholder(value: str) -> bool:
    """A value that names where the secret comes from, or stands in for one: `os.environ.get(...)`,
    `settings.SECRET_KEY`, `<your-token>`, `xxxx`, `changeme`."""
    return bool(_PLACEHOLDER.match(value.strip("'\"")))


@lru_cache(maxsize=1)
def _detectors() -> _Detectors:
    return _Detectors()


def redact(path: str, text: str, judged_clean: "Set[str] | frozenset[str]" = frozenset()) -> Redacted:
    """`text` with every secret value replaced by REDACTION_MARKER; lines are never added or removed.
    `judged_clean`: lines of this path this redaction left as they were in an earlier run (the lines of its
    stored chunks). A line's verdict depends only on the path and the line, so those are not read again: an
    edit to a file asks the detectors about the edited lines only, and a one-file re-index seldom imports
    detect-secrets (0.15-0.3 s; 37% of django's files have a line the pre-filter points at)."""
    if "PRIVATE KEY" in text:          # a key block spans lines: read it line by line, in order
        redactor = LineRedactor(path)
        return Redacted("\n".join(map(redactor, text.split("\n"))), redactor.count)
    # Otherwise only the lines the pre-filter points at are read, found in whole-file passes.
    starts = [m.start() for m in _SUSPECTS[0].finditer(text)] + [m.start() for m in _SUSPECTS[1].finditer(text)]
    starts += [m.start() for m in _SECRET_WORD_ASSIGNED.finditer(text.lower())] if len(text) == len(text.lower()) \
        else [i for i, line_start in _line_offsets_matching(text)]
    if not starts:
        return Redacted(text, 0)       # the common case: three regex passes over the file
    lines = text.split("\n")
    offsets = [0]
    for line in lines[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    count = 0
    for row in sorted({bisect_right(offsets, start) - 1 for start in starts}):
        if lines[row] in judged_clean:
            continue
        new, n = redact_line(path, lines[row])
        if n:
            lines[row], count = new, count + n
    return Redacted("\n".join(lines), count)


def judged_clean_lines(stored_texts) -> set[str]:
    """The lines of a file's stored chunk texts that redaction left unchanged: those without the marker (a
    stored line with it came from another line, the one holding the secret)."""
    return {line for text in stored_texts for line in text.split("\n") if REDACTION_MARKER not in line}


def _line_offsets_matching(text: str):
    """(offset, line start) of each secret-word match, for text whose lower-casing changes its length (rare:
    some non-ASCII letters): matched line by line."""
    offset = 0
    for line in text.split("\n"):
        if _SECRET_WORD_ASSIGNED.search(line.lower()):
            yield offset, offset
        offset += len(line) + 1


class LineRedactor:
    """Redacts a file line by line, in order (the lines of a PEM block between its BEGIN and END lines are key
    material whatever they hold): `redact` over a whole file, and read_file / run_command over what they
    stream, give the same lines."""

    def __init__(self, path: str):
        self.path = path
        self.count = 0
        self.in_key = False

    def __call__(self, line: str) -> str:
        if self.in_key:
            if _PEM_END.search(line):
                self.in_key = False
            elif line.strip():
                self.count += 1
                return REDACTION_MARKER
            return line
        if _PEM_BEGIN.search(line) and not _PEM_END.search(line):
            self.in_key = True
            return line
        if not _suspect(line):
            return line
        new, n = redact_line(self.path, line)
        self.count += n
        return new


def _entropy(value: str) -> float:
    from collections import Counter
    from math import log2
    counts = Counter(value)
    return -sum(n / len(value) * log2(n / len(value)) for n in counts.values())


def _looks_random(value: str, line: str, end: int) -> bool:
    """An unquoted value assigned to a secret-sounding name is a secret when it looks like one: letters and
    digits mixed, random enough, not a call (`token = make_token(...)`), a name or an alphabet."""
    if line[end:end + 1] == "(" or _is_placeholder(value) or _is_alphabet(value):
        return False
    return bool(re.search(r"\d", value) and re.search(r"[A-Za-z]", value)) and _entropy(value) >= MIN_ASSIGNED_ENTROPY


def _is_alphabet(value: str) -> bool:
    """`abcdefghjkmnpq...XYZ23456789`: a character set spelt out, not a key (a random 20-character key from an
    alphanumeric alphabet repeats a character with probability ~0.96)."""
    core = value.strip("'\"")
    return len(core) >= 20 and len(set(core)) == len(core)


def redact_line(path: str, line: str) -> tuple[str, int]:
    values = {m.group(0) for pattern in _EXTRA_TOKENS for m in pattern.finditer(line)}
    values |= {m.group(1) for m in _SECRET_ASSIGNMENT.finditer(line) if _looks_random(m.group(1), line, m.end(1))}
    values |= _detectors().values(path, line)
    if "PRIVATE KEY" in line:   # a key written on one line, with literal \n escapes
        values |= {m.group(0) for m in _PEM_BODY_RUN.finditer(line) if "PRIVATE" not in m.group(0)}
    values.discard(REDACTION_MARKER)
    count = 0
    for value in sorted(values, key=len, reverse=True):
        if value in line:
            count += line.count(value)
            line = line.replace(value, REDACTION_MARKER)
    return line, count
