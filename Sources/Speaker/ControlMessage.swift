/// Every control message: requests (controller → speaker), their replies, and events (speaker → controller).
public enum ControlMessage: Sendable, Hashable {
    // Requests.
    case hello(Hello)
    case getDeviceInfo
    case getStatus
    case setVolume(SpeakerVolume)
    case setMute(Bool)
    case setBalance(SpeakerBalance)
    case setRole(UInt8)
    case setChannelType(UInt8)
    /// A new speaker name (not empty; checked by the speaker, `invalidValue`).
    case setName(WireText)
    case joinGroup(GroupAssignment)
    /// Leave the group: the speaker's group id becomes 0 and its group name "harman".
    case leaveGroup
    /// Join the playback session (`active` = true).
    case joinSession
    case leaveSession
    case play(PlayRequest)
    case pause(streamId: UInt32)
    case resume(streamId: UInt32)
    case stop(streamId: UInt32)
    /// t1: the controller's send time, nanoseconds on its monotonic clock.
    case clockSync(t1: UInt64)
    case setClockMap(ClockMap)

    // Replies.
    case helloReply(HelloReply)
    case deviceInfo(DeviceInfo)
    case status(PlaybackStatus)
    case clockSyncReply(ClockSyncReply)
    /// The successful, empty reply to a setter or command.
    case done(AckedRequest)
    /// The speaker accepted the request and its final reply follows (e.g. joining a session during playback).
    case accepted(RequestType)
    /// The request failed.
    case failed(FailureReply)

    // Events.
    case deviceStateUpdated(DeviceStateUpdate)
    case errorOccurred(DeviceErrorEvent)
    case playbackEnded(streamId: UInt32)
    case volumeChanged(VolumeChange)
    case playbackStateChanged(PlaybackStateChange)
    case playbackTime(PlaybackTime)
    /// Version 2 on.
    case resendRequest(ResendRequest)
    /// Version 5 on.
    case playbackPaused(PausePosition)
}

/// The type byte of the accepted (Pending) reply.
let acceptedType: UInt8 = 0x7E
/// The type byte of the failure reply.
let failedType: UInt8 = 0x7F

/// What a control message is, for the session core's classification.
public enum ControlMessageKind: Sendable, Hashable {
    /// Controller → speaker; carries a non-zero request id.
    case request
    /// The final answer to the request with the same id (success or failure).
    case reply
    /// The request with the same id was accepted; its final reply follows.
    case accepted
    /// Unsolicited; request id 0.
    case event
}

extension ControlMessage {
    /// The type byte.
    public var type: UInt8 {
        switch self {
        case .hello: RequestType.hello.rawValue
        case .getDeviceInfo: RequestType.getDeviceInfo.rawValue
        case .getStatus: RequestType.getStatus.rawValue
        case .setVolume: RequestType.setVolume.rawValue
        case .setMute: RequestType.setMute.rawValue
        case .setBalance: RequestType.setBalance.rawValue
        case .setRole: RequestType.setRole.rawValue
        case .setChannelType: RequestType.setChannelType.rawValue
        case .setName: RequestType.setName.rawValue
        case .joinGroup: RequestType.joinGroup.rawValue
        case .leaveGroup: RequestType.leaveGroup.rawValue
        case .joinSession: RequestType.joinSession.rawValue
        case .leaveSession: RequestType.leaveSession.rawValue
        case .play: RequestType.play.rawValue
        case .pause: RequestType.pause.rawValue
        case .resume: RequestType.resume.rawValue
        case .stop: RequestType.stop.rawValue
        case .clockSync: RequestType.clockSync.rawValue
        case .setClockMap: RequestType.setClockMap.rawValue
        case .helloReply: RequestType.hello.replyType
        case .deviceInfo: RequestType.getDeviceInfo.replyType
        case .status: RequestType.getStatus.replyType
        case .clockSyncReply: RequestType.clockSync.replyType
        case .done(let request): request.request.replyType
        case .accepted: acceptedType
        case .failed: failedType
        case .deviceStateUpdated: EventType.deviceStateUpdated.rawValue
        case .errorOccurred: EventType.errorOccurred.rawValue
        case .playbackEnded: EventType.playbackEnded.rawValue
        case .volumeChanged: EventType.volumeChanged.rawValue
        case .playbackStateChanged: EventType.playbackStateChanged.rawValue
        case .playbackTime: EventType.playbackTime.rawValue
        case .resendRequest: EventType.resendRequest.rawValue
        case .playbackPaused: EventType.playbackPaused.rawValue
        }
    }

