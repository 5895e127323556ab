/// Why a speaker sent `deviceStateUpdated` (the SDK's `hkwDeviceStateUpdated(deviceId, withReason:)`; its codes are
/// not public, so Tuneup defines them). One byte on the wire; a new reason comes with a new protocol version.
public enum StateUpdateReason: UInt8, Sendable, Hashable, CaseIterable {
    /// The speaker appeared on the network (first answer to discovery, or back after being lost).
    case appeared = 1
    /// The speaker is leaving the network (powering off, or dropped after missed refreshes).
    case disappeared = 2
    /// It joined or left the playback session (`active`).
    case sessionChanged = 3
    /// Its name changed.
    case nameChanged = 4
    /// Its group id or group name changed (joined, left, or the group was renamed).
    case groupChanged = 5
    /// Its balance changed.
    case balanceChanged = 6
    /// Its role changed.
    case roleChanged = 7
    /// Its channel type changed.
    case channelTypeChanged = 8
    /// Its Wi-Fi signal strength changed by 3 dBm or more.
    case wifiSignalChanged = 9
    /// It started or stopped playing (`isPlaying`).
    case playingChanged = 10
    /// It became or stopped being the master of its group (`isMaster`).
    case masterChanged = 11

    /// A stable kebab-case name (JSON output, logs).
    public var name: String {
        switch self {
        case .appeared: "appeared"
        case .disappeared: "disappeared"
        case .sessionChanged: "session-changed"
        case .nameChanged: "name-changed"
        case .groupChanged: "group-changed"
        case .balanceChanged: "balance-changed"
        case .roleChanged: "role-changed"
        case .channelTypeChanged: "channel-type-changed"
        case .wifiSignalChanged: "wifi-signal-changed"
        case .playingChanged: "playing-changed"
        case .masterChanged: "master-changed"
        }
    }
}

/// The numeric error codes of failure replies and `errorOccurred` events (the SDK's `hkwErrorOccurred(errorCode,
/// withErrorMessage:)`; its codes are not public, so Tuneup defines them). Two bytes on the wire; a new code comes
/// with a new protocol version.
public enum DeviceErrorCode: UInt16, Sendable, Hashable, CaseIterable {
    /// No protocol version in common with the controller's hello.
    case versionMismatch = 1
    /// A request arrived before the hello exchange.
    case helloRequired = 2
    /// The request frame could not be decoded (its payload is malformed or a field is out of range).
    case malformedRequest = 3
    /// The request type is not one the speaker handles (e.g. a reply or event type sent as a request).
    case unsupportedRequest = 4
    /// A value was refused by the speaker (an empty name, a group id of 0).
    case invalidValue = 5
    /// Play or resume while the speaker is not in the playback session.
    case notInSession = 6
    /// Pause, resume or stop names a stream the speaker does not have.
    case unknownStream = 7
    /// The request does not fit the player state (resume when not paused, pause when not playing).
    case invalidState = 8
    /// Playback was interrupted (the speaker was renamed while playing, or a new stream replaced it).
    case playbackInterrupted = 9
    /// Audio arrived too late to be rendered at its presentation time, or packets were lost (event only).
    case audioUnderrun = 10
    /// The stream's audio format is not one the speaker renders.
    case unsupportedFormat = 11
    /// No clock map was set before audio was due (play needs `setClockMap` first).
    case clockNotSynchronized = 12
    /// The speaker failed inside (the message says what).
    case internalError = 13

    /// A stable kebab-case name (JSON output, logs).
    public var name: String {
        switch self {
        case .versionMismatch: "version-mismatch"
        case .helloRequired: "hello-required"
        case .malformedRequest: "malformed-request"
        case .unsupportedRequest: "unsupported-request"
        case .invalidValue: "invalid-value"
        case .notInSession: "not-in-session"
        case .unknownStream: "unknown-stream"
        case .invalidState: "invalid-state"
        case .playbackInterrupted: "playback-interrupted"
        case .audioUnderrun: "audio-underrun"
        case .unsupportedFormat: "unsupported-format"
        case .clockNotSynchronized: "clock-not-synchronized"
        case .internalError: "internal-error"
        }
    }
}
