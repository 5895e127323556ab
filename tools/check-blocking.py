#!/usr/bin/env python3
"""The cooperative-pool rule, enforced (docs/architecture.md, "The cooperative pool").

Swift's cooperative pool has one thread per core. Blocking calls (sleeps, fsync, waitpid, flock, semaphore waits,
file-system and descriptor I/O) and threads or queues of their own belong on the one blocking executor (`Support`:
`Blocking`, `SerialLane`, `BlockingPool`, `Threads`). This check finds every such call in Sources/ and Tests/:

- a call written inside a closure handed to the executor (`Blocking.perform { ... }`, `Blocking.run`,
  `DedicatedThread.run`/`spawn`, `Threads.spawn`, a lane's `submit`/`perform`, the tests' `offThePool`) is off the pool
  by construction and needs nothing more;
- every other call is keyed by its call site, `PATH SITE KIND`, where SITE is the enclosing `Type.function` (or `Type`
  for a property's initialiser, `<file>` at top level; `(async)` marks a function that runs on the pool unless it hops),
  and must be in tools/blocking-audit.txt with the reason it is not on the pool there. `Type.*` audits every method of a
  type that is a blocking API by design (its callers are on the executor). A new call in an audited function is covered
  by that function's reason; a new function, a new kind or a new file is not.

In Sources/, file-system calls (`open`, `stat`, `rename`, `unlink`, `mkdir`, ..., `FileManager`, `Data(contentsOf:)`),
descriptor reads and writes (`read(fd, buffer, count)`) and thread spawns (`Thread`, `pthread_create`) count too.

Usage: tools/check-blocking.py [--list]   (--list prints every unaudited site as an audit line to complete)
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AUDIT = os.path.join(ROOT, "tools", "blocking-audit.txt")

# What counts as blocking (or as an executor of its own), by name: everywhere.
PATTERNS = {
    "sleep": re.compile(r"(?<![\w.])(usleep|nanosleep|sleep)\(|Thread\.sleep"),
    "fsync": re.compile(r"(?<![\w.])(fsync|fdatasync|sync_file_range)\("),
    "wait-process": re.compile(r"(?<![\w.])(waitpid|waitid|wait4)\(|waitUntilExit\(|textBlocking\(|linesBlocking\("),
    "flock": re.compile(r"(?<![\w.])(flock|lockf)\("),
    "semaphore-wait": re.compile(r"\.wait\((timeout:)?[^)]*\)\s*(==|!=|$|\)|;|\})|DispatchGroup\(\)"),
    "sync-file-io": re.compile(r"Data\(contentsOf|String\(contentsOfFile|\.write\(to: URL|\.write\(toFile:|FileHandle\("),
    "own-executor": re.compile(r"DispatchQueue\.global|DispatchQueue\(label|(?<![\w.])Thread\s*(\{|\()|\.sync\s*\{"),
    # The project's own synchronous file APIs (each documented as blocking: call it on the executor), so that a caller
    # on the pool is found and not only the system call inside.
    "blocking-api": re.compile(r"(?<![\w.])(FirmwareImage|ImageFile|VerificationKey|SigningKey|ProvisioningRecipe)\.load\(|"
                               r"(?<![\w.])FileAccess\.(read|write)\(|(?<![\w.])SafeOutput\.\w+\(|(?<![\w.])ProgressRenderer\(|"
                               r"(?<![\w.])SVGRasterizer\.png\(|(?<![\w.])LabelPrinter\.checkFolder\("),
}
# Wider, in Sources/ only (product code, where a test's small fixture file is not the question).
WIDE = {
    "sync-file-io": re.compile(
        r"String\(contentsOf|FileManager\.|"
        r"(?<![\w.])(Glibc\.)?access\([^)]*[FRWX]_OK|"
        r"(?<![\w.])(Glibc\.)?(open|openat|creat|stat|lstat|statfs|readlink|opendir|readdir|rename|renameat|unlink|"
        r"unlinkat|mkdir|rmdir|truncate|fopen|realpath)\(\s*[^)\s]|"
        r"(?<![\w.])(Glibc\.)?(read|write|pread|pwrite)\(\s*[\w.]+\s*,[^,]+,[^,]+(,[^,]+)?\)"),
    "own-executor": re.compile(r"Thread\.detachNewThread|(?<![\w.])pthread_create\("),
}
# A closure given to the blocking executor: what is written inside runs off the pool.
OFF_POOL = re.compile(r"offThePool|Blocking\.(perform|run|result)|DedicatedThread\.spawn|Threads\.spawn|"
                      r"[lL]ane\.(submit|perform|flush)")
STRING = re.compile(r'"(?:\\.|[^"\\])*"')
DECL = re.compile(r"\b(?:func\s+([\w+\-*/=!]+)|(init)[?!]?\s*[(<]|(deinit)\b|(?:var|let)\s+(\w+)\s*:[^=]*$|(subscript)\b)")
TYPE = re.compile(r"\b(?:struct|class|enum|actor|extension|protocol)\s+([\w.]+)")


def calls(path, rel):
    """(kind, line number, line, site or None when off the pool by construction) of every blocking call in a file."""
    wide = rel.startswith("Sources" + os.sep)
    stack = []  # (label, kind: "type" | "func" | "async-func" | None, off-pool opener)
    in_multiline = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line
            if in_multiline:
                if '"""' not in text:
                    continue
                in_multiline = False
                text = text.split('"""', 1)[1]
            if text.count('"""') % 2 == 1:
                in_multiline = True
                text = text.split('"""', 1)[0]
            code = STRING.sub('""', text).split("//", 1)[0]
            inside_off_pool = any(entry[2] for entry in stack)
            for kind in PATTERNS:
                patterns = [PATTERNS[kind]] + ([WIDE[kind]] if wide and kind in WIDE else [])
                match = next((m for m in (p.search(code) for p in patterns) if m), None)
                if not match:
                    continue
                # A declaration named like a call is not one; an awaited call suspends instead of blocking (a clock's
                # sleep, a reactor's wait, an async method that shares a POSIX name).
                if re.search(r"\bfunc\b", code) or re.match(r"\s*case\s", code):
                    continue
                if re.search(r"\bawait\b", code) and (kind in ("sleep", "semaphore-wait") or not PATTERNS[kind].search(code)):
                    continue
                opener = OFF_POOL.search(code)
                if inside_off_pool or (opener and opener.start() < match.start() and "{" in code[opener.end():match.start() + 1]):
                    yield kind, number, line.strip(), None
                else:
                    yield kind, number, line.strip(), site(stack)
            for index, ch in enumerate(code):
                if ch == "{":
                    before = code[:index]
                    declaration = None
                    for declaration in DECL.finditer(before):
                        pass
                    type_match = None
                    for type_match in TYPE.finditer(before):
                        pass
                    if declaration and (not type_match or declaration.start() > type_match.start()):
                        label = next(g for g in declaration.groups() if g)
                        kind = "async-func" if re.search(r"\basync\b", before[declaration.start():]) else "func"
                    elif type_match:
                        label, kind = type_match.group(1), "type"
                    else:
                        label, kind = None, None
                    stack.append((label, kind, bool(OFF_POOL.search(before))))
                elif ch == "}" and stack:
                    stack.pop()