    /// Request, reply, accepted or event (by type byte: 01-3f, 80-ff and 7f, 7e, 40-7d).
    public var kind: ControlMessageKind { Self.kind(ofType: type) }

    static func kind(ofType type: UInt8) -> ControlMessageKind {
        switch type {
        case 0x00..<0x40: .request
        case 0x40..<acceptedType: .event
        case acceptedType: .accepted
        default: .reply
        }
    }

    /// The payload's bytes.
    public func encodePayload() -> [UInt8] {
        var w = ByteWriter()
        switch self {
        case .getDeviceInfo, .getStatus, .leaveGroup, .joinSession, .leaveSession, .done:
            break
        case .hello(let h):
            w.u8(h.minVersion); w.u8(h.maxVersion); w.text(h.controllerName)
        case .setVolume(let v): w.u8(v.value)
        case .setMute(let m): w.bool(m)
        case .setBalance(let b): w.i8(b.value)
        case .setRole(let r): w.u8(r)
        case .setChannelType(let c): w.u8(c)
        case .setName(let n): w.text(n)
        case .joinGroup(let g): w.u64(g.groupId); w.text(g.groupName)
        case .play(let p):
            w.u32(p.streamId); p.format.encode(into: &w); w.u8(p.source.rawValue); w.text(p.title)
        case .pause(let id), .resume(let id), .stop(let id), .playbackEnded(let id): w.u32(id)
        case .clockSync(let t1): w.u64(t1)
        case .setClockMap(let m): w.u64(m.controllerReference); w.u64(m.speakerReference); w.i32(m.rate)
        case .helloReply(let h):
            w.u8(h.version); w.u64(h.deviceId); w.u16(h.audioPort); w.text(h.modelName); w.text(h.firmwareVersion)
        case .deviceInfo(let d):
            w.u64(d.deviceId); w.u64(d.groupId); w.u16(d.port); w.raw(d.macAddress.bytes); w.u8(d.volume.value)
            w.bool(d.active); w.i8(d.wifiSignalStrength); w.u8(d.role); w.i8(d.balance.value); w.bool(d.isPlaying)
            w.u8(d.channelType); w.bool(d.isMaster)
            w.text(d.deviceName); w.text(d.groupName); w.text(d.modelName); w.text(d.ipAddress); w.text(d.version)
        case .status(let s):
            w.u8(s.state.rawValue); w.u32(s.streamId); w.u64(s.renderedFrames); w.u32(s.lostPackets)
            w.u32(s.latePackets); w.bool(s.muted)
        case .clockSyncReply(let r): w.u64(r.t1); w.u64(r.t2); w.u64(r.t3)
        case .accepted(let request): w.u8(request.rawValue)
        case .failed(let f): w.u8(f.request.rawValue); w.u16(f.code.rawValue); w.text(f.message)
        case .deviceStateUpdated(let e): w.u64(e.deviceId); w.u8(e.reason.rawValue)
        case .errorOccurred(let e): w.u64(e.deviceId); w.u16(e.code.rawValue); w.text(e.message)
        case .volumeChanged(let e): w.u64(e.deviceId); w.u8(e.volume.value); w.bool(e.muted)
        case .playbackStateChanged(let e): w.u32(e.streamId); w.u8(e.state.rawValue)
        case .playbackTime(let e): w.u32(e.streamId); w.u32(e.elapsedMilliseconds)
        case .resendRequest(let e):
            w.u32(e.streamId); w.u8(UInt8(e.sequences.count))
            for q in e.sequences { w.u32(q) }
        case .playbackPaused(let e): w.u32(e.streamId); w.u64(e.nextFrame)
        }
        return w.bytes
    }

