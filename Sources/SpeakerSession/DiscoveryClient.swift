import Speaker
import Transport

/// A speaker found by discovery: its identity and where to reach it.
public struct DiscoveredSpeaker: Sendable, Hashable {
    public var deviceId: UInt64
    /// The numeric host the answer came from.
    public var host: String
    public var controlPort: UInt16
    public var audioPort: UInt16
    public var protocolVersions: ClosedRange<UInt8>
    public var deviceName: String
    public var modelName: String

    /// `HOST:PORT` of the control port.
    public var endpoint: String { host.contains(":") ? "[\(host)]:\(controlPort)" : "\(host):\(controlPort)" }
}

/// A change seen by `DiscoveryClient.watch()`.
public enum DiscoveryChange: Sendable, Hashable {
    case added(DiscoveredSpeaker)
    case removed(DiscoveredSpeaker)
}

/// Finds speakers with no configuration (docs/speaker-protocol.md §8): a query to the discovery port on the
/// broadcast address and the multicast group (or to the `targets` given, e.g. one port on loopback in tests), and
/// every answer to it collected for `window`. Sockets wait on the I/O reactor; nothing blocks the cooperative pool.
public struct DiscoveryClient: Sendable {
    /// Where queries go.
    public var targets: [(host: String, port: UInt16)]
    /// How long answers are collected after a query.
    public var window: Duration
    /// The address the query socket binds (its port is where answers come back).
    public var bindHost: String

    /// The protocol's targets: the limited broadcast and the multicast group, port 45454; and the loopback
    /// broadcast, so speakers on this host that listen on loopback only (simulated ones) answer from an address
    /// that reaches them.
    public static let standardTargets: [(host: String, port: UInt16)] = [
        ("255.255.255.255", DiscoveryMessage.port), (DiscoveryMessage.multicastGroup, DiscoveryMessage.port),
        ("127.255.255.255", DiscoveryMessage.port),
    ]

    public init(targets: [(host: String, port: UInt16)] = DiscoveryClient.standardTargets, window: Duration = .milliseconds(500),
                bindHost: String = "0.0.0.0") {
        self.targets = targets
        self.window = window
        self.bindHost = bindHost
    }

    /// One query round: the speakers that answered within the window, by device id (the first answer kept, or a
    /// later one from loopback), in order of first answer.
    /// - Throws: `SpeakerSessionError(.discoveryFailed)` when no socket can be opened or no query could be sent;
    ///   `CancellationError`.
    public func discover() async throws -> [DiscoveredSpeaker] {
        let socket: UDPSocket
        do {
            socket = try UDPSocket.bind(host: bindHost, port: 0, broadcast: true)
        } catch {
            throw SpeakerSessionError(.discoveryFailed, "cannot open a discovery socket: \(error.message)")
        }
        defer { socket.close() }
        let queryId = UInt32.random(in: 1...UInt32.max)
        let query = DiscoveryMessage.query(queryId: queryId).encode()
        var sent = 0
        var lastError = ""
        for target in targets {
            do {
                try await socket.send(query, toHost: target.host, port: target.port)
                sent += 1
            } catch let error as TransportError {
                lastError = error.message
            }
        }
        guard sent > 0 else {
            throw SpeakerSessionError(.discoveryFailed, "no discovery query could be sent" + (lastError.isEmpty ? "" : ": \(lastError)"))
        }
        let collector = Task { () -> [DiscoveredSpeaker] in
            var list: [DiscoveredSpeaker] = []
            while true {
                guard let datagram = try? await socket.receive() else { return list }
                guard case let .answer(a)? = try? DiscoveryMessage.decode(datagram.bytes), a.queryId == queryId else { continue }
                let speaker = DiscoveredSpeaker(
                    deviceId: a.deviceId, host: datagram.host, controlPort: a.controlPort, audioPort: a.audioPort,
                    protocolVersions: a.protocolVersions, deviceName: a.deviceName.value, modelName: a.modelName.value)
                if let i = list.firstIndex(where: { $0.deviceId == a.deviceId }) {
                    // One speaker answering several queries (broadcast, multicast, loopback): a loopback answer wins,
                    // as a speaker on this host may listen on loopback only.
                    if speaker.host.hasPrefix("127."), !list[i].host.hasPrefix("127.") { list[i] = speaker }
                } else {
                    list.append(speaker)
                }
            }
        }
        try? await Task.sleep(for: window)
        collector.cancel()
        let found = await collector.value
        try Task.checkCancellation()
        return found
    }

    /// Queries every `interval` (2 s by default) and reports speakers that appeared and those that missed
    /// `missesBeforeRemoval` rounds in a row (`DiscoveryTracker`). The first round reports every speaker found as
    /// added. `following`, when given, is asked after each round for the speakers the consumer follows (holds a
    /// connection to): a speaker found that it does not follow is reported added again every round until it does
    /// (one that could not be connected, or whose connection ended while it still answers), and one it follows that
    /// misses the rounds is reported removed. The stream ends with an error if a round cannot run, and when the
    /// consumer stops iterating.
    public func watch(interval: Duration = .seconds(2), missesBeforeRemoval: Int = 2,
                      following: (@Sendable () async -> Set<UInt64>)? = nil) -> AsyncThrowingStream<DiscoveryChange, any Error> {
        let client = self
        return AsyncThrowingStream { continuation in
            let task = Task {
                var tracker = DiscoveryTracker(missesBeforeRemoval: missesBeforeRemoval)
                let clock = ContinuousClock()
                do {
                    while !Task.isCancelled {
                        let start = clock.now
                        let round = try await client.discover()
                        let followed = await following?()
                        for change in tracker.round(round, following: followed) { continuation.yield(change) }
                        try await clock.sleep(until: start + interval)
                    }
                    continuation.finish()
                } catch is CancellationError {
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// What `DiscoveryClient.watch` decides after each round, as a value (tested round by round, no network).
public struct DiscoveryTracker: Sendable {
    /// Rounds in a row a speaker may miss before it is reported removed (at least 1).
    public let missesBeforeRemoval: Int
    /// Each speaker seen, as last seen, and the rounds in a row it has missed since.
    private var known: [UInt64: (speaker: DiscoveredSpeaker, missed: Int)] = [:]

    public init(missesBeforeRemoval: Int = 2) {
        self.missesBeforeRemoval = max(1, missesBeforeRemoval)
    }

    /// The changes after a round that found `found` (in its order: added ones first, then removed ones).
    /// `following` nil: a speaker is added when first seen and removed when it missed `missesBeforeRemoval` rounds in
    /// a row. `following` given (the speakers the consumer follows): every speaker found that is not followed is
    /// added, and a followed one that missed the rounds is removed.
    public mutating func round(_ found: [DiscoveredSpeaker], following: Set<UInt64>? = nil) -> [DiscoveryChange] {
        let ids = Set(found.map(\.deviceId))
        var changes: [DiscoveryChange] = []
        for speaker in found where following.map({ !$0.contains(speaker.deviceId) }) ?? (known[speaker.deviceId] == nil) {
            changes.append(.added(speaker))
        }
        for speaker in found { known[speaker.deviceId] = (speaker, 0) }
        let candidates = following.map { Array($0) } ?? Array(known.keys)
        for id in candidates.sorted() where !ids.contains(id) {
            guard let entry = known[id] else { continue }
            if entry.missed + 1 >= missesBeforeRemoval {
                known[id] = nil
                changes.append(.removed(entry.speaker))
            } else {
                known[id] = (entry.speaker, entry.missed + 1)
            }
        }
        return changes
    }
}
