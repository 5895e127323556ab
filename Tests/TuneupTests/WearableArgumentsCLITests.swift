import Foundation
import Testing

/// The wearable commands' arguments (issue 20, defect 7): a negative number gets one line that names the option and
/// its range instead of swift-argument-parser's "Missing value" (it read `-1` as an option), and an address that came
/// from $TUNEUP_DEVICE says so.
@Suite struct WearableArgumentsCLITests {
    /// One failure line on stderr, exit 64, naming the option (or the text) `names`, never "Missing value"/"invalid".
    static func expectRangeError(_ args: [String], _ names: String, environment: [String: String] = [:],
                                 sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let r = try await HardeningTests.run(args, state: Scratch.directory, environment: environment)
        let lines = r.stderr.split(separator: "\n")
        #expect(r.status == 64, "\(args): exit \(r.status), \(r.stderr)", sourceLocation: sourceLocation)
        #expect(lines.count == 1 && lines.first?.hasPrefix("tuneup: ") == true, "\(args): \(r.stderr)", sourceLocation: sourceLocation)
        #expect(!r.stderr.contains("Missing value") && !r.stderr.contains("is invalid for"), "\(args): \(r.stderr)",
                sourceLocation: sourceLocation)
        #expect(r.stderr.contains(names), "\(args): \(r.stderr)", sourceLocation: sourceLocation)
    }

    /// Every numeric option of `wearable sensors|gestures|stream|record` and `sim wearable` (stream's and record's
    /// durations: see WearableCLITests), with a negative value and one out of range.
    @Test(arguments: [
        (["wearable", "sensors", "--period", "-1"], "--period '-1' is not a sample period"),
        (["wearable", "sensors", "--enable", "-1"], "unknown sensor '-1'"),
        (["wearable", "sensors", "--disable", "-2"], "unknown sensor '-2'"),
        (["wearable", "gestures", "--enable", "-1"], "unknown gesture '-1'"),
        (["wearable", "gestures", "--disable", "-0x81"], "unknown gesture '-0x81'"),
        (["wearable", "stream", "--period", "-1"], "--period '-1' is not a sample period"),
        (["wearable", "stream", "--sensor", "-1"], "unknown sensor '-1'"),
        (["wearable", "stream", "--gesture", "-1"], "unknown gesture '-1'"),
        (["wearable", "record", "never-written", "--period", "-20ms"], "--period '-20ms' is not a sample period"),
        (["wearable", "record", "never-written", "--sensor", "-2"], "unknown sensor '-2'"),
        (["wearable", "record", "never-written", "--gesture", "-0x81"], "unknown gesture '-0x81'"),
        (["wearable", "info", "--timeout", "-1"], "--timeout must be more than 0"),
        (["wearable", "search", "--duration", "-1"], "--duration takes a number"),
        (["sim", "wearable", "--seed", "-1"], "--seed takes a whole number 0...18446744073709551615, got '-1'"),
        (["sim", "wearable", "--seed", "18446744073709551616"], "--seed takes a whole number"),
        (["sim", "wearable", "--boot-timestamp", "-1"], "--boot-timestamp must be a whole number of milliseconds 0...65535, got '-1'"),
        (["sim", "wearable", "--boot-timestamp", "65536"], "--boot-timestamp must be"),
        (["sim", "wearable", "--drop-notifications", "-1"], "--drop-notifications takes notification indices"),
        (["sim", "wearable", "--time-scale", "-1"], "--time-scale must be 1...1000, got -1"),
        (["sim", "wearable", "--stall", "-1"], "unknown sensor '-1'"),
    ])
    func negativeNumbersGetTheirRange(args: [String], message: String) async throws {
        try await Self.expectRangeError(args, message)
    }

    /// `-0` and `-0x81` were read as the ids 0 and 0x81 (the names' dashes are dropped): they enabled the
    /// accelerometer and the double tap.
    @Test func aNegativeIdIsNoSensorAndNoGesture() async throws {
        try await Self.expectRangeError(["wearable", "sensors", "--enable=-0", "--period", "20ms"], "unknown sensor '-0'")
        try await Self.expectRangeError(["wearable", "gestures", "--enable=-0x81"], "unknown gesture '-0x81'")
    }

    /// The numbers that are right still work, at the edges of their ranges.
    @Test func numbersInRangeAreTaken() async throws {
        let state = Scratch.directory
        let sensors = try await HardeningTests.run(["wearable", "sensors", "--enable", "0", "--period", "20", "--format", "json"], state: state)
        #expect(sensors.status == 0, "\(sensors.stderr)")
        #expect((try? json(sensors.stdout)["samplePeriodMs"] as? Int) == 20, "\(sensors.stdout)")
        let gestures = try await HardeningTests.run(["wearable", "gestures", "--enable", "0x81", "--format", "json"], state: state)
        let enabled = (try? json(gestures.stdout)["gestures"] as? [[String: Any]])?.filter { $0["enabled"] as? Bool == true }.map { $0["id"] as? Int }
        #expect(gestures.status == 0 && enabled == [0x81], "\(gestures.stdout) \(gestures.stderr)")
        let sim = try await RunningWearable.start(["--seed", "18446744073709551615", "--boot-timestamp", "65535"])
        #expect(await sim.quit() == 0)
    }

    /// $TUNEUP_DEVICE set for the headset commands (`sim`, usb:, bt:) given to a wearable command: one line that says
    /// where the address came from and what to do; --device still wins over it.
    @Test func aHeadsetAddressInTUNEUP_DEVICEIsNamedAsSuch() async throws {
        for headset in ["sim", "usb:1209:0001", "bt:00:AA:01:00:00:00:3"] {
            try await Self.expectRangeError(["wearable", "info"], "$TUNEUP_DEVICE is '\(headset)', a headset's address, not a wearable's: "
                + "give the wearable with --device (sim:wearable[:SEED], ", environment: ["TUNEUP_DEVICE": headset])
        }
        try await Self.expectRangeError(["wearable", "stream", "--duration", "1s"], "$TUNEUP_DEVICE is 'sim', a headset's address",
                                        environment: ["TUNEUP_DEVICE": "sim"])
        try await Self.expectRangeError(["wearable", "info"], "$TUNEUP_DEVICE is 'bogus:x': unknown address scheme 'bogus'",
                                        environment: ["TUNEUP_DEVICE": "bogus:x"])
        // The option itself is not blamed on the variable.
        try await Self.expectRangeError(["wearable", "info", "--device", "sim"], "'sim' is not a wearable's address",
                                        environment: ["TUNEUP_DEVICE": "sim:wearable"])
        let given = try await HardeningTests.run(["wearable", "info", "--device", "sim:wearable", "--format", "json"], state: Scratch.directory,
                                                 environment: ["TUNEUP_DEVICE": "sim"])
        #expect(given.status == 0, "\(given.stderr)")
    }

    /// A headset simulator's tcp: address in $TUNEUP_DEVICE looks like a wearable's until it does not answer as one:
    /// the failure says the address came from the variable.
    @Test func aHeadsetBehindATCPAddressInTUNEUP_DEVICEIsNamed() async throws {
        let headset = try await RunningSimulator.start(["--listen", "tcp:127.0.0.1:0", "--battery-drain", "0"])
        for command in [["info"], ["stream", "--duration", "1s", "--format", "json"]] {
            let r = try await HardeningTests.run(["wearable"] + command + ["--timeout", "0.2"], state: Scratch.directory,
                                                 environment: ["TUNEUP_DEVICE": headset.addresses[0]])
            #expect(r.status == 69, "\(command): \(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1, "\(command): \(r.stderr)")
            #expect(r.stderr.contains("(is \(headset.addresses[0]), from $TUNEUP_DEVICE, a wearable?)"), "\(command): \(r.stderr)")
        }
        #expect(await headset.quit() == 0)
    }
}
