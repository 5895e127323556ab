import Foundation
import Testing

/// `tuneup factory ...` against a blank simulated unit over TCP (`tuneup sim headset --blank`): each step on its
/// own, as a shell script would provision without a recipe.
@Suite struct FactoryCLITests {
    static let developmentKey = Data("TUNEUP-FACTORY-0".utf8).map { String(format: "%02x", $0) }.joined()

    /// Runs `tuneup factory ARGS --device ADDRESS --format json`.
    static func factory(_ args: [String], _ address: String, json: Bool = true) async throws -> CLI.Result {
        try await CLI.run(["factory"] + args + ["--device", address] + (json ? ["--format", "json"] : []))
    }

    /// Expects a success and returns its JSON object.
    static func object(_ result: CLI.Result, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        #expect(result.status == 0, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        return try json(result.stdout)
    }

    /// Expects a refusal: `code`, one stderr line, nothing on stdout.
    static func refused(_ result: CLI.Result, _ code: Int32, containing text: String,
                        sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(result.status == code, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderrLines.count == 1, "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.contains(text), "stderr: \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stdout.isEmpty, sourceLocation: sourceLocation)
    }

    @Test func blankUnitInfo() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0"])
        let info = try await Self.object(Self.factory(["info"], sim.addresses[0]))
        #expect((info["hardwareID"] as? String)?.isEmpty == false)
        #expect(info["serialNumber"] == nil)
        #expect(info["bluetoothName"] as? String == "Tuneup Sim")
        #expect(info["bluetoothAddress"] == nil)
        #expect(info["calibrationStatus"] as? String == "none")
        #expect(info["locked"] as? Bool == false)
        #expect(info["mode"] as? String == "application")
        let text = try await Self.factory(["info"], sim.addresses[0], json: false)
        #expect(text.status == 0)
        #expect(text.stdout.contains("Serial number") && text.stdout.contains("none"))
        #expect(await sim.quit() == 0)
    }

    @Test func identityWriteIsReadBackAndSurvivesARestart() async throws {
        let state = Scratch.directory + "/line.json"
        let sim = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0", "--state", state])
        let before = try await Self.object(Self.factory(["info"], sim.addresses[0]))
        let written = try await Self.object(Self.factory(
            ["identity", "--serial", "TS1-000042", "--bt-name", "Tuneup TS1-42", "--bt-address", "00:1B:66:00:00:2A"], sim.addresses[0]))
        #expect(written["serialNumber"] as? String == "TS1-000042")
        #expect(written["mode"] as? String == "application", "the state is reported in the mode the unit is left in")
        let text = try await Self.factory(["identity", "--bt-name", "Tuneup TS1-42"], sim.addresses[0], json: false)
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("application") && !text.stdout.contains("bootloader"), "\(text.stdout)")
        let info = try await Self.object(Self.factory(["info"], sim.addresses[0]))
        #expect(info["serialNumber"] as? String == "TS1-000042")
        #expect(info["bluetoothName"] as? String == "Tuneup TS1-42")
        #expect(info["bluetoothAddress"] as? String == "00:1B:66:00:00:2A")
        #expect(info["mode"] as? String == "application", "back in the application it was running")
        #expect(await sim.quit() == 0)

        let again = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0", "--state", state])
        let after = try await Self.object(Self.factory(["info"], again.addresses[0]))
        #expect(after["hardwareID"] as? String == before["hardwareID"] as? String)
        #expect(after["serialNumber"] as? String == "TS1-000042")
        #expect(after["bluetoothName"] as? String == "Tuneup TS1-42")
        #expect(after["bluetoothAddress"] as? String == "00:1B:66:00:00:2A")
        #expect(await again.quit() == 0)
    }

    @Test func calibrateAndStore() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0"])
        let measured = try await Self.object(Self.factory(["calibrate"], sim.addresses[0]))
        #expect(measured["stored"] as? Bool == false)
        #expect(try await Self.object(Self.factory(["info"], sim.addresses[0]))["calibrationStatus"] as? String == "none")
        let stored = try await Self.object(Self.factory(["calibrate", "--store"], sim.addresses[0]))
        #expect(stored["stored"] as? Bool == true)
        let gains = try #require(stored["calibration"] as? [String: Any])
        let info = try await Self.object(Self.factory(["info"], sim.addresses[0]))
        #expect(info["calibrationStatus"] as? String == "stored")
        let held = try #require(info["storedCalibration"] as? [String: Any])
        #expect(held["feedforwardLeft"] as? Int == gains["feedforwardLeft"] as? Int)
        #expect(held["feedbackRight"] as? Int == gains["feedbackRight"] as? Int)
        #expect(await sim.quit() == 0)
    }

    /// A unit already in its bootloader stays there (the steps leave only when they entered), and there `info` also
    /// reports a measurement not stored yet.
    @Test func unitInItsBootloaderStaysThere() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0"])
        let address = sim.addresses[0]
        let entered = try await CLI.run(["bootloader", "enter", "--device", address])
        #expect(entered.status == 0, "\(entered.stderr)")
        let written = try await Self.object(Self.factory(["identity", "--bt-name", "Line 7"], address))
        #expect(written["mode"] as? String == "bootloader")
        #expect(written["bluetoothName"] as? String == "Line 7")
        _ = try await Self.object(Self.factory(["calibrate"], address))
        let info = try await Self.object(Self.factory(["info"], address))
        #expect(info["mode"] as? String == "bootloader")
        #expect(info["calibrationStatus"] as? String == "measured")
        #expect(info["measuredCalibration"] as? [String: Any] != nil)
        #expect(await sim.quit() == 0)
    }

    @Test func lockRefusesWritesUntilUnlockedWithTheRightKey() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0"])
        let address = sim.addresses[0]
        _ = try await Self.object(Self.factory(["identity", "--serial", "TS1-000001"], address))
        #expect(try await Self.object(Self.factory(["lock"], address))["locked"] as? Bool == true)

        Self.refused(try await Self.factory(["identity", "--serial", "TS1-000002"], address), 65, containing: "locked")
        Self.refused(try await Self.factory(["calibrate"], address), 65, containing: "locked")
        Self.refused(try await Self.factory(["unlock", "--key", String(repeating: "07", count: 16)], address), 65,
                     containing: "factory key")
        let info = try await Self.object(Self.factory(["info"], address))
        #expect(info["locked"] as? Bool == true)
        #expect(info["serialNumber"] as? String == "TS1-000001")
        #expect(info["mode"] as? String == "application", "a refused step leaves the unit in its application")

        #expect(try await Self.object(Self.factory(["unlock", "--key", Self.developmentKey], address))["locked"] as? Bool == false)
        let rewritten = try await Self.object(Self.factory(["identity", "--serial", "TS1-000002"], address))
        #expect(rewritten["serialNumber"] as? String == "TS1-000002")
        #expect(await sim.quit() == 0)
    }

    @Test func classicHeadsetHasNoFactoryCommands() async throws {
        let sim = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0"])
        for args in [["info"], ["identity", "--serial", "X-1"], ["calibrate"], ["lock"], ["unlock", "--key", Self.developmentKey],
                     ["measure", "battery-level"], ["verify", "--unlocked"]] {
            Self.refused(try await Self.factory(args, sim.addresses[0]), 65, containing: "no factory commands")
        }
        // Untouched: still the classic identity, in its application.
        let probe = try await json(CLI.run(["probe", "--device", sim.addresses[0], "--format", "json"]).stdout)
        #expect((probe["identity"] as? [String: Any])?["serial"] as? String == "TS1-000001")
        #expect(await sim.quit() == 0)
    }

    @Test func badArgumentsAreUsageErrors() async throws {
        for args in [["identity"], ["identity", "--bt-address", "00:11"], ["unlock", "--key", "abc"], ["measure", "battery"],
                     ["measure", "battery-level", "mic-sensitivity"], ["verify"], ["verify", "--locked", "--unlocked"],
                     ["verify", "--bt-address", "00:1B:66"]] {
            let result = try await CLI.run(["factory"] + args + ["--device", "tcp:127.0.0.1:1"])
            #expect(result.status == 64, "\(args): \(result.stderr)")
            #expect(result.stderrLines.count == 1, "\(args): \(result.stderr)")
        }
        // Addresses no device may have, refused as a recipe's address block refuses them.
        for (address, why) in [("01:1B:66:00:00:2A", "group (multicast)"), ("FF:FF:FF:FF:FF:FF", "broadcast"),
                               ("00:00:00:00:00:00", "all-zero")] {
            let result = try await CLI.run(["factory", "identity", "--bt-address", address, "--device", "tcp:127.0.0.1:1"])
            #expect(result.status == 64, "\(address): \(result.stderr)")
            #expect(result.stderrLines.count == 1 && result.stderr.contains(why), "\(address): \(result.stderr)")
        }
        // What the device would refuse is refused before it is touched, saying what is wrong.
        for (args, why) in [(["--serial", "TS1 0001"], "has a space at character 4"), (["--serial", "TS1-é"], "'é' (U+00E9)"),
                            (["--serial", String(repeating: "S", count: 32)], "32 bytes, at most 31"),
                            (["--bt-name", String(repeating: "N", count: 32)], "32 bytes, at most 31")] {
            let result = try await CLI.run(["factory", "identity"] + args + ["--device", "tcp:127.0.0.1:1"])
            #expect(result.status == 64, "\(args): \(result.stderr)")
            #expect(result.stderrLines.count == 1 && result.stderr.contains(why), "\(args): \(result.stderr)")
        }
        let unreachable = try await CLI.run(["factory", "info", "--device", "tcp:127.0.0.1:1"])
        #expect(unreachable.status == 69, "\(unreachable.stderr)")
        #expect(unreachable.stderrLines.count == 1)
    }

    /// `measure`: every measurement by default, in order, with name, value and unit; a unit of the line reads the
    /// recipe's ranges; a locked unit refuses (65).
    @Test func measureListsValuesWithUnits() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0"])
        let address = sim.addresses[0]
        let all = try #require(try await Self.object(Self.factory(["measure"], address))["measurements"] as? [[String: Any]])
        #expect(all.map { $0["name"] as? String } == ["battery-level", "mic-sensitivity-left", "mic-sensitivity-right", "anc-attenuation"])
        #expect(all.map { $0["unit"] as? String } == ["percent", "dBFS", "dBFS", "dB"])
        #expect(all.allSatisfy { Set($0.keys) == ["name", "value", "unit"] })
        let values = all.compactMap { ($0["value"] as? NSNumber)?.doubleValue }
        #expect(values.count == 4)
        if values.count == 4 {
            #expect(values[0] == 100)
            #expect((-41.3 ... -34.7).contains(values[1]) && (-41.3 ... -34.7).contains(values[2]), "\(values)")
            #expect((17.7...24).contains(values[3]), "uncalibrated: 24 - 2 x the largest offset: \(values[3])")
        }
        let one = try #require(try await Self.object(Self.factory(["measure", "mic-sensitivity-right"], address))["measurements"] as? [[String: Any]])
        #expect(one.count == 1 && one.first?["name"] as? String == "mic-sensitivity-right")
        let text = try await Self.factory(["measure", "battery-level", "anc-attenuation"], address, json: false)
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[0].hasPrefix("battery-level") && lines[0].hasSuffix("100.00 percent"), "\(text.stdout)")
        #expect(lines.count == 2 && lines[1].hasPrefix("anc-attenuation") && lines[1].hasSuffix(" dB"), "\(text.stdout)")

        _ = try await Self.object(Self.factory(["lock"], address))
        let locked = try #require(try await Self.object(Self.factory(["measure", "battery-level"], address))["measurements"] as? [[String: Any]])
        #expect(locked.first?["value"] as? Double == 100, "a locked unit still measures")
        #expect(await sim.quit() == 0)
    }

    /// `verify`: exit 0 when the unit holds what the options say; exit 1 with one stdout line per mismatch and one
    /// stderr line otherwise; the JSON has ok and every check.
    @Test func verifyMatchesAndMismatches() async throws {
        let sim = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0"])
        let address = sim.addresses[0]
        _ = try await Self.object(Self.factory(
            ["identity", "--serial", "TS1-000042", "--bt-name", "Tuneup 0042", "--bt-address", "02:54:55:00:00:2A"], address))
        _ = try await Self.object(Self.factory(["calibrate", "--store"], address))

        let match = try await Self.factory(["verify", "--serial", "TS1-000042", "--bt-name", "Tuneup 0042",
                                            "--bt-address", "02:54:55:00:00:2a", "--calibrated", "--unlocked"], address, json: false)
        #expect(match.status == 0, "\(match.stdout) \(match.stderr)")
        #expect(match.stderr.isEmpty)
        let ok = try await Self.object(Self.factory(["verify", "--serial", "TS1-000042", "--unlocked"], address))
        #expect(ok["ok"] as? Bool == true)
        let okChecks = try #require(ok["checks"] as? [[String: Any]])
        #expect(okChecks.map { $0["what"] as? String } == ["serial", "lock"])
        #expect(okChecks.allSatisfy { $0["ok"] as? Bool == true && Set($0.keys) == ["what", "expected", "actual", "ok"] })

        let mismatch = try await Self.factory(["verify", "--serial", "TS1-000043", "--bt-name", "Tuneup 0042", "--locked"], address, json: false)
        #expect(mismatch.status == 1, "\(mismatch.stderr)")
        #expect(mismatch.stdout.split(separator: "\n") == [
            "serial: expected 'TS1-000043', the unit holds 'TS1-000042'",
            "lock: expected 'locked', the unit holds 'unlocked'",
        ])
        #expect(mismatch.stderrLines == ["tuneup: the unit differs in 2 of 3 checks"])

        let bad = try await Self.factory(["verify", "--serial", "TS1-000043", "--locked", "--calibrated"], address)
        #expect(bad.status == 1)
        let object = try json(bad.stdout)
        #expect(object["ok"] as? Bool == false)
        let checks = try #require(object["checks"] as? [[String: Any]])
        #expect(checks.map { $0["what"] as? String } == ["serial", "lock", "calibration"])
        #expect(checks.map { $0["ok"] as? Bool } == [false, false, true])
        #expect(checks.first?["expected"] as? String == "TS1-000043" && checks.first?["actual"] as? String == "TS1-000042")
        #expect(checks.last?["actual"] as? String == "stored")

        // On a unit that holds nothing yet, actual is null.
        let blank = try await RunningSimulator.start(["--blank", "--listen", "tcp:127.0.0.1:0"])
        let none = try await Self.factory(["verify", "--bt-address", "02:54:55:00:00:2A", "--calibrated"], blank.addresses[0])
        #expect(none.status == 1)
        let noneChecks = try #require(try json(none.stdout)["checks"] as? [[String: Any]])
        #expect(noneChecks.first?["actual"] is NSNull, "\(none.stdout)")
        #expect(noneChecks.last?["actual"] as? String == "none")
        #expect(await blank.quit() == 0)
        #expect(await sim.quit() == 0)
    }
}
