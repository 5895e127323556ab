/// The requests a controller sends, with their type byte. The reply to request `t` has type `t | 0x80`.
public enum RequestType: UInt8, Sendable, Hashable, CaseIterable {
    /// Version negotiation; the first request on every connection.
    case hello = 0x01
    /// Every DeviceInfo attribute.
    case getDeviceInfo = 0x02
    /// Player state and audio health.
    case getStatus = 0x03
    /// Volume 0...50.
    case setVolume = 0x04
    /// Mute (the volume is kept for unmute) or unmute.
    case setMute = 0x05
    /// Balance -6...6.
    case setBalance = 0x06
    /// Role (stereo or 5.1 position).
    case setRole = 0x07
    /// Channel type (1 = stereo).
    case setChannelType = 0x08
    /// Rename; interrupts playback.
    case setName = 0x09
    /// Join a group by id and name.
    case joinGroup = 0x0A
    /// Leave the group (name "harman", id 0).
    case leaveGroup = 0x0B
    /// Join the playback session.
    case joinSession = 0x0C
    /// Leave the playback session.
    case leaveSession = 0x0D
    /// Announce a stream.
    case play = 0x0E
    /// Pause a stream.
    case pause = 0x0F
    /// Resume a paused stream.
    case resume = 0x10
    /// Stop a stream.
    case stop = 0x11
    /// One clock-sync exchange.
    case clockSync = 0x12
    /// Install the controller-to-speaker clock map.
    case setClockMap = 0x13

    /// The type byte of its successful reply.
    public var replyType: UInt8 { rawValue | 0x80 }
}

/// The requests whose successful reply carries nothing (`ControlMessage.done`): the setters and commands.
public enum AckedRequest: UInt8, Sendable, Hashable, CaseIterable {
    case setVolume = 0x04
    case setMute = 0x05
    case setBalance = 0x06
    case setRole = 0x07
    case setChannelType = 0x08
    case setName = 0x09
    case joinGroup = 0x0A
    case leaveGroup = 0x0B
    case joinSession = 0x0C
    case leaveSession = 0x0D
    case play = 0x0E
    case pause = 0x0F
    case resume = 0x10
    case stop = 0x11
    case setClockMap = 0x13

    /// The request it answers.
    public var request: RequestType { RequestType(rawValue: rawValue)! }
}

/// The events a speaker pushes (request id 0), with their type byte.
public enum EventType: UInt8, Sendable, Hashable, CaseIterable {
    /// A device attribute changed (with a reason).
    case deviceStateUpdated = 0x40
    /// An error no request is waiting for.
    case errorOccurred = 0x41
    /// The stream's last frame was rendered.
    case playbackEnded = 0x42
    /// The speaker's volume or mute changed.
    case volumeChanged = 0x43
    /// The player state changed.
    case playbackStateChanged = 0x44
    /// Elapsed stream time, every second.
    case playbackTime = 0x45
    /// Version 2: audio packets the speaker misses, to be sent again (lost-packet recovery).
    case resendRequest = 0x46
    /// Version 5: where a speaker paused — the first frame of the stream it has not played.
    case playbackPaused = 0x47
}

/// The controller's hello: the range of protocol versions it speaks and its name. Always sent in a version-1 frame,
/// so that any speaker can read it.
public struct Hello: Sendable, Hashable {
    public let minVersion: UInt8
    public let maxVersion: UInt8
    public let controllerName: WireText

    /// Throws `.valueOutOfRange` unless 1 ≤ minVersion ≤ maxVersion.
    public init(minVersion: UInt8 = SpeakerProtocolVersion.supported.lowerBound,
                maxVersion: UInt8 = SpeakerProtocolVersion.supported.upperBound,
                controllerName: WireText) throws(SpeakerError) {
        guard minVersion >= 1, minVersion <= maxVersion else {
            throw SpeakerError(.valueOutOfRange, "hello version range \(minVersion)...\(maxVersion) is empty or starts at 0")
        }
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.controllerName = controllerName
    }

    /// The version both sides speak: the highest common one, or nil when the ranges do not meet.
    public func negotiate(with supported: ClosedRange<UInt8> = SpeakerProtocolVersion.supported) -> UInt8? {
        let high = min(maxVersion, supported.upperBound)
        return high >= max(minVersion, supported.lowerBound) ? high : nil
    }
}

/// The speaker's answer to hello: the version chosen for every later frame, its identity and its audio port.
public struct HelloReply: Sendable, Hashable {
    public var version: UInt8
    public var deviceId: UInt64
    /// The UDP port the speaker receives audio packets on.
    public var audioPort: UInt16
    public var modelName: WireText
    public var firmwareVersion: WireText

    public init(version: UInt8, deviceId: UInt64, audioPort: UInt16, modelName: WireText, firmwareVersion: WireText) {
        self.version = version
        self.deviceId = deviceId
        self.audioPort = audioPort
        self.modelName = modelName
        self.firmwareVersion = firmwareVersion
    }
}

