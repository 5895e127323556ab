import Failure
import Glibc
import Logging
import Speaker
import SpeakerPlayback
import Support
import Transport

/// What the player reports (the SDK's player delegate, plus the speakers' comings and goings).
public enum PlayerEvent: Sendable, Hashable {
    /// Initialized, playing, paused or stopped (by this controller, another command, or an end).
    case stateChanged(PlayerState)
    /// Playback time, every second: whole seconds of the stream heard so far.
    case time(seconds: Int)
    /// The last frame was heard.
    case ended
    /// A speaker gets the stream (at play, or added during playback, or back after it was lost).
    case speakerJoined(deviceId: UInt64)
    /// A speaker's link was lost (off, rebooting, gone); the others play on.
    case speakerLost(deviceId: UInt64, reason: String)
    /// A speaker refused or reported an error (renamed while playing, audio underrun, ...).
    case speakerError(deviceId: UInt64, code: DeviceErrorCode?, message: String)
    /// The source failed (damaged data, a cut or stalled transfer) after `seconds` of the stream (stream time, from
    /// its start even after `--from`): what it gave before still plays, then the playback ends (`.ended` follows
    /// once the speakers heard it). `category` is the failure's (`CodedError`'s; `.device` for other errors).
    case sourceFailed(seconds: Double, category: FailureCategory, message: String)
}

