import Foundation
import Glibc
import Spawn
import Testing

/// Every example in `tuneup --help` (all commands, from the parser's JSON dump) and in the README runs as written,
/// in a scratch directory with the repository's firmware-images/ beside it and a private simulated headset.
/// Only the parts that depend on the machine are substituted: the TCP port of a simulated headset, /tmp.
/// `tuneup factory ...` examples address a unit fresh from assembly: their `tcp:127.0.0.1:4100` is a second simulator
/// started with `--blank`, and they run in help order against that one unit (identity, calibrate, measure, verify,
/// lock, verify the lock, unlock), as the factory help's walk-through says.
@Suite(.serialized) struct ExampleTests {
    /// The repository root: the nearest directory above the built binary with a Package.swift.
    static var repository: URL {
        var dir = CLI.binary.deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: dir.appendingPathComponent("Package.swift").path), dir.path != "/" {
            dir = dir.deletingLastPathComponent()
        }
        return dir
    }

    @Test func helpExamplesRun() async throws {
        let dump = try await CLI.run(["--experimental-dump-help"])
        #expect(dump.status == 0)
        let root = try json(dump.stdout)
        var examples: [String] = []
        Self.collect(root["command"] as? [String: Any] ?? [:], into: &examples)
        #expect(examples.count >= 45, "only \(examples.count) examples found: \(examples)")
        let factory = try await run(examples)
        #expect(factory >= 10, "every factory subcommand shows an example; \(factory) ran")
    }

    @Test func readmeExamplesRun() async throws {
        let readme = try String(contentsOf: Self.repository.appendingPathComponent("README.md"), encoding: .utf8)
        let examples = readme.split(separator: "\n").compactMap { line -> String? in
            line.hasPrefix("    tuneup ") ? String(line.dropFirst(4)) : nil
        }
        #expect(examples.count >= 9)
        _ = try await run(examples)
    }

    /// Examples in a command's discussion (lines that start with `tuneup`, or follow "Example(s):"), depth first.
    static func collect(_ command: [String: Any], into examples: inout [String]) {
        for line in (command["discussion"] as? String ?? "").split(separator: "\n") {
            var text = line.trimmingCharacters(in: .whitespaces)
            if let range = text.range(of: "Example: tuneup ") ?? text.range(of: "Examples: tuneup ") {
                text = "tuneup " + text[range.upperBound...]
            }
            guard text.hasPrefix("tuneup ") else { continue }
            for part in text.components(separatedBy: ";  tuneup ").enumerated() {
                examples.append(part.offset == 0 ? part.element : "tuneup " + part.element)
            }
        }
        for sub in command["subcommands"] as? [[String: Any]] ?? [] { collect(sub, into: &examples) }
    }

    /// Splits a shell line into words (single and double quotes; `#` starts a comment; a trailing `&` is dropped).
    static func words(_ line: String) -> (words: [String], background: Bool) {
        var words: [String] = [], word = "", quote: Character?, inWord = false
        for c in line {
            if let q = quote {
                if c == q { quote = nil } else { word.append(c) }
            } else if c == "'" || c == "\"" {
                quote = c; inWord = true
            } else if c == "#" && !inWord {
                break
            } else if c == " " {
                if inWord { words.append(word); word = ""; inWord = false }
            } else {
                word.append(c); inWord = true
            }
        }
        if inWord { words.append(word) }
        let background = words.last == "&"
        if background { words.removeLast() }
        return (words, background)
    }

    /// Runs `examples`; returns how many of them were `tuneup factory` examples (run against the blank unit).
    private func run(_ examples: [String]) async throws -> Int {
        let directory = Scratch.directory
        try FileManager.default.createSymbolicLink(
            atPath: directory + "/firmware-images", withDestinationPath: Self.repository.appendingPathComponent("firmware-images").path)
        let state = Scratch.directory
        let tcp = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0", "--state", directory + "/tcp-headset.json"])
        defer { _ = tcp }
        let blank = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0", "--state", directory + "/blank-unit.json"])
        // Station examples name a line of blank units at tcp:127.0.0.1:4300...4303: four units with instant flash
        // timing stand in (unit k for port 4300+k).
        // A copy, not a link: the station writes its records next to the recipe.
        try FileManager.default.copyItem(atPath: Self.repository.appendingPathComponent("recipes").path, toPath: directory + "/recipes")
        let line = try await RunningSimulator.start(["--blank", "--count", "4", "--time-scale", "0", "--listen", "tcp:127.0.0.1:0"], count: 4)
        // Speaker examples name two simulated speakers at 127.0.0.1:4600 and :4601 (the README's `sim speaker`).
        let speakers = try await RunningSimulator.start(["--count", "2", "--discovery-port", "0"], count: 2, kind: "speaker")
        var ran = 0, factory = 0
        for example in examples {
            var (words, background) = Self.words(example)
            #expect(words.first == "tuneup", "\(example)")
            words.removeFirst()
            if words.contains("--usb-gadget") || words.contains("--rfcomm") { continue }   // tools/vm/e2e.sh runs these
            if words.contains("--ble") || words.starts(with: ["wearable", "search"]) { continue }   // and these (BLE)
            // A station in watch mode runs until Ctrl-C: StationTests (simulated line) and tools/vm/e2e.sh (USB) run it.
            if words.contains("--watch") { continue }
            // These need a run with attachments or a quarantined unit: ProcessControlCLITests runs them on such records.
            if words.starts(with: ["records", "attachment"]) || words.starts(with: ["records", "release"]) { continue }
            // A label printed again names a unit by its serial (dated) or hardware id: StationLabelCLITests reprints one.
            if words.starts(with: ["records", "label"]) { continue }
            // The line dashboard serves until Ctrl-C and needs the line's PostgreSQL: LineDashboardBrowserTests runs it
            // against two stations on a throwaway server.
            if words.starts(with: ["line", "serve"]) { continue }
            words = words.map { word in
                word.replacingOccurrences(of: "/tmp/", with: directory + "/")
                    .replacingOccurrences(of: "tcp:127.0.0.1:PORT", with: tcp.addresses[0])
            }
            if let i = words.firstIndex(of: "--listen"), i + 1 < words.count { words[i + 1] = "tcp:127.0.0.1:0" }
            let isFactory = words.first == "factory"
            if isFactory { factory += 1 }
            words = words.map { $0 == "tcp:127.0.0.1:4100" ? (isFactory ? blank.addresses[0] : tcp.addresses[0]) : $0 }
            words = words.map { $0 == "127.0.0.1:4600" ? speakers.addresses[0] : $0 == "127.0.0.1:4601" ? speakers.addresses[1] : $0 }
            words = words.map { word in
                guard word.hasPrefix("tcp:127.0.0.1:430"), let k = Int(word.dropFirst("tcp:127.0.0.1:430".count)), k < 4 else { return word }
                return line.addresses[k]
            }
            if words.first == "sim" { background = true }
            // A receiver serves until stopped, like a simulator; there is no sound card here: it plays into a file
            // (alsa-lib's file plugin over null), on free ports.
            if words.starts(with: ["speaker", "receive"]) {
                background = true
                let device = "file:'\(directory)/receiver.raw',raw"
                if let i = words.firstIndex(of: "--alsa-device"), i + 1 < words.count { words[i + 1] = device } else { words += ["--alsa-device", device] }
                if !words.contains("--listen") { words += ["--listen", "tcp:127.0.0.1:0"] }
                if let i = words.firstIndex(of: "--audio-port"), i + 1 < words.count { words[i + 1] = "0" } else { words += ["--audio-port", "0"] }
            }
            if background {
                let status = try await Self.runServer(words, state: state, directory: directory)
                #expect(status == 0, "\(example): exit \(status)")
            } else if words.first == "monitor" {
                let status = try await Self.runMonitor(words, pushingThrough: tcp, state: state, directory: directory)
                #expect(status == (words.contains("--count") ? 0 : 130), "\(example): exit \(status)")
            } else {
                let r = try await CLI.run(words, state: state, directory: directory, timeout: 120)
                #expect(r.status == 0, "\(example): exit \(r.status): \(r.stderr)")
                if r.status != 0 { print("FAILED EXAMPLE \(example): \(r.stderr)") }
            }
            ran += 1
        }
        #expect(ran > 0)
        #expect(await tcp.quit() == 0)
        #expect(await blank.quit() == 0)
        #expect(await line.quit() == 0)
        #expect(await speakers.quit() == 0)
        return factory
    }

    /// A server example: it must print its address, then stop cleanly on SIGTERM.
    static func runServer(_ args: [String], state: String, directory: String) async throws -> Int32 {
        try await offThePool {
            let p = try start(args, state: state, directory: directory)
            let lines = p.out.linesBlocking(1)
            guard !lines.isEmpty else {
                p.process.terminate()
                throw CLIError("tuneup \(args.joined(separator: " ")) printed no address: \(p.err.textBlocking())")
            }
            p.process.terminate()
            if !p.process.waitForEnd(upTo: 30) {
                p.process.signal(SIGKILL)
                throw CLIError("tuneup \(args.joined(separator: " ")) did not stop on SIGTERM within 30 s")
            }
            return p.process.terminationStatus
        }
    }

    /// `monitor`: pushes are caused on the TCP headset until one is printed; without --count, SIGINT stops it.
    static func runMonitor(_ args: [String], pushingThrough sim: RunningSimulator, state: String, directory: String) async throws -> Int32 {
        try await offThePool {
            let p = try start(args, state: state, directory: directory)
            let deadline = Date().addingTimeInterval(30)
            while p.out.linesBlocking(1, timeout: 0.2).isEmpty, p.process.isRunning, Date() < deadline { sim.send("press anc") }
            if !args.contains("--count") { p.process.interrupt() }
            if !p.process.waitForEnd(upTo: max(0, deadline.timeIntervalSinceNow)) { p.process.terminate() }
            p.process.waitUntilExit()
            return p.process.terminationStatus
        }
    }

    /// Starts `tuneup ARGS` with a private state directory, collecting stdout and stderr.
    static func start(_ args: [String], state: String, directory: String?) throws -> (process: ChildProcess, out: Collector, err: Collector) {
        let process = try ChildProcess(CLI.binary.path, args, environment: ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil],
                                       directory: directory, stdin: .pipe)
        return (process, process.output!, process.errors!)
    }

    /// The same, handing back stdout's read end itself (to read it, or close it, as the test likes).
    static func start(_ args: [String], state: String, directory: String?, keepPipe: Bool) throws -> (process: ChildProcess, out: FileHandle, err: Collector) {
        let process = try ChildProcess(CLI.binary.path, args, environment: ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil],
                                       directory: directory, stdin: .pipe, stdout: .pipeToCaller)
        return (process, FileHandle(fileDescriptor: process.outputDescriptor!, closeOnDealloc: false), process.errors!)
    }
}
