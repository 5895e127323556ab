import AudioInput
import SpeakerHubCore
import SpeakerSession

/// The hub's player with audio (docs/hub.md §6): hub media (files in any format AudioInput decodes: WAV, AIFF, FLAC,
/// Ogg Vorbis, Opus, MP3) is streamed by the controller's player (`SpeakerController.play`: PCM over UDP, in sync on
/// every speaker of the playback session, on their clocks), so the state and elapsed time are the stream's. Web media
/// is the speakers' own business in the HKWHub model (a URL they play; it cannot be resumed): it is announced to them
/// by a `ControlPlayer` (play, pause, resume, stop of a stream of source `01`) and timed on the hub's clock.
public actor StreamingPlayer: HubPlayer {
    public let controller: SpeakerController
    private let announcer: ControlPlayer
    private var item: HubPlayable?
    /// Whether the current item is the controller's stream (else the announcer's).
    private var streaming = false

    public init(controller: SpeakerController, now: @escaping @Sendable () -> Duration) {
        self.controller = controller
        announcer = ControlPlayer(controller: controller, now: now)
    }

    public func play(_ item: HubPlayable, from position: Duration, on speakers: [UInt64]) async throws {
        try await stop()
        switch item {
        case let .media(m):
            let source: AudioInputSource
            do {
                source = try await AudioInputSource.open(.file(m.location))
            } catch {
                throw HubError(.mediaUnreadable, error.message)   // names the file and says what is wrong with it
            }
            let from = Double(position.components.seconds) + Double(position.components.attoseconds) / 1e18
            try await controller.play(source, title: m.title, kind: .localFile, from: from)
            streaming = true
        case .web:
            try await announcer.play(item, from: position, on: speakers)
            streaming = false
        }
        self.item = item
    }

    public func pause() async throws {
        if streaming { try await controller.pause() } else { try await announcer.pause() }
    }

    public func resume() async throws {
        if streaming { try await controller.resume() } else { try await announcer.resume() }
    }

    public func stop() async throws {
        guard item != nil else { return }
        let state = await playback().state
        guard state == .playing || state == .paused else { return }
        if streaming { try await controller.stop() } else { try await announcer.stop() }
    }

    public func playback() async -> HubPlayback {
        guard streaming else { return await announcer.playback() }
        let state: HubPlayerState = switch await controller.playerState {
        case .initialized: .initialized
        case .playing, .preparing: .playing
        case .paused: .paused
        default: .stopped
        }
        let elapsed = await controller.elapsed.map { Duration.milliseconds(Int64(($0 * 1000).rounded(.down))) }
        return HubPlayback(state: state, elapsed: state == .playing || state == .paused ? elapsed ?? .zero : nil, item: item)
    }
}
