import Speaker
import SpeakerPlayback
import Testing

/// `SpeakerStreamMachine` alone: the speaker side of a playback, every request and event in every state.
struct SpeakerStreamMachineTests {
    typealias Outcome = SpeakerStreamMachine.Outcome
    static let device: UInt64 = 0xABC
    static let timeout: UInt64 = 3_000_000_000

    static func updated(_ reason: StateUpdateReason) -> ControlMessage {
        .deviceStateUpdated(DeviceStateUpdate(deviceId: device, reason: reason))
    }
    static func changed(_ stream: UInt32, _ state: PlayerState) -> ControlMessage {
        .playbackStateChanged(PlaybackStateChange(streamId: stream, state: state))
    }
    static func error(_ code: DeviceErrorCode, _ message: WireText) -> ControlMessage {
        .errorOccurred(DeviceErrorEvent(deviceId: device, code: code, message: message))
    }
    static func failed(_ request: RequestType, _ code: DeviceErrorCode, _ message: WireText) -> ControlMessage {
        .failed(FailureReply(request: request, code: code, message: message))
    }

    static func inSession() -> SpeakerStreamMachine {
        var m = SpeakerStreamMachine(deviceId: device, audioTimeout: timeout)
        _ = m.joinSession()
        return m
    }

    /// Stream 5 played by connection 1 from DAC time 100.
    static func playing() -> SpeakerStreamMachine {
        var m = inSession()
        _ = m.play(streamId: 5, connection: 1, now: 100)
        return m
    }

    static func everyState() -> [(String, SpeakerStreamMachine)] {
        var paused = playing()
        _ = paused.pause(streamId: 5)
        var stopped = playing()
        _ = stopped.stop(streamId: 5)
        var flagged = inSession()
        _ = flagged.setPlaying(true, streamId: 9)
        return [("initialized", inSession()), ("playing", playing()), ("paused", paused), ("stopped", stopped), ("flagged", flagged)]
    }

    @Test func theSessionIsJoinedAndLeftOnceEach() {
        var m = SpeakerStreamMachine(deviceId: Self.device, audioTimeout: Self.timeout)
        #expect(m.leaveSession() == Outcome(reply: .done(.leaveSession)))
        #expect(m.joinSession() == Outcome(reply: .done(.joinSession), events: [Self.updated(.sessionChanged)]))
        #expect(m.active)
        #expect(m.joinSession() == Outcome(reply: .done(.joinSession)))
        #expect(m.leaveSession() == Outcome(reply: .done(.leaveSession), events: [Self.updated(.sessionChanged)], actions: [.closeStream]))
        #expect(!m.active)
    }

