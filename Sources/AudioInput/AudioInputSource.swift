import Speaker
import SpeakerPlayback
import Synchronization

/// A playback source (`PCMSource`) over `AudioInput`: any file or web stream AudioInput decodes (WAV, AIFF, FLAC, Ogg
/// Vorbis, Opus, MP3; http(s) URLs), in the source's own rate and channel count, 16-bit (24-bit for deeper sources),
/// so the speakers get what the decoder gives without a second conversion. A file can seek (it is opened again at
/// the frame); a web stream cannot go back, and the player resumes it where it paused instead — but it can start
/// later (`--from`): it is requested again and decoded and dropped up to the start.
public final class AudioInputSource: PCMSource {
    public let address: AudioSourceAddress
    /// What the source is (container, encoding, rate, channels, length, title).
    public let source: AudioSourceDescription
    public let format: AudioFormat
    public var totalFrames: UInt64? { source.frames.map { UInt64(max(0, $0)) } }
    public var isSeekable: Bool { !source.isNetworkStream }
    /// Files, and URLs (requested again, decoded and dropped up to the frame); not standard input (read once).
    public var canStartLater: Bool { address != .standardInput }
    private let options: AudioInputOptions
    private let stream: Mutex<AudioStream>

    private init(address: AudioSourceAddress, stream: AudioStream, options: AudioInputOptions) {
        self.address = address
        self.source = stream.source
        self.format = stream.output
        self.options = options
        self.stream = Mutex(stream)
    }

    /// Opens the source and decodes its first frames, so a missing, corrupt or unsupported file or an unreachable or
    /// non-audio URL fails here, with one line, before any speaker plays.
    ///
    /// Standard input is read once, so it is opened once: headerless PCM (`options.raw`) in its own rate and channels,
    /// anything else decoded to 44.1 kHz stereo 16-bit (its header is only known once it is read).
    public static func open(_ address: AudioSourceAddress, options: AudioInputOptions = AudioInputOptions()) async throws(AudioInputError) -> AudioInputSource {
        if address == .standardInput {
            var output = AudioFormat.cd
            if let raw = options.raw {
                output = playbackFormat(for: AudioSourceDescription(
                    container: "RAW", encoding: raw.encoding == .s16le ? "16-bit PCM" : "32-bit PCM", sampleRate: raw.sampleRate,
                    channels: raw.channels, frames: nil, title: "", isNetworkStream: true))
            }
            let stream = try await AudioInput.open(address, output: output, options: options)
            return AudioInputSource(address: address, stream: stream, options: options)
        }
        let probe = try await AudioInput.open(address, output: .cd, options: options)
        let wanted = playbackFormat(for: probe.source)
        guard wanted != probe.output else { return AudioInputSource(address: address, stream: probe, options: options) }
        await probe.close()
        let stream = try await AudioInput.open(address, output: wanted, options: options)
        return AudioInputSource(address: address, stream: stream, options: options)
    }

    /// The source's own rate and channels within what a speaker takes; 24-bit for sources deeper than 16 bits.
    static func playbackFormat(for source: AudioSourceDescription) -> AudioFormat {
        let rate = UInt32(clamping: min(max(source.sampleRate, Int(AudioFormat.sampleRates.lowerBound)), Int(AudioFormat.sampleRates.upperBound)))
        let channels = UInt8(clamping: min(max(source.channels, 1), Int(AudioFormat.channelCounts.upperBound)))
        let deep = ["24-bit", "32-bit", "64-bit"].contains { source.encoding.hasPrefix($0) }
        return (try? AudioFormat(sampleRate: rate, channels: channels, sampleFormat: deep ? .s24le : .s16le)) ?? .cd
    }

    public func read(maxFrames: Int) async throws -> [UInt8] {
        var current = stream.withLock { $0 }
        while true {
            do {
                return try await current.next(maxFrames: max(1, maxFrames))?.pcm ?? []
            } catch {
                // A seek (a resume at the paused position) replaced and closed the stream under this read: the read
                // goes on from the new one. Only a failure of the stream that is still the current one ends the source.
                let now = stream.withLock { $0 }
                guard now !== current else { throw error }
                current = now
            }
        }
    }

    public func seek(toFrame frame: UInt64) async throws {
        guard canStartLater else { throw AudioInputError(.badOption, "standard input cannot seek") }
        // The start as a Duration that AudioInput turns back into exactly `frame` (it rounds down: round up here).
        let rate = UInt64(format.sampleRate)
        let attoseconds = (Int128(frame % rate) * 1_000_000_000_000_000_000 + Int128(rate) - 1) / Int128(rate)
        let start = Duration(secondsComponent: Int64(frame / rate), attosecondsComponent: Int64(attoseconds))
        let next = try await AudioInput.open(address, output: format, startAt: start, options: options)
        let old = stream.withLock { current in
            defer { current = next }
            return current
        }
        await old.close()
    }

    /// Ends the decoding (and a web stream's transfer).
    public func close() async {
        await stream.withLock { $0 }.close()
    }
}