def site(stack):
    """`Type.function` of the innermost function (and the innermost type around it)."""
    function, owner = None, None
    for label, kind, _ in stack:
        if kind == "type":
            owner, function = label, None
        elif kind in ("func", "async-func"):
            function = label + ("(async)" if kind == "async-func" else "")
    name = ".".join(part for part in (owner, function) if part)
    return name or "<file>"


def places():
    for top in ("Sources", "Tests"):
        for directory, _, files in os.walk(os.path.join(ROOT, top)):
            for name in sorted(files):
                if name.endswith(".swift"):
                    path = os.path.join(directory, name)
                    rel = os.path.relpath(path, ROOT)
                    for kind, number, line, where in calls(path, rel):
                        yield rel, kind, number, line, where


def audit():
    """{(path, site, kind): reason} of tools/blocking-audit.txt."""
    allowed = {}
    with open(AUDIT, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = re.match(r"^(\S+)\s+(\S+)\s+(\S+)\s+--\s+(.+)$", line)
            if not match or match.group(3) not in PATTERNS:
                sys.exit(f"{AUDIT}:{number}: expected 'PATH SITE KIND -- where it runs and why', KIND one of {', '.join(PATTERNS)}")
            allowed[(match.group(1), match.group(2), match.group(3))] = match.group(4)
    return allowed


def covered(allowed, rel, where, kind):
    """The audit line that covers a site: its own, or its type's `Type.*`."""
    if (rel, where, kind) in allowed:
        return (rel, where, kind)
    owner = where.split(".", 1)[0] if "." in where else where
    if (rel, owner + ".*", kind) in allowed:
        return (rel, owner + ".*", kind)
    return None


def main():
    found = list(places())
    on_pool_sites = [(rel, kind, number, line, where) for rel, kind, number, line, where in found if where is not None]
    allowed = audit()
    used = set()
    unaudited = []
    for rel, kind, number, line, where in on_pool_sites:
        key = covered(allowed, rel, where, kind)
        if key:
            used.add(key)
        else:
            unaudited.append((rel, where, kind, number, line))
    if "--list" in sys.argv:
        for rel, where, kind in sorted({(r, w, k) for r, w, k, _, _ in unaudited}):
            print(f"{rel} {where} {kind} -- ")
        return 0
    stale = sorted(key for key in allowed if key not in used)
    for rel, where, kind, number, line in unaudited:
        print(f"{rel}:{number}: blocking call ({kind}) in {where}, not in tools/blocking-audit.txt: {line}")
    for rel, where, kind in stale:
        print(f"tools/blocking-audit.txt: {rel} {where} {kind} is audited but no such call is there any more: remove the line")
    if unaudited or stale:
        print("move the call onto the blocking executor (Support: Blocking, SerialLane) or audit its site (docs/architecture.md)")
        return 1
    off = len(found) - len(on_pool_sites)
    print(f"blocking calls: {len(found)} places; {off} inside closures of the blocking executor, "
          f"{len(on_pool_sites)} at {len(used)} audited sites")
    return 0


if __name__ == "__main__":
    sys.exit(main())
