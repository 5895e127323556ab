import Logging
import Simulator
import Speaker
import SpeakerPlayback
import Support
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
/// - `clockSync` is answered on the speaker's DAC clock (`DACClock`: offset and drift on an injectable time source),
///   over TCP and — version 4, once `startClockSync(on:)` gave it a UDP socket on its control port's number — as
///   `ClockDatagram`s, with t2 the kernel's receive time of the request (on a monotonic time source) and t3 read
///   just before the reply is sent (docs/speaker-protocol.md §6.1). Without that socket it negotiates at most 3.
/// - Playback (docs/speaker-protocol.md §7): audio datagrams on the UDP socket given to `startAudio` are rendered by a
///   `SpeakerRenderer` on the DAC clock every few milliseconds, at the time the stream says, with drift correction;
///   `playbackTime` every second of stream time, `playbackEnded` after the last frame. What was played can be
///   recorded (a WAV file and a render log per stream, `recordDirectory`) and kept in memory (`renderLogs`).
/// - Faults: `audioJitter` (delay and loss of datagrams), `powerOff()`/`powerOn()` (a reboot or a speaker gone), a
///   stalled clock (`stallClock`); the controller that started a stream disconnecting, or its audio stopping for
///   `audioTimeout`, stops playback with an `errorOccurred` to the others.
/// - Time: the DAC clock's `TimeSource` is both what the speaker reads and what its render pump sleeps on, so on a
///   test's clock (`TimeSource(clock:)`) rendering and the audio timeout run on virtual time.
/// - The same speaker is the protocol core of a real receiver (`SpeakerReceiver`, `tuneup speaker receive`): with
///   `externalOutput` there is no render pump; a sound card's writer renders by `render(through:)` while a stream
///   plays, told of streams starting and ending by `observeStreams`, and nothing runs while none does.
/// - The playback's protocol state (in the session or not, the stream playing, paused or stopped, the connection that
///   started it, when its audio last came) and its rules are `SpeakerStreamMachine` (SpeakerPlayback, a pure value):
///   this class feeds it the requests, the audio, the renders and the connections closing, performs its actions on the
///   renderer and pushes its events.
/// - Its life around the playback (serving or shut down, power, the links and the versions their hellos chose, the DAC
///   clock's stalls, the clock map, the clock syncs answered, the parts of each stream) is `SpeakerServiceMachine`, a
///   pure value too: this class keeps the links' I/O, the sockets, the renderer, the recordings and the time source.
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
        /// Delay and loss of the audio datagrams on their way in (seeded by `jitterSeed`).
        public var audioJitter: LinkJitter
        public var jitterSeed: UInt64
        /// Where each stream's WAV file and render log go (`speaker-K-stream-S.wav`, `.render.log`); nil: none.
        public var recordDirectory: String?
        /// Keep every stream's render log and output in memory (`renderLogs`), for tests.
        public var keepsRenderLogs: Bool
        /// How long a playing speaker waits for audio before it stops with `audio-underrun` (ns).
        public var audioTimeout: UInt64
        /// Rendering is driven from outside (`render(through:)`, a sound card's writer) instead of a pump every 5 ms.
        public var externalOutput: Bool = false

        public init(identity: SpeakerIdentity, clock: DACClock = DACClock(), ipAddress: String = "127.0.0.1",
                    audioPort: UInt16 = 45456, versions: ClosedRange<UInt8> = SpeakerProtocolVersion.supported,
                    audioJitter: LinkJitter = .none, jitterSeed: UInt64 = 1, recordDirectory: String? = nil,
                    keepsRenderLogs: Bool = false, audioTimeout: UInt64 = 3_000_000_000) {
            self.identity = identity
            self.clock = clock
            self.ipAddress = ipAddress
            self.audioPort = audioPort
            self.versions = versions
            self.audioJitter = audioJitter
            self.jitterSeed = jitterSeed
            self.recordDirectory = recordDirectory
            self.keepsRenderLogs = keepsRenderLogs
            self.audioTimeout = audioTimeout
        }
    }

    private struct Connection {
        let link: any Transport
        let outbox: AsyncStream<[UInt8]>.Continuation
    }

    private struct State {
        var settings: SpeakerSettings
        var controlPort: UInt16 = 0
        /// The playback's protocol state: session membership, the stream and its owner, when audio last came.
        var machine: SpeakerStreamMachine
        /// The speaker's life around it: serving or shut down, power, the links and their versions, the DAC clock's
        /// stalls, the clock map, the clock syncs answered, the streams' parts.
        var service = SpeakerServiceMachine()
        /// The links' I/O, by the number `service` gave them.
        var connections: [UInt64: Connection] = [:]
        var audioPort: UInt16 = 0
        var renderer: SpeakerRenderer?
        var log: RenderLog?
        var output: [UInt8] = []
        var recorder: WAVRecorder?
        var finished: [(log: RenderLog, pcm: [UInt8])] = []
        /// What the renderers of finished streams counted, summed.
        var totals = RenderStatistics()
        /// Audio datagrams that did not decode (a damaged FLAC frame, a bad CRC...), and the last one's reason.
        var undecodable: (count: UInt64, last: String?) = (0, nil)
        /// FLAC datagrams decoded (version 3).
        var flacDatagrams: UInt64 = 0
        var rng: SeededRandom
    }

    /// Clock-sync exchanges a speaker answered, by path.
    public struct ClockSyncCounts: Sendable, Hashable {
        /// `clockSync` requests on a control link (TCP).
        public var control: UInt64 = 0
        /// `ClockDatagram` requests on the clock socket (UDP, version 4).
        public var datagrams: UInt64 = 0
        /// Of those, requests whose t2 is the kernel's receive time.
        public var kernelTimestamped: UInt64 = 0
        public init() {}
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
        state = Mutex(State(settings: settings, machine: SpeakerStreamMachine(deviceId: configuration.identity.deviceId,
                                                                              audioTimeout: configuration.audioTimeout),
                            rng: SeededRandom(seed: configuration.jitterSeed)))
    }

    deinit {
        audioTasks.withLock { for t in $0 { t.cancel() } }
    }

    private let audioTasks = Mutex<[Task<Void, Never>]>([])
    private let streamObserver = Mutex<(@Sendable () -> Void)?>(nil)
    private let audioSocket = Mutex<UDPSocket?>(nil)
    private let clockSocket = Mutex<UDPSocket?>(nil)
    private let pendingRecorders = Mutex<[WAVRecorder]>([])
    private let datagramTap = Mutex<SpeakerSideDatagramTap?>(nil)

    /// Shows `tap` every audio and clock-sync datagram from now on (a capture of the speaker's side, docs/capture.md).
    public func setDatagramTap(_ tap: SpeakerSideDatagramTap?) { datagramTap.withLock { $0 = tap } }

    private func tap(_ kind: SpeakerSideDatagram.Kind, peer: @autoclosure () -> String, outbound: Bool, _ bytes: [UInt8]) {
        guard let tap = datagramTap.withLock({ $0 }) else { return }
        tap(SpeakerSideDatagram(kind: kind, peer: peer(), outbound: outbound, bytes: bytes))
    }

    /// The control port DeviceInfo and discovery report (set once the listener is bound).
    public func setControlPort(_ port: UInt16) { state.withLock { $0.controlPort = port } }
    public var controlPort: UInt16 { state.withLock { $0.controlPort } }

    /// The settings now.
    public var settings: SpeakerSettings { state.withLock { $0.settings } }

    /// Every DeviceInfo attribute now.
    public var deviceInfo: DeviceInfo { state.withLock { info($0) } }

    /// Starts or stops "playing" (a flag, with no audio), with its events; stopping closes a stream playing.
    public func setPlaying(_ playing: Bool, streamId: UInt32 = 1) {
        state.withLock { s in
            broadcast(perform(s.machine.setPlaying(playing, streamId: streamId), &s), in: s)
        }
    }

    /// The discovery answer to query `queryId`.
    public func discoveryAnswer(to queryId: UInt32) -> DiscoveryAnswer? {
        let (name, port, audioPort, off) = state.withLock { ($0.settings.name, $0.controlPort, $0.audioPort, $0.service.isPoweredOff) }
        guard port != 0, !off else { return nil }
        return try? DiscoveryAnswer(
            queryId: queryId, deviceId: deviceId, controlPort: port, audioPort: audioPort != 0 ? audioPort : configuration.audioPort,
            protocolVersions: versions.lowerBound, versions.upperBound,
            deviceName: WireText(name), modelName: WireText(configuration.identity.modelName))
    }

    /// The versions the speaker offers: its configuration's, but version 4 (clock sync over UDP) only once it has a
    /// clock socket (`startClockSync(on:)`).
    public var versions: ClosedRange<UInt8> {
        let configured = configuration.versions
        guard clockSocket.withLock({ $0 == nil }), configured.upperBound >= SpeakerProtocolVersion.udpClockSync,
              configured.lowerBound < SpeakerProtocolVersion.udpClockSync else { return configured }
        return configured.lowerBound...(SpeakerProtocolVersion.udpClockSync - 1)
    }

    /// Whether a controller installed a clock map.
    public var hasClockMap: Bool { state.withLock { $0.service.clockMap != nil } }

    /// Clock-sync exchanges answered so far, by path.
    public var clockSyncCounts: ClockSyncCounts { state.withLock { $0.service.clockSyncs } }

    // MARK: SimulatedDevice

    public func serve(_ link: any Transport) async {
        // Bounded: a controller that sends but never reads is dropped (`enqueue`) instead of growing memory.
        let (outbox, continuation) = AsyncStream.makeStream(of: [UInt8].self, bufferingPolicy: .bufferingOldest(Self.outboxLimit))
        let id: UInt64? = state.withLock { s in
            guard let id = s.service.connect() else { return nil }
            s.connections[id] = Connection(link: link, outbox: continuation)
            return id
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
        state.withLock { s in
            s.connections[id] = nil
            s.service.disconnected(id)
            broadcast(perform(s.machine.connectionClosed(id), &s), in: s)
        }
        continuation.finish()
        await writer.value
        await link.close()
    }

    public func shutdown() async {
        let links = state.withLock { s in
            s.service.shutDown()
            broadcast(perform(s.machine.shutdown(), &s), in: s)
            return s.connections.values.map(\.link)
        }
        for link in links { await link.close() }
        let tasks = audioTasks.withLock { t in defer { t = [] }; return t }
        for t in tasks { t.cancel() }
        audioSocket.withLock { $0?.close() }
        clockSocket.withLock { $0?.close() }
        for t in tasks { await t.value }
        let recorders = state.withLock { _ in pendingRecorders.withLock { r in defer { r = [] }; return r } }
        for r in recorders { await r.flush() }
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
            let versions = self.versions
            guard let chosen = hello.negotiate(with: versions) else {
                let message = "no common protocol version: controller \(hello.minVersion)...\(hello.maxVersion), speaker \(versions.lowerBound)...\(versions.upperBound)"
                reply(packet.requestId, .failed(FailureReply(request: .hello, code: .versionMismatch, message: Self.text(message))),
                      version: 1, connection: connection)
                return false
            }
            version = chosen
            let audioPort = state.withLock { s in
                s.service.greeted(connection, version: chosen)
                return s.audioPort
            }
            reply(packet.requestId, .helloReply(HelloReply(
                version: chosen, deviceId: deviceId, audioPort: audioPort != 0 ? audioPort : configuration.audioPort,
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
        let received = dacNow()
        state.withLock { s in
            let (answer, events) = apply(packet.message, request: request, to: &s, receivedAt: received, connection: connection)
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
    private func apply(_ message: ControlMessage, request: RequestType, to s: inout State, receivedAt t2: UInt64,
                       connection: UInt64) -> (ControlMessage, [ControlMessage]) {
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
            let stats = s.renderer?.statistics ?? s.log?.statistics ?? RenderStatistics()
            return (.status(PlaybackStatus(state: s.machine.playerState, streamId: s.machine.streamId, renderedFrames: stats.renderedFrames,
                                           lostPackets: UInt32(clamping: stats.lostPackets), latePackets: UInt32(clamping: stats.latePackets),
                                           muted: s.settings.muted)), [])
        case let .setVolume(v):
            let changed = s.settings.volume != Int(v.value) || s.settings.muted
            s.settings.volume = Int(v.value)
            s.settings.muted = false
            s.renderer?.volume = s.settings.volume
            return (.done(.setVolume), changed ? [volumeEvent(s)] : [])
        case let .setMute(muted):
            guard s.settings.muted != muted else { return (.done(.setMute), []) }
            s.settings.muted = muted
            s.renderer?.volume = muted ? 0 : s.settings.volume
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
            var events = perform(s.machine.renamed(), &s)
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
            let outcome = s.machine.joinSession()
            return (outcome.reply!, perform(outcome, &s))
        case .leaveSession:
            let outcome = s.machine.leaveSession()
            return (outcome.reply!, perform(outcome, &s))
        case let .play(p):
            let now = dacTime(&s)
            let outcome = s.machine.play(streamId: p.streamId, connection: connection, now: now)
            return (outcome.reply!, perform(outcome, &s, play: p))
        case let .pause(streamId):
            // The output plays on until the pause arrives: render up to now first (the pump renders every 5 ms, and
            // what lies between its last run and now was heard), so the renderer's cursor is the first frame not
            // heard — the frame this speaker resumes with (docs/speaker-protocol.md §3.2).
            if s.machine.takesAudio(of: streamId), s.renderer != nil { _ = render(&s, upTo: nil) }
            let next = s.renderer?.nextUnplayedFrame
            let outcome = s.machine.pause(streamId: streamId)
            // A stream's controller that negotiated 5 resumes from the earliest frame its speakers report; frames
            // before this speaker's own next one are then dropped here (played before the pause), not played twice.
            let exact = s.machine.owner.flatMap { s.service.version(of: $0) }.map { $0 >= SpeakerProtocolVersion.pausePositions } == true
            var events = perform(outcome, &s, resumingAt: exact ? next : nil)
            if case .done = outcome.reply! {
                events.append(.playbackPaused(PausePosition(streamId: streamId, nextFrame: next ?? PausePosition.nothingPlayed)))
            }
            return (outcome.reply!, events)
        case let .resume(streamId):
            let now = dacTime(&s)
            let outcome = s.machine.resume(streamId: streamId, now: now)
            return (outcome.reply!, perform(outcome, &s))
        case let .stop(streamId):
            let outcome = s.machine.stop(streamId: streamId)
            return (outcome.reply!, perform(outcome, &s))
        case let .clockSync(t1):
            s.service.controlClockSync()
            let t3 = max(t2, dacTime(&s))
            guard let reply = try? ClockSyncReply(t1: t1, t2: t2, t3: t3) else { return (failed(.internalError, "clock went back"), []) }
            return (.clockSyncReply(reply), [])
        case let .setClockMap(map):
            s.service.installClockMap(map)
            s.renderer?.map = map
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
            port: s.controlPort, macAddress: i.macAddress, volume: SpeakerVolume(s.settings.volume), active: s.machine.active,
            wifiSignalStrength: i.wifiSignalStrength, role: UInt8(s.settings.role), version: Self.text(i.firmwareVersion),
            balance: SpeakerBalance(s.settings.balance), isPlaying: s.machine.isPlaying, channelType: UInt8(s.settings.channelType),
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
            if case .playbackPaused = event {
                // Version 5: only to the controllers that negotiated it, in their version.
                for (id, c) in s.connections {
                    guard let version = s.service.version(of: id), version >= SpeakerProtocolVersion.pausePositions,
                          let bytes = try? ControlPacket.event(event, version: version).encode() else { continue }
                    enqueue(bytes, on: c)
                }
                continue
            }
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

    // MARK: Playback

    /// Starts receiving audio datagrams on `socket` and rendering them (its port is announced by hello and
    /// discovery). `SpeakerSimulation` calls it once the socket is bound.
    public func startAudio(on socket: UDPSocket) {
        state.withLock { $0.audioPort = socket.localPort }
        audioSocket.withLock { $0 = socket }
        let receiver = Task { [weak self] in
            while !Task.isCancelled {
                guard let datagram = try? await socket.receive() else { return }
                self?.deliver(datagram.bytes, fromHost: datagram.host, port: datagram.port)
            }
        }
        guard !configuration.externalOutput else {
            audioTasks.withLock { $0 += [receiver] }
            return
        }
        // Every 5 ms of the DAC clock's time source (a test's clock drives it, and so the audio timeout).
        let time = configuration.clock.source
        let pump = Task { [weak self] in
            while !Task.isCancelled {
                try? await time.sleep(5_000_000)
                guard let self else { return }
                self.renderNow()
            }
        }
        audioTasks.withLock { $0 += [receiver, pump] }
    }

    /// Starts answering clock-sync datagrams (version 4, docs/speaker-protocol.md §6.1) on `socket` — UDP, bound to
    /// the control port's number, with `receiveTimestamps` — and offers version 4 from now on. Each request is answered
    /// on the I/O reactor's thread as it is read (a few a second per controller; no task, no thread hand-off: a task
    /// woken per request was a tenth of a receiver's CPU). t2 is the kernel's receive time and t3 is read just before
    /// the reply is sent, so how long the answer takes costs nothing. It ends when the socket is closed (`shutdown`).
    public func startClockSync(on socket: UDPSocket) {
        clockSocket.withLock { $0 = socket }
        try? socket.handleDatagrams { [weak self, weak socket] datagram in
            if let socket { self?.answerClockSync(datagram, on: socket) }
        }
    }

    /// Answers one clock-sync request datagram to its sender (anything else is dropped): t2 is the kernel's receive
    /// time on the DAC clock when the time source is the monotonic clock the kernel's times are on (else the time
    /// now), t3 the DAC clock read just before the send.
    private func answerClockSync(_ datagram: UDPDatagram, on socket: UDPSocket) {
        let peer = SpeakerSideDatagram.peer(host: datagram.host, port: datagram.port)
        tap(.clock, peer: peer, outbound: false, datagram.bytes)
        guard case let .request(t1)? = try? ClockDatagram.decode(datagram.bytes) else { return }
        let kernel = configuration.clock.source.isMonotonic ? datagram.receivedAt : nil
        let t2: UInt64? = state.withLock { s in
            guard s.service.clockSyncDatagram(kernelTimestamped: kernel != nil) else { return nil }
            return kernel.map { dacTime(&s, atTrueTime: $0) } ?? dacTime(&s)
        }
        guard let t2 else { return }
        _ = try? socket.trySend(toHost: datagram.host, port: datagram.port) {
            let t3 = max(t2, dacNow())
            // t3 ≥ t2 by construction.
            let reply = ClockDatagram.reply(try! ClockSyncReply(t1: t1, t2: t2, t3: t3)).encode()
            tap(.clock, peer: peer, outbound: true, reply)
            return reply
        }
    }

    /// Calls `observer` whenever a stream starts or ends (with `externalOutput`: the output's writer wakes up and
    /// looks at `streamFormat`). It is called with the speaker's state locked: it must only signal, never call back.
    public func observeStreams(_ observer: @escaping @Sendable () -> Void) {
        streamObserver.withLock { $0 = observer }
    }

    /// The format of the stream being rendered (nil: no stream).
    public var streamFormat: AudioFormat? { state.withLock { $0.renderer?.format } }

    /// The next DAC slot the renderer fills (nil: no stream). Slot n is the DAC clock's time n × 10⁹ / rate.
    public var nextRenderSlot: UInt64? { state.withLock { $0.renderer?.nextSlot } }

    /// What `render(through:)` rendered: the slots `firstSlot...` of the stream, as PCM in its format.
    public struct RenderedSlots: Sendable {
        public var format: AudioFormat
        public var firstSlot: UInt64
        public var pcm: [UInt8]
        public var frames: Int { pcm.count / format.bytesPerFrame }
    }

    /// Renders every slot whose DAC time is at or before `time` — which may lie ahead of the DAC clock by what a sound
    /// card holds queued — and returns them, with the stream's events sent; nil without a stream.
    public func render(through time: UInt64) -> RenderedSlots? { render(upTo: time) }

    /// Ends the stream being played with an `errorOccurred` (`code`, `message`) to every controller: the output
    /// cannot play it (a sound card that failed).
    public func stopPlayback(error code: DeviceErrorCode, message: String) {
        state.withLock { s in
            guard s.renderer != nil else { return }
            broadcast(perform(s.machine.outputFailed(code, message: message), &s), in: s)
        }
    }

    /// The UDP audio port (0 before `startAudio`).
    public var audioPort: UInt16 { state.withLock { $0.audioPort } }

    /// One audio datagram as it comes off the network from `host`:`port` (nil: not known; the speaker's own audio
    /// address then names it in a capture): the UDP receivers call it.
    public func deliver(_ bytes: [UInt8], fromHost host: String?, port: UInt16 = 0) {
        tap(.audio, peer: host.map { SpeakerSideDatagram.peer(host: $0, port: port) } ?? SpeakerSideDatagram.peer(host: configuration.ipAddress, port: audioPort),
            outbound: false, bytes)
        deliver(bytes)
    }

    /// One audio datagram as it comes off the network (tests call it; the UDP receivers `deliver(_:from:)`).
    public func deliver(_ bytes: [UInt8]) {
        let packet: AudioPacket
        do {
            packet = try AudioPacket.decode(bytes)  // FLAC (version 3) decoded here, outside the lock
        } catch {
            state.withLock { $0.undecodable = ($0.undecodable.count + 1, error.message) }
            return
        }
        state.withLock { s in
            guard s.service.isListening, s.machine.takesAudio(of: packet.streamId), s.renderer != nil else { return }
            let now = dacTime(&s)
            guard let delay = configuration.audioJitter.draw(&s.rng) else { return }
            s.machine.audioReceived(streamId: packet.streamId, now: now)
            if packet.encoding == .flac { s.flacDatagrams += 1 }
            s.renderer!.receive(packet, arrival: now &+ delay)
            askForMissing(&s, at: now)
        }
    }

    /// Sends the stream's controller a `resendRequest` for the packets recovery asks for now (§7.1) — only to a
    /// controller that negotiated version 2; others get nothing, and the gaps play as silence (call locked).
    private func askForMissing(_ s: inout State, at now: UInt64) {
        guard s.renderer?.nextRecoveryEvent.map({ $0 <= now }) == true else { return }
        let sequences = s.renderer!.resendRequests(at: now)
        guard !sequences.isEmpty, let owner = s.machine.owner, let c = s.connections[owner],
              let version = s.service.version(of: owner), version >= SpeakerProtocolVersion.resendRequests,
              let request = try? ResendRequest(streamId: s.machine.streamId, sequences: sequences),
              let bytes = try? ControlPacket.event(.resendRequest(request), version: version).encode() else { return }
        enqueue(bytes, on: c)
    }

    /// Renders up to the DAC clock's now (the pump calls it every 5 ms).
    public func renderNow() { _ = render(upTo: nil) }

    /// Renders up to DAC time `time` (nil: now); returns what was rendered.
    private func render(upTo time: UInt64?) -> RenderedSlots? {
        state.withLock { s in render(&s, upTo: time) }
    }

    /// Renders up to DAC time `time` (nil: now); returns what was rendered (call with the state locked).
    private func render(_ s: inout State, upTo time: UInt64?) -> RenderedSlots? {
        // Scalars, not a copy of the renderer: a copy would share its buffers, and rendering would then copy them.
        guard let format = s.renderer?.format, let first = s.renderer?.nextSlot, !s.service.isPoweredOff else { return nil }
        let now = dacTime(&s)
        var out: [UInt8] = []
        // Room for the slots due (at most 10 s of them), so that appending frame by frame does not reallocate.
        let through = time ?? now, from = s.renderer!.slotTime(first)
        if through > from {
            let slots = min((through - from) / 1_000_000 * UInt64(format.sampleRate) / 1000 + 2, UInt64(format.sampleRate) * 10)
            out.reserveCapacity(Int(slots) * format.bytesPerFrame)
        }
        if let time, time > now { s.renderer!.renderLead = time - now }
        askForMissing(&s, at: now)
        let events = s.renderer!.render(through: time ?? now, output: &out, log: &s.log!.runs)
        let rendered = RenderedSlots(format: format, firstSlot: first, pcm: out)
        s.log!.statistics = s.renderer!.statistics
        s.recorder?.append(out)
        if configuration.keepsRenderLogs { s.output += out }
        var messages: [ControlMessage] = []
        for event in events {
            switch event {
            case let .elapsed(ms): messages.append(.playbackTime(PlaybackTime(streamId: s.machine.streamId, elapsedMilliseconds: ms)))
            case .ended:
                messages.append(.playbackEnded(streamId: s.machine.streamId))
            case .firstAudio: break
            }
        }
        broadcast(messages, in: s)
        broadcast(perform(s.machine.rendered(now: now, ended: events.contains(.ended)), &s), in: s)
        return rendered
    }

    /// Audio datagrams dropped because they did not decode (`SpeakerError`: a damaged FLAC frame, a bad CRC, a version
    /// this speaker does not read), and the last one's one-line reason.
    public var undecodableDatagrams: (count: UInt64, last: String?) { state.withLock { $0.undecodable } }

    /// FLAC audio datagrams decoded and taken for the stream (docs/speaker-protocol.md §7.2).
    public var flacDatagrams: UInt64 { state.withLock { $0.flacDatagrams } }

    /// What the renderers counted (drift corrections, lost frames, ...) over every stream since the speaker started.
    public var renderTotals: RenderStatistics {
        state.withLock { s in
            var t = s.totals
            if let r = s.renderer { t.add(r.statistics) }
            return t
        }
    }

    /// Every stream rendered since the speaker started (with `keepsRenderLogs`), the current one last.
    public var renderLogs: [(log: RenderLog, pcm: [UInt8])] {
        state.withLock { s in
            s.finished + (s.log.map { [($0, s.output)] } ?? [])
        }
    }

    /// Waits until the recordings of finished streams are on disk.
    public func flushRecordings() async {
        for r in pendingRecorders.withLock({ $0 }) { await r.flush() }
    }

    /// The speaker goes off the network (power cut, reboot): its control links close, it answers nothing (neither
    /// connections nor discovery nor audio) and forgets its playback and clock map until `powerOn()`.
    public func powerOff() async {
        let links = state.withLock { s in
            s.service.powerOff()
            _ = perform(s.machine.powerOff(), &s)
            return s.connections.values.map(\.link)
        }
        for link in links { await link.close() }
    }

    /// The speaker is back (after `powerOff()`), with its settings, out of the playback session.
    public func powerOn() { state.withLock { $0.service.powerOn() } }

    public var isPoweredOff: Bool { state.withLock { $0.service.isPoweredOff } }

    /// The DAC clock stops for `nanoseconds` of true time from now, then runs on from where it stopped (a stalled
    /// oscillator): nothing is rendered meanwhile, and the controller's clock sync sees the step.
    public func stallClock(for nanoseconds: UInt64) {
        state.withLock { s in
            let t = configuration.clock.source.now()
            s.service.stall(for: nanoseconds, atTrueTime: t, unstalled: configuration.clock.time(atTrueTime: t))
        }
    }

    private func dacNow() -> UInt64 { state.withLock { dacTime(&$0) } }

    /// The DAC clock now, stalls included (call with the state locked).
    private func dacTime(_ s: inout State) -> UInt64 { dacTime(&s, atTrueTime: configuration.clock.source.now()) }

    /// The DAC clock at true time `t`, stalls included (call with the state locked).
    private func dacTime(_ s: inout State, atTrueTime t: UInt64) -> UInt64 {
        s.service.dacTime(atTrueTime: t, unstalled: configuration.clock.time(atTrueTime: t))
    }

    /// Performs the machine's actions on the renderer; returns the events to push (call with the state locked).
    private func perform(_ outcome: SpeakerStreamMachine.Outcome, _ s: inout State, play p: PlayRequest? = nil,
                         resumingAt floor: UInt64? = nil) -> [ControlMessage] {
        for action in outcome.actions {
            switch action {
            case .closeStream: finishStream(&s)
            case .resetRenderer: s.renderer?.reset(resumingAt: floor)
            case .openStream: if let p { startStream(&s, p) }
            }
        }
        return outcome.events
    }

    private func startStream(_ s: inout State, _ p: PlayRequest) {
        let now = dacTime(&s)
        var renderer = SpeakerRenderer(streamId: p.streamId, format: p.format, map: s.service.clockMap, startDAC: now)
        renderer.volume = s.settings.muted ? 0 : s.settings.volume
        s.renderer = renderer
        var clock = configuration.clock
        clock.offset &-= s.service.stallShift
        s.log = RenderLog(streamId: p.streamId, format: p.format, clock: clock)
        // Part 2 on (it joined the stream again after a lost link or an outage) are recorded to files of their own.
        let part = s.service.streamOpened(p.streamId)
        if part > 1 {
            // What it played of this stream before stays in the earlier part's file; the log says where.
            let before = Recording.fileName(speaker: index, stream: p.streamId, part: part - 1)
            s.log?.note = "part \(part) of stream \(p.streamId) on this speaker: it joined the stream again; what it played before is in \(before)"
        }
        s.output = []
        streamObserver.withLock { $0 }?()
        if let directory = configuration.recordDirectory {
            s.recorder = WAVRecorder(path: directory + "/" + Recording.fileName(speaker: index, stream: p.streamId, part: part), format: p.format)
        }
    }

    /// Closes the current stream's renderer, recording and log (kept with `keepsRenderLogs`).
    private func finishStream(_ s: inout State) {
        guard s.renderer != nil, var log = s.log else { return }
        log.statistics = s.renderer!.statistics
        s.totals.add(log.statistics)
        if configuration.keepsRenderLogs { s.finished.append((log, s.output)) }
        if let recorder = s.recorder {
            recorder.close(log: log.text())
            pendingRecorders.withLock { $0.append(recorder) }
        }
        s.renderer = nil
        s.log = nil
        s.output = []
        s.recorder = nil
        streamObserver.withLock { $0 }?()
    }

    /// Text for the wire, cut to 255 bytes.
    static func text(_ value: String) -> WireText {
        var s = value
        while s.utf8.count > WireText.maxBytes { s.removeLast() }
        return (try? WireText(s)) ?? ""
    }
}
