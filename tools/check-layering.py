#!/usr/bin/env python3
"""The target graph keeps its layers: what must not reach what, through any chain of dependencies in Package.swift.

The provisioning station opens devices through `DeviceAccess` (the real back ends) and is given the registry it opens
them with; the in-process simulators and the USB gadget are plugged in by `TuneupKit` for the tools (docs/architecture.md).
`swift package show-dependencies` lists packages, not targets, so this reads the manifest's targets
(`swift package dump-package`) and follows their dependencies; a rule broken prints the chain that breaks it.

Usage: tools/check-layering.py [PACKAGE.json]  (default: runs `swift package dump-package` in the repository)
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIMULATORS = ["Simulator", "HeadsetSimulator", "WearableSimulator", "SpeakerSimulator", "USBGadget", "TuneupKit"]
# target -> what it must never depend on, directly or not.
RULES = {
    "DeviceAccess": SIMULATORS + ["Station", "TestSupport"],
    "Station": SIMULATORS + ["TestSupport"],
    "StationPage": SIMULATORS + ["TestSupport"],
    "CFXPublisher": SIMULATORS + ["TestSupport"],
    # A pure mapper from record values to messages: no store, no database driver, no network.
    "CFX": ["Records", "product:GRDB", "product:PostgresNIO", "product:NIOPosix", "product:NIOSSL"],
    # The record values: what both stores take and return, and what CFX maps; no store of its own.
    "RecordModel": ["Records", "product:GRDB", "product:PostgresNIO", "product:NIOPosix"],
}


def dependencies(package):
    """Each target's dependencies on targets of this package, and on other packages' products as `product:NAME`
    (leaves: what a product links further is that package's own business)."""
    names = {t["name"] for t in package["targets"]}
    graph = {}
    for target in package["targets"]:
        found = []
        for dependency in target.get("dependencies", []):
            for kind in ("byName", "target"):
                if kind in dependency and dependency[kind][0] in names:
                    found.append(dependency[kind][0])
            if "product" in dependency:
                found.append("product:" + dependency["product"][0])
        graph[target["name"]] = found
    return graph


def chain(graph, start, goal):
    """The shortest chain of dependencies from start to goal, or None."""
    previous, queue = {start: None}, [start]
    while queue:
        node = queue.pop(0)
        if node == goal:
            path = []
            while node is not None:
                path.append(node)
                node = previous[node]
            return list(reversed(path))
        for next_node in graph.get(node, []):
            if next_node not in previous:
                previous[next_node] = node
                queue.append(next_node)
    return None


def main():
    if len(sys.argv) > 1:
        with open(sys.argv[1]) as f:
            package = json.load(f)
    else:
        dump = subprocess.run(["swift", "package", "dump-package"], cwd=ROOT, capture_output=True, text=True)
        if dump.returncode != 0:
            sys.stderr.write(dump.stderr)
            sys.exit("layering: swift package dump-package failed")
        package = json.loads(dump.stdout)
    graph = dependencies(package)
    broken = []
    for target, forbidden in RULES.items():
        if target not in graph:
            broken.append(f"{target}: no such target (update tools/check-layering.py)")
            continue
        for other in forbidden:
            path = chain(graph, target, other)
            if path:
                broken.append(f"{target} must not depend on {other}: " + " -> ".join(path))
    for line in broken:
        print(line)
    if broken:
        sys.exit(1)
    print(f"layering: {len(RULES)} targets reach none of what they must not (" + ", ".join(RULES) + ")")


main()
