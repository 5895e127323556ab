import Logging
import Simulator
import Speaker
import Synchronization
import Transport

/// A simulated HKWirelessHD speaker: the speaker side of the control protocol (docs/speaker-protocol.md §9), served
/// on any link by `SimulatedDeviceServer`.
///
/// - Hello first: any other request before it is answered `failed` with `hello-required`; a hello with no version in
///   common is answered `version-mismatch` and the link is closed.
/// - Every request gets exactly one final reply; state changes are pushed to every connected controller
///   (`volumeChanged`, `deviceStateUpdated` with its reason, `playbackStateChanged`, `errorOccurred`), after the
///   reply to the request that caused them.
/// - Settings (volume, mute, name, group, balance, role, channel type) are saved in the state file when one is given.
/// - Renaming while playing stops playback: `errorOccurred` with `playback-interrupted`.
/// - `clockSync` is answered on the speaker's DAC clock (`DACClock`: offset and drift on an injectable time source).
/// - Playback is a flag for now: `play` in the session sets `isPlaying`; no audio is rendered.
public final class SimulatedSpeaker: SimulatedDevice {
    /// How a speaker is made.
    public struct Configuration: Sendable {
        public var identity: SpeakerIdentity
        public var clock: DACClock
        /// The IP address DeviceInfo reports.
        public var ipAddress: String
        /// The UDP audio port announced by hello and discovery.
        public var audioPort: UInt16
        /// The protocol versions the speaker speaks.
        public var versions: ClosedRange<UInt8>

        public init(identity: SpeakerIdentity, clock: DACClock = DACClock(), ipAddress: String = "127.0.0.1",
                    audioPort: UInt16 = 45456, versions: ClosedRange<UInt8> = SpeakerProtocolVersion.supported) {
            self.identity = identity
            self.clock = clock
            self.ipAddress = ipAddress
            self.audioPort = audioPort
            self.versions = versions
        }
    }

    private struct Connection {
        let link: any Transport
        let outbox: AsyncStream<[UInt8]>.Continuation
    }

    private struct State {
        var settings: SpeakerSettings
        var controlPort: UInt16 = 0
        var active = false
        var playing = false
        var playerState: PlayerState = .initialized
        var streamId: UInt32 = 0
        var clockMap: ClockMap?
        var connections: [UInt64: Connection] = [:]
        var nextConnection: UInt64 = 0
        var stopped = false
    }

    public let configuration: Configuration
    /// Index of the speaker in its simulation's state file.
    public let index: Int
    private let stateFile: SpeakerStateFile?
    private let state: Mutex<State>
    private let logger: Logger?

    public var deviceDescription: String { "speaker \(index) (\(configuration.identity.deviceId))" }
    public var deviceId: UInt64 { configuration.identity.deviceId }

    /// A speaker with its settings from `stateFile` (speaker `index`), or the defaults.
    public init(_ configuration: Configuration, index: Int = 0, stateFile: SpeakerStateFile? = nil, logger: Logger? = nil) {
        self.configuration = configuration
        self.index = index
        self.stateFile = stateFile
        self.logger = logger
        let settings = stateFile?.settings(of: index) ?? SpeakerSettings(name: configuration.identity.defaultName)
        state = Mutex(State(settings: settings))
    }

    /// The control port DeviceInfo and discovery report (set once the listener is bound).
    public func setControlPort(_ port: UInt16) { state.withLock { $0.controlPort = port } }
    public var controlPort: UInt16 { state.withLock { $0.controlPort } }

    /// The settings now.
    public var settings: SpeakerSettings { state.withLock { $0.settings } }

    /// Every DeviceInfo attribute now.
    public var deviceInfo: DeviceInfo { state.withLock { info($0) } }

    /// Starts or stops "playing" (a flag until playback exists), with its events.
    public func setPlaying(_ playing: Bool, streamId: UInt32 = 1) {
        state.withLock { s in
            guard s.playing != playing else { return }
            s.playing = playing
            s.streamId = playing ? streamId : s.streamId
            s.playerState = playing ? .playing : .stopped
            broadcast([.playbackStateChanged(PlaybackStateChange(streamId: s.streamId, state: s.playerState)),
                       .deviceStateUpdated(DeviceStateUpdate(deviceId: deviceId, reason: .playingChanged))], in: s)
        }
    }

