import SpeakerHubCore
import SpeakerSession

/// The hub's player until audio streaming is wired (docs/hub.md §6): it drives the speakers' players with the
/// control protocol's play, pause, resume and stop of one stream (docs/speaker-protocol.md §3.2) and keeps the
/// elapsed time on the hub's clock; it sends no audio. A media item with a known duration ends (state stopped, the
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
    /// Request ids of this player's own requests, far from the ones `SpeakerSession` counts from 1.
    private var requestId: UInt32 = 0x4000_0000

    public init(controller: SpeakerController, now: @escaping @Sendable () -> Duration) {
        self.controller = controller
        self.now = now
    }

    public func play(_ item: HubPlayable, from position: Duration, on ids: [UInt64]) async throws {
        if state == .playing || state == .paused { try? await send(.stop(streamId: streamId), .stop, to: speakers) }
        streamId = streamId == UInt32.max ? 1 : streamId + 1
        let (source, title): (StreamSource, String) = switch item {
        case let .media(m): (.localFile, m.title)
        case let .web(url): (.httpStream, url)
        }
        let request = try PlayRequest(streamId: streamId, format: .cd, source: source, title: try WireText(Self.clipped(title)))
        speakers = ids
        self.item = item
        state = .stopped
        try await send(.play(request), .play, to: ids)
        state = .playing
        self.position = position
        since = now()
    }

    public func pause() async throws {
        guard state == .playing else { return }
        try await send(.pause(streamId: streamId), .pause, to: speakers)
        position = elapsed()
        state = .paused
        since = now()
    }

    public func resume() async throws {
        guard state == .paused else { return }
        try await send(.resume(streamId: streamId), .resume, to: speakers)
        state = .playing
        since = now()
    }

    public func stop() async throws {
        guard state == .playing || state == .paused else { return }
        position = elapsed()
        state = .stopped
        try await send(.stop(streamId: streamId), .stop, to: speakers)
    }

    public func playback() async -> HubPlayback {
        if state == .playing, case let .media(m)? = item, m.duration > 0, elapsed() >= .seconds(m.duration) {
            position = .seconds(m.duration)
            state = .stopped
            try? await send(.stop(streamId: streamId), .stop, to: speakers)
        }
        return HubPlayback(state: state, elapsed: state == .playing || state == .paused ? elapsed() : nil, item: item)
    }

    private func elapsed() -> Duration {
        state == .playing ? position + (now() - since) : position
    }

    /// Sends `message` to each of `ids` that is still in the playback session (a speaker that left it has stopped).
    private func send(_ message: ControlMessage, _ acked: AckedRequest, to ids: [UInt64]) async throws {
        let members = await controller.sessionMembers
        for id in ids where members.contains(id) {
            let session = try await controller.session(id: id)
            requestId = requestId == UInt32.max ? 0x4000_0000 : requestId + 1
            let packet = try ControlPacket(requestId: requestId, message: message, version: session.hello.version)
            let reply = try await session.core.request(packet).message
            switch reply {
            case let .done(what) where what == acked:
                continue
            case let .failed(f):
                throw HubError(.speakerFailed, "speaker \(id) refused \(acked): \(f.message.value) (\(f.code.name))")
            default:
                throw HubError(.speakerFailed, "speaker \(id) answered \(acked) with message type 0x\(String(reply.type, radix: 16))")
            }
        }
    }

    /// At most 255 bytes of UTF-8, cut between characters.
    static func clipped(_ text: String) -> String {
        var out = ""
        for c in text {
            guard out.utf8.count + String(c).utf8.count <= 255 else { break }
            out.append(c)
        }
        return out
    }
}
