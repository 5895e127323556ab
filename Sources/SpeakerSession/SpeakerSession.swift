import Logging
@_exported import Session
@_exported import Speaker
import Synchronization
import Transport

/// Something a speaker reported, as `SpeakerSession.events()` delivers it.
public enum SpeakerEvent: Sendable, Hashable {
    /// A DeviceInfo attribute changed, with the reason (docs/speaker-protocol.md §5.1).
    case deviceStateUpdated(deviceId: UInt64, reason: StateUpdateReason)
    /// An error no request was waiting for (e.g. `playback-interrupted` after a rename while playing).
    case error(deviceId: UInt64, code: DeviceErrorCode, message: String)
    /// The speaker's volume or mute changed.
    case volumeChanged(deviceId: UInt64, volume: Int, muted: Bool)
    case playbackEnded(streamId: UInt32)
    case playbackStateChanged(streamId: UInt32, state: PlayerState)
    case playbackTime(streamId: UInt32, elapsedMilliseconds: UInt32)

    /// The event of a pushed message; nil for messages that are not events.
    init?(_ message: ControlMessage) {
        switch message {
        case let .deviceStateUpdated(u): self = .deviceStateUpdated(deviceId: u.deviceId, reason: u.reason)
        case let .errorOccurred(e): self = .error(deviceId: e.deviceId, code: e.code, message: e.message.value)
        case let .volumeChanged(v): self = .volumeChanged(deviceId: v.deviceId, volume: Int(v.volume.value), muted: v.muted)
        case let .playbackEnded(id): self = .playbackEnded(streamId: id)
        case let .playbackStateChanged(c): self = .playbackStateChanged(streamId: c.streamId, state: c.state)
        case let .playbackTime(t): self = .playbackTime(streamId: t.streamId, elapsedMilliseconds: t.elapsedMilliseconds)
        default: return nil
        }
    }
}

/// A control session with one speaker (docs/speaker-protocol.md): the Session core's `RequestSession` run with
/// `SpeakerProtocol`, opened with the hello exchange, and typed requests on top.
///
/// - Request ids count from 1 per connection (skipping 0), so every reply is matched by its id.
/// - Values out of range (volume 0...50, balance -6...6, an empty or too long name, group id 0) are refused with
///   `SpeakerSessionError(.invalidArgument)` before anything is sent.
/// - A `failed` reply is `SpeakerSessionError(.refused)` with the speaker's code and message.
/// - Events (`events()`) are the speaker's pushes, typed; the stream ends with the session.
public final class SpeakerSession: Sendable {
    /// The request/response core (statistics, `isOpen`).
    public let core: RequestSession<SpeakerProtocol>
    /// The speaker's hello reply: the version chosen, its id, audio port, model and firmware.
    public let hello: HelloReply
    /// Where the speaker is (`HOST:PORT`, or the link's description).
    public let address: String
    /// The speaker's numeric host and control port when known (a TCP session): audio goes to `host:hello.audioPort`,
    /// and a lost speaker is reconnected there.
    public let host: String?
    public let controlPort: UInt16?
    private let counter: Mutex<UInt32>

    /// Where the speaker paused `streamId` last (version 5's `playbackPaused`, docs/speaker-protocol.md §3.2: the
    /// first frame it had not played; `frame` nil when it had played none), forgotten once taken; nil when it sent
    /// none since (a speaker below version 5). Recorded as the frames are read, so a reply or event that came after
    /// it finds it here.
    public func takePausePosition(of streamId: UInt32) -> PausePosition? { core.definition.pausePositions?.take(of: streamId) }

    private init(core: RequestSession<SpeakerProtocol>, hello: HelloReply, address: String, host: String?, controlPort: UInt16?,
                 counter: UInt32) {
        self.core = core
        self.hello = hello
        self.address = address
        self.host = host
        self.controlPort = controlPort
        self.counter = Mutex(counter)
    }

    /// The speaker's device id (from the hello).
    public var deviceId: UInt64 { hello.deviceId }