    @Test func playIsRefusedOutsideTheSessionAndOpensTheStreamInIt() {
        var out = SpeakerStreamMachine(deviceId: Self.device, audioTimeout: Self.timeout)
        #expect(out.play(streamId: 5, connection: 1, now: 0) == Outcome(reply: Self.failed(.play, .notInSession, "not in the playback session")))
        #expect(out.playerState == .initialized)
        var m = Self.inSession()
        #expect(m.play(streamId: 5, connection: 1, now: 100) == Outcome(
            reply: .done(.play), events: [Self.changed(5, .playing), Self.updated(.playingChanged)],
            actions: [.closeStream, .openStream(streamId: 5, owner: 1)]))
        #expect(m.state == .playing(streamId: 5, owner: 1, lastAudio: 100))
        #expect(m.isPlaying && m.streamId == 5 && m.owner == 1)
        #expect(m.takesAudio(of: 5) && !m.takesAudio(of: 6))
    }

    @Test func anotherStreamReplacesThePlayingOneWithAnInterruption() {
        var m = Self.playing()
        #expect(m.play(streamId: 6, connection: 2, now: 200) == Outcome(
            reply: .done(.play), events: [Self.error(.playbackInterrupted, "replaced by stream 6"), Self.changed(6, .playing)],
            actions: [.closeStream, .openStream(streamId: 6, owner: 2)]))
        // The same stream again: no interruption.
        #expect(m.play(streamId: 6, connection: 2, now: 300).events == [Self.changed(6, .playing)])
    }

    @Test func pauseResumeStop() {
        var m = Self.playing()
        #expect(m.pause(streamId: 5) == Outcome(reply: .done(.pause), events: [Self.changed(5, .paused), Self.updated(.playingChanged)],
                                                actions: [.resetRenderer]))
        #expect(m.state == .paused(streamId: 5, owner: 1))
        #expect(!m.takesAudio(of: 5))
        #expect(m.pause(streamId: 5) == Outcome(reply: Self.failed(.pause, .invalidState, "stream 5 is not playing")))
        #expect(m.resume(streamId: 5, now: 900) == Outcome(reply: .done(.resume), events: [Self.changed(5, .playing), Self.updated(.playingChanged)]))
        #expect(m.state == .playing(streamId: 5, owner: 1, lastAudio: 900))
        #expect(m.resume(streamId: 5, now: 900) == Outcome(reply: Self.failed(.resume, .invalidState, "stream 5 is not paused")))
        #expect(m.stop(streamId: 5) == Outcome(reply: .done(.stop), events: [Self.changed(5, .stopped), Self.updated(.playingChanged)],
                                               actions: [.closeStream]))
        #expect(m.state == .stopped(streamId: 5))
        // Stopped twice (two controllers at once): no second event.
        #expect(m.stop(streamId: 5) == Outcome(reply: .done(.stop)))
        #expect(m.pause(streamId: 5).reply == Self.failed(.pause, .invalidState, "stream 5 is not playing"))
    }

    @Test func aPausedStreamStopsWithoutPlayingChanged() {
        var m = Self.playing()
        _ = m.pause(streamId: 5)
        #expect(m.stop(streamId: 5) == Outcome(reply: .done(.stop), events: [Self.changed(5, .stopped)], actions: [.closeStream]))
    }

    @Test func requestsForAnotherStreamOrNoneAreUnknownInEveryState() {
        for (name, m) in Self.everyState() {
            var c = m
            let other = m.streamId &+ 1
            #expect(c.pause(streamId: other) == Outcome(reply: Self.failed(.pause, .unknownStream, WireText(stringLiteral: "no stream \(other)"))), "\(name)")
            #expect(c.resume(streamId: other, now: 0) == Outcome(reply: Self.failed(.resume, .unknownStream, WireText(stringLiteral: "no stream \(other)"))), "\(name)")
            #expect(c.stop(streamId: other) == Outcome(reply: Self.failed(.stop, .unknownStream, WireText(stringLiteral: "no stream \(other)"))), "\(name)")
            #expect(c.stop(streamId: 0).reply == Self.failed(.stop, .unknownStream, "no stream 0"), "\(name)")
            #expect(c == m, "\(name)")
        }
    }

    @Test func resumeOutsideTheSessionIsRefused() {
        var m = Self.playing()
        _ = m.pause(streamId: 5)
        #expect(m.leaveSession() == Outcome(reply: .done(.leaveSession), events: [Self.updated(.sessionChanged)], actions: [.closeStream]))
        #expect(m.state == .paused(streamId: 5, owner: nil))  // closed: its controller leaving no longer interrupts it
        #expect(m.resume(streamId: 5, now: 0) == Outcome(reply: Self.failed(.resume, .notInSession, "not in the playback session")))
        #expect(m.connectionClosed(1) == Outcome())
    }

    @Test func leavingTheSessionStopsAPlayingStream() {
        var m = Self.playing()
        #expect(m.leaveSession() == Outcome(reply: .done(.leaveSession),
                                            events: [Self.updated(.sessionChanged), Self.changed(5, .stopped), Self.updated(.playingChanged)],
                                            actions: [.closeStream]))
        #expect(m.state == .stopped(streamId: 5))
    }

    @Test func renamingInterruptsOnlyAPlayingStream() {
        for (name, m) in Self.everyState() {
            var c = m
            let outcome = c.renamed()
            if name == "playing" || name == "flagged" {
                #expect(outcome == Outcome(events: [Self.error(.playbackInterrupted, "renamed while playing"), Self.changed(m.streamId, .stopped),
                                                    Self.updated(.playingChanged)], actions: [.closeStream]), "\(name)")
                #expect(c.state == .stopped(streamId: m.streamId), "\(name)")
            } else {
                #expect(outcome == Outcome(), "\(name)")
                #expect(c == m, "\(name)")
            }
        }
    }

    @Test func theOwnersDisconnectionInterruptsItsStreamOnly() {
        var m = Self.playing()
        #expect(m.connectionClosed(2) == Outcome())
        #expect(m.connectionClosed(1) == Outcome(
            events: [Self.error(.playbackInterrupted, "the controller that started stream 5 disconnected"), Self.changed(5, .stopped),
                     Self.updated(.playingChanged)], actions: [.closeStream]))
        #expect(m.connectionClosed(1) == Outcome())
        var p = Self.playing()
        _ = p.pause(streamId: 5)
        #expect(p.connectionClosed(1).events == [Self.error(.playbackInterrupted, "the controller that started stream 5 disconnected"),
                                                  Self.changed(5, .stopped)])
    }

    @Test func audioKeepsAPlayingStreamAliveUntilTheTimeout() {
        var m = Self.playing()  // audio (play) at 100
        #expect(m.rendered(now: 100 + Self.timeout, ended: false) == Outcome())
        #expect(m.audioReceived(streamId: 6, now: 2_000_000_000) == false)
        #expect(m.audioReceived(streamId: 5, now: 2_000_000_000) == true)
        #expect(m.rendered(now: 100 + Self.timeout + 1, ended: false) == Outcome())
        #expect(m.rendered(now: 2_000_000_000 + Self.timeout + 1, ended: false) == Outcome(
            events: [Self.error(.audioUnderrun, "no audio for stream 5 in 3000 ms"), Self.changed(5, .stopped), Self.updated(.playingChanged)],
            actions: [.closeStream]))
        // A paused stream waits for no audio.
        var p = Self.playing()
        _ = p.pause(streamId: 5)
        #expect(p.audioReceived(streamId: 5, now: 200) == false)
        #expect(p.rendered(now: 100 * Self.timeout, ended: false) == Outcome())
    }

    @Test func theLastFrameHeardEndsTheStream() {
        var m = Self.playing()
        #expect(m.rendered(now: 500, ended: true) == Outcome(events: [Self.changed(5, .stopped), Self.updated(.playingChanged)], actions: [.closeStream]))
        #expect(m.rendered(now: 500, ended: true) == Outcome())
    }

    @Test func theOutputFailingAndShutdownEndAnOpenStreamOnly() {
        var m = Self.playing()
        #expect(m.outputFailed(.unsupportedFormat, message: "no") == Outcome(
            events: [Self.error(.unsupportedFormat, "no"), Self.changed(5, .stopped), Self.updated(.playingChanged)], actions: [.closeStream]))
        #expect(m.outputFailed(.unsupportedFormat, message: "no") == Outcome())
        var s = Self.playing()
        #expect(s.shutdown() == Outcome(events: [Self.changed(5, .stopped), Self.updated(.playingChanged)], actions: [.closeStream]))
        #expect(s.shutdown() == Outcome())
        var f = Self.inSession()
        _ = f.setPlaying(true, streamId: 9)  // a flag: no stream open
        #expect(f.shutdown() == Outcome())
        #expect(f.rendered(now: 100 * Self.timeout, ended: true) == Outcome())
    }

    @Test func powerOffForgetsEverythingSilently() {
        for (name, m) in Self.everyState() {
            var c = m
            #expect(c.powerOff() == Outcome(actions: [.closeStream]), "\(name)")
            #expect(c.state == .initialized && !c.active && c.streamId == 0, "\(name)")
        }
    }

    @Test func playingAsAFlag() {
        var m = Self.inSession()
        #expect(m.setPlaying(true, streamId: 9) == Outcome(events: [Self.changed(9, .playing), Self.updated(.playingChanged)]))
        #expect(m.state == .playing(streamId: 9, owner: nil, lastAudio: 0))
        #expect(m.setPlaying(true, streamId: 9) == Outcome())
        #expect(m.setPlaying(false, streamId: 1) == Outcome(events: [Self.changed(9, .stopped), Self.updated(.playingChanged)]))
        #expect(m.state == .stopped(streamId: 9))
        // Cleared while a stream plays: it stops and closes.
        var p = Self.playing()
        #expect(p.setPlaying(false, streamId: 1) == Outcome(events: [Self.changed(5, .stopped), Self.updated(.playingChanged)], actions: [.closeStream]))
    }

    @Test func eventsThatDoNotApplyChangeNothingInEveryState() {
        for (name, m) in Self.everyState() {
            var c = m
            #expect(c.connectionClosed(77) == Outcome(), "\(name)")
            #expect(c.audioReceived(streamId: m.streamId &+ 1, now: 1) == false, "\(name)")
            if name != "playing" && name != "paused" {  // (an open stream ends: theOutputFailing..., theLastFrameHeard...)
                #expect(c.outputFailed(.audioUnderrun, message: "x") == Outcome(), "\(name)")
                #expect(c.rendered(now: .max, ended: true) == Outcome(), "\(name)")
            }
            if name != "playing" && name != "flagged" {
                #expect(c.audioReceived(streamId: m.streamId, now: 1) == false, "\(name)")
            }
            if name != "flagged" {
                #expect(c == m || name == "playing" || name == "paused", "\(name)")
            }
        }
    }
}