    /// The discovery answer to query `queryId`.
    public func discoveryAnswer(to queryId: UInt32) -> DiscoveryAnswer? {
        let (name, port) = state.withLock { ($0.settings.name, $0.controlPort) }
        guard port != 0 else { return nil }
        return try? DiscoveryAnswer(
            queryId: queryId, deviceId: deviceId, controlPort: port, audioPort: configuration.audioPort,
            protocolVersions: configuration.versions.lowerBound, configuration.versions.upperBound,
            deviceName: WireText(name), modelName: WireText(configuration.identity.modelName))
    }

    // MARK: SimulatedDevice

    public func serve(_ link: any Transport) async {
        // Bounded: a controller that sends but never reads is dropped (`enqueue`) instead of growing memory.
        let (outbox, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingOldest(Self.outboxLimit))
        let id: UInt64? = state.withLock { s in
            guard !s.stopped else { return nil }
            s.nextConnection += 1
            s.connections[s.nextConnection] = Connection(link: link, outbox: continuation)
            return s.nextConnection
        }
        guard let id else {
            await link.close()
            return
        }
        let writer = Task {
            for await bytes in outbox {
                do { try await link.send(bytes) } catch { break }
            }
        }
        var deframer = ControlDeframer()
        var version: UInt8?
        reading: while true {
            let chunk: [UInt8]
            do { chunk = try await link.receive() } catch { break }
            deframer.append(chunk)
            while let output = deframer.next() {
                guard case let .frame(frame) = output else { continue }
                if handle(frame, version: &version, connection: id) == false { break reading }
            }
        }
        state.withLock { s in s.connections[id] = nil }
        continuation.finish()
        await writer.value
        await link.close()
    }

    public func shutdown() async {
        let links = state.withLock { s in
            s.stopped = true
            return s.connections.values.map(\.link)
        }
        for link in links { await link.close() }
    }

    // MARK: Requests

    /// Handles one frame; false when the link is to be closed.
    private func handle(_ frame: ControlFrame, version: inout UInt8?, connection: UInt64) -> Bool {
        let packet: ControlPacket
        do {
            packet = try ControlPacket(frame: frame)
        } catch {
            guard frame.requestId != 0, let request = RequestType(rawValue: frame.type) else {
                logger?.debug("\(deviceDescription): dropped an undecodable frame: \(error.message)")
                return true
            }
            let code: DeviceErrorCode = error.code == .unsupportedVersion ? .versionMismatch : .malformedRequest
            reply(frame.requestId, .failed(FailureReply(request: request, code: code, message: Self.text(error.message))),
                  version: 1, connection: connection)
            return true
        }
        guard packet.kind == .request, let request = RequestType(rawValue: packet.message.type) else { return true }
        if case let .hello(hello) = packet.message {
            guard let chosen = hello.negotiate(with: configuration.versions) else {
                let message = "no common protocol version: controller \(hello.minVersion)...\(hello.maxVersion), speaker \(configuration.versions.lowerBound)...\(configuration.versions.upperBound)"
                reply(packet.requestId, .failed(FailureReply(request: .hello, code: .versionMismatch, message: Self.text(message))),
                      version: 1, connection: connection)
                return false
            }
            version = chosen
            reply(packet.requestId, .helloReply(HelloReply(
                version: chosen, deviceId: deviceId, audioPort: configuration.audioPort,
                modelName: Self.text(configuration.identity.modelName), firmwareVersion: Self.text(configuration.identity.firmwareVersion))),
                  version: 1, connection: connection)
            return true
        }
        guard let version else {
            reply(packet.requestId, .failed(FailureReply(request: request, code: .helloRequired, message: "say hello first")),
                  version: packet.version, connection: connection)
            return true
        }
        // t2: when the request arrived, on the DAC clock.
        let received = configuration.clock.now()
        state.withLock { s in
            let (answer, events) = apply(packet.message, request: request, to: &s, receivedAt: received)
            if let frame = try? ControlPacket(requestId: packet.requestId, message: answer, version: version).encode(),
               let c = s.connections[connection] {
                enqueue(frame, on: c)
            }
            broadcast(events, in: s)
            if events.contains(where: Self.changesSettings) { stateFile?.save(s.settings, of: index) }
        }
        return true
    }

    private static func changesSettings(_ event: ControlMessage) -> Bool {
        switch event {
        case .volumeChanged: true
        case let .deviceStateUpdated(u): [.nameChanged, .groupChanged, .balanceChanged, .roleChanged, .channelTypeChanged].contains(u.reason)
        default: false
        }
    }

