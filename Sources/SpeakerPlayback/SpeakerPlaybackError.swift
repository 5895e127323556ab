import Failure

/// Bytes or text the playback's pure pieces cannot use (a WAV file that is not playable PCM, a render log that is not
/// one): a stable code, a category and one line. Compares by code only.
public typealias SpeakerPlaybackError = CodedFailure<SpeakerPlaybackErrors>

/// The categories of `SpeakerPlaybackError`'s codes.
public enum SpeakerPlaybackErrors: ErrorDomain {
    /// The file or text was given by the caller: a usage failure (as `SpeakerSessionError.invalidArgument`, which
    /// these were before the pieces left SpeakerSession).
    public static func category(of code: SpeakerPlaybackError.Code) -> FailureCategory {
        .usage
    }
}

extension ErrorCodeIn where Domain == SpeakerPlaybackError {
    /// Input that is not what it must be (not a playable WAV file, not a render log); the message says what is wrong.
    public static var invalidArgument: Self { Self(rawValue: "invalid-argument") }

    /// The codes this version knows.
    public static var allCases: [Self] { [.invalidArgument] }
}
