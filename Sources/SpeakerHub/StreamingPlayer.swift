import AudioInput
import SpeakerHubCore
import SpeakerSession

/// The hub's player with audio (docs/hub.md §6): hub media (files in any format AudioInput decodes: WAV, AIFF, FLAC,
/// Ogg Vorbis, Opus, MP3) is streamed by the controller's player (`SpeakerController.play`: PCM over UDP, in sync on
/// every speaker of the playback session, on their clocks), so the state and elapsed time are the stream's. Web media
/// (an http or https URL, as HKWHub plays it) is fetched and decoded by AudioInput too and streamed the same way, as an
/// HTTP stream (source `01`: it cannot be resumed; pausing it stops it). rtsp and mms URLs are refused with a clear
/// `MediaUnreadable`: AudioInput cannot fetch them.
public actor StreamingPlayer: HubPlayer {
    public let controller: SpeakerController
    private var item: HubPlayable?

    public init(controller: SpeakerController) {
        self.controller = controller
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
        case let .web(url):
            let address: AudioSourceAddress
            do {
                address = try AudioSourceAddress(url)
            } catch {
                throw HubError(.mediaUnreadable, "MediaUrl \(url): this hub streams http and https URLs (\(error.message))")
            }
            let source: AudioInputSource
            do {
                source = try await AudioInputSource.open(address)
            } catch {
                throw HubError(.mediaUnreadable, error.message)   // names the URL and says what is wrong with it
            }
            try await controller.play(source, title: url, kind: .httpStream)
        }
        self.item = item
    }

    public func pause() async throws {
        try await controller.pause()
    }

    public func resume() async throws {
        try await controller.resume()
    }

    public func stop() async throws {
        guard item != nil else { return }
        let state = await playback().state
        guard state == .playing || state == .paused else { return }
        try await controller.stop()
    }

    /// Hub media starts again at `position` on the same speakers (paused media stays paused there); web media
    /// cannot seek.
    public func seek(to position: Duration) async throws {
        guard case let .media(m)? = item else { throw HubError(.notSeekable, "web media cannot seek (it is streamed as it comes)") }
        let paused = await playback().state == .paused
        try await play(.media(m), from: position, on: await controller.sessionMembers)
        if paused { try await controller.pause() }
    }

    public func playback() async -> HubPlayback {
        guard item != nil else { return HubPlayback(state: .initialized, elapsed: nil, item: nil) }
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
