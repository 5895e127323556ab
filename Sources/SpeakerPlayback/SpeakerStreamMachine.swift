import Speaker

/// A speaker's side of a playback (docs/speaker-protocol.md §7, §9) as a value: in the playback session or not,
/// which stream plays, is paused or was stopped, which connection started it, and when its audio last came. No I/O,
/// no clock: every event is one mutating function (given the DAC time where it matters) answering with an
/// `Outcome` — the reply to a request, the events to push, and the actions on the renderer the shell (`SimulatedSpeaker`)
/// performs first. A request that does not apply is answered with the protocol's failure and changes nothing; any
/// other event that does not apply changes nothing and asks for nothing.
///
/// States (each case carries only what is valid in it):
/// - `initialized`: no stream since power-on;
/// - `playing(streamId, owner, lastAudio)`: `owner` is the connection whose `play` opened the stream (nil: playing is
///   only a flag set from outside, `setPlaying`, with no audio), `lastAudio` the DAC time of its last datagram (or of
///   play or resume);
/// - `paused(streamId, owner)`: `owner` nil once the stream was closed (the speaker left the session);
/// - `stopped(streamId)`: stopped, ended or interrupted (the id is kept: stopping it again changes nothing).
public struct SpeakerStreamMachine: Sendable, Hashable {
    public enum State: Sendable, Hashable {
        case initialized
        case playing(streamId: UInt32, owner: UInt64?, lastAudio: UInt64)
        case paused(streamId: UInt32, owner: UInt64?)
        case stopped(streamId: UInt32)
    }

    /// What the shell does to the stream's renderer (before it pushes the events).
    public enum Action: Sendable, Hashable {
        /// Open a renderer, log and recording for `streamId`, started by connection `owner`.
        case openStream(streamId: UInt32, owner: UInt64)
        /// Close the renderer, log and recording (nothing when none is open).
        case closeStream
        /// The renderer drops what it holds (paused).
        case resetRenderer
    }

    /// The answer to one event.
    public struct Outcome: Sendable, Hashable {
        /// The reply to the request (nil for other events).
        public var reply: ControlMessage?
        /// Pushed to every controller, in order, after the actions.
        public var events: [ControlMessage] = []
        public var actions: [Action] = []

        public init(reply: ControlMessage? = nil, events: [ControlMessage] = [], actions: [Action] = []) {
            self.reply = reply
            self.events = events
            self.actions = actions
        }
    }

    public let deviceId: UInt64
    /// How long a playing stream waits for audio before it stops with `audio-underrun` (ns).
    public let audioTimeout: UInt64
    public private(set) var state: State = .initialized
    /// In the playback session.
    public private(set) var active = false

    public init(deviceId: UInt64, audioTimeout: UInt64) {
        self.deviceId = deviceId
        self.audioTimeout = audioTimeout
    }

    // MARK: Queries

    public var playerState: PlayerState {
        switch state {
        case .initialized: .initialized
        case .playing: .playing
        case .paused: .paused
        case .stopped: .stopped
        }
    }

    /// The stream playing, paused or stopped last (0: none since power-on).
    public var streamId: UInt32 {
        switch state {
        case .initialized: 0
        case let .playing(id, _, _), let .paused(id, _), let .stopped(id): id
        }
    }

    public var isPlaying: Bool { if case .playing = state { true } else { false } }

    /// The connection whose `play` opened the stream still open (nil: none open).
    public var owner: UInt64? {
        switch state {
        case let .playing(_, owner, _), let .paused(_, owner): owner
        case .initialized, .stopped: nil
        }
    }

    /// Whether an audio datagram of `streamId` is taken now.
    public func takesAudio(of streamId: UInt32) -> Bool {
        if case let .playing(id, _, _) = state { id == streamId } else { false }
    }

    // MARK: Requests

    public mutating func joinSession() -> Outcome {
        guard !active else { return Outcome(reply: .done(.joinSession)) }
        active = true
        return Outcome(reply: .done(.joinSession), events: [updated(.sessionChanged)])
    }