    /// The reply to `message` and the events it causes, with the state changed.
    private func apply(_ message: ControlMessage, request: RequestType, to s: inout State, receivedAt t2: UInt64)
        -> (ControlMessage, [ControlMessage]) {
        let id = deviceId
        func updated(_ reason: StateUpdateReason) -> ControlMessage { .deviceStateUpdated(DeviceStateUpdate(deviceId: id, reason: reason)) }
        func failed(_ code: DeviceErrorCode, _ text: String) -> ControlMessage {
            .failed(FailureReply(request: request, code: code, message: Self.text(text)))
        }
        func volumeEvent(_ s: State) -> ControlMessage {
            .volumeChanged(VolumeChange(deviceId: id, volume: try! SpeakerVolume(s.settings.volume), muted: s.settings.muted))
        }
        switch message {
        case .getDeviceInfo:
            return (.deviceInfo(info(s)), [])
        case .getStatus:
            return (.status(PlaybackStatus(state: s.playerState, streamId: s.streamId, renderedFrames: 0, lostPackets: 0,
                                           latePackets: 0, muted: s.settings.muted)), [])
        case let .setVolume(v):
            let changed = s.settings.volume != Int(v.value) || s.settings.muted
            s.settings.volume = Int(v.value)
            s.settings.muted = false
            return (.done(.setVolume), changed ? [volumeEvent(s)] : [])
        case let .setMute(muted):
            guard s.settings.muted != muted else { return (.done(.setMute), []) }
            s.settings.muted = muted
            return (.done(.setMute), [volumeEvent(s)])
        case let .setBalance(b):
            guard s.settings.balance != Int(b.value) else { return (.done(.setBalance), []) }
            s.settings.balance = Int(b.value)
            return (.done(.setBalance), [updated(.balanceChanged)])
        case let .setRole(role):
            guard s.settings.role != Int(role) else { return (.done(.setRole), []) }
            s.settings.role = Int(role)
            return (.done(.setRole), [updated(.roleChanged)])
        case let .setChannelType(type):
            guard s.settings.channelType != Int(type) else { return (.done(.setChannelType), []) }
            s.settings.channelType = Int(type)
            return (.done(.setChannelType), [updated(.channelTypeChanged)])
        case let .setName(name):
            guard !name.value.isEmpty else { return (failed(.invalidValue, "a speaker name cannot be empty"), []) }
            var events: [ControlMessage] = []
            if s.playing {
                s.playing = false
                s.playerState = .stopped
                events += [.errorOccurred(DeviceErrorEvent(deviceId: id, code: .playbackInterrupted, message: "renamed while playing")),
                           .playbackStateChanged(PlaybackStateChange(streamId: s.streamId, state: .stopped)), updated(.playingChanged)]
            }
            if s.settings.name != name.value {
                s.settings.name = name.value
                events.append(updated(.nameChanged))
            }
            return (.done(.setName), events)
        case let .joinGroup(g):
            let wasMaster = s.settings.groupId == id
            guard s.settings.groupId != g.groupId || s.settings.groupName != g.groupName.value else { return (.done(.joinGroup), []) }
            s.settings.groupId = g.groupId
            s.settings.groupName = g.groupName.value
            return (.done(.joinGroup), [updated(.groupChanged)] + (wasMaster != (g.groupId == id) ? [updated(.masterChanged)] : []))
        case .leaveGroup:
            guard s.settings.groupId != 0 else { return (.done(.leaveGroup), []) }
            let wasMaster = s.settings.groupId == id
            s.settings.groupId = 0
            s.settings.groupName = DeviceInfo.noGroupName.value
            return (.done(.leaveGroup), [updated(.groupChanged)] + (wasMaster ? [updated(.masterChanged)] : []))
        case .joinSession:
            guard !s.active else { return (.done(.joinSession), []) }
            s.active = true
            return (.done(.joinSession), [updated(.sessionChanged)])
        case .leaveSession:
            guard s.active else { return (.done(.leaveSession), []) }
            s.active = false
            var events = [updated(.sessionChanged)]
            if s.playing {
                s.playing = false
                s.playerState = .stopped
                events += [.playbackStateChanged(PlaybackStateChange(streamId: s.streamId, state: .stopped)), updated(.playingChanged)]
            }
            return (.done(.leaveSession), events)
        case let .play(p):
            guard s.active else { return (failed(.notInSession, "not in the playback session"), []) }
            var events: [ControlMessage] = []
            if s.playing, s.streamId != p.streamId {
                events.append(.errorOccurred(DeviceErrorEvent(deviceId: id, code: .playbackInterrupted, message: Self.text("replaced by stream \(p.streamId)"))))
            }
            let wasPlaying = s.playing
            s.streamId = p.streamId
            s.playing = true
            s.playerState = .playing
            events.append(.playbackStateChanged(PlaybackStateChange(streamId: p.streamId, state: .playing)))
            if !wasPlaying { events.append(updated(.playingChanged)) }
            return (.done(.play), events)
        case let .pause(streamId), let .resume(streamId), let .stop(streamId):
            guard s.streamId == streamId, streamId != 0 else { return (failed(.unknownStream, "no stream \(streamId)"), []) }
            let target: PlayerState
            let acked: AckedRequest
            switch message {
            case .pause:
                guard s.playerState == .playing else { return (failed(.invalidState, "stream \(streamId) is not playing"), []) }
                (target, acked) = (.paused, .pause)
            case .resume:
                guard s.active else { return (failed(.notInSession, "not in the playback session"), []) }
                guard s.playerState == .paused else { return (failed(.invalidState, "stream \(streamId) is not paused"), []) }
                (target, acked) = (.playing, .resume)
            default:
                (target, acked) = (.stopped, .stop)
            }
            let wasPlaying = s.playing
            s.playerState = target
            s.playing = target == .playing
            var events: [ControlMessage] = [.playbackStateChanged(PlaybackStateChange(streamId: streamId, state: target))]
            if wasPlaying != s.playing { events.append(updated(.playingChanged)) }
            return (.done(acked), events)
        case let .clockSync(t1):
            let t3 = max(t2, configuration.clock.now())
            guard let reply = try? ClockSyncReply(t1: t1, t2: t2, t3: t3) else { return (failed(.internalError, "clock went back"), []) }
            return (.clockSyncReply(reply), [])
        case let .setClockMap(map):
            s.clockMap = map
            return (.done(.setClockMap), [])
        default:
            return (failed(.unsupportedRequest, "not a request this speaker handles"), [])
        }
    }

