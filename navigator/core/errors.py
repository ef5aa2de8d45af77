"""The one error tree of nav. Every failure a user can cause or meet is one of these.

    NavError                      exit 1   base: message + hint, printed as "Error: ..." by the CLI
    ├── UsageError                exit 2   bad arguments or options
    ├── InputError                exit 2   a path or file given by the user is missing / unusable
    │   └── QueryFileError        exit 2   a malformed query set (line numbers in the message)
    ├── IndexError_               exit 3   the index is missing, corrupt, locked, or built differently
    │   ├── IndexMissingError     exit 3
    │   ├── IndexCorruptError     exit 3
    │   ├── IndexLockedError      exit 3
    │   ├── IndexReadOnlyError    exit 3   .nav cannot be written (read-only file system, permissions)
    │   └── EmbedderMismatchError exit 3
    ├── ModelError                exit 4   an embedding / rerank model that cannot be loaded
    ├── RetrieverError            exit 2   unknown retriever name (lists the registered ones)
    ├── LeakageError              exit 5   the answer key lies inside the indexed tree
    ├── PolicyError               exit 2   a selection policy file that fails to load or breaks its contract
    ├── LLMError                  exit 6   the language-model API failed (after the SDK's own retries)
    │   └── MissingAPIKeyError    exit 7
    └── VectorStoreUnavailableError exit 8 the chroma server (NAV_CHROMA_URL) is down or failed mid-run

Lower-level errors (sqlite3, chromadb, tree-sitter, HTTP) are caught where they happen and
re-raised as one of these, so each front end translates them in exactly one place: the CLI in
navigator.frontends.cli.report_error (message + exit code), the MCP server in mcp_server.build_server's
on_worker (a tool error with the message and hint).
"""
from __future__ import annotations


class NavError(Exception):
    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def format(self) -> str:
        text = f"Error: {self.message}"
        if self.hint:
            text += f"\n  {self.hint}"
        return text


class UsageError(NavError):
    exit_code = 2


class InputError(NavError):
    exit_code = 2


class QueryFileError(InputError):
    pass


class IndexError_(NavError):  # trailing underscore: do not shadow the builtin IndexError
    exit_code = 3


class IndexMissingError(IndexError_):
    pass


class IndexCorruptError(IndexError_):
    pass


class IndexLockedError(IndexError_):
    pass


class IndexReadOnlyError(IndexError_):
    """The index folder cannot be written: `nav index` cannot run, searches still read it."""


class EmbedderMismatchError(IndexError_):
    pass


class IndexOutdatedError(IndexError_):
    """The index was built by an older nav (versions.outdated_by): searches still read it, with a warning; a
    measurement refuses it, since its figures would be neither the old nav's nor this one's."""


class ModelError(NavError):
    exit_code = 4


class RetrieverError(NavError):
    exit_code = 2


class LeakageError(NavError):
    exit_code = 5


class LLMError(NavError):
    exit_code = 6


class MissingAPIKeyError(LLMError):
    exit_code = 7


class PolicyError(NavError):
    """A selection policy file that cannot be loaded, or whose output breaks the policy contract."""
    exit_code = 2


class VectorStoreUnavailableError(NavError):
    """A chroma server (NAV_CHROMA_URL) that cannot be reached or fails during a run. Nothing is lost:
    nav.db keeps the chunks and embeddings and the next run syncs the vectors."""
    exit_code = 8