/// Plays PCM to the speakers of a playback session in sync (docs/speaker-protocol.md §6-7): it keeps each member's
/// clock measured (`ClockTracker`, `clockSync`/`setClockMap`), announces a stream with `play`, and sends the same
/// timestamped UDP datagrams (`StreamSchedule`) to every member, `buffer` ahead of their presentation time.
///
/// It follows the speakers' events, so a playback started here can be paused, resumed, stopped (and its volume
/// changed) by another controller — another `tuneup speaker` command — talking to the speakers: a speaker's
/// `playbackStateChanged` for the stream is applied here too. A member added during playback gets `play` for the
/// stream and joins at the frames then due; a member whose link is lost is reported and, when it comes back,
/// reconnected and rejoined; removing the last member stops the playback.
///
/// The decisions are `PlaybackMachine`'s (SpeakerPlayback, a pure value): this actor is its I/O shell. It feeds the
/// machine the API's calls, the speakers' events, the source's data and the time (`now`), and performs the actions
/// it answers with, in order: the speakers' commands, the UDP datagrams, the events, the streaming loop and timers.
/// What stays here is I/O: the sessions and their tasks, clock synchronisation, the source, reconnection.
///
/// Its timeline and every wait (the streaming loop, clock sync, the sync timeout, the resume grace, reconnection)
/// are on the clock it is given (`PlayerClock`): a test's `ManualClock` drives the whole stream on virtual time.
public actor SpeakerPlayer {
    /// Opens a new session to a speaker whose link was lost (the player then rejoins it to the stream); it throws
    /// while the speaker cannot be reached.
    public typealias Reconnect = @Sendable (_ lost: SpeakerSession) async throws -> SpeakerSession

    private struct Member {
        var session: SpeakerSession
        var tracker = ClockTracker()
        var mapInstalled = false
        var tasks: [Task<Void, Never>] = []
    }

    public let options: PlayerOptions
    private let socket: UDPSocket
    /// Clock sync over UDP with the members that negotiated version 4 (docs/speaker-protocol.md §6.1).
    private let clockChannel: ClockSyncChannel
    private let clock: PlayerClock
    private let now: @Sendable () -> UInt64
    private let reconnect: Reconnect?
    private let logger: Logger
    private let events = Broadcast<PlayerEvent>()
    private var members: [UInt64: Member] = [:]
    /// Sessions that replace lost ones (the controller's list follows through `onReconnect`).
    private let onReconnect: @Sendable (SpeakerSession) async -> Void
    /// Sees every audio and clock datagram (a capture); nil: none.
    private let tap: SpeakerDatagramTap?

    private var machine: PlaybackMachine
    /// The state shown: the machine's, as announced by the actions performed so far (so whoever waits for
    /// `.stopped` finds the speakers already told to stop).
    public private(set) var state: PlayerState = .initialized
    private var source: (any PCMSource)?
    private var streamTask: (run: UInt64, task: Task<Void, Never>)?
    private var reconnecting: Set<UInt64> = []
    private var closed = false
    /// Each member's volume as last known (given at `add`, then its `volumeChanged` events), kept while it is lost:
    /// what a rejoining member is given back (`sessionVolume(for:)`).
    private var volumes: [UInt64: Int] = [:]
    /// `announce`s waiting for a member's clock map (by token: the member, the waiter).
    private var mapWaiters: [UInt64: (member: UInt64, waiter: CheckedContinuation<Void, Never>)] = [:]
    private var nextMapWaiter: UInt64 = 0

    /// A player sending audio from a UDP socket of its own, on `clock` (its timeline and every wait: see
    /// `PlayerClock`). A lost member is reconnected with `reconnect`, or else (nil) over TCP at the host and control
    /// port its session was opened with (a session with neither is not reconnected).
    /// - Throws: `TransportError` when no UDP socket can be opened.
    public init(options: PlayerOptions = PlayerOptions(), clock: any Clock<Duration> = ContinuousClock(),
                reconnect: Reconnect? = nil, logger: Logger = Logger(label: "tuneup.speaker.player"),
                onReconnect: @escaping @Sendable (SpeakerSession) async -> Void = { _ in }, datagramTap: SpeakerDatagramTap? = nil) throws {
        self.tap = datagramTap
        self.options = options
        self.clock = PlayerClock(clock)
        self.now = self.clock.now
        self.reconnect = reconnect
        self.logger = logger
        self.onReconnect = onReconnect
        machine = PlaybackMachine(buffer: options.buffer, endGrace: options.endGrace, lostTimeout: options.lostTimeout,
                                  firstStreamId: UInt32.random(in: 1...0xFFFF))
        socket = try UDPSocket.bind(host: "0.0.0.0", port: 0)
        clockChannel = try ClockSyncChannel(clock: self.clock, tap: datagramTap)
    }

    // MARK: The API

    /// Events from now on (the current state first).
    public func playerEvents() -> AsyncStream<PlayerEvent> {
        events.subscribe(bufferingPolicy: .bufferingNewest(1024), replay: [.stateChanged(state)])
    }

    /// Seconds of the stream heard so far (stream time, from its start even after `--from`); nil when nothing plays
    /// or is paused (HKWHub's TimeElapsed -1).
    public var elapsed: Double? { machine.elapsed(at: now()) }

    /// The stream playing or paused (0: none).
    public var streamId: UInt32 { machine.streamId }

    /// Why the last playback stopped by itself before its end, if it did (nil after its end, a stop, or while one
    /// plays): every speaker lost (`.disconnected`), or the stream taken over by another controller's play on every
    /// speaker (`.interrupted`). Set before the player reports `stopped`.
    public private(set) var interruption: SpeakerSessionError?

    /// The members' ids in order.
    public var memberIds: [UInt64] { machine.members }

    /// Ids of the members that get the current stream.
    public var receivingIds: [UInt64] { machine.receivingIds }

    /// What the player did for lost-packet recovery (§7.1), over its life.
    public var recoveryStatistics: PlayerRecoveryStatistics {
        var s = PlayerRecoveryStatistics()
        s.requested = machine.recovery.requested
        s.resent = machine.recovery.resent
        s.unavailable = machine.recovery.unavailable
        return s
    }

    /// Plays `source` from `from` seconds on every member: waits for their clocks, announces the stream, and
    /// streams until the end, `stop`, or a stop by another controller. Returns once the stream started.
    /// - Throws: `SpeakerSessionError` — `.invalidArgument` (no member, a `from` the source cannot seek to),
    ///   `.notConnected` when no member could be started.
    public func play(_ source: any PCMSource, title: String = "", kind: StreamSource = .localFile, from seconds: Double = 0) async throws {
        guard !closed else { throw SpeakerSessionError(.notConnected, "the player is closed") }
        guard !machine.members.isEmpty else {
            throw SpeakerSessionError(.invalidArgument, "no speaker is in the playback session; add one first")
        }
        guard seconds.isFinite, seconds >= 0 else { throw SpeakerSessionError(.invalidArgument, "--from must be 0 or more seconds") }
        await perform(machine.stop())
        let format = source.format
        try checkEncoding(format: format)
        let first = UInt64(seconds * Double(format.sampleRate))
        if first > 0 {
            if let total = source.totalFrames, first >= total {
                throw SpeakerSessionError(.invalidArgument, "--from \(seconds) s is beyond the end (\(Double(total) / Double(format.sampleRate)) s)")
            }
            guard source.isSeekable || source.canStartLater else {
                throw SpeakerSessionError(.invalidArgument, "this source cannot start at \(seconds) s (not seekable)")
            }
            try await source.seek(toFrame: first)
        }
        self.source = source
        interruption = nil
        let (id, announcements) = machine.start(format: format, encoding: options.encoding, startFrame: first, title: title,
                                                kind: kind, now: now())
        await perform(announcements)
        do {
            try await perform(machine.started(streamId: id, now: now()))
        } catch PlaybackMachine.Refusal.noMemberStarted {
            throw SpeakerSessionError(.notConnected, "no speaker of the session could start the stream")
        } catch {
            throw SpeakerSessionError(.notConnected, "the stream was stopped before it started")
        }
    }

    /// Pauses the stream on every member.
    /// - Throws: `SpeakerSessionError(.invalidArgument)` when nothing plays.
    public func pause() async throws {
        do {
            try await perform(machine.pause(now: now()))
        } catch {
            throw SpeakerSessionError(.invalidArgument, "nothing is playing")
        }
    }

    /// Resumes a paused stream on every member.
    public func resume() async throws {
        let targets: (streamId: UInt32, ids: [UInt64])
        do { targets = try machine.resumeTargets() } catch { throw SpeakerSessionError(.invalidArgument, "nothing is paused") }
        for id in targets.ids {
            do { try await members[id]?.session.resume(streamId: targets.streamId) } catch { report(id, error) }
        }
        // Still paused (not stopped or resumed meanwhile): the stream plays on, from where the members stopped.
        takePausePositions()
        await perform((try? machine.resume(now: now())) ?? [])
    }

    /// Stops the stream on every member (it cannot be resumed).
    public func stop() async {
        await perform(machine.stop())
    }

    // MARK: Members

    /// Adds a speaker (in the playback session) to the player: its clock is measured from now on; during playback it
    /// gets the stream.
    public func add(_ session: SpeakerSession, volume: Int? = nil) async {
        let id = session.deviceId
        if let volume { volumes[id] = volume }
        if members[id] != nil { await remove(id, stopIfLast: false) }
        members[id] = Member(session: session)
        let syncTask = Task { [weak self] () -> Void in await self?.syncLoop(id, session) }
        let eventTask = Task { [weak self] () -> Void in
            let stream = await session.events()
            for await event in stream { await self?.speakerEvent(id, event) }
            await self?.lost(id, session)
        }
        let resendTask = Task { [weak self] () -> Void in
            let stream = await session.resendRequests()
            for await request in stream { await self?.resend(request, to: id) }
        }
        members[id]!.tasks = [syncTask, eventTask, resendTask]
        await perform(machine.memberAdded(id))
    }

    /// Takes a speaker out of the player; with `stopIfLast`, the playback stops when it was the last that played.
    public func remove(_ id: UInt64, stopIfLast: Bool = true) async {
        guard let member = members.removeValue(forKey: id) else { return }
        for t in member.tasks { t.cancel() }
        endMapWaits(of: id)
        await perform(machine.memberRemoved(id, stopIfLast: stopIfLast))
    }

    /// Stops streaming (the speakers stop too) and every task; the sessions stay the controller's.
    public func close() async {
        closed = true
        // Not cancelled with the caller (a command stopped by Ctrl-C closes in a cancelled task): the speakers are
        // told to stop, so none reports `playback-interrupted` when the links close.
        let actions = machine.close()
        await Task { await self.perform(actions) }.value
        for member in members.values { for t in member.tasks { t.cancel() } }
        members = [:]
        for (_, w) in mapWaiters { w.waiter.resume() }
        mapWaiters = [:]
        socket.close()
        clockChannel.close()
        events.finish()
    }

    // MARK: The machine's actions

    private func perform(_ actions: [PlaybackMachine.Action]) async {
        for action in actions {
            switch action {
            case let .stateChanged(new):
                guard new != state else { continue }
                state = new
                events.yield(.stateChanged(new))
            case let .time(seconds):
                events.yield(.time(seconds: seconds))
            case .ended:
                events.yield(.ended)
            case let .speakerJoined(id):
                events.yield(.speakerJoined(deviceId: id))
            case let .sourceFailed(seconds, category, message):
                events.yield(.sourceFailed(seconds: seconds, category: category, message: message))
            case let .announce(id, streamId):
                await announce(to: id, streamId: streamId)
            case let .startStreaming(run):
                streamTask?.task.cancel()
                streamTask = (run, Task { [weak self] in await self?.pump(run) })
            case let .stopStreaming(run):
                if let current = streamTask, current.run == run {
                    current.task.cancel()
                    streamTask = nil
                }
            case let .stopSpeakers(streamId, ids, reportErrors, afterAnotherController):
                for id in ids {
                    do {
                        try await members[id]?.session.stop(streamId: streamId)
                    } catch let e as SpeakerSessionError where afterAnotherController && e.deviceCode == .unknownStream {
                        // Another controller's stop or play got there first.
                    } catch {
                        if reportErrors { report(id, error) }
                    }
                }
            case let .pauseSpeakers(streamId, ids):
                for id in ids {
                    do { try await members[id]?.session.pause(streamId: streamId) } catch { report(id, error) }
                }
            case let .sendHistory(id, packets):
                guard let member = members[id], let host = member.session.host else { continue }
                await Self.send(packets.map { ($0, 1) }, to: [(host, member.session.hello.audioPort)], on: socket, tap: tap)
            case let .interrupted(why):
                interruption = switch why {
                case .everySpeakerLost:
                    SpeakerSessionError(.disconnected, "every speaker was lost; the playback stopped")
                case let .takenOver(other):
                    SpeakerSessionError(.interrupted, "another controller took the speakers over (stream \(other)); the playback stopped")
                }
            case let .startResumeTimer(epoch, delay):
                _ = clock.schedule(after: delay) { [weak self] in
                    Task { await self?.resumeGraceEnded(epoch) }
                }
            }
        }
    }

    private func resumeGraceEnded(_ epoch: UInt64) async {
        takePausePositions()
        await perform(machine.resumeGraceEnded(epoch: epoch, now: now()))
    }

    private func report(_ id: UInt64, _ error: any Error) {
        if let e = error as? SpeakerSessionError {
            events.yield(.speakerError(deviceId: id, code: e.deviceCode, message: e.message))
        } else if !(error is CancellationError) {
            events.yield(.speakerError(deviceId: id, code: nil, message: "\(error)"))
        }
    }

    /// FLAC (`options.encoding`) needs every member to speak version 3 and a rate a FLAC frame states: else one line
    /// naming the first speaker that does not (no fallback to PCM: the encoding was asked for, docs §7.2).
    private func checkEncoding(format: AudioFormat) throws(SpeakerSessionError) {
        let encoding = options.encoding
        guard encoding != .pcm else { return }
        guard encoding.carries(format) else {
            throw SpeakerSessionError(.invalidArgument, "--encoding \(encoding): \(format.sampleRate) Hz cannot travel as FLAC here (a multiple of 10 Hz or up to 65535 Hz); use --encoding pcm")
        }
        for id in machine.members {
            guard let session = members[id]?.session, session.hello.version < encoding.version else { continue }
            throw SpeakerSessionError(.versionMismatch, "--encoding \(encoding): speaker \(session.address) speaks protocol version \(session.hello.version), \(encoding) needs version \(encoding.version) on every speaker; use --encoding pcm")
        }
    }

    /// Waits for the member's clock map, then announces the stream to it; the machine learns whether it got it.
    private func announce(to id: UInt64, streamId: UInt32) async {
        guard let stream = machine.stream, stream.streamId == streamId else { return }
        if let session = members[id]?.session, session.hello.version < stream.schedule.encoding.version {
            // A speaker added to a FLAC stream that cannot decode it: it does not get the stream (the others play on).
            events.yield(.speakerError(deviceId: id, code: .unsupportedFormat,
                                       message: "speaker \(session.address) speaks protocol version \(session.hello.version): it cannot decode this \(stream.schedule.encoding) stream (version \(stream.schedule.encoding.version))"))
            return
        }
        await waitForMap(id)
        guard let member = members[id] else { return }
        guard member.mapInstalled else {
            events.yield(.speakerError(deviceId: id, code: .clockNotSynchronized,
                                       message: "speaker \(member.session.address): clock not synchronised within \(options.syncTimeout)"))
            return
        }
        do {
            try await member.session.play(streamId: streamId, format: stream.schedule.format, source: stream.kind, title: stream.title)
        } catch {
            report(id, error)
            return
        }
        await perform(machine.memberStarted(id, streamId: streamId, now: now()))
    }

    /// Returns once member `id` has a clock map, is gone, or `options.syncTimeout` has passed on the clock.
    private func waitForMap(_ id: UInt64) async {
        guard members[id]?.mapInstalled == false else { return }
        nextMapWaiter += 1
        let token = nextMapWaiter
        let timer = clock.schedule(after: options.syncTimeout) { [weak self] in
            Task { await self?.endMapWait(token) }
        }
        await withCheckedContinuation { mapWaiters[token] = (id, $0) }
        timer.cancel()
    }

    private func endMapWait(_ token: UInt64) { mapWaiters.removeValue(forKey: token)?.waiter.resume() }

    /// Wakes whoever waits for member `id`'s clock map (it has one, or it is gone).
    private func endMapWaits(of id: UInt64) {
        for (token, w) in mapWaiters where w.member == id { endMapWait(token) }
    }

    /// How long a clock-sync datagram's reply is waited for.
    public static let clockDatagramTimeout: Duration = .milliseconds(250)
    /// Unanswered clock-sync datagrams, with none ever answered, after which a member's clock sync goes over TCP.
    public static let clockDatagramAttempts = 4

    /// Where member `session`'s clock-sync datagrams go: its host and control port number (UDP), when it negotiated
    /// version 4 over TCP; nil: `clockSync` on the control link (older speakers, links without a host).
    static func clockPort(of session: SpeakerSession) -> (host: String, port: UInt16)? {
        guard session.hello.version >= SpeakerProtocolVersion.udpClockSync, let host = session.host,
              let port = session.controlPort else { return nil }
        return (host, port)
    }

    /// Measures member `id`'s clock (§6) until it leaves: as UDP datagrams with kernel receive times (version 4,
    /// §6.1), else `clockSync` on the control link. A member whose datagrams never get an answer (a firewall that
    /// lets TCP through but not UDP) falls back to the control link after `clockDatagramAttempts`.
    private func syncLoop(_ id: UInt64, _ session: SpeakerSession) async {
        var datagrams = Self.clockPort(of: session)
        var unanswered = 0, answered = false
        while !Task.isCancelled {
            do {
                let sample: ClockSample?
                if let target = datagrams {
                    sample = await clockChannel.exchange(host: target.host, port: target.port, timeout: Self.clockDatagramTimeout)
                    try Task.checkCancellation()
                    if sample != nil {
                        answered = true
                    } else {
                        unanswered += 1
                        if !answered, unanswered >= Self.clockDatagramAttempts {
                            logger.warning("speaker \(session.address): no answer to \(unanswered) clock-sync datagrams on UDP \(target.host):\(target.port); clock sync goes over TCP")
                            datagrams = nil
                        }
                    }
                } else {
                    let t1 = now()
                    let reply = try await session.clockSync(t1: t1)
                    sample = ClockSample(reply, receivedAt: now())
                }
                if let sample, let map = record(id, sample) {
                    try await session.setClockMap(map)
                    installed(id)
                }
            } catch is CancellationError {
                return
            } catch {
                guard await session.core.isOpen else { return }
            }
            let interval = members[id]?.tracker.nextInterval ?? .seconds(1)
            try? await clock.sleep(for: interval)
        }
    }

    /// Clock-sync datagrams answered and unanswered so far (version 4 members), for tests and the benchmark.
    public nonisolated var clockDatagramCounts: (answered: UInt64, unanswered: UInt64) { clockChannel.counts }

    private func record(_ id: UInt64, _ sample: ClockSample) -> ClockMap? {
        guard members[id] != nil else { return nil }
        members[id]!.tracker.add(sample)
        return members[id]!.tracker.mapToSend(at: now())
    }

    private func installed(_ id: UInt64) {
        members[id]?.mapInstalled = true
        endMapWaits(of: id)
    }

    private func speakerEvent(_ id: UInt64, _ event: SpeakerEvent) async {
        switch event {
        case let .volumeChanged(_, volume, _):
            volumes[id] = volume
        case let .playbackStateChanged(stream, .paused):
            await perform(machine.speakerPaused(id, streamId: stream, now: now()))
        case let .playbackStateChanged(stream, .playing):
            takePausePositions()
            await perform(machine.speakerResumed(id, streamId: stream, now: now()))
        case let .playbackStateChanged(stream, .stopped):
            await perform(machine.speakerStopped(id, streamId: stream))
        case let .playbackEnded(stream):
            await perform(machine.speakerEnded(id, streamId: stream))
        case let .error(device, code, message):
            events.yield(.speakerError(deviceId: device, code: code, message: message))
        default:
            break
        }
    }

    /// Gives the machine where each member paused the stream (version 5's `playbackPaused`, recorded by its session
    /// as it was read — so before the resume's replies and events that follow it): the resume starts at the earliest.
    private func takePausePositions() {
        guard case .paused = machine.playerState, machine.streamId != 0 else { return }
        let stream = machine.streamId
        for (id, member) in members {
            if let position = member.session.takePausePosition(of: stream) { machine.speakerPausedAt(id, position) }
        }
    }

    private func lost(_ id: UInt64, _ session: SpeakerSession) async {
        guard let member = members[id], member.session === session else { return }
        members[id] = nil
        for t in member.tasks { t.cancel() }
        endMapWaits(of: id)
        events.yield(.speakerLost(deviceId: id, reason: "link to speaker \(session.address) lost"))
        let open = reconnector(for: session)
        await perform(machine.memberLost(id, reconnecting: open != nil && !closed, now: now()))
        guard let open, !closed, !reconnecting.contains(id) else { return }
        reconnecting.insert(id)
        let interval = options.reconnectInterval
        let callback = onReconnect
        let clock = self.clock
        Task { [weak self] in
            while !Task.isCancelled {
                try? await clock.sleep(for: interval)
                guard let self, await self.wantsReconnect(id) else { return }
                if let s = try? await open(session) {
                    do {
                        try await s.joinSession()
                        await self.restoreVolume(id, s)
                        await callback(s)
                        await self.rejoined(id, s)
                    } catch {
                        await s.close()
                        continue
                    }
                    return
                }
            }
        }
    }

    /// How a lost member is reconnected: `reconnect`, or TCP to where its session was opened; nil: it is not.
    private func reconnector(for session: SpeakerSession) -> Reconnect? {
        guard options.reconnect else { return nil }
        if let reconnect { return reconnect }
        guard let host = session.host, let port = session.controlPort else { return nil }
        return { _ in try await SpeakerSession.connect(host: host, port: port, connectTimeout: .seconds(1)) }
    }

    /// The session's volume for member `id` coming back: the volume the other members share (changed while it was
    /// away, or it came back with its default), else (they differ, or there are none) its own as last known.
    private func sessionVolume(for id: UInt64) -> Int? {
        let others = Set(machine.members.filter { $0 != id }.compactMap { volumes[$0] })
        return others.count == 1 ? others.first : volumes[id]
    }

    /// Gives a rejoining speaker the session's volume (before it gets the stream), if it has another one.
    private func restoreVolume(_ id: UInt64, _ session: SpeakerSession) async {
        guard let target = sessionVolume(for: id), let info = try? await session.deviceInfo() else { return }
        volumes[id] = target
        guard Int(info.volume.value) != target else { return }
        do { try await session.setVolume(target) } catch { report(id, error) }
    }

    private func wantsReconnect(_ id: UInt64) -> Bool { !closed && reconnecting.contains(id) && members[id] == nil }

    private func rejoined(_ id: UInt64, _ session: SpeakerSession) async {
        reconnecting.remove(id)
        await add(session)
    }

    /// Stops a lost speaker's reconnection (it was removed from the session).
    public func forget(_ id: UInt64) { reconnecting.remove(id) }

    // MARK: Streaming

    /// The streaming loop of `run`: does what the machine's `step` says until it says finish (or the loop is
    /// cancelled: paused, stopped, ended).
    private func pump(_ run: UInt64) async {
        // The packets of this wake, sent together when the loop reads, waits or finishes (no suspension between the
        // steps that make them, so the members receiving cannot change meanwhile).
        var batch: [(bytes: [UInt8], copies: Int)] = []
        while !Task.isCancelled {
            switch machine.step(run: run, now: now()) {
            case let .read(maxFrames):
                await send(&batch)
                guard let source else {
                    machine.sourceRead(run: run, [])
                    continue
                }
                do {
                    let chunk = try await source.read(maxFrames: maxFrames)
                    machine.sourceRead(run: run, chunk)
                } catch {
                    // The source's failure, not a speaker's: what it gave still plays (then the end), and it is
                    // reported with where the source stopped.
                    let (category, message): (FailureCategory, String) = switch error {
                    case let coded as any CodedError: (coded.category, coded.message)
                    default: (.device, "\(error)")
                    }
                    await perform(machine.sourceFailed(run: run, category: category, message: message))
                }
            case let .send(bytes, _, copies):
                batch.append((bytes, copies))
            case let .idle(actions):
                await send(&batch)
                await perform(actions)
                try? await clock.sleep(for: options.wakeInterval)
            case let .finish(actions):
                await send(&batch)
                await perform(actions)
                return
            }
        }
    }

    /// Sends `batch` (emptied) to every member receiving the stream, each member's packets one after another.
    private func send(_ batch: inout [(bytes: [UInt8], copies: Int)]) async {
        guard !batch.isEmpty else { return }
        let packets = batch
        batch = []
        var targets: [(host: String, port: UInt16)] = []
        for id in machine.receivingIds {
            guard let m = members[id], let host = m.session.host else { continue }
            targets.append((host, m.session.hello.audioPort))
        }
        await Self.send(packets, to: targets, on: socket, tap: tap)
    }

    /// Sends each packet (`copies` times) to each target, off the actor: one hop for them all. (A send from the
    /// actor hops to the global executor and back for every datagram — two thread hand-offs per packet and speaker,
    /// which were most of the controller's CPU beside the kernel's own work.)
    private nonisolated static func send(_ packets: [(bytes: [UInt8], copies: Int)], to targets: [(host: String, port: UInt16)],
                                         on socket: UDPSocket, tap: SpeakerDatagramTap?) async {
        for target in targets {
            for packet in packets {
                for _ in 0..<packet.copies {
                    tap?(SpeakerDatagram(kind: .audio, host: target.host, port: target.port, outbound: true, bytes: packet.bytes))
                    try? await socket.send(packet.bytes, toHost: target.host, port: target.port)
                }
            }
        }
    }

    /// A member's `resendRequest`: the packets asked for that are still held and not yet due go to it again.
    private func resend(_ request: ResendRequest, to id: UInt64) async {
        let packets = machine.resendRequested(request, by: id, now: now())
        guard !packets.isEmpty, let m = members[id], let host = m.session.host else { return }
        await Self.send(packets.map { ($0, 1) }, to: [(host, m.session.hello.audioPort)], on: socket, tap: tap)
    }
}

/// What the player did for lost-packet recovery (§7.1), over its life.
public struct PlayerRecoveryStatistics: Sendable, Hashable {
    /// Sequence numbers the speakers asked for.
    public var requested: UInt64 = 0
    /// Packets sent again.
    public var resent: UInt64 = 0
    /// Asked for but no longer held, or already due (nothing sent).
    public var unavailable: UInt64 = 0
    public init() {}
}
