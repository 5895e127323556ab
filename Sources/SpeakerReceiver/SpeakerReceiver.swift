import Glibc
import Logging
import Simulator
import Speaker
import SpeakerSimulator
import Support
import Transport

/// A real HKWirelessHD speaker on this machine (`tuneup speaker receive`): the simulated speaker's protocol core
/// (`SimulatedSpeaker`: control, clock sync on the host's monotonic clock, the renderer with its drift correction),
/// its discovery responder and identity, with the output going to an ALSA device through `CardWriter` instead of a
/// render pump — docs/speaker-protocol.md §10.5.
public final class SpeakerReceiver: Sendable {
    public struct Configuration: Sendable {
        /// The ALSA PCM: `default` (PulseAudio and PipeWire through their ALSA plugins), `hw:0`, `plughw:1,0`, or one
        /// defined in an asoundrc.
        public var device: String = "default"
        /// Control on TCP `host:port` (port 0: a free one).
        public var host: String = "0.0.0.0"
        public var port: UInt16 = 45455
        /// Audio on UDP on the same host (0: a free port).
        public var audioPort: UInt16 = 45456
        /// Discovery on this UDP port (nil: none).
        public var discoveryPort: UInt16? = DiscoveryMessage.port
        /// Output latency after what ALSA reports (ns): positive plays earlier, negative later.
        public var latency: Int64 = 0
        /// Audio kept queued in the device (ns): a tick's worth and 50 ms to spare for a thread woken late. The
        /// controller's buffer must exceed it (and `latency`): its default 200 ms sends each packet 150-200 ms ahead.
        public var lead: UInt64 = 100_000_000
        /// How often the output is written while a stream plays (ns). Each tick is a thread wake-up (most of a
        /// receiver's CPU: 10 ms ticks cost 1.8x a snapclient, `tuneup-bench speaker-vs-snapcast`; 50 ms ones less
        /// than one), and at most one sample of drift correction (50 ms: 20 a second, 416 ppm).
        public var tick: UInt64 = 50_000_000
        /// The name before anybody renames it (nil: the host's name).
        public var name: String?
        /// Settings (name, volume, group, ...) kept across restarts.
        public var statePath: String?

        public init() {}
    }

    public let speaker: SimulatedSpeaker
    /// `HOST:PORT` of the control link.
    public let endpoint: String
    private let server: SimulatedDeviceServer<SimulatedSpeaker>
    private let responder: SpeakerDiscoveryResponder?
    private let writer: CardWriter

    /// What the output did so far.
    public var outputStatistics: OutputStatistics { writer.statistics }

    private init(speaker: SimulatedSpeaker, endpoint: String, server: SimulatedDeviceServer<SimulatedSpeaker>,
                 responder: SpeakerDiscoveryResponder?, writer: CardWriter) {
        self.speaker = speaker
        self.endpoint = endpoint
        self.server = server
        self.responder = responder
        self.writer = writer
    }