    /// Decodes the payload of a message of type `type`, strictly: every field in range, nothing left over.
    /// Throws `.unknownType`, `.truncated`, `.trailingBytes`, `.valueOutOfRange` or `.badText`.
    public static func decode(type: UInt8, payload: ArraySlice<UInt8>) throws(SpeakerError) -> ControlMessage {
        var r = ByteReader(payload, what: "control message \(hex(type)) payload")
        let message = try decodeFields(type: type, &r)
        try r.finish()
        return message
    }

    private static func rethrow<T>(_ r: ByteReader, _ body: () throws(SpeakerError) -> T) throws(SpeakerError) -> T {
        do { return try body() } catch { throw SpeakerError(error.code, "\(r.what): \(error.message)") }
    }

    private static func volume(_ r: inout ByteReader) throws(SpeakerError) -> SpeakerVolume {
        let v = try r.u8()
        return try rethrow(r) { () throws(SpeakerError) in try SpeakerVolume(Int(v)) }
    }

    private static func balance(_ r: inout ByteReader) throws(SpeakerError) -> SpeakerBalance {
        let v = try r.i8()
        return try rethrow(r) { () throws(SpeakerError) in try SpeakerBalance(Int(v)) }
    }

    private static func decodeFields(type: UInt8, _ r: inout ByteReader) throws(SpeakerError) -> ControlMessage {
        if type == acceptedType {
            return .accepted(try r.enumeration(RequestType.self, "request type"))
        }
        if type == failedType {
            let request = try r.enumeration(RequestType.self, "request type")
            let raw = try r.u16()
            guard let code = DeviceErrorCode(rawValue: raw) else {
                throw SpeakerError(.valueOutOfRange, "\(r.what): error code \(raw) is not defined")
            }
            return .failed(FailureReply(request: request, code: code, message: try r.text("message")))
        }
        if let event = EventType(rawValue: type) {
            return try decodeEvent(event, &r)
        }
        if type & 0x80 != 0, let request = RequestType(rawValue: type & 0x7F) {
            switch request {
            case .hello:
                let version = try r.u8()
                let id = try r.u64()
                let port = try r.u16()
                return .helloReply(HelloReply(version: version, deviceId: id, audioPort: port,
                                              modelName: try r.text("model name"), firmwareVersion: try r.text("firmware version")))
            case .getDeviceInfo: return .deviceInfo(try decodeDeviceInfo(&r))
            case .getStatus:
                let state = try r.enumeration(PlayerState.self, "player state")
                let stream = try r.u32()
                let frames = try r.u64()
                let lost = try r.u32()
                let late = try r.u32()
                return .status(PlaybackStatus(state: state, streamId: stream, renderedFrames: frames, lostPackets: lost,
                                              latePackets: late, muted: try r.bool("muted")))
            case .clockSync:
                let t1 = try r.u64()
                let t2 = try r.u64()
                let t3 = try r.u64()
                return .clockSyncReply(try rethrow(r) { () throws(SpeakerError) in try ClockSyncReply(t1: t1, t2: t2, t3: t3) })
            default:
                return .done(AckedRequest(rawValue: request.rawValue)!)
            }
        }
        guard let request = RequestType(rawValue: type) else {
            throw SpeakerError(.unknownType, "control message type \(hex(type)) is not defined in version 1")
        }
        switch request {
        case .hello:
            let low = try r.u8()
            let high = try r.u8()
            let name = try r.text("controller name")
            return .hello(try rethrow(r) { () throws(SpeakerError) in try Hello(minVersion: low, maxVersion: high, controllerName: name) })
        case .getDeviceInfo: return .getDeviceInfo
        case .getStatus: return .getStatus
        case .setVolume: return .setVolume(try volume(&r))
        case .setMute: return .setMute(try r.bool("muted"))
        case .setBalance: return .setBalance(try balance(&r))
        case .setRole: return .setRole(try r.u8())
        case .setChannelType: return .setChannelType(try r.u8())
        case .setName: return .setName(try r.text("name"))
        case .joinGroup:
            let id = try r.u64()
            let name = try r.text("group name")
            return .joinGroup(try rethrow(r) { () throws(SpeakerError) in try GroupAssignment(groupId: id, groupName: name) })
        case .leaveGroup: return .leaveGroup
        case .joinSession: return .joinSession
        case .leaveSession: return .leaveSession
        case .play:
            let stream = try r.u32()
            let format = try AudioFormat.decode(from: &r)
            let source = try r.enumeration(StreamSource.self, "stream source")
            let title = try r.text("title")
            return .play(try rethrow(r) { () throws(SpeakerError) in
                try PlayRequest(streamId: stream, format: format, source: source, title: title)
            })
        case .pause: return .pause(streamId: try r.u32())
        case .resume: return .resume(streamId: try r.u32())
        case .stop: return .stop(streamId: try r.u32())
        case .clockSync: return .clockSync(t1: try r.u64())
        case .setClockMap:
            let c = try r.u64()
            let s = try r.u64()
            let rate = try r.i32()
            return .setClockMap(try rethrow(r) { () throws(SpeakerError) in
                try ClockMap(controllerReference: c, speakerReference: s, rate: rate)
            })
        }
    }