/// Every attribute of the SDK's DeviceInfo. `port` is the speaker's control port (the SDK has it as a string).
public struct DeviceInfo: Sendable, Hashable {
    public var deviceId: UInt64
    public var deviceName: WireText
    /// The device id of the group's first member; 0 when the speaker is in no group.
    public var groupId: UInt64
    /// "harman" when the speaker is in no group.
    public var groupName: WireText
    public var modelName: WireText
    public var ipAddress: WireText
    public var port: UInt16
    public var macAddress: MACAddress
    public var volume: SpeakerVolume
    /// In the current playback session.
    public var active: Bool
    /// dBm, -100...0 (`setWifiSignalStrength` checks it).
    public private(set) var wifiSignalStrength: Int8
    public var role: UInt8
    public var version: WireText
    public var balance: SpeakerBalance
    public var isPlaying: Bool
    /// 1 is stereo.
    public var channelType: UInt8
    public var isMaster: Bool

    /// The name of "no group".
    public static let noGroupName: WireText = "harman"

    /// Throws `.valueOutOfRange` for a Wi-Fi signal strength outside -100...0 dBm.
    public init(deviceId: UInt64, deviceName: WireText, groupId: UInt64, groupName: WireText, modelName: WireText,
                ipAddress: WireText, port: UInt16, macAddress: MACAddress, volume: SpeakerVolume, active: Bool,
                wifiSignalStrength: Int8, role: UInt8, version: WireText, balance: SpeakerBalance, isPlaying: Bool,
                channelType: UInt8, isMaster: Bool) throws(SpeakerError) {
        guard (-100...0).contains(wifiSignalStrength) else {
            throw SpeakerError(.valueOutOfRange, "Wi-Fi signal strength \(wifiSignalStrength) dBm is outside -100...0")
        }
        self.deviceId = deviceId
        self.deviceName = deviceName
        self.groupId = groupId
        self.groupName = groupName
        self.modelName = modelName
        self.ipAddress = ipAddress
        self.port = port
        self.macAddress = macAddress
        self.volume = volume
        self.active = active
        self.wifiSignalStrength = wifiSignalStrength
        self.role = role
        self.version = version
        self.balance = balance
        self.isPlaying = isPlaying
        self.channelType = channelType
        self.isMaster = isMaster
    }

    /// Throws `.valueOutOfRange` outside -100...0 dBm.
    public mutating func setWifiSignalStrength(_ dBm: Int8) throws(SpeakerError) {
        guard (-100...0).contains(dBm) else {
            throw SpeakerError(.valueOutOfRange, "Wi-Fi signal strength \(dBm) dBm is outside -100...0")
        }
        wifiSignalStrength = dBm
    }
}

/// A speaker's playback state and audio health (reply to getStatus).
public struct PlaybackStatus: Sendable, Hashable {
    public var state: PlayerState
    /// The current stream, 0 when none.
    public var streamId: UInt32
    /// Frames rendered of the current stream (its elapsed time is renderedFrames / sample rate).
    public var renderedFrames: UInt64
    /// Audio packets of the current stream never received (gaps in sequence numbers).
    public var lostPackets: UInt32
    /// Audio packets received after their presentation time (dropped).
    public var latePackets: UInt32
    public var muted: Bool

    public init(state: PlayerState, streamId: UInt32, renderedFrames: UInt64, lostPackets: UInt32, latePackets: UInt32, muted: Bool) {
        self.state = state
        self.streamId = streamId
        self.renderedFrames = renderedFrames
        self.lostPackets = lostPackets
        self.latePackets = latePackets
        self.muted = muted
    }
}

/// Join a group: the controller resolves the name to an id (the id of the group's first member, or the speaker's
/// own id when it founds the group), the speaker stores both.
public struct GroupAssignment: Sendable, Hashable {
    public let groupId: UInt64
    public let groupName: WireText

    /// The one rule for a group's name, wherever one is given (`tuneup speaker group`, the controller, the hub's
    /// `Group.SetClients` and its page): 1...255 bytes of UTF-8 (the protocol's text) and not "harman", which means
    /// no group.
    /// - Throws: `.valueOutOfRange` (empty, or "harman"), `.badText` (longer than 255 bytes), one line each.
    public static func name(_ name: String) throws(SpeakerError) -> WireText {
        guard !name.isEmpty else { throw SpeakerError(.valueOutOfRange, "a group name is 1...255 bytes of UTF-8, got an empty one") }
        guard name.utf8.count <= WireText.maxBytes else {
            throw SpeakerError(.badText, "a group name is 1...255 bytes of UTF-8, got \(name.utf8.count) bytes")
        }
        guard name != DeviceInfo.noGroupName.value else {
            throw SpeakerError(.valueOutOfRange, "'\(name)' means no group; leave the group instead")
        }
        return try WireText(name)
    }

