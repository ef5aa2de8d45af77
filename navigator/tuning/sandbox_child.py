"""The sandbox's child process (run as a script by sandbox.py: `python -I -B sandbox_child.py`).

It imports what a policy needs, then installs an audit hook that ends the process at the first forbidden
call (network, new processes, ctypes, writing or deleting files), then loads the policy file and runs it on
the frozen candidates read from stdin. Results go to stdout as JSON. Never imported by nav itself.
"""
from __future__ import annotations

import json
import os
import sys

VIOLATION_EXIT = 86                   # keep in step with sandbox.VIOLATION_EXIT
VIOLATION_PREFIX = "NAV-SANDBOX-VIOLATION: "
FORBIDDEN_PREFIXES = ("socket.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.system",
                      "os.kill", "os.remove", "os.unlink", "os.rename", "os.rmdir", "os.mkdir", "os.chmod",
                      "os.chown", "os.link", "os.symlink", "os.truncate", "os.utime", "shutil.", "ctypes.",
                      "pty.", "signal.pthread_kill", "sys.addaudithook", "webbrowser.", "urllib.", "http.",
                      "ftplib.", "smtplib.", "telnetlib.", "imaplib.", "poplib.", "nntplib.")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


def _stop(what: str) -> None:
    os.write(2, f"{VIOLATION_PREFIX}{what}\n".encode("utf-8", "replace"))
    os._exit(VIOLATION_EXIT)


def _audit(event: str, args: tuple) -> None:
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None, None))[:3]
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writes:
            _stop(f"opened a file for writing: {path!r}")
    elif event.startswith(FORBIDDEN_PREFIXES):
        _stop(f"{event} {args[:2]!r}"[:300])


def main() -> int:
    request = json.loads(sys.stdin.read())
    sys.path.insert(0, request["nav_root"])
    sys.dont_write_bytecode = True
    # What any policy needs, imported before the hook so nav's own start-up is not judged.
    from chunkers.base import CodeChunk  # noqa: F401
    from navigator.context import selection  # noqa: F401  (the shipped policy, which a candidate may import)
    from navigator.context.policy import load_policy
    from navigator.index.tokenize import current_tokenizer
    from navigator.tuning.frozen import chunk_from_json
    from retrievers.query_terms import query_tokens
    current_tokenizer()
    query_tokens("warm up")
    queries = [(q["id"], q["question"], [chunk_from_json(c) for c in q["candidates"]]) for q in request["queries"]]
    sys.addaudithook(_audit)

    try:
        policy = load_policy(request["policy"])
        params = policy.params_for_retriever(request["retriever"])
        results = []
        for qid, question, candidates in queries:
            chosen = policy.select_context(question, candidates, request["budget"], params)
            results.append({"id": qid, "pieces": [{"id": getattr(p.chunk, "id", None), "text": p.text}
                                                  for p in chosen.pieces]})
    except Exception as exc:  # the policy's failure is a result for the supervisor, not a crash of nav
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
        return 0
    print(json.dumps({"results": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
