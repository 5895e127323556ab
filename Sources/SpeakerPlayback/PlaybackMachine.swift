import Failure
import Speaker

/// The decisions of the controller's player (`SpeakerPlayer`) as a value: which stream plays, paused or stopped, who
/// of the members gets it, which packet goes out next and when the playback ends. No I/O, no clock, no tasks: every
/// event is one mutating function given the controller time (`now`, CLOCK_MONOTONIC nanoseconds) where it matters,
/// and answers with the `Action`s the shell performs in order (announcing to speakers, stopping them, events,
/// starting or cancelling its streaming loop). An event that does not apply in the current state (a reply for
/// another stream, a stale loop's read, a resume of nothing) changes nothing and asks for nothing; the commands that
/// can be refused (`pause`, `resume`, `started`) throw a `Refusal`.
///
/// States (each case carries only what is valid in it):
/// - `initialized`: nothing played yet;
/// - `starting`: a stream is announced to the members one by one; what the player shows is still what it was;
/// - `playing(run:)`: packets go out; `run` names the streaming loop allowed to send (a loop of an earlier run, or one
///   still reading when the playback paused, finds its `step`s refused);
/// - `paused`: the stream waits at `frame`; `resumed` are the members another controller resumed (the player resumes
///   once all did, or when the grace timer of `epoch` fires);
/// - `stopped`: ended, stopped here or by another controller.
///
/// Members are kept in the order they were added; every playing or paused stream knows which of them get it.
public struct PlaybackMachine: Sendable {
    /// A packet sent, kept until its frames are 1 s past: a joining member gets those still ahead, and they are the
    /// retransmit buffer of lost-packet recovery (docs/speaker-protocol.md §7.1).
    public struct SentPacket: Sendable, Hashable {
        public let sequence: UInt32
        public let firstFrame: UInt64
        public let frames: Int
        public let presentation: UInt64
        let pcm: [UInt8]
        public let bytes: [UInt8]
    }

    /// One stream, from its announcement to its end.
    public struct Stream: Sendable {
        public internal(set) var schedule: StreamSchedule
        public let title: String
        public let kind: StreamSource
        /// The frame the stream started at (`--from`).
        public let startFrame: UInt64
        /// Read from the source, not yet sent.
        var pending: [UInt8] = []
        /// Frames read from the source since `startFrame` (where a failing source stopped).
        var readFrames: UInt64 = 0
        var sourceDone = false
        /// The frame after the last, once the end of the stream was sent.
        var endFrame: UInt64?
        /// The last whole second reported (`Action.time`); -1 before the first.
        var lastSecond = -1
        var history: [SentPacket] = []
        /// The members that get this stream.
        var receiving: Set<UInt64> = []
        /// The members that reported its last frame heard (`speakerEnded`): the playback ends once every member
        /// receiving it did (or at the end grace).
        var ended: Set<UInt64> = []
        /// When the last member receiving it was lost (nil while one receives it): the playback waits `lostTimeout`
        /// for one to come back, then stops (`Interruption.everySpeakerLost`).
        var orphanedAt: UInt64?

        public var streamId: UInt32 { schedule.streamId }
        var rate: UInt64 { UInt64(schedule.format.sampleRate) }
    }

    /// Where a paused stream waits.
    public struct Pause: Sendable, Hashable {
        /// The frame heard next, as the player's timeline placed it when the pause was applied.
        public let frame: UInt64
        /// The first frame each member had not played when its pause took effect (version 5's `playbackPaused`):
        /// the stream resumes from the earliest (docs/speaker-protocol.md §3.2).
        public var reported: [UInt64: UInt64] = [:]
        /// Names this pause for its grace timer (`resumeGraceEnded(epoch:now:)`).
        public let epoch: UInt64
        /// Members that another controller resumed.
        public var resumed: Set<UInt64> = []
    }

    public enum State: Sendable {
        case initialized
        /// `shown`: the state the player shows meanwhile (initialized or stopped).
        case starting(Stream, shown: PlayerState)
        case playing(Stream, run: UInt64)
        case paused(Stream, Pause)
        case stopped
    }

    /// Why a playback stopped by itself before its end (not a stop, not the end heard).
    public enum Interruption: Sendable, Hashable {
        /// Every member that got the stream was lost (and none came back within `lostTimeout`).
        case everySpeakerLost
        /// Another controller played stream `by` on every member that got this one.
        case takenOver(by: UInt32)
    }

