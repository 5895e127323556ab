import Failure

/// Why an audio source cannot be opened or decoded: a stable code, a category (and so the CLI's exit code) and one
/// line naming the source. Compares by code only.
public typealias AudioInputError = CodedFailure<AudioInputErrors>

/// The categories of `AudioInputError`'s codes.
public enum AudioInputErrors: ErrorDomain {
    /// A local file that cannot be read is a local-file failure; an address or option the caller got wrong is usage; a
    /// server that cannot be reached, refuses or stalls is a connection failure; bytes that are not (supported) audio
    /// are a data failure (`device`, like an invalid firmware image).
    public static func category(of code: AudioInputError.Code) -> FailureCategory {
        switch code {
        case .fileNotFound, .notAFile, .fileUnreadable, .libraryMissing: .localFile
        case .badAddress, .badOption: .usage
        case .connectionFailed, .httpStatus, .stalled, .cancelled: .connection
        default: .device
        }
    }
}

extension ErrorCodeIn where Domain == AudioInputError {
    /// The address is neither a path nor an http(s) URL, or the URL is malformed.
    public static var badAddress: Self { Self(rawValue: "bad-address") }
    /// An option out of range: a negative start, an output format the converter cannot make.
    public static var badOption: Self { Self(rawValue: "bad-option") }
    /// No such file.
    public static var fileNotFound: Self { Self(rawValue: "file-not-found") }
    /// The path names a directory, a device or something else that is not a regular file.
    public static var notAFile: Self { Self(rawValue: "not-a-file") }
    /// The file exists but cannot be read (permissions, I/O error).
    public static var fileUnreadable: Self { Self(rawValue: "file-unreadable") }
    /// The file or HTTP body holds no byte.
    public static var empty: Self { Self(rawValue: "empty") }
    /// The source ends before its header does, or before the audio its header announces.
    public static var truncated: Self { Self(rawValue: "truncated") }
    /// The bytes are no audio format that libsndfile recognises (text, HTML, garbage).
    public static var notAudio: Self { Self(rawValue: "not-audio") }
    /// A known audio container or encoding that Tuneup does not decode (MP4/AAC, WMA, Matroska, ...).
    public static var unsupportedFormat: Self { Self(rawValue: "unsupported-format") }
    /// A recognised container whose header or audio data is damaged.
    public static var corrupt: Self { Self(rawValue: "corrupt") }
    /// The start position lies at or beyond the end of the source.
    public static var startBeyondEnd: Self { Self(rawValue: "start-beyond-end") }
    /// The HTTP server cannot be reached (refused, unknown host, TLS failure, connect timeout).
    public static var connectionFailed: Self { Self(rawValue: "connection-failed") }
    /// The HTTP server answered with an error status (404, 500, ...).
    public static var httpStatus: Self { Self(rawValue: "http-status") }
    /// The HTTP server sent no byte for longer than the stall timeout.
    public static var stalled: Self { Self(rawValue: "stalled") }
    /// The stream was closed or its task cancelled while waiting.
    public static var cancelled: Self { Self(rawValue: "cancelled") }
    /// libsndfile or libsoxr failed in a way none of the above describes.
    public static var decoderFailed: Self { Self(rawValue: "decoder-failed") }
    /// A shared library the source needs (libsndfile, libsoxr, libcurl: opened when first needed) is not installed.
    public static var libraryMissing: Self { Self(rawValue: "library-missing") }

    /// The codes this version knows (others may come from newer modules).
    public static var allCases: [Self] {
        [.badAddress, .badOption, .fileNotFound, .notAFile, .fileUnreadable, .empty, .truncated, .notAudio,
         .unsupportedFormat, .corrupt, .startBeyondEnd, .connectionFailed, .httpStatus, .stalled, .cancelled,
         .decoderFailed, .libraryMissing]
    }
}