    /// Leaving the session closes the stream; a playing one stops (a paused one stays paused, closed).
    public mutating func leaveSession() -> Outcome {
        guard active else { return Outcome(reply: .done(.leaveSession)) }
        active = false
        var outcome = Outcome(reply: .done(.leaveSession), events: [updated(.sessionChanged)], actions: [.closeStream])
        switch state {
        case let .playing(id, _, _):
            state = .stopped(streamId: id)
            outcome.events += [stateChanged(id, .stopped), updated(.playingChanged)]
        case let .paused(id, _):
            state = .paused(streamId: id, owner: nil)
        case .initialized, .stopped:
            break
        }
        return outcome
    }

    /// `play` from connection `connection` at DAC time `now`: the stream opens and plays (one playing before is
    /// closed, interrupted when it was another).
    public mutating func play(streamId: UInt32, connection: UInt64, now: UInt64) -> Outcome {
        guard active else { return failed(.play, .notInSession, "not in the playback session") }
        var events: [ControlMessage] = []
        let wasPlaying = isPlaying
        if wasPlaying, self.streamId != streamId {
            events.append(error(.playbackInterrupted, "replaced by stream \(streamId)"))
        }
        state = .playing(streamId: streamId, owner: connection, lastAudio: now)
        events.append(stateChanged(streamId, .playing))
        if !wasPlaying { events.append(updated(.playingChanged)) }
        return Outcome(reply: .done(.play), events: events, actions: [.closeStream, .openStream(streamId: streamId, owner: connection)])
    }

    public mutating func pause(streamId: UInt32) -> Outcome {
        guard case let .playing(id, owner, _) = state, id == streamId else {
            return refusal(.pause, streamId, "is not playing")
        }
        state = .paused(streamId: id, owner: owner)
        return Outcome(reply: .done(.pause), events: [stateChanged(id, .paused), updated(.playingChanged)], actions: [.resetRenderer])
    }

    /// `resume` at DAC time `now` (the audio timeout starts anew).
    public mutating func resume(streamId: UInt32, now: UInt64) -> Outcome {
        guard self.streamId == streamId, streamId != 0 else { return unknown(.resume, streamId) }
        guard active else { return failed(.resume, .notInSession, "not in the playback session") }
        guard case let .paused(id, owner) = state else { return failed(.resume, .invalidState, "stream \(streamId) is not paused") }
        state = .playing(streamId: id, owner: owner, lastAudio: now)
        return Outcome(reply: .done(.resume), events: [stateChanged(id, .playing), updated(.playingChanged)])
    }

    /// `stop`: stopping a stopped stream (two controllers stopping it at once) changes nothing, no second event.
    public mutating func stop(streamId: UInt32) -> Outcome {
        guard self.streamId == streamId, streamId != 0 else { return unknown(.stop, streamId) }
        switch state {
        case .stopped, .initialized:
            return Outcome(reply: .done(.stop))
        case .playing, .paused:
            let wasPlaying = isPlaying
            state = .stopped(streamId: streamId)
            return Outcome(reply: .done(.stop), events: [stateChanged(streamId, .stopped)] + (wasPlaying ? [updated(.playingChanged)] : []),
                           actions: [.closeStream])
        }
    }

    /// The speaker is renamed: a playing stream is interrupted (the shell adds the reply and `nameChanged`).
    public mutating func renamed() -> Outcome {
        guard case let .playing(id, _, _) = state else { return Outcome() }
        state = .stopped(streamId: id)
        return Outcome(events: [error(.playbackInterrupted, "renamed while playing"), stateChanged(id, .stopped), updated(.playingChanged)],
                       actions: [.closeStream])
    }

    // MARK: Other events

    /// An audio datagram of the stream playing came in at DAC time `now` (false: not taken, nothing changed).
    @discardableResult
    public mutating func audioReceived(streamId: UInt32, now: UInt64) -> Bool {
        guard case let .playing(id, owner, _) = state, id == streamId else { return false }
        state = .playing(streamId: id, owner: owner, lastAudio: now)
        return true
    }

