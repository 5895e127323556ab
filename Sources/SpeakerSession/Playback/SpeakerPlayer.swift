import Failure
import Glibc
import Logging
import Speaker
import SpeakerPlayback
import Support
import Transport

/// The controller's timeline: CLOCK_MONOTONIC in nanoseconds (presentation times and clock sync are on it).
public func monotonicNanoseconds() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
}

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
public actor SpeakerPlayer {
    private struct Member {
        var session: SpeakerSession
        var tracker = ClockTracker()
        var mapInstalled = false
        var receiving = false
        var resumed = false
        var tasks: [Task<Void, Never>] = []
    }

    public let options: PlayerOptions
    private let socket: UDPSocket
    private let now: @Sendable () -> UInt64
    private let logger: Logger
    private let events = Broadcast<PlayerEvent>()
    private var members: [UInt64: Member] = [:]
    private var order: [UInt64] = []
    /// Sessions that replace lost ones (the controller's list follows through `onReconnect`).
    private let onReconnect: @Sendable (SpeakerSession) async -> Void

    public private(set) var state: PlayerState = .initialized
    private var schedule: StreamSchedule?
    private var source: (any PCMSource)?
    private var title = ""
    private var sourceKind: StreamSource = .localFile
    private var pending: [UInt8] = []
    /// Frames read from the source since the stream's first frame (where a failing source stopped).
    private var readFrames: UInt64 = 0
    private var sourceDone = false
    private var endOfStreamSent = false
    private var endFrame: UInt64?
    private var startFrame: UInt64 = 0
    private var pausedFrame: UInt64 = 0
    private var lastSecond = -1
    /// The packets sent whose frames are at most 1 s past: a joining member gets those still ahead, and they are the
    /// retransmit buffer of lost-packet recovery (§7.1).
    private var history: [(sequence: UInt32, firstFrame: UInt64, frames: Int, presentation: UInt64, pcm: [UInt8], bytes: [UInt8])] = []
    public private(set) var recoveryStatistics = PlayerRecoveryStatistics()
    private var generation: UInt64 = 0
    private var streamTask: Task<Void, Never>?
    private var nextStreamId: UInt32 = UInt32.random(in: 1...0xFFFF)
    private var reconnecting: Set<UInt64> = []
    private var closed = false
    /// Each member's volume as last known (given at `add`, then its `volumeChanged` events), kept while it is lost:
    /// what a rejoining member is given back (`sessionVolume(for:)`).
    private var volumes: [UInt64: Int] = [:]

    /// A player sending audio from a UDP socket of its own.
    /// - Throws: `TransportError` when no UDP socket can be opened.
    public init(options: PlayerOptions = PlayerOptions(), now: @escaping @Sendable () -> UInt64 = monotonicNanoseconds,
                logger: Logger = Logger(label: "tuneup.speaker.player"),
                onReconnect: @escaping @Sendable (SpeakerSession) async -> Void = { _ in }) throws {
        self.options = options
        self.now = now
        self.logger = logger
        self.onReconnect = onReconnect
        socket = try UDPSocket.bind(host: "0.0.0.0", port: 0)
    }

    // MARK: The API

    /// Events from now on (the current state first).
    public func playerEvents() -> AsyncStream<PlayerEvent> {
        events.subscribe(bufferingPolicy: .bufferingNewest(1024), replay: [.stateChanged(state)])
    }

    /// Seconds of the stream heard so far (stream time, from its start even after `--from`); nil when nothing plays
    /// or is paused (HKWHub's TimeElapsed -1).
    public var elapsed: Double? {
        guard let schedule else { return nil }
        let frame: UInt64
        switch state {
        case .playing: frame = schedule.frame(at: now())
        case .paused: frame = pausedFrame
        default: return nil
        }
        return Double(frame) / Double(schedule.format.sampleRate)
    }

    /// The stream playing or paused (0: none).
    public var streamId: UInt32 { schedule?.streamId ?? 0 }

    /// The members' ids in order.
    public var memberIds: [UInt64] { order }

    /// Ids of the members that get the current stream.
    public var receivingIds: [UInt64] { order.filter { members[$0]?.receiving == true } }

    /// Plays `source` from `from` seconds on every member: waits for their clocks, announces the stream, and
    /// streams until the end, `stop`, or a stop by another controller. Returns once the stream started.
    /// - Throws: `SpeakerSessionError` — `.invalidArgument` (no member, a `from` the source cannot seek to),
    ///   `.notConnected` when no member could be started.
    public func play(_ source: any PCMSource, title: String = "", kind: StreamSource = .localFile, from seconds: Double = 0) async throws {
        guard !closed else { throw SpeakerSessionError(.notConnected, "the player is closed") }
        guard !order.isEmpty else {
            throw SpeakerSessionError(.invalidArgument, "no speaker is in the playback session; add one first")
        }
        guard seconds.isFinite, seconds >= 0 else { throw SpeakerSessionError(.invalidArgument, "--from must be 0 or more seconds") }
        if schedule != nil { await stopStream(tellSpeakers: true, reason: nil) }
        let format = source.format
        let first = UInt64(seconds * Double(format.sampleRate))
        if first > 0 {
            if let total = source.totalFrames, first >= total {
                throw SpeakerSessionError(.invalidArgument, "--from \(seconds) s is beyond the end (\(Double(total) / Double(format.sampleRate)) s)")
            }
            guard source.isSeekable else { throw SpeakerSessionError(.invalidArgument, "this source cannot start at \(seconds) s (not seekable)") }
            try await source.seek(toFrame: first)
        }
        let id = nextStreamId
        nextStreamId = nextStreamId == UInt32.max ? 1 : nextStreamId + 1
        self.source = source
        self.title = title
        sourceKind = kind
        pending = []
        readFrames = 0
        sourceDone = false
        endOfStreamSent = false
        endFrame = nil
        history = []
        startFrame = first
        lastSecond = -1
        schedule = StreamSchedule(streamId: id, format: format, startFrame: first, startTime: now())
        generation += 1
        var started = 0
        for memberId in order {
            if await startMember(memberId) { started += 1 }
        }
        guard started > 0 else {
            schedule = nil
            throw SpeakerSessionError(.notConnected, "no speaker of the session could start the stream")
        }
        schedule!.anchor(frame: first, at: now() &+ Self.ns(options.buffer))
        setState(.playing)
        startStreaming()
    }

    /// Pauses the stream on every member.
    /// - Throws: `SpeakerSessionError(.invalidArgument)` when nothing plays.
    public func pause() async throws {
        guard state == .playing, let schedule else { throw SpeakerSessionError(.invalidArgument, "nothing is playing") }
        applyPause()
        for id in receivingIds {
            do { try await members[id]?.session.pause(streamId: schedule.streamId) } catch { report(id, error) }
        }
    }

    /// Resumes a paused stream on every member.
    public func resume() async throws {
        guard state == .paused, let schedule else { throw SpeakerSessionError(.invalidArgument, "nothing is paused") }
        for id in receivingIds {
            do { try await members[id]?.session.resume(streamId: schedule.streamId) } catch { report(id, error) }
        }
        applyResume()
    }

    /// Stops the stream on every member (it cannot be resumed).
    public func stop() async {
        await stopStream(tellSpeakers: true, reason: nil)
    }

    // MARK: Members

    /// Adds a speaker (in the playback session) to the player: its clock is measured from now on; during playback it
    /// gets the stream.
    public func add(_ session: SpeakerSession, volume: Int? = nil) async {
        let id = session.deviceId
        if let volume { volumes[id] = volume }
        if members[id] != nil { await remove(id, stopIfLast: false) }
        members[id] = Member(session: session)
        if !order.contains(id) { order.append(id) }
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
        if schedule != nil, state == .playing || state == .paused {
            if await startMember(id) {
                if state == .paused, let schedule {
                    do { try await session.pause(streamId: schedule.streamId) } catch { report(id, error) }
                } else {
                    await sendHistory(to: id)
                }
            }
        }
    }

    /// Takes a speaker out of the player; with `stopIfLast`, the playback stops when it was the last that played.
    public func remove(_ id: UInt64, stopIfLast: Bool = true) async {
        guard let member = members.removeValue(forKey: id) else { return }
        order.removeAll { $0 == id }
        for t in member.tasks { t.cancel() }
        if stopIfLast, schedule != nil, receivingIds.isEmpty {
            await stopStream(tellSpeakers: false, reason: nil)
        }
    }

    /// Stops streaming (the speakers stop too) and every task; the sessions stay the controller's.
    public func close() async {
        closed = true
        // Not cancelled with the caller (a command stopped by Ctrl-C closes in a cancelled task): the speakers are
        // told to stop, so none reports `playback-interrupted` when the links close.
        await Task { await self.stopStream(tellSpeakers: true, reason: nil) }.value
        for id in order { for t in members[id]?.tasks ?? [] { t.cancel() } }
        members = [:]
        order = []
        socket.close()
        events.finish()
    }

    // MARK: Internals

    static func ns(_ d: Duration) -> UInt64 {
        let (s, a) = d.components
        return UInt64(max(0, s)) &* 1_000_000_000 &+ UInt64(max(0, a) / 1_000_000_000)
    }

    private func setState(_ new: PlayerState) {
        guard new != state else { return }
        state = new
        events.yield(.stateChanged(new))
    }

    private func report(_ id: UInt64, _ error: any Error) {
        if let e = error as? SpeakerSessionError {
            events.yield(.speakerError(deviceId: id, code: e.deviceCode, message: e.message))
        } else if !(error is CancellationError) {
            events.yield(.speakerError(deviceId: id, code: nil, message: "\(error)"))
        }
    }

    /// Waits for the member's clock map, then announces the stream to it. False when it could not start.
    private func startMember(_ id: UInt64) async -> Bool {
        guard let schedule else { return false }
        let deadline = now() &+ Self.ns(options.syncTimeout)
        while members[id]?.mapInstalled == false, now() < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        guard let member = members[id] else { return false }
        guard member.mapInstalled else {
            events.yield(.speakerError(deviceId: id, code: .clockNotSynchronized,
                                       message: "speaker \(member.session.address): clock not synchronised within \(options.syncTimeout)"))
            return false
        }
        do {
            try await member.session.play(streamId: schedule.streamId, format: schedule.format, source: sourceKind, title: title)
        } catch {
            report(id, error)
            return false
        }
        guard self.schedule?.streamId == schedule.streamId, members[id] != nil else { return false }
        members[id]!.receiving = true
        members[id]!.resumed = false
        events.yield(.speakerJoined(deviceId: id))
        return true
    }

    /// Sends a joining member the packets already sent whose frames are still ahead, so it starts at once.
    private func sendHistory(to id: UInt64) async {
        guard let member = members[id], let host = member.session.host else { return }
        let soon = now() &+ 20_000_000
        for entry in history where entry.presentation > soon {
            try? await socket.send(entry.bytes, toHost: host, port: member.session.hello.audioPort)
        }
    }

    private func syncLoop(_ id: UInt64, _ session: SpeakerSession) async {
        while !Task.isCancelled {
            let t1 = now()
            do {
                let reply = try await session.clockSync(t1: t1)
                let t4 = now()
                if let map = record(id, ClockSample(reply, receivedAt: t4)) {
                    try await session.setClockMap(map)
                    installed(id)
                }
            } catch is CancellationError {
                return
            } catch {
                guard await session.core.isOpen else { return }
            }
            let interval = members[id]?.tracker.nextInterval ?? .seconds(1)
            try? await Task.sleep(for: interval)
        }
    }

    private func record(_ id: UInt64, _ sample: ClockSample) -> ClockMap? {
        guard members[id] != nil else { return nil }
        members[id]!.tracker.add(sample)
        return members[id]!.tracker.mapToSend(at: now())
    }

    private func installed(_ id: UInt64) { members[id]?.mapInstalled = true }

    private func speakerEvent(_ id: UInt64, _ event: SpeakerEvent) async {
        if case let .volumeChanged(_, volume, _) = event { volumes[id] = volume }
        guard let schedule else {
            if case let .error(device, code, message) = event { events.yield(.speakerError(deviceId: device, code: code, message: message)) }
            return
        }
        switch event {
        case let .playbackStateChanged(stream, speakerState) where stream == schedule.streamId:
            switch speakerState {
            case .paused where state == .playing:
                applyPause()
            case .playing where state == .paused:
                members[id]?.resumed = true
                let waiting = receivingIds.filter { members[$0]?.resumed == false }
                if waiting.isEmpty { applyResume() } else { resumeSoon() }
            case .stopped where state == .playing || state == .paused:
                // Stopped by another controller, which may not have reached every member yet: the others are
                // stopped here, so that none is left playing to report `playback-interrupted` when this player
                // disconnects.
                if !endOfStreamSent { await stopStream(tellSpeakers: true, reason: nil, except: id) }
            default: break
            }
        case let .playbackEnded(stream) where stream == schedule.streamId:
            finishEnded()
        case let .error(device, code, message):
            events.yield(.speakerError(deviceId: device, code: code, message: message))
        default: break
        }
    }

    /// Another controller resumed: start once every member did, or after a moment.
    private func resumeSoon() {
        let g = generation
        Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(300))
            await self?.resumeIfStill(g)
        }
    }

    private func resumeIfStill(_ g: UInt64) {
        if generation == g, state == .paused { applyResume() }
    }

    private func lost(_ id: UInt64, _ session: SpeakerSession) async {
        guard let member = members[id], member.session === session else { return }
        members[id] = nil
        order.removeAll { $0 == id }
        for t in member.tasks { t.cancel() }
        events.yield(.speakerLost(deviceId: id, reason: "link to speaker \(session.address) lost"))
        if schedule != nil, receivingIds.isEmpty, !options.reconnect || session.host == nil {
            await stopStream(tellSpeakers: false, reason: nil)
        }
        guard options.reconnect, !closed, let host = session.host, let port = session.controlPort, !reconnecting.contains(id) else { return }
        reconnecting.insert(id)
        let interval = options.reconnectInterval
        let callback = onReconnect
        Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, await self.wantsReconnect(id) else { return }
                if let s = try? await SpeakerSession.connect(host: host, port: port, connectTimeout: .seconds(1)) {
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

    /// The session's volume for member `id` coming back: the volume the other members share (changed while it was
    /// away, or it came back with its default), else (they differ, or there are none) its own as last known.
    private func sessionVolume(for id: UInt64) -> Int? {
        let others = Set(order.filter { $0 != id }.compactMap { volumes[$0] })
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

    private func startStreaming() {
        streamTask?.cancel()
        let g = generation
        streamTask = Task { [weak self] in await self?.pump(g) }
    }

    private func pump(_ g: UInt64) async {
        let clock = ContinuousClock()
        while !Task.isCancelled, g == generation, state == .playing {
            let horizon = now() &+ Self.ns(options.buffer)
            while g == generation, state == .playing, !endOfStreamSent, let s = schedule, s.nextPresentationTime <= horizon {
                let frames = s.framesPerPacket
                await fill(frames, g)
                guard g == generation, state == .playing, schedule != nil else { return }
                let bpf = schedule!.format.bytesPerFrame
                let take = min(pending.count, frames * bpf)
                let pcm = Array(pending.prefix(take))
                pending.removeFirst(take)
                let last = sourceDone && pending.isEmpty
                guard let packet = try? schedule!.packet(pcm: pcm, endOfStream: last) else { break }
                let bytes = packet.encode()
                if last {
                    endOfStreamSent = true
                    endFrame = packet.firstFrame + UInt64(packet.frameCount)
                }
                history.append((packet.sequence, packet.firstFrame, packet.frameCount, packet.presentationTime, pcm, bytes))
                // The end of the stream goes out three times: no later packet would reveal its loss (a speaker
                // drops the duplicates).
                for _ in 0..<(last ? 3 : 1) {
                    for id in order {
                        guard let m = members[id], m.receiving, let host = m.session.host else { continue }
                        try? await socket.send(bytes, toHost: host, port: m.session.hello.audioPort)
                    }
                }
            }
            trimHistory()
            reportTime()
            if endOfStreamSent, let endFrame, let s = schedule, now() > s.presentationTime(ofFrame: endFrame) &+ 500_000_000 {
                // No speaker said it ended (all lost, or the last packets came too late after a source that stalled):
                // stop the speakers that still wait for the stream, and end on the timeline.
                for id in receivingIds {
                    try? await members[id]?.session.stop(streamId: s.streamId)
                }
                finishEnded()
                return
            }
            try? await clock.sleep(for: options.wakeInterval)
        }
    }

    /// Reads the source until `pending` holds `frames` frames or the source ends.
    private func fill(_ frames: Int, _ g: UInt64) async {
        guard let source, let format = schedule?.format else { return }
        let want = frames * format.bytesPerFrame
        while pending.count < want, !sourceDone {
            do {
                let chunk = try await source.read(maxFrames: max(frames, 4096))
                guard g == generation else { return }
                if chunk.isEmpty {
                    sourceDone = true
                } else {
                    pending += chunk
                    readFrames += UInt64(chunk.count / format.bytesPerFrame)
                }
            } catch {
                guard g == generation else { return }
                // The source's failure, not a speaker's: what it gave still plays (then the end), and it is reported
                // with where the source stopped.
                sourceDone = true
                let seconds = Double(startFrame + readFrames) / Double(format.sampleRate)
                let (category, message): (FailureCategory, String) = switch error {
                case let coded as any CodedError: (coded.category, coded.message)
                default: (.device, "\(error)")
                }
                events.yield(.sourceFailed(seconds: seconds, category: category, message: message))
            }
        }
    }

    /// A member's `resendRequest`: the packets asked for that are still held and not yet due go to it again.
    private func resend(_ request: ResendRequest, to id: UInt64) async {
        guard let schedule, request.streamId == schedule.streamId, let m = members[id], m.receiving,
              let host = m.session.host, let first = history.first else { return }
        let soon = now()
        for sequence in request.sequences {
            recoveryStatistics.requested += 1
            let index = Int(sequence &- first.sequence)
            guard index < history.count, history[index].sequence == sequence, history[index].presentation > soon else {
                recoveryStatistics.unavailable += 1
                continue
            }
            try? await socket.send(history[index].bytes, toHost: host, port: m.session.hello.audioPort)
            recoveryStatistics.resent += 1
        }
    }

    private func trimHistory() {
        let keep = now() &- 1_000_000_000
        let n = history.prefix { $0.presentation < keep }.count
        if n > 0 { history.removeFirst(n) }
    }

    private func reportTime() {
        guard let schedule, state == .playing else { return }
        let second = Int(schedule.frame(at: now()) / UInt64(schedule.format.sampleRate))
        if second > lastSecond, schedule.frame(at: now()) > startFrame || second > 0 {
            if lastSecond >= 0 || second > Int(startFrame / UInt64(schedule.format.sampleRate)) {
                events.yield(.time(seconds: second))
            }
            lastSecond = second
        }
    }

    private func applyPause() {
        guard state == .playing, var s = schedule else { return }
        generation += 1
        streamTask?.cancel()
        let position = max(s.frame(at: now()), startFrame)
        // The frames sent but not heard go back in front of what is still to send.
        var unheard: [UInt8] = []
        let bpf = s.format.bytesPerFrame
        for entry in history where entry.firstFrame + UInt64(entry.frames) > position {
            let skip = entry.firstFrame < position ? Int(position - entry.firstFrame) * bpf : 0
            unheard += entry.pcm[skip...]
        }
        pending = unheard + pending
        if endOfStreamSent {
            endOfStreamSent = false
            endFrame = nil
        }
        history = []
        s.anchor(frame: position, at: now())
        schedule = s
        pausedFrame = position
        for id in order { members[id]?.resumed = false }
        setState(.paused)
    }

    private func applyResume() {
        guard state == .paused, schedule != nil else { return }
        generation += 1
        schedule!.anchor(frame: pausedFrame, at: now() &+ Self.ns(options.buffer))
        lastSecond = Int(pausedFrame / UInt64(schedule!.format.sampleRate))
        setState(.playing)
        startStreaming()
    }

    private func finishEnded() {
        guard schedule != nil, state == .playing else { return }
        generation += 1
        streamTask?.cancel()
        if let s = schedule, let endFrame {
            let second = Int(endFrame / UInt64(s.format.sampleRate))
            if second > lastSecond { events.yield(.time(seconds: second)) }
        }
        schedule = nil
        for id in order { members[id]?.receiving = false }
        events.yield(.ended)
        setState(.stopped)
    }

    /// Ends the stream; with `tellSpeakers`, every member that got it (but `except`) is stopped before the state
    /// turns stopped, so whoever waits for that state (and then disconnects) leaves no speaker playing.
    private func stopStream(tellSpeakers: Bool, reason: String?, except: UInt64? = nil) async {
        guard let s = schedule else { return }
        generation += 1
        streamTask?.cancel()
        schedule = nil
        let targets = receivingIds.filter { $0 != except }
        for id in order { members[id]?.receiving = false }
        if tellSpeakers {
            for id in targets {
                do {
                    try await members[id]?.session.stop(streamId: s.streamId)
                } catch let e as SpeakerSessionError where except != nil && e.deviceCode == .unknownStream {
                    // Another controller's stop or play got there first.
                } catch {
                    report(id, error)
                }
            }
        }
        setState(.stopped)
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