    /// Checks that the ALSA device opens (on the blocking executor), then serves.
    /// - Throws: `ReceiverError` (`deviceUnavailable`, `invalidArgument`), `TransportError` (a port that cannot be
    ///   bound), `SimulatorError` (a bad state file).
    public static func start(_ configuration: Configuration, logger: Logger? = nil) async throws -> SpeakerReceiver {
        guard (-10_000_000_000...10_000_000_000).contains(configuration.latency) else {
            throw ReceiverError(.invalidArgument, "the latency must be within ±10 s")
        }
        let device = configuration.device
        let machineId = try await Blocking.perform("alsa open", unavailable: { ReceiverError(.deviceUnavailable, $0.message) }) { () throws(ReceiverError) -> String? in
            _ = try ALSAPCM(device: device)
            return SpeakerIdentity.machineId()
        }
        let stateFile = try await configuration.statePath.asyncMap { try await SpeakerStateFile.open(path: $0) }
        let listener = try await TCPListener.bind(host: configuration.host, port: configuration.port, logger: logger)
        guard case let .tcp(boundHost, boundPort) = listener.boundAddress else {
            listener.close()
            throw ReceiverError(.invalidArgument, "cannot listen on \(configuration.host):\(configuration.port)")
        }
        let audio: UDPSocket
        do {
            audio = try UDPSocket.bind(host: boundHost, port: configuration.audioPort)
        } catch {
            listener.close()
            throw error
        }
        let host = hostName()
        var identity = SpeakerIdentity.receiver(machineId: machineId, host: host, port: boundPort)
        if let name = configuration.name { identity.defaultName = name }
        var speakerConfiguration = SimulatedSpeaker.Configuration(identity: identity, clock: DACClock(), ipAddress: boundHost,
                                                                  audioPort: audio.localPort)
        speakerConfiguration.externalOutput = true
        let speaker = SimulatedSpeaker(speakerConfiguration, index: 0, stateFile: stateFile, logger: logger)
        speaker.setControlPort(boundPort)
        // Clock sync over UDP (version 4, docs/speaker-protocol.md §6.1) on the control port's number, answered by a
        // task woken per request (the sound-card thread reads only the audio socket, and only while a stream plays);
        // a port some other socket holds leaves the receiver on clock sync over TCP (version 3).
        if let clock = try? UDPSocket.bind(host: boundHost, port: boundPort, receiveTimestamps: true) {
            speaker.startClockSync(on: clock)
        } else {
            logger?.warning("UDP port \(boundPort) is taken: clock sync over TCP only (protocol version 3)")
        }
        let writer = CardWriter(speaker: speaker, audio: audio, device: device, lead: configuration.lead, latency: configuration.latency,
                                tick: configuration.tick, logger: logger)
        let wake = writer.wake
        speaker.observeStreams { wake.signal() }
        let server = try SimulatedDeviceServer(devices: [speaker], logger: logger, afterShutdown: { await stateFile?.flush() })
        var responder: SpeakerDiscoveryResponder?
        do {
            try Threads.spawn(name: "tuneup-alsa") { writer.run() }
            try server.attach(listener, toDevice: 0)
            if let port = configuration.discoveryPort { responder = try SpeakerDiscoveryResponder(for: speaker, port: port) }
        } catch {
            wake.stop()
            await server.shutdown()
            await writer.ended()
            audio.close()
            throw error
        }
        let endpoint = boundHost.contains(":") ? "[\(boundHost)]:\(boundPort)" : "\(boundHost):\(boundPort)"
        return SpeakerReceiver(speaker: speaker, endpoint: endpoint, server: server, responder: responder, writer: writer)
    }

    /// Records the receiver's side (`--capture`, docs/capture.md) from now on: every control link is wrapped with
    /// `links` before it is served, and `datagrams` sees every audio, clock-sync and discovery datagram.
    public func capture(links: @escaping @Sendable (any Transport) async throws -> any Transport, datagrams: @escaping SpeakerSideDatagramTap) {
        server.wrapLinks(links)
        speaker.setDatagramTap(datagrams)
        responder?.setDatagramTap(datagrams)
    }

    /// Stops discovery, the control links and the output (what is queued in the device is played out first).
    public func shutdown() async {
        await responder?.stop()
        await server.shutdown()
        writer.wake.stop()
        await writer.ended()
        writer.audio.close()
    }

    /// This machine's name (the receiver's default speaker name).
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "Tuneup receiver" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "Tuneup receiver" : name
    }
}

extension SpeakerIdentity {
    /// A receiver's identity: a 48-bit id and a locally administered MAC from the host's machine id (or name) and the
    /// control port — stable across restarts on the same port, different for two receivers on one host —, model
    /// "Tuneup Receiver", the host's name as its default name.
    public static func receiver(machineId: String?, host: String, port: UInt16) -> SpeakerIdentity {
        var seed: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in (machineId ?? host).utf8 { seed = (seed ^ UInt64(byte)) &* 0x100_0000_01B3 }
        var identity = SpeakerIdentity.simulated(index: Int(port), seed: seed)
        identity.modelName = "Tuneup Receiver"
        identity.wifiSignalStrength = 0
        identity.defaultName = host
        return identity
    }

    /// /etc/machine-id (a blocking read: call it on the blocking executor).
    static func machineId() -> String? {
        guard let file = fopen("/etc/machine-id", "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return nil }
        let text = String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.isEmpty ? nil : text
    }
}

extension Optional {
    fileprivate func asyncMap<T>(_ transform: (Wrapped) async throws -> T) async throws -> T? {
        guard let self else { return nil }
        return try await transform(self)
    }
}
