import ArgumentParser
import Support
import BluetoothTransport
import Capture
import Foundation
import Logging
import Terminal
import Transport
import TuneupKit
import Wearable
import WearableRecording
import WearableSimulator

extension SimCommand {
    /// `tuneup sim wearable`: a simulated Bose Wearable on TCP or a pseudo-terminal (GATT framing, docs/wearable.md §6).
    struct WearableSim: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "wearable",
            abstract: "Simulate a Bose Wearable device (sensors and gestures) on TCP, a pseudo-terminal or BLE.",
            discussion: """
                Prints the device's address (tcp:HOST:PORT, serial:/dev/pts/N with --pty, ble:ADAPTERADDRESS with \
                --ble) on the first line of stdout, then serves until Ctrl-C or 'quit' on stdin. With --ble ADAPTER \
                it is a BLE peripheral: its GATT service on the adapter's ATT channel, advertising 0xFDD2 (keep \
                bluetoothd off that adapter). Every connection starts with every sensor and \
                gesture disabled. The head moves as --seed makes it (turns, nods, shakes, stillness) or as --motion \
                writes it out; a nod ends with a headNod gesture, a shake with a headShake. --replay FILE plays a \
                recording of 'tuneup wearable record' (its .jsonl) back instead: the same device (from its metadata), \
                each connection that configures its sensors gets the recorded samples and gestures at their recorded \
                times, with the same values and gaps, then silence; a file that is not a recording (or is cut short \
                or empty) is refused with one line, exit 65. Lines on stdin:
                  tap | double-tap        a single or double tap gesture at the next transmission
                  stall SENSOR            the sensor stops sending while it stays enabled
                  resume SENSOR           it sends again (its listeners see a gap)
                  drop-link               drop every connection now (clients see their link lost)
                  quit                    stop
                Examples:
                  tuneup sim wearable
                  tuneup sim wearable --listen tcp:127.0.0.1:4500 --seed 7
                  tuneup sim wearable --pty --motion 'still:1,nod:20:2:1.2,turn:45:1,shake:25:2:1.4'
                  tuneup sim wearable --drop-notifications 10,11,50 --boot-timestamp 65000
                  tuneup sim wearable --ble hci0 --seed 3
                  tuneup sim wearable --replay /tmp/walk.jsonl
                """)

        @Option(help: ArgumentHelp("Listen on tcp:HOST:PORT (port 0 picks a free port).", valueName: "addr"))
        var listen: String?

        @OptionGroup var capture: CaptureOption
        @Flag(help: "Serve on a pseudo-terminal instead of TCP (usable as serial:PATH).")
        var pty = false

        @Option(help: ArgumentHelp("Serve as a BLE peripheral on this adapter (hciN or its address): ATT over L2CAP, advertising.", valueName: "adapter"))
        var ble: String?

        // The numeric options take the next word whatever it is, so that a negative value gets its one line (a range)
        // instead of "Missing value"; --seed and --boot-timestamp are read as text for the same reason (a typed option
        // says only "invalid value").
        @Option(name: .customLong("seed"), parsing: .unconditional,
                help: ArgumentHelp("The head's motion (and so every sample and gesture) comes from this seed (0 or more).", valueName: "n"))
        var seedText: String = "1"

        @Option(help: ArgumentHelp(
            "A written-out motion instead of the seeded one: comma-separated still:SECONDS, turn:DEGREES:SECONDS, "
                + "nod:DEGREES:COUNT:SECONDS, shake:DEGREES:COUNT:SECONDS (then the head holds still).",
            valueName: "script"))
        var motion: String?

        @Option(name: .customLong("boot-timestamp"), parsing: .unconditional,
                help: ArgumentHelp("The device clock's millisecond count at start (0...65535; 65000 shows the u16 wrap after 0.5 s).", valueName: "ms"))
        var bootTimestampText: String = "0"

        @Option(parsing: .unconditional, help: ArgumentHelp(
            "Fault: drop these sensor-data notifications of every connection (0 = its first), comma-separated.", valueName: "list"))
        var dropNotifications: String?

        @Option(parsing: .unconditional, help: ArgumentHelp(
            "Fault: this sensor (by name or id) is stalled from the start (enabled, but sends nothing until 'resume').", valueName: "sensor"))
        var stall: String?

        @Option(help: ArgumentHelp("Play this recording (PATH.jsonl of 'tuneup wearable record') back instead of a head motion.", valueName: "file"))
        var replay: String?

        @Option(parsing: .unconditional, help: ArgumentHelp(
            "Run the device's clock this many times faster than real time (1...1000; 30: a 30-minute recording's samples in a minute).",
            valueName: "factor"))
        var timeScale: Double = 1

        @Flag(name: .shortAndLong, help: "Log to stderr.")
        var verbose = false

        /// --seed: any whole number 0...UInt64.max.
        var seed: UInt64 { UInt64(seedText) ?? 1 }

        /// --boot-timestamp: 0...65535 ms.
        var bootTimestamp: UInt16 { UInt16(bootTimestampText) ?? 0 }

        func validate() throws {
            guard UInt64(seedText) != nil else { throw ValidationError("--seed takes a whole number 0...\(UInt64.max), got '\(seedText)'") }
            guard UInt16(bootTimestampText) != nil else {
                throw ValidationError("--boot-timestamp must be a whole number of milliseconds 0...65535, got '\(bootTimestampText)'")
            }
            guard timeScale >= 1, timeScale <= 1000, timeScale.isFinite else {
                throw ValidationError("--time-scale must be 1...1000, got \(String(format: "%g", timeScale))")
            }
            if [listen != nil, pty, ble != nil].filter({ $0 }).count > 1 { throw ValidationError("choose one of --listen, --pty and --ble") }
            if let ble { _ = try AdapterSelector(parsing: ble) }
            if !pty && ble == nil { _ = try listenAddress() }
            if let motion { _ = try WearableSim.parseMotion(motion) }
            if replay != nil, motion != nil { throw ValidationError("choose one of --motion and --replay") }
            _ = try dropIndices()
            if let stall { _ = try WearableCommand.sensor(named: stall) }
        }

        func listenAddress() throws -> (host: String, port: UInt16) {
            do { let e = try ListenEndpoint(parsingTCP: listen ?? "tcp:127.0.0.1:0", option: "--listen"); return (e.host, e.port) } catch { throw ValidationError(error.message) }
        }

        func dropIndices() throws -> Set<Int> {
            guard let dropNotifications else { return [] }
            var out: Set<Int> = []
            for word in dropNotifications.split(separator: ",", omittingEmptySubsequences: false) {
                guard let n = Int(word.trimmingCharacters(in: .whitespaces)), n >= 0 else {
                    throw ValidationError("--drop-notifications takes notification indices 0, 1, ... separated by commas, got '\(dropNotifications)'")
                }
                out.insert(n)
            }
            return out
        }

        /// Parses a --motion script.
        static func parseMotion(_ text: String) throws -> HeadMotion {
            do { return try HeadMotion(parsing: text) } catch { throw ValidationError(error.message) }
        }

        func run() async throws {
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.sim.wearable")
            logger.logLevel = verbose ? .debug : .warning
            let motion = try self.motion.map(Self.parseMotion) ?? HeadMotion(seed: seed)
            var profile = WearableProfile(bootTimestamp: bootTimestamp, motion: motion)
            if let replay {
                do { profile = try await profile.replaying(recordingAt: replay) } catch { throw failureExit(error) }
            }
            let clock: any Clock<Duration> = timeScale == 1 ? ContinuousClock() : ScaledClock(scale: timeScale)
            let device = SimulatedWearable(profile: profile, name: "wearable \(seed)", clock: clock, logger: verbose ? logger : nil)
            device.dropSensorNotifications(try dropIndices())
            if let stall { device.stall(try WearableCommand.sensor(named: stall)) }
            let link: SimulatedWearableLink
            if pty { link = .pty } else if let ble { link = .ble(adapter: ble) } else {
                let (host, port) = try listenAddress()
                link = .tcp(host: host, port: port)
            }
            let wearable: SimulatedWearables
            let captured = capture.settings(.wearable, role: .device)
            var wrap: WearableSimulatorServer.LinkWrapper?
            if let captured { wrap = { try await captured.wrap($0) } }
            do {
                wearable = try await SimulatedWearables.start(device, on: link, logger: logger, linkLogger: verbose ? logger : nil,
                                                              prepare: { _ = try await captured?.writer() },
                                                              wrap: wrap)
            } catch {
                throw failureExit(error)
            }
            // Signals are handled before the address goes out: whoever reads it may stop the simulator at once.
            let control = ControlInput.lines()
            for endpoint in wearable.endpoints { Output.line(endpoint) }
            let what = replay.map { "replaying \($0)" } ?? (self.motion == nil ? "seed \(seed)" : "scripted motion")
            printError("simulating a Bose Wearable (\(what)); stdin: tap, double-tap, stall|resume SENSOR, drop-link, quit; Ctrl-C to stop")
            await wearable.follow(control) { printError($0) }
        }
    }
}
