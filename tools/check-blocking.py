#!/usr/bin/env python3
"""The cooperative-pool rule, enforced (docs/architecture.md, "The cooperative pool").

Swift's cooperative pool has one thread per core. Blocking calls (sleeps, fsync, waitpid, flock, semaphore waits,
synchronous file reads and writes) and threads or queues of their own belong on the one blocking executor
(`Support`: `Blocking`, `SerialLane`, `BlockingPool`, `Threads`). This check lists every such call in Sources/ and
Tests/ and fails on any that is not in tools/blocking-audit.txt, where each audited place says where it runs and why
that is not the cooperative pool. A new blocking call is either moved onto the executor or audited there.

Usage: tools/check-blocking.py [--list]   (--list prints every place found, for updating the audit)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUDIT = os.path.join(ROOT, "tools", "blocking-audit.txt")

# What counts as blocking (or as an executor of its own), by name.
PATTERNS = {
    "sleep": re.compile(r"(?<![\w.])(usleep|nanosleep|sleep)\(|Thread\.sleep"),
    "fsync": re.compile(r"(?<![\w.])(fsync|fdatasync|sync_file_range)\("),
    "wait-process": re.compile(r"(?<![\w.])(waitpid|waitid|wait4)\(|waitUntilExit\(|textBlocking\(|linesBlocking\("),
    "flock": re.compile(r"(?<![\w.])(flock|lockf)\("),
    "semaphore-wait": re.compile(r"\.wait\((timeout:)?[^)]*\)\s*(==|!=|$|\)|;|\})|DispatchGroup\(\)"),
    "sync-file-io": re.compile(r"Data\(contentsOf|String\(contentsOfFile|\.write\(to: URL|\.write\(toFile:|FileHandle\("),
    "own-executor": re.compile(r"DispatchQueue\.global|DispatchQueue\(label|(?<![\w.])Thread\s*(\{|\()|\.sync\s*\{"),
}


def places():
    for top in ("Sources", "Tests"):
        for directory, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if not name.endswith(".swift"):
                    continue
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, ROOT)
                with open(path, encoding="utf-8") as f:
                    for number, line in enumerate(f, 1):
                        code = line.split("//", 1)[0]
                        for kind, pattern in PATTERNS.items():
                            if not pattern.search(code):
                                continue
                            # An awaited call suspends instead of blocking (a clock's sleep, a reactor's wait).
                            if kind in ("sleep", "semaphore-wait") and re.search(r"\bawait\b|\bfunc\b", code):
                                continue
                            yield rel, kind, number, line.strip()


def audit():
    """(file, kind) pairs that are audited, with their reasons."""
    allowed = {}
    with open(AUDIT, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = re.match(r"^(\S+)\s+(\S+)\s+--\s+(.+)$", line)
            if not match or match.group(2) not in PATTERNS:
                sys.exit(f"{AUDIT}:{number}: expected 'PATH KIND -- where it runs and why', KIND one of {', '.join(PATTERNS)}")
            allowed[(match.group(1), match.group(2))] = match.group(3)
    return allowed


def main():
    found = list(places())
    if "--list" in sys.argv:
        for rel, kind, number, line in found:
            print(f"{rel}:{number}: {kind}: {line}")
        return 0
    allowed = audit()
    unaudited = [(rel, kind, number, line) for rel, kind, number, line in found if (rel, kind) not in allowed]
    used = {(rel, kind) for rel, kind, _, _ in found}
    stale = sorted(key for key in allowed if key not in used)
    for rel, kind, number, line in unaudited:
        print(f"{rel}:{number}: blocking call ({kind}) not in tools/blocking-audit.txt: {line}")
    for rel, kind in stale:
        print(f"tools/blocking-audit.txt: {rel} {kind} is audited but no longer there: remove the line")
    if unaudited or stale:
        print("move the call onto the blocking executor (Support: Blocking, SerialLane) or audit it (docs/architecture.md)")
        return 1
    print(f"blocking calls: {len(found)} places in {len(used)} audited file/kind pairs, none on the cooperative pool unaudited")
    return 0


if __name__ == "__main__":
    sys.exit(main())