    /// What the shell does, in order.
    public enum Action: Sendable, Hashable {
        /// The state the player shows changed (after the actions before it are done).
        case stateChanged(PlayerState)
        /// Whole seconds of the stream heard so far.
        case time(seconds: Int)
        /// The last frame was heard.
        case ended
        /// `id` gets the stream.
        case speakerJoined(UInt64)
        /// The source failed after `seconds` of the stream.
        case sourceFailed(seconds: Double, category: FailureCategory, message: String)
        /// Announce stream `streamId` to member `id` (once its clock is synchronised), then report `memberStarted`.
        case announce(to: UInt64, streamId: UInt32)
        /// Start the streaming loop of `run` (it calls `step(run:now:)` until told to finish).
        case startStreaming(run: UInt64)
        /// Cancel the streaming loop of `run`, if it still runs.
        case stopStreaming(run: UInt64)
        /// Tell `ids` to stop `streamId`. `reportErrors`: their failures are reported (else ignored);
        /// `afterAnotherController`: a refusal for an unknown stream is expected (that controller got there first).
        case stopSpeakers(streamId: UInt32, ids: [UInt64], reportErrors: Bool, afterAnotherController: Bool)
        /// Tell `ids` to pause `streamId` (their failures are reported).
        case pauseSpeakers(streamId: UInt32, ids: [UInt64])
        /// Send these packets (already sent to the others, still ahead) to a member that joined.
        case sendHistory(to: UInt64, packets: [[UInt8]])
        /// Call `resumeGraceEnded(epoch:now:)` after `delay`.
        case startResumeTimer(epoch: UInt64, delay: Duration)
        /// The playback stops by itself, for this reason (before `stateChanged(.stopped)`; no `.ended`).
        case interrupted(Interruption)
    }

    /// What the streaming loop of a run does next.
    public enum Step: Sendable, Hashable {
        /// Read up to `maxFrames` from the source, then `sourceRead` or `sourceFailed`.
        case read(maxFrames: Int)
        /// Send `bytes` to each of `ids` (that still receives), `copies` times.
        case send(bytes: [UInt8], to: [UInt64], copies: Int)
        /// Perform these, then sleep a wake interval.
        case idle([Action])
        /// Perform these; the loop ends.
        case finish([Action])
    }

    /// A command that does not apply now.
    public enum Refusal: Error, Sendable, Hashable {
        case notPlaying
        case notPaused
        /// `started` for a stream that is not (or no longer) starting.
        case notStarting
        /// No member got the stream.
        case noMemberStarted
    }

    /// Lost-packet recovery counters, over the machine's life.
    public struct Recovery: Sendable, Hashable {
        public var requested: UInt64 = 0
        public var resent: UInt64 = 0
        public var unavailable: UInt64 = 0
        public init(requested: UInt64 = 0, resent: UInt64 = 0, unavailable: UInt64 = 0) {
            self.requested = requested
            self.resent = resent
            self.unavailable = unavailable
        }
    }

    public private(set) var state: State = .initialized
    /// The members' ids, in the order they were added.
    public private(set) var members: [UInt64] = []
    public private(set) var recovery = Recovery()
    /// How far ahead of their presentation time packets go out, ns.
    public let buffer: UInt64
    /// How long a stream paused here waits for the members another controller did not resume yet.
    public let resumeGrace: Duration
    /// How long after its last frame's time a stream waits for the members that did not report it heard yet (ns):
    /// then they are stopped and the playback ends.
    public let endGrace: UInt64
    /// How long a playing stream that lost every member waits for one to come back (ns).
    public let lostTimeout: UInt64
    private var nextStreamId: UInt32
    /// Names runs and pauses (never reused).
    private var nextEpoch: UInt64 = 1

    public init(buffer: Duration, resumeGrace: Duration = .milliseconds(300), endGrace: Duration = .seconds(2),
                lostTimeout: Duration = .seconds(3), firstStreamId: UInt32) {
        self.buffer = Self.ns(buffer)
        self.resumeGrace = resumeGrace
        self.endGrace = Self.ns(endGrace)
        self.lostTimeout = Self.ns(lostTimeout)
        nextStreamId = firstStreamId == 0 ? 1 : firstStreamId
    }

