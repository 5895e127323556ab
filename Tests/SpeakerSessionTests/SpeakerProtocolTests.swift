import Session
import SpeakerSession
import Testing

@Suite("SpeakerProtocol as the Session core sees it")
struct SpeakerProtocolTests {
    let p = SpeakerProtocol()

    @Test func classifiesRepliesAcceptedEventsAndRequests() throws {
        let reply = try ControlPacket(requestId: 7, message: .done(.setVolume))
        #expect(p.classify(reply) == .reply(7))
        let failed = try ControlPacket(requestId: 8, message: .failed(FailureReply(request: .play, code: .notInSession, message: "x")))
        #expect(p.classify(failed) == .reply(8))
        let accepted = try ControlPacket(requestId: 9, message: .accepted(.joinSession))
        #expect(p.classify(accepted) == .pending(9))
        let event = try ControlPacket.event(.playbackEnded(streamId: 3))
        #expect(p.classify(event) == .push)
        let request = try ControlPacket(requestId: 10, message: .getStatus)
        guard case .ignore = p.classify(request) else { Issue.record("a request from the speaker must be ignored"); return }
        #expect(p.key(of: request) == 10)
        #expect(p.describe(p.command(of: request)) == "getStatus")
    }

    @Test func deframerDecodesFramesAndRejectsWhatDoesNotDecode() throws {
        var d = p.makeDeframer(for: .byteStream)
        let good = try ControlPacket(requestId: 5, message: .done(.setMute))
        // A well-framed frame of an undefined type (0x3f), with a valid CRC: framed, but not a message.
        let undefined = try ControlFrame(version: 1, type: 0x3f, requestId: 6, payload: []).encode()
        let bytes = [0x00, 0x11] + undefined + good.encode()
        for b in bytes { d.append([b]) }
        guard case .rejected? = d.next() else { Issue.record("expected a rejection"); return }
        guard case let .packet(packet)? = d.next() else { Issue.record("expected the good packet"); return }
        #expect(packet == good)
        #expect(d.next() == nil)
        #expect(d.statistics.frames == 2 && d.statistics.discardedBytes == 2)
    }

    @Test func failuresBecomeOneLineErrorsWithTheirCodes() {
        #expect(p.error(.noAnswer(command: 0x04, waited: .seconds(2), attempts: 3)).code == .timeout)
        #expect(p.error(.noAnswer(command: 0x04, waited: .seconds(2), attempts: 3)).message
            == "speaker did not answer setVolume within 2 s (3 attempts)")
        #expect(p.error(.closed(peer: "x")).code == .notConnected)
        #expect(p.error(.linkLost(peer: "x", cause: nil)).category == .connection)
    }
}
