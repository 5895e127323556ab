import OrderedJSON

#if canImport(Failure)
import Failure  // tools/fuzz/hub/run.sh compiles SpeakerHubCore and Failure as one module
#endif

/// Every refusal of the hub (docs/hub.md §4): a stable code, the name the JSON answer carries in `Error`, the HTTP
/// status, one line. Compares by code only.
public typealias HubError = CodedFailure<HubErrors>

/// The categories of `HubError`'s codes.
public enum HubErrors: ErrorDomain {
    /// A speaker's failure is the device's, an unreadable media file local, a full or unservable hub a connection
    /// failure; everything else is the caller's request (usage).
    public static func category(of code: HubError.Code) -> FailureCategory {
        switch code {
        case .speakerFailed: .device
        case .mediaUnreadable: .localFile
        case .tooManySessions, .cannotServe: .connection
        default: .usage
        }
    }
}

extension HubError {
    /// The name in the answer's `Error` field (the published API's style: "SessionNotFound").
    public var name: String { Self.entry(code).name }

    /// The HTTP status of the answer.
    public var status: Int { Self.entry(code).status }

    /// The JSON answer: `{"Result":"false","Error":NAME,"Message":LINE}`.
    public var answer: HubAnswer {
        HubAnswer(status: status, json: .object([("Result", .string("false")), ("Error", .string(name)), ("Message", .string(message))]))
    }

    // A function, not a stored table: nothing global is allocated (the fuzzer's leak check stays quiet).
    static func entry(_ code: Code) -> (name: String, status: Int) {
        switch code {
        case .sessionNotFound: ("SessionNotFound", 404)
        case .unknownCall: ("UnknownCall", 404)
        case .malformedQuery: ("MalformedQuery", 400)
        case .missingParameter: ("MissingParameter", 400)
        case .malformedParameter: ("MalformedParameter", 400)
        case .deviceNotFound: ("DeviceNotFound", 404)
        case .mediaNotFound: ("MediaNotFound", 404)
        case .noSpeakerInSession: ("NoSpeakerInSession", 409)
        case .playbackBusy: ("PlaybackBusy", 409)
        case .notPlaying: ("NotPlaying", 409)
        case .notResumable: ("NotResumable", 409)
        case .tooManySessions: ("TooManySessions", 503)
        case .speakerFailed: ("SpeakerFailed", 502)
        case .mediaUnreadable: ("MediaUnreadable", 500)
        case .notSeekable: ("NotSeekable", 409)
        case .unsupported: ("Unsupported", 501)
        default: ("HubError", 500)
        }
    }
}

extension ErrorCodeIn where Domain == HubError {
    /// The SessionID is not one the hub gave out, was closed, or expired (60 min after its last request).
    public static var sessionNotFound: Self { Self(rawValue: "session-not-found") }
    /// `/v1/NAME` names no call of the API.
    public static var unknownCall: Self { Self(rawValue: "unknown-call") }
    /// The query string cannot be read (a bad %-escape, not UTF-8, a parameter given twice, too long).
    public static var malformedQuery: Self { Self(rawValue: "malformed-query") }
    /// A parameter the call needs is not there.
    public static var missingParameter: Self { Self(rawValue: "missing-parameter") }
    /// A parameter's value is not of its kind or out of its range.
    public static var malformedParameter: Self { Self(rawValue: "malformed-parameter") }
    /// No speaker has that DeviceID.
    public static var deviceNotFound: Self { Self(rawValue: "device-not-found") }
    /// No media item has that PersistentID.
    public static var mediaNotFound: Self { Self(rawValue: "media-not-found") }
    /// A play request with no speaker in the playback session.
    public static var noSpeakerInSession: Self { Self(rawValue: "no-speaker-in-session") }
    /// The current playback belongs to a session of higher priority.
    public static var playbackBusy: Self { Self(rawValue: "playback-busy") }
    /// Pause with nothing playing.
    public static var notPlaying: Self { Self(rawValue: "not-playing") }
    /// Resume of something that is not paused hub media with that PersistentID.
    public static var notResumable: Self { Self(rawValue: "not-resumable") }
    /// The hub holds as many live sessions as it keeps.
    public static var tooManySessions: Self { Self(rawValue: "too-many-sessions") }
    /// A speaker refused, did not answer or was lost.
    public static var speakerFailed: Self { Self(rawValue: "speaker-failed") }
    /// A media file could not be read.
    public static var mediaUnreadable: Self { Self(rawValue: "media-unreadable") }
    /// A seek in web media, or to a position outside the item.
    public static var notSeekable: Self { Self(rawValue: "not-seekable") }
    /// Something these speakers or this player cannot do (a speaker's latency: HKWirelessHD has no such setting).
    public static var unsupported: Self { Self(rawValue: "unsupported") }
    /// The hub cannot listen on its address (not an answer: `tuneup speaker hub` reports it and exits).
    public static var cannotServe: Self { Self(rawValue: "cannot-serve") }
}

/// What the hub answers: an HTTP status and a JSON body.
public struct HubAnswer: Sendable, Equatable {
    public var status: Int
    public var json: OrderedJSON

    public init(status: Int = 200, json: OrderedJSON) {
        self.status = status
        self.json = json
    }

    /// `{"Result":"true"}`.
    public static var success: HubAnswer { HubAnswer(json: .object([("Result", .string("true"))])) }

    /// The body's text.
    public var body: String { json.rendered }
}