    public static func ns(_ d: Duration) -> UInt64 {
        let (s, a) = d.components
        return UInt64(max(0, s)) &* 1_000_000_000 &+ UInt64(max(0, a) / 1_000_000_000)
    }

    // MARK: Queries

    /// The state the player shows.
    public var playerState: PlayerState {
        switch state {
        case .initialized: .initialized
        case let .starting(_, shown): shown
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
    }

    /// The stream announced, playing or paused.
    public var stream: Stream? {
        switch state {
        case let .starting(s, _), let .playing(s, _), let .paused(s, _): s
        case .initialized, .stopped: nil
        }
    }

    /// The stream announced, playing or paused (0: none).
    public var streamId: UInt32 { stream?.streamId ?? 0 }

    /// The members that get the current stream, in order.
    public var receivingIds: [UInt64] {
        guard let s = stream else { return [] }
        return members.filter { s.receiving.contains($0) }
    }

    public func receives(_ id: UInt64) -> Bool { stream?.receiving.contains(id) == true }

    /// Seconds of the stream heard at `now` (from its start even after `--from`); nil unless playing or paused.
    public func elapsed(at now: UInt64) -> Double? {
        switch state {
        case let .playing(s, _): Double(s.schedule.frame(at: now)) / Double(s.rate)
        case let .paused(s, p): Double(p.frame) / Double(s.rate)
        default: nil
        }
    }

    /// The stream and members a `resume` tells, once they are told, call `resume(now:)`.
    public func resumeTargets() throws(Refusal) -> (streamId: UInt32, ids: [UInt64]) {
        guard case let .paused(s, _) = state else { throw .notPaused }
        return (s.streamId, receivingIds)
    }

    // MARK: Commands

    /// Announces a new stream: the stream playing or paused is stopped first (its speakers told), then every member
    /// is announced to; call `started(streamId:now:)` once they were. Returns the new stream's id with the actions.
    public mutating func start(format: AudioFormat, encoding: AudioEncoding = .pcm, startFrame: UInt64, title: String,
                               kind: StreamSource, now: UInt64) -> (streamId: UInt32, actions: [Action]) {
        var actions = end(tellSpeakers: true, except: nil)
        let id = nextStreamId
        nextStreamId = nextStreamId == UInt32.max ? 1 : nextStreamId + 1
        let stream = Stream(schedule: StreamSchedule(streamId: id, format: format, encoding: encoding, startFrame: startFrame, startTime: now),
                            title: title, kind: kind, startFrame: startFrame)
        state = .starting(stream, shown: playerState)
        actions += members.map { .announce(to: $0, streamId: id) }
        return (id, actions)
    }

    /// Every member was announced to: the stream plays from its first frame `buffer` from now.
    /// - Throws: `.notStarting` when `streamId` is not starting (stopped meanwhile), `.noMemberStarted` (the
    ///   player shows what it showed before).
    public mutating func started(streamId: UInt32, now: UInt64) throws(Refusal) -> [Action] {
        guard case .starting(var s, let shown) = state, s.streamId == streamId else { throw .notStarting }
        guard !s.receiving.isEmpty else {
            state = shown == .initialized ? .initialized : .stopped
            throw .noMemberStarted
        }
        s.schedule.anchor(frame: s.startFrame, at: now &+ buffer)
        return play(s)
    }

    /// Pauses the stream playing (the speakers are told after the player shows paused).
    public mutating func pause(now: UInt64) throws(Refusal) -> [Action] {
        guard case let .playing(s, _) = state else { throw .notPlaying }
        return applyPause(now: now) + [.pauseSpeakers(streamId: s.streamId, ids: receivingIds)]
    }

    /// Resumes the stream paused (once `resumeTargets()` were told).
    public mutating func resume(now: UInt64) throws(Refusal) -> [Action] {
        guard case .paused = state else { throw .notPaused }
        return applyResume(now: now)
    }

    /// Stops the stream (its speakers told); nothing when none is announced, playing or paused.
    public mutating func stop() -> [Action] {
        end(tellSpeakers: true, except: nil)
    }

    /// The player closes: the stream stops (its speakers told) and the members are forgotten.
    public mutating func close() -> [Action] {
        let actions = end(tellSpeakers: true, except: nil)
        members = []
        return actions
    }

    // MARK: Members

    /// A member was added (after the same id was removed, if it was one): it is announced to when a stream plays or
    /// is paused.
    public mutating func memberAdded(_ id: UInt64) -> [Action] {
        if !members.contains(id) { members.append(id) }
        switch state {
        case let .playing(s, _), let .paused(s, _): return [.announce(to: id, streamId: s.streamId)]
        default: return []
        }
    }

    /// A member got the announcement of `streamId`: it receives the stream from now on. Joining a paused stream it
    /// is paused; joining a playing one it gets the packets still ahead.
    public mutating func memberStarted(_ id: UInt64, streamId: UInt32, now: UInt64) -> [Action] {
        guard members.contains(id) else { return [] }
        switch state {
        case .starting(var s, let shown) where s.streamId == streamId:
            s.receiving.insert(id)
            state = .starting(s, shown: shown)
            return [.speakerJoined(id)]
        case .playing(var s, let run) where s.streamId == streamId:
            s.receiving.insert(id)
            s.orphanedAt = nil
            state = .playing(s, run: run)
            let soon = now &+ 20_000_000
            let packets = s.history.filter { $0.presentation > soon }.map(\.bytes)
            return [.speakerJoined(id)] + (packets.isEmpty ? [] : [.sendHistory(to: id, packets: packets)])
        case .paused(var s, let p) where s.streamId == streamId:
            s.receiving.insert(id)
            s.orphanedAt = nil
            state = .paused(s, p)
            return [.speakerJoined(id), .pauseSpeakers(streamId: streamId, ids: [id])]
        default:
            return []
        }
    }

    /// A member was removed or its link lost. With `stopIfLast`, the stream stops (the speakers are not told) when
    /// no member gets it any more.
    public mutating func memberRemoved(_ id: UInt64, stopIfLast: Bool) -> [Action] {
        members.removeAll { $0 == id }
        guard stopsReceiving(id) else { return [] }
        if case let .playing(s, run) = state, !s.receiving.isEmpty, s.receiving.isSubset(of: s.ended) {
            return finishEnded(s, run: run)  // the others heard the end
        }
        guard stopIfLast, receivingIds.isEmpty else { return [] }
        return end(tellSpeakers: false, except: nil)
    }

    /// Member `id`'s link was lost. When it was the last member receiving the stream, the playback stops with
    /// `Interruption.everySpeakerLost` — at once when the member is not reconnected, else once none came back within
    /// `lostTimeout` (or the stream's end passed). Otherwise as `memberRemoved` (the others play on).
    public mutating func memberLost(_ id: UInt64, reconnecting: Bool, now: UInt64) -> [Action] {
        let received = receives(id)
        var actions = memberRemoved(id, stopIfLast: false)
        guard receivingIds.isEmpty else { return actions }
        switch state {
        case .playing(var s, let run) where received:
            guard reconnecting else { return actions + interrupt(.everySpeakerLost) }
            s.orphanedAt = now
            state = .playing(s, run: run)
        case .paused(var s, let p) where received:
            guard reconnecting else { return actions + interrupt(.everySpeakerLost) }
            s.orphanedAt = now
            state = .paused(s, p)
        case .starting, .playing, .paused:
            if !reconnecting { actions += end(tellSpeakers: false, except: nil) }
        case .initialized, .stopped:
            break
        }
        return actions
    }

    // MARK: The speakers' events

    /// Member `id` reports `streamId` paused (here or by another controller): a playing stream pauses.
    public mutating func speakerPaused(_ id: UInt64, streamId: UInt32, now: UInt64) -> [Action] {
        guard case let .playing(s, _) = state, s.streamId == streamId else { return [] }
        return applyPause(now: now)
    }

    /// Member `id` reports where it paused (version 5's `playbackPaused`, `PausePosition`): the first frame of the
    /// stream it had not played. The stream resumes from the earliest frame the members report (members that report
    /// nothing — below version 5, or nothing played — resume there too); a member that played further skips the
    /// frames it played itself, so none is played twice or left out. A report outside what was sent is ignored.
    public mutating func speakerPausedAt(_ id: UInt64, _ position: PausePosition) {
        guard case .paused(let s, var p) = state, s.streamId == position.streamId, s.receiving.contains(id),
              let frame = position.frame else { return }
        let low = s.history.first?.firstFrame ?? p.frame
        let high = s.history.last.map { $0.firstFrame + UInt64($0.frames) } ?? p.frame
        guard frame >= low, frame <= high else { return }
        p.reported[id] = frame
        state = .paused(s, p)
    }

    /// Where the stream paused resumes: the earliest frame a member reported, else where the timeline placed it.
    public var resumeFrame: UInt64? {
        guard case let .paused(s, p) = state else { return nil }
        return p.reported.filter { s.receiving.contains($0.key) }.values.min() ?? p.frame
    }

    /// Member `id` reports `streamId` playing again (another controller resumed): the player resumes once every
    /// member that gets the stream did, or when the grace timer fires.
    public mutating func speakerResumed(_ id: UInt64, streamId: UInt32, now: UInt64) -> [Action] {
        if let s = stream, s.streamId != streamId, streamId != 0 { return takenOver(id, by: streamId) }
        guard case .paused(let s, var p) = state, s.streamId == streamId else { return [] }
        if members.contains(id) { p.resumed.insert(id) }
        state = .paused(s, p)
        if receivingIds.allSatisfy(p.resumed.contains) { return applyResume(now: now) }
        return [.startResumeTimer(epoch: p.epoch, delay: resumeGrace)]
    }

    /// The grace timer of a pause fired: still that pause, the player resumes.
    public mutating func resumeGraceEnded(epoch: UInt64, now: UInt64) -> [Action] {
        guard case let .paused(_, p) = state, p.epoch == epoch else { return [] }
        return applyResume(now: now)
    }

    /// Member `id` reports `streamId` stopped (by another controller, which may not have reached every member
    /// yet): the others are stopped here, so none is left playing; unless the end of the stream was sent (it ends).
    public mutating func speakerStopped(_ id: UInt64, streamId: UInt32) -> [Action] {
        switch state {
        case let .playing(s, _) where s.streamId == streamId && s.endFrame == nil,
             let .paused(s, _) where s.streamId == streamId && s.endFrame == nil:
            return end(tellSpeakers: true, except: id)
        default:
            return []
        }
    }

    /// Member `id` reports the last frame of `streamId` heard: the playback ends once every member receiving the
    /// stream did (a member whose output is later — its latency, its buffer — is not cut off by an earlier one's end;
    /// those that never say so are stopped at the end grace, `step`).
    public mutating func speakerEnded(_ id: UInt64, streamId: UInt32) -> [Action] {
        guard case .playing(var s, let run) = state, s.streamId == streamId else { return [] }
        s.ended.insert(id)
        state = .playing(s, run: run)
        guard s.receiving.isSubset(of: s.ended) else { return [] }
        return finishEnded(s, run: run)
    }

    /// Member `id` reports another stream (`by`) playing — another controller's `play` replaced this stream on it:
    /// it no longer gets this one; when no member does any more, the playback stops at once
    /// (`Interruption.takenOver`; the speakers are not told: they play the other stream).
    private mutating func takenOver(_ id: UInt64, by other: UInt32) -> [Action] {
        guard receives(id), stopsReceiving(id) else { return [] }
        if case .starting = state { return [] }
        guard receivingIds.isEmpty else { return [] }
        return interrupt(.takenOver(by: other))
    }

    /// Member `id` no longer gets the stream (nor counts as resumed); false when there is no stream (initialized,
    /// stopped) and nothing changed.
    private mutating func stopsReceiving(_ id: UInt64) -> Bool {
        switch state {
        case .starting(var s, let shown):
            s.receiving.remove(id)
            state = .starting(s, shown: shown)
        case .playing(var s, let run):
            s.receiving.remove(id)
            state = .playing(s, run: run)
        case .paused(var s, var p):
            s.receiving.remove(id)
            p.resumed.remove(id)
            state = .paused(s, p)
        case .initialized, .stopped:
            return false
        }
        return true
    }

    /// Member `id` asks for `request`'s packets again: those still held and not yet due at `now`, in its order.
    public mutating func resendRequested(_ request: ResendRequest, by id: UInt64, now: UInt64) -> [[UInt8]] {
        guard let s = stream, request.streamId == s.streamId, s.receiving.contains(id), let first = s.history.first else { return [] }
        var packets: [[UInt8]] = []
        for sequence in request.sequences {
            recovery.requested += 1
            let index = Int(sequence &- first.sequence)
            guard index < s.history.count, s.history[index].sequence == sequence, s.history[index].presentation > now else {
                recovery.unavailable += 1
                continue
            }
            packets.append(s.history[index].bytes)
            recovery.resent += 1
        }
        return packets
    }

    // MARK: The streaming loop

    /// The loop of `run` asks what to do at `now`: read, send the next packet due within `buffer`, or (nothing due)
    /// report the time and wait; or finish (another run, not playing, or the end of the stream heard long ago with
    /// no speaker saying so: the speakers still waiting are stopped and the playback ends on the timeline).
    public mutating func step(run: UInt64, now: UInt64) -> Step {
        guard case .playing(var s, let current) = state, current == run else { return .finish([]) }
        // The stream is out of `state` while it changes, so `s` holds the only reference to its buffers and appending
        // to them does not copy them (copy on write: the whole history was copied at every packet).
        state = .initialized
        if s.endFrame == nil, s.schedule.nextPresentationTime <= now &+ buffer {
            let frames = s.schedule.framesPerPacket
            let bytesPerFrame = s.schedule.format.bytesPerFrame
            // One frame more than a packet: a FLAC packet is encoded with the first frame after it (`StreamSchedule.packet`).
            if s.pending.count < (frames + 1) * bytesPerFrame, !s.sourceDone {
                state = .playing(s, run: run)
                return .read(maxFrames: max(frames, 4096))
            }
            let take = min(s.pending.count, frames * bytesPerFrame)
            let pcm = Array(s.pending.prefix(take))
            s.pending.removeFirst(take)
            let last = s.sourceDone && s.pending.isEmpty
            if let packet = try? s.schedule.packet(pcm: pcm, endOfStream: last, next: s.pending.prefix(bytesPerFrame)) {
                let bytes = packet.encode()
                if last { s.endFrame = packet.firstFrame + UInt64(packet.frameCount) }
                s.history.append(SentPacket(sequence: packet.sequence, firstFrame: packet.firstFrame, frames: packet.frameCount,
                                            presentation: packet.presentationTime, pcm: pcm, bytes: bytes))
                state = .playing(s, run: run)
                // The end of the stream goes out three times: no later packet would reveal its loss.
                return .send(bytes: bytes, to: receivingIds, copies: last ? 3 : 1)
            }
            // A packet that cannot be made (its data dropped): this wake ends here.
        }
        let keep = now > 1_000_000_000 ? now - 1_000_000_000 : 0  // (times in tests start at 0)
        let old = s.history.prefix { $0.presentation < keep }.count
        if old > 0 { s.history.removeFirst(old) }
        var actions = reportTime(&s, now: now)
        state = .playing(s, run: run)
        let pastEnd = s.endFrame.map { now > s.schedule.presentationTime(ofFrame: $0) &+ endGrace } ?? false
        if let since = s.orphanedAt, now >= since &+ lostTimeout || pastEnd {
            return .finish(actions + interrupt(.everySpeakerLost))
        }
        if pastEnd {
            let waiting = receivingIds.filter { !s.ended.contains($0) }
            if !waiting.isEmpty {
                actions.append(.stopSpeakers(streamId: s.streamId, ids: waiting, reportErrors: false, afterAnotherController: false))
            }
            return .finish(actions + finishEnded(s, run: run))
        }
        return .idle(actions)
    }

    /// The source gave `chunk` to the loop of `run` (empty: its end).
    public mutating func sourceRead(run: UInt64, _ chunk: [UInt8]) {
        guard case .playing(var s, let current) = state, current == run else { return }
        state = .initialized  // `s` the only owner of its buffers while they change (as in `step`)
        if chunk.isEmpty {
            s.sourceDone = true
        } else {
            s.pending += chunk
            s.readFrames += UInt64(chunk.count / s.schedule.format.bytesPerFrame)
        }
        state = .playing(s, run: run)
    }

    /// The source failed under the loop of `run`: what it gave still plays, then the end; reported with where the
    /// source stopped.
    public mutating func sourceFailed(run: UInt64, category: FailureCategory, message: String) -> [Action] {
        guard case .playing(var s, let current) = state, current == run else { return [] }
        s.sourceDone = true
        state = .playing(s, run: run)
        let seconds = Double(s.startFrame + s.readFrames) / Double(s.rate)
        return [.sourceFailed(seconds: seconds, category: category, message: message)]
    }

    // MARK: Transitions

    private mutating func epoch() -> UInt64 {
        defer { nextEpoch += 1 }
        return nextEpoch
    }

    private mutating func play(_ s: Stream) -> [Action] {
        let run = epoch()
        let shown = playerState
        state = .playing(s, run: run)
        return (shown == .playing ? [] : [.stateChanged(.playing)]) + [.startStreaming(run: run)]
    }

    private mutating func applyPause(now: UInt64) -> [Action] {
        guard case .playing(var s, let run) = state else { return [] }
        let position = max(s.schedule.frame(at: now), s.startFrame)
        // The packets sent are kept until the resume: it starts where the members say they stopped (which may be
        // before or after `position`, §3.2), and the frames from there go back in front of what is still to send.
        s.endFrame = nil
        s.ended = []
        s.schedule.anchor(frame: position, at: now)
        state = .paused(s, Pause(frame: position, epoch: epoch()))
        return [.stopStreaming(run: run), .stateChanged(.paused)]
    }

    private mutating func applyResume(now: UInt64) -> [Action] {
        guard case .paused(var s, _) = state, let frame = resumeFrame else { return [] }
        // The frames sent but not heard go back in front of what is still to send.
        var unheard: [UInt8] = []
        let bytesPerFrame = s.schedule.format.bytesPerFrame
        for entry in s.history where entry.firstFrame + UInt64(entry.frames) > frame {
            let skip = entry.firstFrame < frame ? Int(frame - entry.firstFrame) * bytesPerFrame : 0
            unheard += entry.pcm[min(skip, entry.pcm.count)...]
        }
        s.pending = unheard + s.pending
        s.history = []
        s.schedule.anchor(frame: frame, at: now &+ buffer)
        s.lastSecond = Int(frame / s.rate)
        return play(s)
    }

    /// The playback stops by itself before its end (the speakers still in it are not told: lost or taken over).
    private mutating func interrupt(_ why: Interruption) -> [Action] {
        guard stream != nil else { return [] }
        let shown = playerState
        var actions: [Action] = []
        if case let .playing(_, run) = state { actions.append(.stopStreaming(run: run)) }
        state = .stopped
        actions.append(.interrupted(why))
        if shown != .stopped { actions.append(.stateChanged(.stopped)) }
        return actions
    }

    private mutating func finishEnded(_ s: Stream, run: UInt64) -> [Action] {
        var actions: [Action] = [.stopStreaming(run: run)]
        if let endFrame = s.endFrame {
            let second = Int(endFrame / s.rate)
            if second > s.lastSecond { actions.append(.time(seconds: second)) }
        }
        state = .stopped
        return actions + [.ended, .stateChanged(.stopped)]
    }

    /// Ends the stream announced, playing or paused; with `tellSpeakers`, every member that got it (but `except`) is
    /// stopped before the player shows stopped.
    private mutating func end(tellSpeakers: Bool, except: UInt64?) -> [Action] {
        guard let s = stream else { return [] }
        let shown = playerState
        var actions: [Action] = []
        if case let .playing(_, run) = state { actions.append(.stopStreaming(run: run)) }
        let targets = receivingIds.filter { $0 != except }
        state = .stopped
        if tellSpeakers, !targets.isEmpty {
            actions.append(.stopSpeakers(streamId: s.streamId, ids: targets, reportErrors: true, afterAnotherController: except != nil))
        }
        if shown != .stopped { actions.append(.stateChanged(.stopped)) }
        return actions
    }

    private func reportTime(_ s: inout Stream, now: UInt64) -> [Action] {
        // Not beyond the end (the wait for the members' ends counts no seconds the stream does not have).
        let frame = min(s.schedule.frame(at: now), s.endFrame ?? .max)
        let second = Int(frame / s.rate)
        guard second > s.lastSecond, frame > s.startFrame || second > 0 else { return [] }
        defer { s.lastSecond = second }
        if s.lastSecond >= 0 || second > Int(s.startFrame / s.rate) { return [.time(seconds: second)] }
        return []
    }
}
