import SpeakerHubCore
import SpeakerSession

/// A player that sends no audio (docs/hub.md §6): it drives the speakers' players with the control protocol's play,
/// pause, resume and stop of one stream (docs/speaker-protocol.md §3.2) and keeps the elapsed time on the hub's
/// clock. `StreamingPlayer` uses it for web media; tests use it to run the hub's rules on a manual clock. A media item with a known duration ends (state stopped, the
/// speakers told to stop) when that much time has been played.
public actor ControlPlayer: HubPlayer {
    public let controller: SpeakerController
    private let now: @Sendable () -> Duration
    private var item: HubPlayable?
    private var state: HubPlayerState = .initialized
    /// Position in the item at `since` (the hub's time of the last play, resume or pause).
    private var position: Duration = .zero
    private var since: Duration = .zero
    private var streamId: UInt32 = 0
    private var speakers: [UInt64] = []

    public init(controller: SpeakerController, now: @escaping @Sendable () -> Duration) {
        self.controller = controller
        self.now = now
    }

    public func play(_ item: HubPlayable, from position: Duration, on ids: [UInt64]) async throws {
        if state == .playing || state == .paused {
            let old = streamId
            try? await each(speakers) { try await $0.stop(streamId: old) }
        }
        streamId = streamId == UInt32.max ? 1 : streamId + 1
        let (source, title): (StreamSource, String) = switch item {
        case let .media(m): (.localFile, m.title)
        case let .web(url): (.httpStream, url)
        }
        let id = streamId
        speakers = ids
        self.item = item
        state = .stopped
        try await each(ids) { try await $0.play(streamId: id, format: .cd, source: source, title: title) }
        state = .playing
        self.position = position
        since = now()
    }

    public func pause() async throws {
        guard state == .playing else { return }
        let id = streamId
        try await each(speakers) { try await $0.pause(streamId: id) }
        position = elapsed()
        state = .paused
        since = now()
    }

    public func resume() async throws {
        guard state == .paused else { return }
        let id = streamId
        try await each(speakers) { try await $0.resume(streamId: id) }
        state = .playing
        since = now()
    }

    public func stop() async throws {
        guard state == .playing || state == .paused else { return }
        position = elapsed()
        state = .stopped
        let id = streamId
        try await each(speakers) { try await $0.stop(streamId: id) }
    }

    /// Moves the position (the speakers hear no audio from this player: nothing to tell them).
    public func seek(to position: Duration) async throws {
        guard state == .playing || state == .paused else { return }
        self.position = position
        since = now()
    }

    public func playback() async -> HubPlayback {
        if state == .playing, case let .media(m)? = item, m.duration > 0, elapsed() >= .seconds(m.duration) {
            position = .seconds(m.duration)
            state = .stopped
            let id = streamId
            try? await each(speakers) { try await $0.stop(streamId: id) }
        }
        return HubPlayback(state: state, elapsed: state == .playing || state == .paused ? elapsed() : nil, item: item)
    }

    private func elapsed() -> Duration {
        state == .playing ? position + (now() - since) : position
    }

    /// Runs `request` on each of `ids` that is still in the playback session (a speaker that left it has stopped);
    /// a refusal names the speaker.
    private func each(_ ids: [UInt64], _ request: (SpeakerSession) async throws -> Void) async throws {
        let members = await controller.sessionMembers
        for id in ids where members.contains(id) {
            let session = try await controller.session(id: id)
            do {
                try await request(session)
            } catch let error as SpeakerSessionError {
                throw HubError(.speakerFailed, "speaker \(id): \(error.message)")
            }
        }
    }
}