    /// The renderer rendered up to DAC time `now`; `ended`: the stream's last frame was heard. A playing stream whose
    /// audio stopped coming for longer than `audioTimeout` stops with `audio-underrun`.
    public mutating func rendered(now: UInt64, ended: Bool) -> Outcome {
        guard owner != nil else { return Outcome() }
        if ended { return end(nil) }
        guard case let .playing(id, _, lastAudio) = state, now > lastAudio, now - lastAudio > audioTimeout else { return Outcome() }
        return end((.audioUnderrun, "no audio for stream \(id) in \(audioTimeout / 1_000_000) ms"))
    }

    /// Connection `connection` closed: the stream it started stops, with `playback-interrupted` to the others.
    public mutating func connectionClosed(_ connection: UInt64) -> Outcome {
        guard let owner, owner == connection else { return Outcome() }
        return end((.playbackInterrupted, "the controller that started stream \(streamId) disconnected"))
    }

    /// The output cannot play the open stream (a sound card that failed): it stops with that error.
    public mutating func outputFailed(_ code: DeviceErrorCode, message: String) -> Outcome {
        guard owner != nil else { return Outcome() }
        return end((code, message))
    }

    /// The speaker shuts down: the open stream ends (no error).
    public mutating func shutdown() -> Outcome {
        guard owner != nil else { return Outcome() }
        return end(nil)
    }

    /// Power cut: the stream closes and everything is forgotten, silently (the links go with it).
    public mutating func powerOff() -> Outcome {
        state = .initialized
        active = false
        return Outcome(actions: [.closeStream])
    }

    /// Playing as a flag set from outside (`tuneup sim speaker`'s console, tests): no audio. Clearing it stops and
    /// closes the stream playing.
    public mutating func setPlaying(_ playing: Bool, streamId: UInt32) -> Outcome {
        guard isPlaying != playing else { return Outcome() }
        var actions: [Action] = []
        if playing {
            if owner != nil { actions.append(.closeStream) }
            state = .playing(streamId: streamId, owner: nil, lastAudio: 0)
        } else {
            if owner != nil { actions.append(.closeStream) }
            state = .stopped(streamId: self.streamId)
        }
        return Outcome(events: [stateChanged(self.streamId, playerState), updated(.playingChanged)], actions: actions)
    }

    // MARK: Internals

    /// Ends the open stream (ended, or an error) and tells every controller.
    private mutating func end(_ error: (DeviceErrorCode, String)?) -> Outcome {
        var outcome = Outcome(actions: [.closeStream])
        if let (code, message) = error { outcome.events.append(self.error(code, message)) }
        let id = streamId
        let wasPlaying = isPlaying
        if case .stopped = state {} else {
            state = .stopped(streamId: id)
            outcome.events.append(stateChanged(id, .stopped))
        }
        if wasPlaying { outcome.events.append(updated(.playingChanged)) }
        return outcome
    }

    private func refusal(_ request: RequestType, _ streamId: UInt32, _ what: String) -> Outcome {
        guard self.streamId == streamId, streamId != 0 else { return unknown(request, streamId) }
        return failed(request, .invalidState, "stream \(streamId) \(what)")
    }

    private func unknown(_ request: RequestType, _ streamId: UInt32) -> Outcome {
        failed(request, .unknownStream, "no stream \(streamId)")
    }

    private func failed(_ request: RequestType, _ code: DeviceErrorCode, _ message: String) -> Outcome {
        Outcome(reply: .failed(FailureReply(request: request, code: code, message: Self.text(message))))
    }

    private func updated(_ reason: StateUpdateReason) -> ControlMessage {
        .deviceStateUpdated(DeviceStateUpdate(deviceId: deviceId, reason: reason))
    }

    private func stateChanged(_ streamId: UInt32, _ state: PlayerState) -> ControlMessage {
        .playbackStateChanged(PlaybackStateChange(streamId: streamId, state: state))
    }

    private func error(_ code: DeviceErrorCode, _ message: String) -> ControlMessage {
        .errorOccurred(DeviceErrorEvent(deviceId: deviceId, code: code, message: Self.text(message)))
    }

    /// Text for the wire, cut to 255 bytes.
    static func text(_ value: String) -> WireText { WireText(stringLiteral: value) }
}