    private static func decodeDeviceInfo(_ r: inout ByteReader) throws(SpeakerError) -> DeviceInfo {
        let id = try r.u64()
        let groupId = try r.u64()
        let port = try r.u16()
        let macBytes = Array(try r.take(6))
        let vol = try volume(&r)
        let active = try r.bool("active")
        let wifi = try r.i8()
        let role = try r.u8()
        let bal = try balance(&r)
        let playing = try r.bool("isPlaying")
        let channelType = try r.u8()
        let master = try r.bool("isMaster")
        let name = try r.text("device name")
        let groupName = try r.text("group name")
        let model = try r.text("model name")
        let ip = try r.text("IP address")
        let version = try r.text("version")
        return try rethrow(r) { () throws(SpeakerError) in
            try DeviceInfo(deviceId: id, deviceName: name, groupId: groupId, groupName: groupName, modelName: model,
                           ipAddress: ip, port: port, macAddress: try MACAddress(macBytes), volume: vol, active: active,
                           wifiSignalStrength: wifi, role: role, version: version, balance: bal, isPlaying: playing,
                           channelType: channelType, isMaster: master)
        }
    }

    private static func decodeEvent(_ event: EventType, _ r: inout ByteReader) throws(SpeakerError) -> ControlMessage {
        switch event {
        case .deviceStateUpdated:
            let id = try r.u64()
            return .deviceStateUpdated(DeviceStateUpdate(deviceId: id, reason: try r.enumeration(StateUpdateReason.self, "reason")))
        case .errorOccurred:
            let id = try r.u64()
            let raw = try r.u16()
            guard let code = DeviceErrorCode(rawValue: raw) else {
                throw SpeakerError(.valueOutOfRange, "\(r.what): error code \(raw) is not defined")
            }
            return .errorOccurred(DeviceErrorEvent(deviceId: id, code: code, message: try r.text("message")))
        case .playbackEnded: return .playbackEnded(streamId: try r.u32())
        case .volumeChanged:
            let id = try r.u64()
            let vol = try volume(&r)
            return .volumeChanged(VolumeChange(deviceId: id, volume: vol, muted: try r.bool("muted")))
        case .playbackStateChanged:
            let stream = try r.u32()
            return .playbackStateChanged(PlaybackStateChange(streamId: stream, state: try r.enumeration(PlayerState.self, "player state")))
        case .playbackTime:
            let stream = try r.u32()
            return .playbackTime(PlaybackTime(streamId: stream, elapsedMilliseconds: try r.u32()))
        case .resendRequest:
            let stream = try r.u32()
            let count = Int(try r.u8())
            var sequences: [UInt32] = []
            for _ in 0..<count { sequences.append(try r.u32()) }
            return .resendRequest(try rethrow(r) { () throws(SpeakerError) in try ResendRequest(streamId: stream, sequences: sequences) })
        case .playbackPaused:
            let stream = try r.u32()
            return .playbackPaused(PausePosition(streamId: stream, nextFrame: try r.u64()))
        }
    }
}

