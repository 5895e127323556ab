import Foundation
import Glibc
import Spawn
import Testing

/// What a demanding user found (issue 7): output that cannot be written, signals, one exit-code rule, one-line
/// argument errors, and a device waiting in its bootloader. Each test failed before the fix.
@Suite(.serialized) struct HardeningTests {
    /// `tuneup ARGS` with stdout and/or stderr sent to `path` (e.g. /dev/full) instead of a pipe.
    static func run(_ args: [String], state: String, stdoutTo: String? = nil, stderrTo: String? = nil,
                    environment: [String: String] = [:]) async throws -> CLI.Result {
        var env: [String: String?] = ["XDG_STATE_HOME": state, "TUNEUP_DEVICE": nil]
        for (k, v) in environment { env[k] = v }
        let overrides = env
        return try await offThePool {
            try CLI.runProcess(CLI.binary, args, environment: overrides, stdoutTo: stdoutTo, stderrTo: stderrTo, timeout: 120,
                               name: "tuneup \(args.joined(separator: " "))")
        }
    }

    /// Waits (off the pool) until a `--format json` flash has printed a write-phase progress event.
    static func waitForWritePhase(_ lines: Collector) async throws -> Bool {
        try await offThePool { writePhaseBlocking(lines) }
    }

    static func writePhaseBlocking(_ lines: Collector) -> Bool {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if lines.linesBlocking(1, timeout: 0.05).contains(where: { $0.contains("\"phase\":\"write\"") }) { return true }
        }
        return false
    }

    static func firmware(_ name: String) -> String { ExampleTests.repository.appendingPathComponent("firmware-images/\(name)").path }

    static func installedVersion(_ state: String) async throws -> String? {
        try await json(CLI.run(["probe", "--format", "json"], state: state).stdout)["firmwareVersion"] as? String
    }

    // MARK: 1. Output that cannot be written

    @Test func fullStdoutIsExit74WithOneLine() async throws {
        let r = try await Self.run(["probe", "--format", "json"], state: Scratch.directory, stdoutTo: "/dev/full")
        #expect(r.status == 74)
        #expect(r.stderrLines == ["tuneup: cannot write to standard output: No space left on device"], "\(r.stderr)")
    }

    @Test func fullProgressFileDoesNotStopTheUpdate() async throws {
        let state = Scratch.directory
        let r = try await CLI.run(["flash", Self.firmware("app-1.4.3-small.img"), "--progress-file", "/dev/full"], state: state)
        #expect(r.status == 74)
        #expect(r.stderr.contains("cannot write the progress file /dev/full") && r.stderr.contains("the update itself completed"), "\(r.stderr)")
        #expect(!r.stderr.contains("Fatal error"))
        #expect(try await Self.installedVersion(state) == "1.4.3")
    }

    @Test func fullStderrDoesNotStopTheUpdate() async throws {
        let state = Scratch.directory
        let r = try await Self.run(["flash", Self.firmware("app-1.4.3-small.img")], state: state, stderrTo: "/dev/full")
        #expect(r.status == 74)
        #expect(try await Self.installedVersion(state) == "1.4.3")
    }

    @Test func closedStdoutDoesNotAbandonTheUpdate() async throws {
        let state = Scratch.directory
        let status = try await offThePool {
            let (p, out, _) = try ExampleTests.start(["flash", Self.firmware("app-1.4.3-small.img"), "--format", "json"],
                                                     state: state, directory: nil, keepPipe: true)
            // As `| head -1`: read one line, then close the pipe.
            _ = Collector.firstLine(out)
            try out.close()
            switch p.waitUntilExit() {
            case let .exit(code): return code
            case let .signal(number): return -number
            }
        }
        #expect(status == 74, "exit \(status) (negative: killed by that signal)")
        #expect(try await Self.installedVersion(state) == "1.4.3")
    }

    @Test func unwritableProgressFileIsOneLine74() async throws {
        let r = try await CLI.run(["flash", Self.firmware("app-1.4.3-small.img"), "--progress-file", "/nonexistent/p.jsonl"])
        #expect(r.status == 74)
        #expect(r.stderrLines.count == 1 && r.stderr.hasPrefix("tuneup: cannot open the progress file"), "\(r.stderr)")
    }

    // MARK: 8. Signals during a flash

    @Test(arguments: [(SIGINT, Int32(130)), (SIGTERM, Int32(143)), (SIGHUP, Int32(129))])
    func signalDuringFlashStopsCleanlyAndResumes(signal: Int32, code: Int32) async throws {
        let state = Scratch.directory
        let (status, stdout, stderr) = try await offThePool { () -> (Int32, String, String) in
            let (p, lines, errors) = try ExampleTests.start(["flash", Self.firmware("app-1.5.0.img"), "--format", "json"],
                                                           state: state, directory: nil)
            // Wait for the transfer to be under way.
            _ = Self.writePhaseBlocking(lines)
            p.signal(signal)
            p.waitUntilExit()
            return (p.terminationStatus, lines.textBlocking(), errors.textBlocking())
        }
        #expect(status == code)
        let stderrLines = stderr.split(separator: "\n")
        #expect(stderrLines.count == 1 && stderr.contains("partial image") && stderr.contains("resume"), "\(stderr)")
        let last = try json(String(stdout.split(separator: "\n").last ?? ""))
        #expect(last["type"] as? String == "error" && last["code"] as? String == "interrupted")
        // Running the same command again completes the update.
        let again = try await CLI.run(["flash", Self.firmware("app-1.5.0.img"), "--format", "json"], state: state)
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await Self.installedVersion(state) == "1.5.0")
    }

    // MARK: 6. Two hosts

    @Test func secondHostIsToldAnotherHostIsUpdating() async throws {
        let dir = Scratch.directory
        let sim = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0", "--state", dir + "/sim.json"])
        let image = Self.firmware("app-1.5.0.img")
        let (first, lines, _) = try ExampleTests.start(["flash", image, "--device", sim.addresses[0], "--format", "json"],
                                                      state: dir, directory: nil)
        #expect(try await Self.waitForWritePhase(lines), "the first host never reached the write phase")
        let second = try await CLI.run(["flash", image, "--device", sim.addresses[0]], state: dir)
        #expect(second.status == 69, "\(second.stderr)")
        // Progress lines come first on stderr (not a terminal); the failure is the one "tuneup:" line, last.
        #expect(second.stderrLines.filter { $0.hasPrefix("tuneup:") }.count == 1, "\(second.stderr)")
        #expect(second.stderrLines.last?.contains("another host is updating this device") == true, "\(second.stderr)")
        let status = try await offThePool { first.waitUntilExit(); return first.terminationStatus }
        #expect(status == 0)
        #expect(await sim.quit() == 0)
    }

    // MARK: 9. One exit-code rule

    @Test func localFilesAreExit74() async throws {
        let dir = Scratch.directory
        try "not json".write(toFile: dir + "/corrupt.json", atomically: true, encoding: .utf8)
        try #"{"version": 999, "devices": []}"#.write(toFile: dir + "/future.json", atomically: true, encoding: .utf8)
        // A valid state whose flash container is then cut short.
        #expect(try await CLI.run(["probe", "-d", "sim:\(dir)/cut.json"]).status == 0)
        let flash = try FileHandle(forWritingTo: URL(fileURLWithPath: dir + "/cut.json.flash"))
        try flash.truncate(atOffset: 1000)
        try flash.close()
        for address in ["sim:/tmp", "sim:\(dir)/corrupt.json", "sim:\(dir)/future.json", "sim:\(dir)/cut.json"] {
            let r = try await CLI.run(["probe", "-d", address])
            #expect(r.status == 74, "\(address): \(r.stderr)")
            #expect(r.stderrLines.count == 1, "\(address): \(r.stderr)")
        }
        // A state file held by a running simulator.
        let sim = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0", "--state", dir + "/busy.json"])
        let busy = try await CLI.run(["probe", "-d", "sim:\(dir)/busy.json"], timeout: 120)
        #expect(busy.status == 74 && busy.stderrLines.count == 1, "\(busy.stderr)")
        #expect(await sim.quit() == 0)
    }

    @Test func badUSBIDsAreExit64Everywhere() async throws {
        for args in [["devices"], ["probe", "-d", "usb:1209:0001"]] {
            let r = try await Self.run(args, state: Scratch.directory, environment: ["TUNEUP_USB_IDS": "0a12"])
            #expect(r.status == 64, "\(args): \(r.stderr)")
            #expect(r.stderrLines.count == 1 && r.stderr.contains("TUNEUP_USB_IDS"), "\(args): \(r.stderr)")
        }
    }

    @Test func missingStateDirectoryIsNotCreated() async throws {
        let dir = Scratch.directory + "/not/there"
        let r = try await CLI.run(["probe", "-d", "sim:\(dir)/state.json"])
        #expect(r.status == 74 && r.stderr.contains("does not exist"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir))
    }

    // MARK: 10 and 13. Arguments

    @Test(arguments: [
        (["anc", "level", "1.5"], "between 0.0 and 1.0"),
        (["ambient", "preset", "loud"], "loud"),
        (["eq", "audio", "disco"], "disco"),
        (["ambient", "set", "--left", "-1"], "--left must be 0 or more"),
        (["probe", "--timeout", "-1"], "--timeout must be more than 0"),
        (["probe", "--timeout", "0"], "--timeout must be more than 0"),
        (["help", "bogus"], "unknown command 'bogus'"),
        (["firmware", "read", "-o", "x.bin", "--length", "3MiB"], "--length must be"),
        (["flash"], "Missing expected argument"),
        (["probe", "--bogus"], "Unknown option"),
        // Another family's device, refused at once (it used to be opened and time out: exit 69 after the timeout).
        (["probe", "--device", "sim:speaker"], "'sim:speaker' is not a headset's address: expected sim"),
        (["anc", "on", "--device", "sim:wearable"], "'sim:wearable' is not a headset's address"),
        (["station", "run", "--recipe", "r.yaml", "--device", "speaker:127.0.0.1:1"], "is not a headset's address"),
        (["wearable", "info", "--device", "sim:speaker"], "'sim:speaker' is not a wearable's address: expected sim:wearable"),
    ])
    func badArgumentsAreOneLineAndExit64(args: [String], says: String) async throws {
        let r = try await CLI.run(args)
        #expect(r.status == 64, "\(args): \(r.stderr)")
        #expect(r.stderrLines.count == 1 && r.stderr.hasPrefix("tuneup: ") && r.stderr.contains(says), "\(args): \(r.stderr)")
        #expect(r.stdout.isEmpty)
    }

    @Test func negativeValuesParseWhereTheyAreValid() async throws {
        let state = Scratch.directory
        let r = try await CLI.run(["eq", "set", "--band", "0", "--gain", "-4", "--format", "json"], state: state)
        #expect(r.status == 0, "\(r.stderr)")
        #expect((try json(r.stdout)["gains"] as? [Int])?.first == -4)
        let both = try await CLI.run(["ambient", "set", "--both", "8"], state: state)
        #expect(both.status == 64 && both.stderr.contains("left and right"), "\(both.stderr)")
        let anc = try await CLI.run(["anc", "--format", "json", "on"], state: state)
        #expect(anc.status == 0, "\(anc.stderr)")
        #expect(try json(anc.stdout)["enabled"] as? Bool == true)
    }

    @Test func firmwareReadTakesSizesWithUnits() async throws {
        let state = Scratch.directory
        for (length, bytes) in [("0x100", 256), ("1KiB", 1024)] {
            let file = state + "/read-\(bytes).bin"
            let r = try await CLI.run(["firmware", "read", "--length", length, "-o", file], state: state)
            #expect(r.status == 0, "\(length): \(r.stderr)")
            #expect((try? Data(contentsOf: URL(fileURLWithPath: file)).count) == bytes)
        }
    }

    // MARK: 13. The version already installed

    @Test func flashingTheInstalledVersionDoesNothingUnlessForced() async throws {
        let state = Scratch.directory
        let same = try await CLI.run(["flash", Self.firmware("app-1.4.2.img")], state: state)
        #expect(same.status == 0, "\(same.stderr)")
        #expect(same.stdout.hasPrefix("Already installed: the device runs 1.4.2; nothing was written"), "\(same.stdout)")
        #expect(!same.stderr.contains("enter-bootloader"), "it entered the bootloader: \(same.stderr)")
        let json = try await jsonLines(CLI.run(["flash", Self.firmware("app-1.4.2.img"), "--format", "json"], state: state).stdout)
        #expect(json.last?["alreadyInstalled"] as? Bool == true && json.last?["bytesWritten"] as? Int == 0)
        let forced = try await jsonLines(CLI.run(["flash", Self.firmware("app-1.4.2.img"), "--force", "--no-resume", "--format", "json"], state: state).stdout)
        #expect(forced.last?["alreadyInstalled"] as? Bool == false)
        #expect((forced.last?["bytesWritten"] as? Int ?? 0) > 0)
        #expect(forced.contains { $0["phase"] as? String == "commit" })
    }

    @Test func readingCommandsLeaveTheStateFilesUntouched() async throws {
        let state = Scratch.directory
        #expect(try await CLI.run(["anc", "on"], state: state).status == 0)
        #expect(try await CLI.run(["bootloader", "enter"], state: state).status == 0)
        #expect(try await CLI.run(["bootloader", "leave"], state: state).status == 0)
        let dir = state + "/tuneup"
        func snapshot() throws -> [String: (Date, Data)] {
            var result: [String: (Date, Data)] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: dir) where !name.hasSuffix(".lock") {
                let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/" + name)
                result[name] = (attributes[.modificationDate] as? Date ?? .distantPast, try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name)))
            }
            return result
        }
        let before = try snapshot()
        #expect(before.keys.sorted() == ["sim-headset.json", "sim-headset.json.flash"])
        for args in [["probe"], ["battery"], ["anc"], ["eq", "info"], ["bootloader", "status"]] {
            let r = try await CLI.run(args, state: state)
            #expect(r.status == 0, "\(args): \(r.stderr)")
        }
        let after = try snapshot()
        for (name, (date, data)) in before {
            #expect(after[name]?.0 == date, "\(name) was written")
            #expect(after[name]?.1 == data, "\(name) changed")
        }
        // A change is still saved.
        #expect(try await CLI.run(["anc", "off"], state: state).status == 0)
        #expect(try await json(CLI.run(["anc", "--format", "json"], state: state).stdout)["enabled"] as? Bool == false)
    }

    /// A process killed while it held the built-in device is a power loss: the next command finds the device
    /// powered up afresh (in its committed application), not the bootloader RAM state stored before.
    @Test func aKilledCommandIsAPowerLoss() async throws {
        let state = Scratch.directory
        #expect(try await CLI.run(["bootloader", "enter"], state: state).status == 0)
        let (monitor, _, errors) = try ExampleTests.start(["monitor"], state: state, directory: nil)
        #expect(await errors.lines(1).first?.contains("monitoring") == true)
        monitor.signal(SIGKILL)
        _ = try await offThePool { monitor.waitUntilExit() }
        let o = try await json(CLI.run(["probe", "--format", "json"], state: state).stdout)
        #expect(o["mode"] as? [String: String] == ["running": "application"], "\(o)")
    }

    // MARK: 5. A device in its bootloader

    @Test func probeSaysTheDeviceIsInItsBootloader() async throws {
        let state = Scratch.directory
        #expect(try await json(CLI.run(["probe", "--format", "json"], state: state).stdout)["mode"] as? [String: String] == ["running": "application"])
        #expect(try await CLI.run(["bootloader", "enter"], state: state).status == 0)
        let o = try await json(CLI.run(["probe", "--format", "json"], state: state).stdout)
        #expect(o["mode"] as? [String: String] == ["running": "bootloader", "committedApplication": "1.4.2"])
        let text = try await CLI.run(["probe"], state: state)
        #expect(text.status == 0 && text.stdout.contains("Mode          bootloader (committed application 1.4.2)"), "\(text.stdout)")
        let anc = try await CLI.run(["anc", "on"], state: state)
        #expect(anc.status == 65)
        #expect(anc.stderrLines.count == 1 && anc.stderr.contains("in its bootloader") && anc.stderr.contains("bootloader leave"), "\(anc.stderr)")
    }
}

extension Collector {
    /// Reads (blocking) until the first newline or the end of the pipe; returns that line.
    static func firstLine(_ handle: FileHandle) -> String {
        var data = Data()
        while !data.contains(0x0A) {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            data.append(chunk)
        }
        return String(decoding: data.prefix { $0 != 0x0A }, as: UTF8.self)
    }
}
