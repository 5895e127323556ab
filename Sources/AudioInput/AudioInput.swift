import Glibc
import Speaker

/// Where audio comes from: a local file, an HTTP(S) URL, or the process's standard input.
public enum AudioSourceAddress: Sendable, Hashable, CustomStringConvertible {
    /// A local file, by path.
    case file(String)
    /// An `http://` or `https://` URL: a file on a web server or a live stream.
    case url(String)
    /// Standard input (`-`): a pipe, read as a stream (it cannot seek).
    case standardInput

    /// Reads a command-line argument: `http://...` and `https://...` are URLs, `file:///path` is a path, any other
    /// `scheme://` is refused with `.badAddress`, and everything else is a path. An empty text is `.badAddress`.
    public init(_ text: String) throws(AudioInputError) {
        guard !text.isEmpty else { throw AudioInputError(.badAddress, "an audio source is a file path or an http(s) URL, got nothing") }
        if text == "-" {
            self = .standardInput
            return
        }
        let lower = text.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") {
            let rest = text.drop(while: { $0 != ":" }).dropFirst(3)
            guard let host = rest.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first, !host.isEmpty else {
                throw AudioInputError(.badAddress, "\(text): a URL needs a host (http://HOST[:PORT]/PATH)")
            }
            guard !text.contains(where: { $0 == " " || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true }) else {
                throw AudioInputError(.badAddress, "\(text): a URL may not hold spaces or control characters (write them %-encoded)")
            }
            self = .url(text)
        } else if lower.hasPrefix("file://") {
            let path = String(text.dropFirst("file://".count))
            guard path.hasPrefix("/") else { throw AudioInputError(.badAddress, "\(text): a file URL is file:///ABSOLUTE/PATH") }
            self = .file(path)
        } else if let range = text.firstRange(of: "://"), text[..<range.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }) {
            throw AudioInputError(.badAddress, "\(text): \(text[..<range.lowerBound]):// is not supported; give a file path or an http(s) URL")
        } else {
            self = .file(text)
        }
    }

    public var description: String {
        switch self {
        case .file(let path): path
        case .url(let url): url
        case .standardInput: "standard input"
        }
    }

    /// The last component of the path (for a URL, of its path without query), the title when the source names none.
    public var lastComponent: String {
        switch self {
        case .file(let path):
            return path.split(separator: "/").last.map(String.init) ?? path
        case .url(let url):
            let noQuery = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
            let afterScheme = noQuery.drop(while: { $0 != ":" }).dropFirst(3)
            let parts = afterScheme.split(separator: "/")
            return parts.count > 1 ? String(parts.last!) : String(parts.first ?? Substring(url))
        case .standardInput:
            return "standard input"
        }
    }
}

/// What the source is, as its container says.
public struct AudioSourceDescription: Sendable, Hashable, CustomStringConvertible {
    /// The container: "WAV", "AIFF", "FLAC", "Ogg", "MP3", or libsndfile's name for another one it reads.
    public let container: String
    /// The encoding in the container: "16-bit PCM", "24-bit PCM", "32-bit float", "Vorbis", "Opus", "MPEG layer III", ...
    public let encoding: String
    /// The source's own sample rate in Hz.
    public let sampleRate: Int
    /// The source's own channel count.
    public let channels: Int
    /// Frames at the source rate, when the source says how many (nil for a live or unknown-length stream).
    public let frames: Int64?
    /// The title tag (ID3, Vorbis comment, RIFF INFO) when there is one, else the file name or the URL's last path
    /// component.
    public let title: String
    /// Whether the source came over HTTP.
    public let isNetworkStream: Bool
    /// The source's own tags (FLAC and Ogg Vorbis comments, RIFF INFO, AIFF, ID3 as libsndfile reads them): what a
    /// media library shows (`title` above falls back to the file name; `tags.title` is nil without a tag).
    public let tags: AudioTags

    public init(container: String, encoding: String, sampleRate: Int, channels: Int, frames: Int64?, title: String, isNetworkStream: Bool,
                tags: AudioTags = AudioTags()) {
        self.container = container
        self.encoding = encoding
        self.sampleRate = sampleRate
        self.channels = channels
        self.frames = frames
        self.title = title
        self.isNetworkStream = isNetworkStream
        self.tags = tags
    }

    /// The length, when the number of frames is known.
    public var duration: Duration? {
        guard let frames, sampleRate > 0 else { return nil }
        let whole = frames / Int64(sampleRate)
        let rest = frames % Int64(sampleRate)
        return .seconds(whole) + .nanoseconds(rest * 1_000_000_000 / Int64(sampleRate))
    }

    public var description: String {
        var text = "\(container), \(encoding), \(sampleRate) Hz, \(channels) ch"
        if let duration {
            let ms = duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
            text += ", \(ms / 1000).\(String(ms % 1000 + 1000).dropFirst()) s"
        } else {
            text += ", length unknown"
        }
        return text
    }
}

/// A source's tags, each nil when the source has none (or only spaces).
public struct AudioTags: Sendable, Hashable {
    public var title: String?
    public var artist: String?
    public var album: String?

    public init(title: String? = nil, artist: String? = nil, album: String? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
    }
}

