import ArgumentParser
import Capture
import Logging
import SpeakerReceiver
import Terminal
import Transport

extension SpeakerCommand {
    /// `tuneup speaker receive`: this machine becomes an HKWirelessHD speaker playing to an ALSA device.
    struct Receive: AsyncParsableCommand, HandlesItsOwnSignals {
        static let configuration = CommandConfiguration(
            commandName: "receive",
            abstract: "Be an HKWirelessHD speaker: play what controllers stream, in sync, on an ALSA device.",
            discussion: """
                Serves the speaker protocol (control on TCP, audio on UDP, discovery on UDP port 45454) like the \
                simulated speakers, and plays each stream on the ALSA device (--alsa-device; 'default' reaches \
                PulseAudio and PipeWire through their ALSA plugins), kept in sync with the other speakers by the \
                device's own position reports. Prints its control address HOST:PORT, then serves until Ctrl-C or \
                'quit' on stdin. The device is opened while a stream plays and closed between streams. \
                --latency-ms compensates output latency ALSA does not know of (an amplifier, a Bluetooth sink): \
                positive plays earlier, negative later; keep it plus 50 below the controller's --buffer-ms.
                Examples:
                  tuneup speaker receive
                  tuneup speaker receive --alsa-device plughw:1,0 --name Kitchen --latency-ms 20
                  tuneup speaker receive --listen tcp:127.0.0.1:0 --audio-port 0 --discovery-port 0
                Exit codes: 0 stopped; 64 bad options; 69 the ALSA device cannot be opened, or a port cannot be bound; \
                74 the state file cannot be read or written.
                """)

        @Option(help: ArgumentHelp("The ALSA playback device (PCM name).", valueName: "name"))
        var alsaDevice: String = "default"

        @Option(help: ArgumentHelp("Listen for controllers on tcp:HOST:PORT (port 0: a free one).", valueName: "addr"))
        var listen: String = "tcp:0.0.0.0:45455"

        @Option(help: ArgumentHelp("The UDP port audio arrives on (0: a free one).", valueName: "port"))
        var audioPort: UInt16 = 45456

        @Option(help: ArgumentHelp("The UDP port to answer discovery on; 0: no discovery.", valueName: "port"))
        var discoveryPort: UInt16 = 45454

        @Option(help: ArgumentHelp("The speaker's name until a controller renames it (default: the host's name).", valueName: "name"))
        var name: String?

        @Option(help: ArgumentHelp("Keep the speaker's settings (name, volume, group) in this file across restarts.", valueName: "file"))
        var state: String?

        @Option(help: ArgumentHelp("Output latency to compensate, -1000...1000 ms: positive plays earlier, negative later.", valueName: "ms"))
        var latencyMs: Double = 0

        @OptionGroup var capture: CaptureOption
        @Flag(name: .shortAndLong, help: "Log to stderr.")
        var verbose = false

        func validate() throws {
            _ = try listenAddress()
            guard latencyMs.isFinite, (-1000...1000).contains(latencyMs) else { throw ValidationError("--latency-ms must be -1000...1000") }
            guard !alsaDevice.isEmpty else { throw ValidationError("--alsa-device must not be empty") }
            if let name, name.isEmpty || name.utf8.count > 255 { throw ValidationError("--name must be 1...255 bytes") }
        }

        func listenAddress() throws -> (host: String, port: UInt16) {
            do { let e = try ListenEndpoint(parsingTCP: listen, option: "--listen"); return (e.host, e.port) } catch { throw ValidationError(error.message) }
        }

        func run() async throws {
            LoggingSetup.bootstrap()
            var logger = Logger(label: "tuneup.speaker.receive")
            logger.logLevel = verbose ? .debug : .warning
            var configuration = SpeakerReceiver.Configuration()
            (configuration.host, configuration.port) = try listenAddress()
            configuration.device = alsaDevice
            configuration.audioPort = audioPort
            configuration.discoveryPort = discoveryPort == 0 ? nil : discoveryPort
            configuration.latency = Int64((latencyMs * 1e6).rounded())
            configuration.name = name
            configuration.statePath = state
            let receiver: SpeakerReceiver
            let captured = capture.settings(.speaker, role: .device)
            let datagrams: DatagramCapture?
            do {
                datagrams = try await captured?.datagrams()
                receiver = try await SpeakerReceiver.start(configuration, logger: logger)
            } catch {
                throw failureExit(error)
            }
            if let captured, let datagrams { receiver.capture(links: { try await captured.wrap($0) }, datagrams: datagrams.speakerSide) }
            // Signals are handled before the address goes out: whoever reads it may stop the receiver at once.
            let control = ControlInput.lines()
            Output.line(receiver.endpoint)
            printError("receiving as '\(receiver.speaker.settings.name)' on ALSA device '\(alsaDevice)'; Ctrl-C or 'quit' to stop")
            for await line in control where line == "quit" { break }
            await receiver.shutdown()
            let s = receiver.outputStatistics, r = receiver.speaker.renderTotals
            printError("played \(s.streams) stream\(s.streams == 1 ? "" : "s"), \(s.framesWritten) frames; stream clock: \(r.repeatedSamples) repeated, \(r.skippedSamples) skipped, \(r.lostFrames) lost; card clock: \(s.aligner.insertedSamples) inserted, \(s.aligner.droppedSamples) dropped, \(s.aligner.resyncs) resyncs")
        }
    }
}
