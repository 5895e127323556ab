import Logging
import SpeakerHubCore
import SpeakerSession

/// The whole hub over a controller's speakers, as `tuneup speaker hub` runs it: the HKWHub v1 API over the speakers
/// (the unreached ones looked for in the background) and a streaming player, the media folder, the JSON-RPC
/// notifications of the player's and the speakers' events, the HTTP server and Snapcast's TCP control; stopped in one
/// call, the controller closed.
public final class HubService: Sendable {
    public let hub: RunningHub
    /// Snapcast's JSON-RPC control over TCP (nil when its port was taken and none was asked for).
    public let control: SnapcastControlServer?
    /// Said when the default control port was taken (no control then).
    public let warning: String?
    private let controller: SpeakerController
    private let speakers: ControllerSpeakers
    private let followers: [Task<Void, Never>]

    private init(hub: RunningHub, control: SnapcastControlServer?, warning: String?, controller: SpeakerController, speakers: ControllerSpeakers,
                 followers: [Task<Void, Never>]) {
        (self.hub, self.control, self.warning, self.controller, self.speakers, self.followers) = (hub, control, warning, controller, speakers, followers)
    }

    /// Serves the hub on `host:port` (0: a free port) and Snapcast's control on `controlPort` (nil: 1705 when free).
    /// On a failure what was started stops and the controller is closed.
    /// - Throws: `HubError(.cannotServe)` when an address cannot be bound.
    public static func start(_ controller: SpeakerController, unreached: [(host: String, port: UInt16)], media: MediaFolder,
                             sessionTimeout: Duration, host: String, port: Int, controlPort: Int?, logger: Logger) async throws -> HubService {
        let clock = ContinuousClock()
        let origin = clock.now
        let now: @Sendable () -> Duration = { origin.duration(to: clock.now) }
        let sleep: @Sendable (Duration) async throws -> Void = { try await clock.sleep(for: $0) }
        let speakers = ControllerSpeakers(controller, unreached: unreached, now: now, sleep: sleep)
        let api = HubAPI(speakers: speakers, player: StreamingPlayer(controller: controller), media: media, sessionTimeout: sessionTimeout,
                         now: now, sleep: sleep, host: SnapcastControlServer.thisHost())
        // The player's own events (the end, source errors) and the speakers' (volumes, links lost and back) become
        // JSON-RPC notifications.
        let followers = [HubRPCServer.follow(controller, into: api), api.followSpeakers()]
        let hub: RunningHub
        do {
            hub = try await SpeakerHubServer.start(api, host: host, port: port, logger: logger)
        } catch {
            followers.forEach { $0.cancel() }
            await controller.close()
            throw error
        }
        do {
            let started = try await SnapcastControlServer.start(api, host: host, requested: controlPort)
            return HubService(hub: hub, control: started.server, warning: started.warning, controller: controller, speakers: speakers,
                              followers: followers)
        } catch {
            followers.forEach { $0.cancel() }
            await hub.stop()
            await controller.close()
            throw error
        }
    }

    /// Serves until `stopWhen` returns (a `quit` line, a signal), or the server ends by itself; then stops the hub,
    /// the control, the speakers' following and the controller.
    /// - Throws: `HubError(.cannotServe)` when the server stopped on an error.
    public func run(until stopWhen: @escaping @Sendable () async -> Void) async throws {
        let stopper = Task { [hub] in
            await stopWhen()
            await hub.stop()
        }
        var failure: (any Error)?
        do { try await hub.wait() } catch { failure = error }
        stopper.cancel()
        followers.forEach { $0.cancel() }
        await control?.stop()
        await speakers.close()
        await controller.close()
        if let failure, !(failure is CancellationError) {
            throw HubError(.cannotServe, "the hub stopped: \(failure)")
        }
    }
}
