"""Run a candidate policy file where it can do no harm, and get back only what it chose.

The policy runs in a child process (sandbox_child.py) that:
  - starts with `python -I -B` (no user site, no environment-driven imports, no bytecode writes) and a
    scrubbed environment (PATH, LANG, HOME in an empty temporary folder, and nav's tokenizer files);
  - has no network: a fresh network namespace (`unshare --net`) where the machine allows it, and an
    audit hook that ends the child at the first socket, process, ctypes or file-writing call;
  - has CPU-time, address-space, file-size (0: it can write no file) and open-file limits, and a wall
    clock timeout;
  - reads the frozen candidates (no answer key) on stdin and writes its choices as JSON on stdout.
The parent verifies every choice (navigator.context.policy.verify_selection) and scores it; the child
never sees the answer key, the index or the supervisor's files.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from navigator.context.policy import verify_selection
from navigator.core.errors import PolicyError

CHILD = Path(__file__).with_name("sandbox_child.py")
VIOLATION_EXIT = 86        # the child's exit code when its audit hook caught a forbidden call
VIOLATION_PREFIX = "NAV-SANDBOX-VIOLATION: "
# Environment variables the child keeps: the tokenizer's data files change what a query's terms are.
KEPT_ENV = ("NAV_ABBREVIATIONS", "NAV_GLOSSARY")


@dataclass(frozen=True)
class SandboxLimits:
    cpu_seconds: int = 60
    wall_seconds: float = 120.0
    memory_bytes: int = 2 << 30
    open_files: int = 64


@dataclass
class SandboxOutcome:
    status: str                       # ok | violation | timeout | crashed | invalid
    reason: str = ""
    selections: dict[str, object] = field(default_factory=dict)   # query id -> verified selection


def _network_isolation() -> list[str]:
    """`unshare --net` when this machine lets us make a network namespace (root, or user namespaces)."""
    unshare = shutil.which("unshare")
    if not unshare:
        return []
    for prefix in ([unshare, "--net"], [unshare, "--net", "--map-root-user"]):
        try:
            if subprocess.run(prefix + ["true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return []


_ISOLATION: list[str] | None = None


def network_isolation() -> list[str]:
    global _ISOLATION
    if _ISOLATION is None:
        _ISOLATION = _network_isolation()
    return _ISOLATION


def _limit(limits: SandboxLimits):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds))
        resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        os.setsid()
    return apply


def run_policy(policy_file: Path, frozen: list, budget: int, retriever: str,
               limits: SandboxLimits = SandboxLimits()) -> SandboxOutcome:
    """Run `policy_file` on every frozen query at `budget`; verify what it returned."""
    nav_root = str(Path(__file__).resolve().parents[2])
    payload = json.dumps({"policy": str(Path(policy_file).resolve()), "budget": budget, "retriever": retriever,
                          "nav_root": nav_root, "queries": [fq.payload() for fq in frozen]})
    with tempfile.TemporaryDirectory(prefix="nav-sandbox-") as home:
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home, "PYTHONHASHSEED": "0"}
        env.update({k: os.environ[k] for k in KEPT_ENV if k in os.environ})
        command = network_isolation() + [sys.executable, "-I", "-B", str(CHILD)]
        try:
            proc = subprocess.run(command, input=payload, capture_output=True, text=True, env=env, cwd=home,
                                  timeout=limits.wall_seconds, preexec_fn=_limit(limits))
        except subprocess.TimeoutExpired:
            return SandboxOutcome("timeout", f"no answer within {limits.wall_seconds:g} s of wall time")
    violations = [line[len(VIOLATION_PREFIX):] for line in proc.stderr.splitlines()
                  if line.startswith(VIOLATION_PREFIX)]
    if proc.returncode == VIOLATION_EXIT or violations:
        return SandboxOutcome("violation", "; ".join(violations) or "a forbidden call")
    if proc.returncode in (-9, -24) or proc.returncode == 128 + 24:   # SIGKILL / SIGXCPU: the CPU limit
        return SandboxOutcome("timeout", f"used more than {limits.cpu_seconds} s of CPU time")
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        return SandboxOutcome("crashed", tail[0][:300])
    try:
        answer = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return SandboxOutcome("invalid", "the policy's process printed something other than its results")
    if "error" in answer:
        return SandboxOutcome("crashed", answer["error"][:300])
    return _verified(answer, frozen, budget)


def _verified(answer: dict, frozen: list, budget: int) -> SandboxOutcome:
    by_id = {fq.id: fq for fq in frozen}
    selections: dict[str, object] = {}
    for result in answer.get("results", []):
        fq = by_id.get(result.get("id"))
        if fq is None:
            return SandboxOutcome("invalid", f"a result for a query it was not given: {result.get('id')!r}")
        pieces = [SimpleNamespace(chunk=SimpleNamespace(id=p.get("id")), text=p.get("text"), tokens=0)
                  for p in result.get("pieces", [])]
        try:
            selections[fq.id] = verify_selection(SimpleNamespace(pieces=pieces, spent=0), fq.candidates, budget)
        except PolicyError as exc:
            return SandboxOutcome("invalid", f"query {fq.id}: {exc.message}")
    missing = [fq.id for fq in frozen if fq.id not in selections]
    if missing:
        return SandboxOutcome("invalid", f"no result for {len(missing)} queries (first: {missing[0]})")
    return SandboxOutcome("ok", selections=selections)
