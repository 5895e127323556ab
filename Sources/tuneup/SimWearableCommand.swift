import ArgumentParser
import Support
import BluetoothTransport
import Capture
import Foundation
import Logging
import Terminal
import Transport
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

        /// The profile that replays `path`: its samples and gestures, the device and sensors of its metadata (a
        /// recording without metadata: the standard device). One line and exit 74 for a file that cannot be read, 65 for
        /// one that is not a recording (cut short, empty, or nothing to replay).
        static func replayProfile(_ path: String, base: WearableProfile) async throws -> WearableProfile {
            let text: String
            do {
                text = try await Blocking.run("replay-read") { () -> Result<String, RecordingError> in
                    Result { () throws(RecordingError) in try WearableRecordingContents.text(ofFile: path) }
                }.get()
            } catch {
                throw failureExit(error)
            }
            do throws(WearableRecordingContents.NotARecording) {
                let contents = try WearableRecordingContents(jsonLines: text, name: path)
                let parts = try contents.recordedSamples(name: path)
                guard let replay = WearableReplay(samples: parts.samples.map { .init(sensor: $0.sensor, deviceTime: $0.deviceTime, value: $0.value) },
                                                  gestures: parts.gestures.map { .init(gesture: $0.gesture, deviceTime: $0.deviceTime) }) else {
                    throw WearableRecordingContents.NotARecording(message: "\(path) holds no samples or gestures to replay")
                }
                var profile = base
                if let m = contents.metadata {
                    guard let device = m.decodedDeviceInformation, let sensors = m.decodedSensorInformation else {
                        throw WearableRecordingContents.NotARecording(message: "\(path): its metadata does not describe a device Tuneup can be")
                    }
                    profile.deviceInformation = device
                    profile.sensorInformation = sensors
                    if let gestures = try? GestureInformation(m.availableGestures.compactMap(GestureType.init(name:)).map { .init(gesture: $0, payloadLength: 0) }) {
                        profile.gestureInformation = gestures
                    }
                }
                return profile.replaying(replay)
            } catch {
                throw failureExit(CommandFailure(message: error.message, code: Exit.device))
            }
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
            if let replay { profile = try await Self.replayProfile(replay, base: profile) }
            let clock: any Clock<Duration> = timeScale == 1 ? ContinuousClock() : ScaledClock(scale: timeScale)
            let device = SimulatedWearable(profile: profile, name: "wearable \(seed)", clock: clock, logger: verbose ? logger : nil)
            device.dropSensorNotifications(try dropIndices())
            if let stall { device.stall(try WearableCommand.sensor(named: stall)) }
            let server: WearableSimulatorServer
            let captured = capture.settings(.wearable, role: .device)
            do {
                _ = try await captured?.writer()
                server = try WearableSimulatorServer(devices: [device], logger: logger)
                if let captured { server.wrapLinks { try await captured.wrap($0) } }
                let listener: any TransportListener
                if pty {
                    listener = try PseudoTerminal.open(logger: verbose ? logger : nil)
                } else if let ble {
                    listener = try await ATTListener.bind(adapter: ble, name: device.deviceDescription, logger: verbose ? logger : nil)
                } else {
                    let (host, port) = try listenAddress()
                    listener = try await TCPListener.bind(host: host, port: port, logger: verbose ? logger : nil)
                }
                do {
                    try server.attach(listener, toDevice: 0)
                } catch {
                    listener.close()
                    throw error
                }
            } catch {
                throw failureExit(error)
            }
            // Signals are handled before the address goes out: whoever reads it may stop the simulator at once.
            let control = ControlInput.lines()
            for endpoint in server.endpoints { Output.line(endpoint) }
            let what = replay.map { "replaying \($0)" } ?? (self.motion == nil ? "seed \(seed)" : "scripted motion")
            printError("simulating a Bose Wearable (\(what)); "
                + "stdin: tap, double-tap, stall|resume SENSOR, drop-link, quit; Ctrl-C to stop")
            for await line in control {
                let words = line.split(separator: " ").map(String.init)
                switch (words.first ?? "", words.count) {
                case ("quit", 1): await server.shutdown(); return
                case ("tap", 1): device.tap()
                case ("double-tap", 1): device.tap(double: true)
                case ("drop-link", 1): await device.dropLinks()
                case ("stall", 2), ("resume", 2):
                    do { device.stall(try WearableCommand.sensor(named: words[1]), words[0] == "stall") } catch { printError(describeFailure(error).0) }
                default:
                    printError("unknown control line '\(line)' (tap, double-tap, stall SENSOR, resume SENSOR, drop-link, quit)")
                }
            }
            await server.shutdown()
        }
    }
}