    private func info(_ s: State) -> DeviceInfo {
        let i = configuration.identity
        // Settings are checked on load and by every request, so these conversions cannot fail.
        return try! DeviceInfo(
            deviceId: i.deviceId, deviceName: Self.text(s.settings.name), groupId: s.settings.groupId,
            groupName: Self.text(s.settings.groupName), modelName: Self.text(i.modelName), ipAddress: Self.text(configuration.ipAddress),
            port: s.controlPort, macAddress: i.macAddress, volume: SpeakerVolume(s.settings.volume), active: s.active,
            wifiSignalStrength: i.wifiSignalStrength, role: UInt8(s.settings.role), version: Self.text(i.firmwareVersion),
            balance: SpeakerBalance(s.settings.balance), isPlaying: s.playing, channelType: UInt8(s.settings.channelType),
            isMaster: s.settings.groupId == i.deviceId)
    }

    private func reply(_ requestId: UInt32, _ message: ControlMessage, version: UInt8, connection: UInt64) {
        guard let bytes = try? ControlPacket(requestId: requestId, message: message, version: version).encode() else { return }
        state.withLock { s in
            if let c = s.connections[connection] { enqueue(bytes, on: c) }
        }
    }

    /// Pushes `events` to every connection (call with the state locked, so they follow the reply in order).
    private func broadcast(_ events: [ControlMessage], in s: State) {
        for event in events {
            guard let bytes = try? ControlPacket.event(event).encode() else { continue }
            for connection in s.connections.values { enqueue(bytes, on: connection) }
        }
    }

    /// Frames a connection may have waiting to be written before it is dropped.
    static let outboxLimit = 1024

    private func enqueue(_ bytes: [UInt8], on connection: Connection) {
        if case .dropped = connection.outbox.yield(bytes) {
            logger?.warning("\(deviceDescription): \(connection.link.peerDescription) does not read what it is sent; dropping it")
            let link = connection.link
            Task { await link.close() }
        }
    }

    /// Text for the wire, cut to 255 bytes.
    static func text(_ value: String) -> WireText {
        var s = value
        while s.utf8.count > WireText.maxBytes { s.removeLast() }
        return (try? WireText(s)) ?? ""
    }
}
