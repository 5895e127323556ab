#!/usr/bin/env python3
"""Every command of the CLI names itself (`CommandConfiguration(commandName: ...)`).

Without an explicit name, swift-argument-parser derives one with `String(describing: Self.self)` for every command of
the tree at every start: in a binary of this size that is a dynamic cast per command type that scans every protocol
conformance record, and it was a third of `tuneup`'s start-up (perf record of `tuneup --version`). This check fails
on a command without one; `--fix` adds the name ArgumentParser would have derived (the same CLI).

Usage: tools/check-command-names.py [--fix]
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = "--fix" in sys.argv
DECLARATION = re.compile(r'^(\s*)(?:public |fileprivate |private )?struct (\w+)\s*:\s*([^{]*)\{')


def derived(name):
    """ArgumentParser's convertedToSnakeCase(separator: "-")."""
    result, separate = "", True
    for i, c in enumerate(name):
        if c.isupper():
            if separate and result:
                result += "-"
            separate = i + 2 < len(name) and name[i + 1].isupper() and name[i + 2].islower()
        else:
            separate = c != "-"
        result += c.lower()
    return result


def configuration_end(lines, start):
    """The line index and column of the `CommandConfiguration(` call starting at `lines[start]`, and its text."""
    text = "\n".join(lines[start:start + 80])
    begin = text.index("CommandConfiguration(")
    depth = 0
    for k in range(begin + len("CommandConfiguration"), len(text)):
        if text[k] == "(":
            depth += 1
        elif text[k] == ")":
            depth -= 1
            if depth == 0:
                return text[begin:k + 1]
    return text[begin:]


def main():
    missing = []
    for directory, _, files in os.walk(os.path.join(ROOT, "Sources", "tuneup")):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(directory, name)
            lines = open(path, encoding="utf-8").read().split("\n")
            out, inserts = list(lines), []
            for i, line in enumerate(lines):
                m = DECLARATION.match(line)
                if not m or "ParsableCommand" not in m.group(3):
                    continue
                indent, command = m.group(1), m.group(2)
                member = indent + "    "
                found = None
                for j in range(i + 1, min(len(lines), i + 80)):
                    if re.match(r'^' + re.escape(member) + r'(public )?static (let|var) configuration', lines[j]):
                        found = j
                        break
                    if re.match(r'^' + re.escape(indent) + r'}', lines[j]):
                        break
                rel = os.path.relpath(path, ROOT)
                if found is None:
                    missing.append(f"{rel}:{i + 1}: {command} has no configuration (no commandName)")
                    inserts.append((i + 1, member + f'static let configuration = CommandConfiguration(commandName: "{derived(command)}")'))
                    continue
                if re.search(r'commandName\s*:', configuration_end(lines, found)):
                    continue
                missing.append(f"{rel}:{found + 1}: {command}'s configuration has no commandName (\"{derived(command)}\")")
                column = lines[found].index("CommandConfiguration(") + len("CommandConfiguration(")
                rest = lines[found][column:]
                if rest.strip() == "":
                    following = lines[found + 1]
                    inserts.append((found + 1, following[:len(following) - len(following.lstrip())] + f'commandName: "{derived(command)}",'))
                else:
                    out[found] = lines[found][:column] + f'commandName: "{derived(command)}"' + ("" if rest.startswith(")") else ", ") + rest
            for at, text in sorted(inserts, reverse=True):
                out.insert(at, text)
            if FIX and out != lines:
                open(path, "w", encoding="utf-8").write("\n".join(out))
    if missing and not FIX:
        print("\n".join(missing))
        print("a command without commandName costs every start a conformance scan: tools/check-command-names.py --fix adds them")
        return 1
    print(f"command names: {'added ' + str(len(missing)) if FIX else 'every command names itself'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