    /// Throws `.valueOutOfRange` for group id 0 (no group) or an empty name.
    public init(groupId: UInt64, groupName: WireText) throws(SpeakerError) {
        guard groupId != 0 else { throw SpeakerError(.valueOutOfRange, "group id 0 means no group; leave the group instead") }
        guard !groupName.value.isEmpty else { throw SpeakerError(.valueOutOfRange, "a group name is not empty") }
        self.groupId = groupId
        self.groupName = groupName
    }
}

/// Announces a stream: its id (audio packets carry it), its PCM format, where it comes from and its title.
public struct PlayRequest: Sendable, Hashable {
    public let streamId: UInt32
    public let format: AudioFormat
    public let source: StreamSource
    public let title: WireText

    /// Throws `.valueOutOfRange` for stream id 0 (it means "no stream").
    public init(streamId: UInt32, format: AudioFormat, source: StreamSource, title: WireText) throws(SpeakerError) {
        guard streamId != 0 else { throw SpeakerError(.valueOutOfRange, "stream id 0 means no stream") }
        self.streamId = streamId
        self.format = format
        self.source = source
        self.title = title
    }
}

/// A failed request: which request, a Tuneup error code and one line.
public struct FailureReply: Sendable, Hashable {
    public var request: RequestType
    public var code: DeviceErrorCode
    public var message: WireText

    public init(request: RequestType, code: DeviceErrorCode, message: WireText) {
        self.request = request
        self.code = code
        self.message = message
    }
}

/// `hkwDeviceStateUpdated(deviceId, withReason:)`.
public struct DeviceStateUpdate: Sendable, Hashable {
    public var deviceId: UInt64
    public var reason: StateUpdateReason
    public init(deviceId: UInt64, reason: StateUpdateReason) {
        self.deviceId = deviceId
        self.reason = reason
    }
}

/// `hkwErrorOccurred(errorCode, withErrorMessage:)`, from one speaker.
public struct DeviceErrorEvent: Sendable, Hashable {
    public var deviceId: UInt64
    public var code: DeviceErrorCode
    public var message: WireText
    public init(deviceId: UInt64, code: DeviceErrorCode, message: WireText) {
        self.deviceId = deviceId
        self.code = code
        self.message = message
    }
}

/// A speaker's new volume (the controller computes the average of all for `hkwDeviceVolumeChanged`).
public struct VolumeChange: Sendable, Hashable {
    public var deviceId: UInt64
    public var volume: SpeakerVolume
    public var muted: Bool
    public init(deviceId: UInt64, volume: SpeakerVolume, muted: Bool) {
        self.deviceId = deviceId
        self.volume = volume
        self.muted = muted
    }
}

/// `hkwPlaybackStateChanged(playState)` for one stream.
public struct PlaybackStateChange: Sendable, Hashable {
    public var streamId: UInt32
    public var state: PlayerState
    public init(streamId: UInt32, state: PlayerState) {
        self.streamId = streamId
        self.state = state
    }
}

/// `hkwPlaybackTimeChanged(timeElapsed)`, sent every second of rendered audio, in milliseconds of the stream.
public struct PlaybackTime: Sendable, Hashable {
    public var streamId: UInt32
    public var elapsedMilliseconds: UInt32
    public init(streamId: UInt32, elapsedMilliseconds: UInt32) {
        self.streamId = streamId
        self.elapsedMilliseconds = elapsedMilliseconds
    }
}

/// Version 5: the first frame of stream `streamId` a speaker has not played when its pause took effect (it rendered up
/// to the moment the pause arrived), or `nothingPlayed` when it played no frame of the stream since it was opened or
/// last resumed (docs/speaker-protocol.md §3.2: the controller resumes from the earliest such frame of its members).
public struct PausePosition: Sendable, Hashable {
    /// "No frame played since the stream was opened or last resumed": no frame to resume from.
    public static let nothingPlayed = UInt64.max
    public var streamId: UInt32
    public var nextFrame: UInt64
    public init(streamId: UInt32, nextFrame: UInt64) {
        self.streamId = streamId
        self.nextFrame = nextFrame
    }

    /// The frame to resume from (nil: `nothingPlayed`).
    public var frame: UInt64? { nextFrame == Self.nothingPlayed ? nil : nextFrame }
}

/// Version 2: the audio packets of a stream a speaker misses (gaps in the sequence numbers), which the stream's
/// controller sends again if it still holds them (docs/speaker-protocol.md §7.1).
public struct ResendRequest: Sendable, Hashable {
    /// The most sequence numbers one request names.
    public static let maxSequences = 64
    public var streamId: UInt32
    /// 1...64 sequence numbers.
    public var sequences: [UInt32]

    /// Throws `.valueOutOfRange` for no sequence or more than 64.
    public init(streamId: UInt32, sequences: [UInt32]) throws(SpeakerError) {
        guard (1...Self.maxSequences).contains(sequences.count) else {
            throw SpeakerError(.valueOutOfRange, "a resend request names 1...\(Self.maxSequences) sequence numbers, got \(sequences.count)")
        }
        self.streamId = streamId
        self.sequences = sequences
    }
}