    /// Starts a session on an open link and says hello. The session owns the link from now on (it is closed when
    /// the hello fails).
    /// - Throws: `SpeakerSessionError` (`.versionMismatch` when the speaker shares no version, `.timeout`,
    ///   `.disconnected`, `.unexpectedReply`), `CancellationError`.
    public static func open(transport: any Transport, address: String? = nil, host: String? = nil, controlPort: UInt16? = nil,
                            controllerName: String = "tuneup",
                            options: RequestOptions = RequestOptions(), clock: any Clock<Duration> = ContinuousClock(),
                            logger: Logger = Logger(label: "tuneup.speaker")) async throws -> SpeakerSession {
        let core = RequestSession(transport: transport, definition: SpeakerProtocol(pausePositions: PausePositions()), options: options, clock: clock, logger: logger)
        do {
            let name = try checked { () throws(SpeakerError) in try WireText(controllerName) }
            let hello = try checked { () throws(SpeakerError) in try Hello(controllerName: name) }
            let packet = try checked { () throws(SpeakerError) in try ControlPacket(requestId: 1, message: .hello(hello), version: 1) }
            let reply = try await core.request(packet)
            switch reply.message {
            case let .helloReply(h):
                guard SpeakerProtocolVersion.supported.contains(h.version) else {
                    throw SpeakerSessionError(.versionMismatch, "speaker chose protocol version \(h.version), this controller speaks \(SpeakerProtocolVersion.supported)")
                }
                return SpeakerSession(core: core, hello: h, address: address ?? transport.peerDescription, host: host,
                                      controlPort: controlPort, counter: 1)
            case let .failed(f) where f.code == .versionMismatch:
                throw SpeakerSessionError(.versionMismatch, "speaker \(address ?? transport.peerDescription) shares no protocol version: \(f.message)", deviceCode: f.code)
            default:
                throw refusalOrUnexpected(reply.message, for: .hello)
            }
        } catch {
            await core.close()
            throw error
        }
    }

    /// Connects to a speaker's control port over TCP and says hello.
    /// - Throws: `SpeakerSessionError` (`.connectionFailed` when the speaker cannot be reached, naming it).
    public static func connect(host: String, port: UInt16, controllerName: String = "tuneup", options: RequestOptions = RequestOptions(),
                               connectTimeout: Duration = .seconds(5), logger: Logger = Logger(label: "tuneup.speaker")) async throws -> SpeakerSession {
        let display = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let transport: any Transport
        do {
            transport = try await TCPTransport.connect(host: host, port: port, timeout: connectTimeout)
        } catch let error as TransportError {
            throw SpeakerSessionError(.connectionFailed, "cannot reach speaker \(display): \(error.message)")
        }
        return try await open(transport: transport, address: display, host: host, controlPort: port, controllerName: controllerName,
                              options: options, logger: logger)
    }

    // MARK: Requests

    /// Every DeviceInfo attribute. A speaker that gives no address of its own (one listening on every interface says
    /// `0.0.0.0` or `::`) gets the host it was reached at (for a discovered speaker, the address its answer came from),
    /// so that `ipAddress:port` reaches it.
    public func deviceInfo() async throws -> DeviceInfo {
        let reply = try await send(.getDeviceInfo, .getDeviceInfo)
        guard case var .deviceInfo(info) = reply else { throw Self.refusalOrUnexpected(reply, for: .getDeviceInfo) }
        if Self.unspecifiedAddresses.contains(info.ipAddress.value), let host, let reached = try? WireText(host) {
            info.ipAddress = reached
        }
        return info
    }

    /// What a speaker bound to every interface says its address is.
    static let unspecifiedAddresses: Set<String> = ["", "0.0.0.0", "::", "[::]", "0:0:0:0:0:0:0:0"]

    /// Whether `host` is the unspecified address (`0.0.0.0`, `::`): what a speaker listening on every interface says,
    /// never an address to connect to.
    public static func isUnspecified(host: String) -> Bool {
        unspecifiedAddresses.contains(host) || host == "::0" || host == "0"
    }

    /// Player state and audio health.
    public func status() async throws -> PlaybackStatus {
        let reply = try await send(.getStatus, .getStatus)
        guard case let .status(status) = reply else { throw Self.refusalOrUnexpected(reply, for: .getStatus) }
        return status
    }

    /// Sets the volume 0...50 (refused before sending otherwise).
    public func setVolume(_ volume: Int) async throws {
        let v = try Self.argument { () throws(SpeakerError) in try SpeakerVolume(volume) }
        try await done(.setVolume(v), .setVolume)
    }

    /// Mutes (the speaker keeps its level) or unmutes (the level comes back).
    public func setMute(_ muted: Bool) async throws { try await done(.setMute(muted), .setMute) }
    public func mute() async throws { try await setMute(true) }
    public func unmute() async throws { try await setMute(false) }

    /// Sets the balance -6...6 (refused before sending otherwise).
    public func setBalance(_ balance: Int) async throws {
        let b = try Self.argument { () throws(SpeakerError) in try SpeakerBalance(balance) }
        try await done(.setBalance(b), .setBalance)
    }

    /// Sets the role (stereo or a 5.1 position; the seed's values, e.g. 21).
    public func setRole(_ role: UInt8) async throws { try await done(.setRole(role), .setRole) }

    /// Sets the channel type (1: stereo).
    public func setChannelType(_ type: UInt8) async throws { try await done(.setChannelType(type), .setChannelType) }

    /// Renames the speaker; an empty or too long name is refused before sending. Renaming a speaker that plays
    /// interrupts playback (an `error` event with `playback-interrupted`).
    public func setName(_ name: String) async throws {
        guard !name.isEmpty else { throw SpeakerSessionError(.invalidArgument, "a speaker name cannot be empty") }
        let text = try Self.argument { () throws(SpeakerError) in try WireText(name) }
        try await done(.setName(text), .setName)
    }

