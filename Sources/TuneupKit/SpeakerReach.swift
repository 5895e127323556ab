import Foundation
import SpeakerSession
import Transport

/// How the speaker commands reach their speakers: the addresses named (through the registry, so a link conditioner
/// applies), or, with none named, the speakers a discovery query finds; and how each link is opened and each request
/// waits. What `tuneup speaker ...` does before its action, and `speaker events`' following.
public struct SpeakerReach: Sendable {
    /// The speakers named; empty: discovery.
    public var addresses: [DeviceAddress]
    /// Where discovery queries go (empty: broadcast and multicast on the standard port).
    public var discoveryTargets: [(host: String, port: UInt16)]
    /// How long discovery collects answers, in seconds.
    public var window: Double
    public var connection: ConnectionOptions
    public var requests: RequestOptions

    /// Parses `speakers` (speaker addresses, `HOST:PORT` alone is `speaker:HOST:PORT`) and `discoveryTargets`
    /// (`HOST:PORT` or `speaker:HOST:PORT`).
    /// - Throws: `TransportError(.invalidAddress)` naming the text at fault (a usage error).
    public init(speakers: [String], discoveryTargets: [String], window: Double, connection: ConnectionOptions,
                requests: RequestOptions) throws(TransportError) {
        addresses = try speakers.map { text throws(TransportError) in try Devices.parseSpeakerAddress(text) }
        self.discoveryTargets = try discoveryTargets.map { text throws(TransportError) in
            guard let e = SpeakerBridge.endpoint(of: try Devices.parseSpeakerAddress(text)) else {
                throw TransportError(.invalidAddress, "--discovery-target takes HOST:PORT or speaker:HOST:PORT, got '\(text)'")
            }
            return (e.host, e.port)
        }
        (self.window, self.connection, self.requests) = (window, connection, requests)
    }

    /// The discovery client of the reach, nil when speakers are named.
    public var discovery: DiscoveryClient? {
        guard addresses.isEmpty else { return nil }
        return DiscoveryClient(targets: discoveryTargets.isEmpty ? DiscoveryClient.standardTargets : discoveryTargets,
                               window: .milliseconds(Int64(window * 1000)))
    }

    /// Opens every speaker named, or every one discovery finds.
    /// - Throws: `SpeakerSessionError(.connectionFailed)` when none answered discovery; what opening throws.
    public func controller() async throws -> SpeakerController {
        var addresses = addresses
        if let discovery {
            let found = try await discovery.discover()
            guard !found.isEmpty else {
                throw SpeakerSessionError(.connectionFailed,
                                          "no speakers answered discovery within \(window.formatted()) s (name them with --speaker HOST:PORT)")
            }
            addresses = found.map { SpeakerBridge.address(SpeakerEndpoint(host: $0.host, port: $0.controlPort)) }
        }
        return try await Devices.openSpeakers(addresses, options: connection, requestOptions: requests)
    }

    /// Runs `body` on the controller and closes it, also when `body` throws.
    public func with<T>(_ body: (SpeakerController) async throws -> T) async throws -> T {
        let controller = try await controller()
        do {
            let result = try await body(controller)
            await controller.close()
            return result
        } catch {
            await controller.close()
            throw error
        }
    }

    /// `speaker events`: follows the speakers named, or those discovery finds every `interval` (appearing ones
    /// followed from then on, vanished ones removed), handing each event to `emit` until `count` of them, `deadline`,
    /// or (speakers named) every one gone. `started` says how many are followed (nil: discovery) before the first.
    /// - Throws: `SpeakerSessionError(.disconnected)` when every speaker named went away; what opening or `emit` throws.
    public func followEvents(count: Int?, until deadline: ContinuousClock.Instant?, interval: Duration,
                             started: (Int?) -> Void, emit: @escaping @Sendable (SpeakerEventFeed.Event) throws -> Void) async throws {
        let feed = SpeakerEventFeed()
        let (connection, requests) = (self.connection, self.requests)
        do {
            for address in addresses {
                try await feed.add(try await Devices.openSpeaker(address, options: connection, requestOptions: requests), announce: false)
            }
            let discovery = self.discovery
            let following = await feed.deviceIds.count
            started(discovery == nil ? following : nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var seen = 0
                    for await event in feed.events {
                        try emit(event)
                        seen += 1
                        if let count, seen >= count { return }
                        if discovery == nil, case .removed = event, await feed.deviceIds.isEmpty {
                            throw SpeakerSessionError(.disconnected, "every speaker followed went away")
                        }
                    }
                }
                if let discovery {
                    group.addTask {
                        try await feed.follow(discovery, every: interval) { found in
                            try await Devices.openSpeaker(SpeakerBridge.address(SpeakerEndpoint(host: found.host, port: found.controlPort)),
                                                          options: connection, requestOptions: requests)
                        }
                    }
                } else if following == 0 {
                    return
                }
                if let deadline {
                    group.addTask { try await Task.sleep(until: deadline, clock: .continuous) }
                }
                try await group.next()
                group.cancelAll()
            }
        } catch {
            await feed.finish()
            throw error
        }
        await feed.finish()
    }
}