/// A control message with its request id and protocol version: what a session sends and receives.
public struct ControlPacket: Sendable, Hashable {
    /// Non-zero on requests and replies (the reply key), 0 on events.
    public let requestId: UInt32
    public let message: ControlMessage
    /// The protocol version of the frame (hello and its reply always travel as version 1).
    public let version: UInt8

    /// Throws `.badRequestId` when the id breaks the rule of the message's kind (0 for events, non-zero otherwise),
    /// `.unsupportedVersion` for a version this codec does not speak.
    public init(requestId: UInt32, message: ControlMessage, version: UInt8 = SpeakerProtocolVersion.current) throws(SpeakerError) {
        guard SpeakerProtocolVersion.supported.contains(version) else {
            throw SpeakerError(.unsupportedVersion, "control protocol version \(version) is not supported (this codec speaks \(SpeakerProtocolVersion.supported.lowerBound)...\(SpeakerProtocolVersion.supported.upperBound))")
        }
        if let first = Self.firstVersion(ofType: message.type), version < first {
            throw SpeakerError(.unknownType, "control message type \(hex(message.type)) is not defined in version \(version)")
        }
        let isEvent = message.kind == .event
        guard isEvent == (requestId == 0) else {
            throw SpeakerError(.badRequestId, isEvent
                ? "an event carries request id 0, got \(requestId)"
                : "control message \(hex(message.type)) needs a non-zero request id")
        }
        self.requestId = requestId
        self.message = message
        self.version = version
    }

    /// An event (request id 0).
    public static func event(_ message: ControlMessage, version: UInt8 = SpeakerProtocolVersion.current) throws(SpeakerError) -> ControlPacket {
        try ControlPacket(requestId: 0, message: message, version: version)
    }

    /// The frame carrying this packet.
    public var frame: ControlFrame {
        ControlFrame(unchecked: version, type: message.type, requestId: requestId, payload: message.encodePayload())
    }

    /// The bytes on the stream.
    public func encode() -> [UInt8] { frame.encode() }

    /// Interprets a deframed frame: version, type, request id rule and payload are checked.
    public init(frame: ControlFrame) throws(SpeakerError) {
        guard SpeakerProtocolVersion.supported.contains(frame.version) else {
            throw SpeakerError(.unsupportedVersion, "control protocol version \(frame.version) is not supported (this codec speaks \(SpeakerProtocolVersion.supported.lowerBound)...\(SpeakerProtocolVersion.supported.upperBound))")
        }
        if let first = Self.firstVersion(ofType: frame.type), frame.version < first {
            throw SpeakerError(.unknownType, "control message type \(hex(frame.type)) is not defined in version \(frame.version)")
        }
        let message = try ControlMessage.decode(type: frame.type, payload: frame.payload[...])
        try self.init(requestId: frame.requestId, message: message, version: frame.version)
    }

    /// The version that added message type `type` (nil: version 1's).
    static func firstVersion(ofType type: UInt8) -> UInt8? {
        switch type {
        case EventType.resendRequest.rawValue: SpeakerProtocolVersion.resendRequests
        case EventType.playbackPaused.rawValue: SpeakerProtocolVersion.pausePositions
        default: nil
        }
    }

    /// Decodes exactly one frame's bytes.
    public static func decode(_ bytes: [UInt8]) throws(SpeakerError) -> ControlPacket {
        try ControlPacket(frame: try ControlFrame.decode(bytes))
    }

    /// Request, reply, accepted or event.
    public var kind: ControlMessageKind { message.kind }
}