    /// Joins the group `name` with id `groupId` (the controller resolves ids: `SpeakerController.joinGroup`).
    public func joinGroup(id groupId: UInt64, name: String) async throws {
        let assignment = try Self.argument { () throws(SpeakerError) in
            try GroupAssignment(groupId: groupId, groupName: try WireText(name))
        }
        try await done(.joinGroup(assignment), .joinGroup)
    }

    /// Leaves the group (id 0, name "harman").
    public func leaveGroup() async throws { try await done(.leaveGroup, .leaveGroup) }

    /// Joins the playback session (`active`).
    public func joinSession() async throws { try await done(.joinSession, .joinSession) }
    /// Leaves the playback session.
    public func leaveSession() async throws { try await done(.leaveSession, .leaveSession) }

    /// One clock-sync exchange: `t1` is the controller's send time; the reply holds the speaker's t2 and t3.
    public func clockSync(t1: UInt64) async throws -> ClockSyncReply {
        let reply = try await send(.clockSync(t1: t1), .clockSync, retransmissions: 0)
        guard case let .clockSyncReply(r) = reply else { throw Self.refusalOrUnexpected(reply, for: .clockSync) }
        return r
    }

    /// Announces stream `streamId` (docs/speaker-protocol.md §3.2 `play`); its audio follows on UDP.
    public func play(streamId: UInt32, format: AudioFormat, source: StreamSource, title: String) async throws {
        var name = title
        while name.utf8.count > WireText.maxBytes { name.removeLast() }
        let request = try Self.argument { () throws(SpeakerError) in
            try PlayRequest(streamId: streamId, format: format, source: source, title: try WireText(name))
        }
        try await done(.play(request), .play)
    }

    /// Pauses, resumes or stops stream `streamId`.
    public func pause(streamId: UInt32) async throws { try await done(.pause(streamId: streamId), .pause) }
    public func resume(streamId: UInt32) async throws { try await done(.resume(streamId: streamId), .resume) }
    public func stop(streamId: UInt32) async throws { try await done(.stop(streamId: streamId), .stop) }

    /// Installs the controller-to-speaker clock map.
    public func setClockMap(_ map: ClockMap) async throws { try await done(.setClockMap(map), .setClockMap) }

    /// The speaker's events from now on; the stream finishes when the session ends.
    public func events() async -> AsyncStream<SpeakerEvent> {
        let pushes = await core.pushes()
        return AsyncStream(bufferingPolicy: .bufferingNewest(256)) { continuation in
            let task = Task {
                for await packet in pushes {
                    if let event = SpeakerEvent(packet.message) { continuation.yield(event) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The speaker's `resendRequest`s (version 2, docs/speaker-protocol.md §7.1): audio packets it misses. The stream
    /// ends with the session.
    public func resendRequests() async -> AsyncStream<ResendRequest> {
        let pushes = await core.pushes()
        return AsyncStream(bufferingPolicy: .bufferingNewest(256)) { continuation in
            let task = Task {
                for await packet in pushes {
                    if case let .resendRequest(r) = packet.message { continuation.yield(r) }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Ends the session and closes the link.
    public func close() async { await core.close() }

    // MARK: Internals

    private func nextRequestId() -> UInt32 {
        counter.withLock { c in
            c &+= 1
            if c == 0 { c = 1 }
            return c
        }
    }

    private func send(_ message: ControlMessage, _ request: RequestType, retransmissions: Int? = nil) async throws -> ControlMessage {
        let id = nextRequestId()
        let packet = try Self.checked { () throws(SpeakerError) in try ControlPacket(requestId: id, message: message, version: hello.version) }
        return try await core.request(packet, retransmissions: retransmissions).message
    }

    private func done(_ message: ControlMessage, _ acked: AckedRequest) async throws {
        let reply = try await send(message, acked.request)
        if case let .done(what) = reply, what == acked { return }
        throw Self.refusalOrUnexpected(reply, for: acked.request)
    }

    static func refusalOrUnexpected(_ reply: ControlMessage, for request: RequestType) -> SpeakerSessionError {
        if case let .failed(f) = reply {
            return SpeakerSessionError(.refused, "speaker refused \(request): \(f.message.value) (\(f.code.name))", deviceCode: f.code)
        }
        return SpeakerSessionError(.unexpectedReply, "speaker answered \(request) with message type 0x\(String(reply.type, radix: 16))")
    }

    /// A codec refusal of an argument as `.invalidArgument`.
    static func argument<T>(_ build: () throws(SpeakerError) -> T) throws(SpeakerSessionError) -> T {
        do { return try build() } catch { throw SpeakerSessionError(.invalidArgument, error.message) }
    }

    /// A codec refusal that cannot come from the caller's values.
    static func checked<T>(_ build: () throws(SpeakerError) -> T) throws(SpeakerSessionError) -> T {
        do { return try build() } catch { throw SpeakerSessionError(.invalidArgument, error.message) }
    }
}
