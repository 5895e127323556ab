import ArgumentParser
import Capture
import Foundation
import Logging
import SpeakerSimulator
import Support
import Terminal
import Transport

extension SimCommand {
    /// `tuneup sim speaker`: simulated HKWirelessHD speakers on TCP, with discovery.
    struct SpeakerSim: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "speaker",
            abstract: "Simulate HKWirelessHD speakers on TCP, answering discovery.",
            discussion: """
                Prints each speaker's control address (HOST:PORT) on a line of its own as it starts, then serves \
                until Ctrl-C or 'quit' on stdin. Speakers answer discovery queries on UDP port 45454 (--discovery-port; \
                0 turns discovery off). Each speaker takes audio on a UDP port of its own (announced by hello and \
                discovery) and renders it on its DAC clock (--offset-ms, --drift-ppm, --drift-random); --record DIR \
                writes what each played, per stream, to DIR/speaker-K-stream-S.wav with a .render.log (which source \
                frame reached the output at which time; a speaker joining a stream again writes -part-2, -part-3...). \
                Lines on stdin:
                  play [SPEAKER]         mark the speaker as playing (renaming it then interrupts playback)
                  stop [SPEAKER]         mark it as not playing
                  off [SPEAKER]          the speaker vanishes (power cut): links closed, nothing answered
                  on [SPEAKER]           it is back
                  stall SPEAKER MS       its DAC clock stops for MS milliseconds
                  quit                   stop
                Examples:
                  tuneup sim speaker --count 3
                  tuneup sim speaker --listen tcp:127.0.0.1:45455 --state /tmp/speakers.json --drift-ppm 25
                  tuneup sim speaker --count 8 --drift-random 500 --jitter-ms 20 --loss 1 --record /tmp/ --discovery-port 0
                """)

        @Option(help: ArgumentHelp("Number of speakers, 1...64.", valueName: "n"))
        var count: Int = 1

        @Option(help: ArgumentHelp("Listen on tcp:HOST:PORT (port 0 picks free ports; else the next speakers take the ports after PORT but 45454 and 45456).", valueName: "addr"))
        var listen: String = "tcp:127.0.0.1:0"

        @Option(help: ArgumentHelp("Keep the speakers' settings in this file across restarts.", valueName: "file"))
        var state: String?

        @Option(help: ArgumentHelp("The UDP port to answer discovery on; 0: no discovery.", valueName: "port"))
        var discoveryPort: UInt16 = 45454

        @Option(help: ArgumentHelp("Identities (ids, MAC addresses) come from this seed.", valueName: "n"))
        var seed: UInt64 = 1

        @Option(help: ArgumentHelp("DAC clock offset of speaker k: k × this many milliseconds.", valueName: "ms"))
        var offsetMs: Double = 0

        @Option(help: ArgumentHelp("DAC clock drift of speaker k: this many ppm, alternating sign by speaker (-1000...1000).", valueName: "ppm"))
        var driftPpm: Double = 0

        @Option(help: ArgumentHelp("DAC clock drift of each speaker drawn (from --seed) within ±this many ppm (0...1000; replaces --drift-ppm).", valueName: "ppm"))
        var driftRandom: Double?

        @Option(help: ArgumentHelp("Delay each audio datagram by up to this many milliseconds (uniform).", valueName: "ms"))
        var jitterMs: Double = 0

        @Option(help: ArgumentHelp("Lose this percentage of the audio datagrams.", valueName: "percent"))
        var loss: Double = 0

        @Option(help: ArgumentHelp("Record what each speaker plays: DIR/speaker-K-stream-S.wav and .render.log.", valueName: "dir"))
        var record: String?

        @OptionGroup var capture: CaptureOption
        @Flag(name: .shortAndLong, help: "Log to stderr.")
        var verbose = false

        func validate() throws {
            guard (1...64).contains(count) else { throw ValidationError("--count must be 1...64") }
            _ = try listenAddress()
            guard offsetMs.isFinite, abs(offsetMs) <= 1_000_000 else { throw ValidationError("--offset-ms must be within ±1000000") }
            guard driftPpm.isFinite, abs(driftPpm) <= 1000 else { throw ValidationError("--drift-ppm must be -1000...1000") }
            if let driftRandom, !(driftRandom.isFinite && (0...1000).contains(driftRandom)) { throw ValidationError("--drift-random must be 0...1000") }
            guard jitterMs.isFinite, (0...10_000).contains(jitterMs) else { throw ValidationError("--jitter-ms must be 0...10000") }
            guard loss.isFinite, (0...100).contains(loss) else { throw ValidationError("--loss must be 0...100 (percent)") }
            if let record {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: record, isDirectory: &isDirectory), isDirectory.boolValue else {
                    throw ValidationError("--record takes an existing directory, got '\(record)'")
                }
            }
        }

        func listenAddress() throws -> (host: String, port: UInt16) {
            do { let e = try ListenEndpoint(parsingTCP: listen, option: "--listen"); return (e.host, e.port) } catch { throw ValidationError(error.message) }
        }

        func run() async throws {
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.sim.speaker")
            logger.logLevel = verbose ? .debug : .warning
            let (host, port) = try listenAddress()
            let offset = offsetMs, drift = driftPpm, seed = seed
            let random = driftRandom.map { range in
                var rng = SeededRandom(seed: seed)
                return (0..<count).map { _ in range == 0 ? 0 : Double.random(in: -range...range, using: &rng).rounded() }
            }
            let jitter = LinkJitter(maximum: UInt64(jitterMs * 1e6), loss: loss / 100)
            let simulation: SpeakerSimulation
            let captured = capture.settings(.speaker, role: .device)
            let datagrams: DatagramCapture?
            do {
                datagrams = try await captured?.datagrams()
                simulation = try await SpeakerSimulation.start(
                    count: count, host: host, port: port, statePath: state, seed: seed,
                    discovery: discoveryPort == 0 ? .off : .shared(host: "0.0.0.0", port: discoveryPort),
                    clocks: { k in DACClock(offset: Int64(Double(k) * offset * 1_000_000), driftPPM: random?[k] ?? (k % 2 == 0 ? drift : -drift)) },
                    audioJitter: { _ in jitter }, recordDirectory: record, logger: logger)
            } catch {
                throw failureExit(error)
            }
            if let captured { simulation.server.wrapLinks { try await captured.wrap($0) } }
            if let datagrams { simulation.setDatagramTap(datagrams.speakerSide) }
            // Signals are handled before the addresses go out: whoever reads them may stop the simulator at once.
            let control = ControlInput.lines()
            for endpoint in simulation.endpoints { Output.line(endpoint) }
            printError("simulating \(count) speaker\(count == 1 ? "" : "s"); stdin: play|stop|off|on [SPEAKER], stall SPEAKER MS, quit; Ctrl-C to stop")
            for await line in control {
                let words = line.split(separator: " ").map(String.init)
                guard let verb = words.first, verb != "quit" else { break }
                let index = words.count > 1 ? Int(words[1]) : 0
                let ms = words.count > 2 ? Double(words[2]) : nil
                let valid = ["play", "stop", "off", "on"].contains(verb) ? words.count <= 2 : (verb == "stall" && words.count == 3 && ms.map { $0 > 0 && $0 <= 60_000 } == true)
                guard valid, let index, simulation.speakers.indices.contains(index) else {
                    printError("unknown control line '\(line)' (play|stop|off|on [SPEAKER 0...\(count - 1)], stall SPEAKER MS, quit)")
                    continue
                }
                let speaker = simulation.speakers[index]
                switch verb {
                case "off": await speaker.powerOff()
                case "on": speaker.powerOn()
                case "stall": speaker.stallClock(for: UInt64(ms! * 1e6))
                default: speaker.setPlaying(verb == "play")
                }
            }
            await simulation.shutdown()
            for speaker in simulation.speakers { await speaker.flushRecordings() }
        }
    }
}
