import Logging
import Simulator
import Speaker
import Transport

/// Simulated speakers on TCP, each with its discovery responder: what `tuneup sim speaker` and tests run.
public final class SpeakerSimulation: Sendable {
    /// The server of the speakers' control links.
    public let server: SimulatedDeviceServer<SimulatedSpeaker>
    /// Each speaker's control endpoint, `HOST:PORT`, in order.
    public let endpoints: [String]
    /// The discovery responders: one for all the speakers (`.shared`), one per speaker (`.ownPorts`), none (`.off`).
    public let responders: [SpeakerDiscoveryResponder]
    public let stateFile: SpeakerStateFile?

    public var speakers: [SimulatedSpeaker] { server.devices }

    private init(server: SimulatedDeviceServer<SimulatedSpeaker>, endpoints: [String], responders: [SpeakerDiscoveryResponder], stateFile: SpeakerStateFile?) {
        self.server = server
        self.endpoints = endpoints
        self.responders = responders
        self.stateFile = stateFile
    }

    /// How the speakers' discovery responders listen.
    public enum Discovery: Sendable {
        /// No responders.
        case off
        /// One responder on `host:port` answering for every speaker (the protocol's port by default; the port is
        /// still open to other processes' responders).
        case shared(host: String = "0.0.0.0", port: UInt16 = DiscoveryMessage.port)
        /// Each speaker on a port of its own on `host` (tests point the client at them).
        case ownPorts(host: String = "127.0.0.1")
    }

    /// Starts `count` speakers: speaker k listens on the k-th of `controlPorts(from: port)` (`port`+k, skipping
    /// `reservedPorts`; port 0: free ports) for control (TCP) and clock
    /// sync (UDP, the same number) and on a free UDP port of `host` for audio, with the identity of `seed` and k, settings from `statePath`, clock offset and drift
    /// from `clocks` (speaker k gets `clocks(k)`), the audio path's jitter and loss from `audioJitter`, recordings in
    /// `recordDirectory`, render logs kept in memory with `keepsRenderLogs`, the protocol versions of `versions`.
    ///
    /// - Throws: `SimulatorError` (a bad count or state file), `TransportError` (a port that cannot be bound).
    public static func start(count: Int, host: String = "127.0.0.1", port: UInt16 = 0, statePath: String? = nil, seed: UInt64 = 1,
                             discovery: Discovery = .off, clocks: @Sendable (Int) -> DACClock = { _ in DACClock() },
                             audioJitter: @Sendable (Int) -> LinkJitter = { _ in .none }, recordDirectory: String? = nil,
                             keepsRenderLogs: Bool = false, versions: @Sendable (Int) -> ClosedRange<UInt8> = { _ in SpeakerProtocolVersion.supported },
                             logger: Logger? = nil) async throws -> SpeakerSimulation {
        guard (1...SimulatedDeviceServer<SimulatedSpeaker>.maxDevices).contains(count) else {
            throw SimulatorError(.invalidArgument, "speaker count \(count) is outside 1...\(SimulatedDeviceServer<SimulatedSpeaker>.maxDevices)")
        }
        let ports = port == 0 ? [UInt16](repeating: 0, count: count) : controlPorts(from: port, count: count)
        guard ports.count == count else {
            throw SimulatorError(.invalidArgument, "\(count) ports from \(port) (skipping \(reservedPorts.sorted().map(String.init).joined(separator: " and "))) do not all exist")
        }
        var opened: SpeakerStateFile?
        if let statePath { opened = try await SpeakerStateFile.open(path: statePath) }
        let stateFile = opened
        let speakers = (0..<count).map { k in
            SimulatedSpeaker(.init(identity: .simulated(index: k, seed: seed), clock: clocks(k), ipAddress: host,
                                   audioPort: 0, versions: versions(k), audioJitter: audioJitter(k), jitterSeed: seed &+ UInt64(k),
                                   recordDirectory: recordDirectory, keepsRenderLogs: keepsRenderLogs),
                             index: k, stateFile: stateFile, logger: logger)
        }
        let server = try SimulatedDeviceServer(devices: speakers, logger: logger, afterShutdown: { await stateFile?.flush() })
        var endpoints: [String] = []
        var responders: [SpeakerDiscoveryResponder] = []
        do {
            for (k, speaker) in speakers.enumerated() {
                let listener = try await TCPListener.bind(host: host, port: ports[k], logger: logger)
                guard case let .tcp(boundHost, boundPort) = listener.boundAddress else { continue }
                speaker.setControlPort(boundPort)
                speaker.startAudio(on: try UDPSocket.bind(host: boundHost, port: 0))
                // Clock sync over UDP (version 4) on the control port's number; a port some other socket holds leaves
                // the speaker on version 3's clock sync over TCP.
                if let clock = try? UDPSocket.bind(host: boundHost, port: boundPort, receiveTimestamps: true) {
                    speaker.startClockSync(on: clock)
                } else {
                    logger?.warning("speaker \(k): UDP port \(boundPort) is taken: clock sync over TCP only (protocol version 3)")
                }
                try server.attach(listener, toDevice: k)
                endpoints.append(boundHost.contains(":") ? "[\(boundHost)]:\(boundPort)" : "\(boundHost):\(boundPort)")
                if case let .ownPorts(dhost) = discovery {
                    responders.append(try SpeakerDiscoveryResponder(for: speaker, host: dhost, port: 0))
                }
            }
            // One socket answers for every speaker: a query sent to the port itself reaches one socket of those
            // bound to it (SO_REUSEPORT spreads unicast), so one per speaker would leave the others silent.
            if case let .shared(dhost, dport) = discovery {
                responders.append(try SpeakerDiscoveryResponder(for: speakers, host: dhost, port: dport))
            }
        } catch {
            for r in responders { await r.stop() }
            await server.shutdown()
            throw error
        }
        return SpeakerSimulation(server: server, endpoints: endpoints, responders: responders, stateFile: stateFile)
    }

    /// Ports a speaker's control (TCP) and clock sync (UDP, the same number) never take when they are counted from a
    /// given port: the discovery port (45454) and a receiver's default audio port (45456, `tuneup speaker receive`), so
    /// that speakers listening from 45455 leave them to the host's other speakers.
    public static let reservedPorts: Set<UInt16> = [DiscoveryMessage.port, 45456]

    /// The control ports of `count` speakers counted from `port`: `port` itself (as asked), then `port`+1, ...,
    /// skipping `reservedPorts` (fewer when they run past 65535).
    public static func controlPorts(from port: UInt16, count: Int) -> [UInt16] {
        guard count > 0 else { return [] }
        var out: [UInt16] = [port]
        var next = Int(port) + 1
        while out.count < count, next <= Int(UInt16.max) {
            if !reservedPorts.contains(UInt16(next)) { out.append(UInt16(next)) }
            next += 1
        }
        return out
    }

    /// Shows `tap` every datagram of every speaker and discovery responder from now on: audio, clock sync, discovery
    /// (a capture of the speakers' side, docs/capture.md).
    public func setDatagramTap(_ tap: SpeakerSideDatagramTap?) {
        for speaker in speakers { speaker.setDatagramTap(tap) }
        for responder in responders { responder.setDatagramTap(tap) }
    }

    /// Stops discovery and the speakers; the state file is flushed.
    public func shutdown() async {
        for r in responders { await r.stop() }
        await server.shutdown()
    }
}