/// How long network sources may take. Files ignore these.
public struct AudioInputOptions: Sendable, Hashable {
    /// Longest wait for the TCP (and TLS) connection to the server.
    public var connectTimeout: Duration
    /// Longest wait for the next byte of a response once connected (or of standard input): a source silent for
    /// longer fails with `.stalled`.
    public var stallTimeout: Duration
    /// The source is headerless PCM in this format (`--raw s16le:48000:2`), not a container libsndfile recognises.
    public var raw: RawPCMFormat?

    public init(connectTimeout: Duration = .seconds(10), stallTimeout: Duration = .seconds(10), raw: RawPCMFormat? = nil) {
        self.connectTimeout = connectTimeout
        self.stallTimeout = stallTimeout
        self.raw = raw
    }
}

/// Headerless PCM: sample encoding, rate and channels, written `FORMAT:RATE:CHANNELS` (`s16le:48000:2`), as a pipe
/// source gives it (Snapcast's pipe source is `s16le:48000:2` by default).
public struct RawPCMFormat: Sendable, Hashable, CustomStringConvertible {
    public enum Encoding: String, Sendable, Hashable, CaseIterable {
        case s16le, s24le, s32le, f32le
        /// Bytes per sample (s24le is packed, 3 bytes).
        public var bytes: Int {
            switch self {
            case .s16le: 2
            case .s24le: 3
            case .s32le, .f32le: 4
            }
        }
    }

    public let encoding: Encoding
    public let sampleRate: Int
    public let channels: Int

    /// Reads `FORMAT:RATE:CHANNELS`: FORMAT s16le, s24le, s32le or f32le, RATE 8000...192000 Hz, CHANNELS 1...8.
    /// Throws `.badOption` with one line saying what is wrong.
    public init(_ text: String) throws(AudioInputError) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        let formats = Encoding.allCases.map(\.rawValue).joined(separator: ", ")
        guard parts.count == 3 else {
            throw AudioInputError(.badOption, "--raw is FORMAT:RATE:CHANNELS (e.g. s16le:48000:2), got \"\(text)\"")
        }
        guard let encoding = Encoding(rawValue: parts[0].lowercased()) else {
            throw AudioInputError(.badOption, "--raw: the sample format is one of \(formats), got \"\(parts[0])\"")
        }
        guard let rate = Int(parts[1]), AudioFormat.sampleRates.contains(UInt32(clamping: rate)), rate > 0 else {
            throw AudioInputError(.badOption, "--raw: the rate is \(AudioFormat.sampleRates.lowerBound)...\(AudioFormat.sampleRates.upperBound) Hz, got \"\(parts[1])\"")
        }
        guard let channels = Int(parts[2]), AudioFormat.channelCounts.contains(UInt8(clamping: channels)), channels > 0 else {
            throw AudioInputError(.badOption, "--raw: the channels are \(AudioFormat.channelCounts.lowerBound)...\(AudioFormat.channelCounts.upperBound), got \"\(parts[2])\"")
        }
        self.encoding = encoding
        self.sampleRate = rate
        self.channels = channels
    }

    public var description: String { "\(encoding.rawValue):\(sampleRate):\(channels)" }

    /// The frame size in bytes.
    public var bytesPerFrame: Int { encoding.bytes * channels }
}

/// Opens audio sources: decodes local files and HTTP streams with libsndfile, resamples with libsoxr when rates
/// differ, and maps channels, to the speaker's PCM format (docs/audio-input.md).
public enum AudioInput {
    /// What the local file at `path` is (container, encoding, rate, channels, length, title), read from its header;
    /// nothing is decoded. Blocking (it opens and reads the file): call it from the blocking executor.
    public static func describeFile(_ path: String) throws(AudioInputError) -> AudioSourceDescription {
        try DecodePipeline.describeFile(path)
    }

    /// Opens `source` and decodes its first frames, so that a missing, unreadable, non-audio, unsupported, corrupt or
    /// truncated source, an unreachable or refusing server fails here, with one line, before anything plays.
    ///
    /// - Parameters:
    ///   - output: the PCM the stream delivers (a speaker's format: rate, channels, s16le or s24le).
    ///   - startAt: where to start in the source; `.zero` is the beginning. At or past a known end: `.startBeyondEnd`.
    /// - Returns: the stream; read it with `next(maxFrames:)`, end it with `close()`.
    public static func open(_ source: AudioSourceAddress, output: AudioFormat, startAt: Duration = .zero,
                            options: AudioInputOptions = AudioInputOptions()) async throws(AudioInputError) -> AudioStream {
        guard startAt >= .zero else {
            throw AudioInputError(.badOption, "the start position must not be negative, got \(startAt)")
        }
        var network: HTTPByteSource?
        if case .url(let url) = source { network = HTTPByteSource(url: url, options: options) }
        if case .standardInput = source { network = HTTPByteSource(descriptor: STDIN_FILENO, name: source.description, options: options) }
        let transfer = network
        let pipeline = try await AudioBlocking.run("audio open", onCancel: { transfer?.abort() }) { () throws(AudioInputError) -> DecodePipeline in
            try DecodePipeline.open(source, network: transfer, output: output, startAt: startAt, raw: options.raw)
        }
        return AudioStream(pipeline: pipeline, output: output)
    }
}
