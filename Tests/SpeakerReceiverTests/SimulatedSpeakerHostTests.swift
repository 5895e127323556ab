import Foundation
import Speaker
import SpeakerSession
import SpeakerSimulator
import Testing
import TestSupport

/// Simulated speakers sharing a host with others (issue 30): directed discovery finds every responder of the host, and a
/// speaker counted from 45455 leaves 45456 to a receiver.
@Suite("Simulated speakers on a shared host")
struct SimulatedSpeakerHostTests {
    /// Two processes' responders on one port (a `sim speaker` and a `speaker receive`): a query sent to the port
    /// directly reaches one socket, which passes it on to the other over the loopback; both answer, once each.
    @Test func aDirectedQueryFindsTheSpeakersOfEveryResponderOnTheHost() async throws {
        try await withTimeLimit {
            let first = try await SpeakerSimulation.start(count: 2, seed: 1)
            let second = try await SpeakerSimulation.start(count: 1, seed: 2)
            let a = try SpeakerDiscoveryResponder(for: first.speakers, host: "0.0.0.0", port: 0)
            let b = try SpeakerDiscoveryResponder(for: second.speakers, host: "0.0.0.0", port: a.port)
            let expected = Set(first.speakers.map(\.deviceId) + second.speakers.map(\.deviceId))
            // One round (one query) finds them all, whichever socket the kernel gives the query (a busy machine may be
            // late for a round's window: rounds are repeated; before the relay no round ever found both processes').
            try await waitUntil("one query finds every speaker of the host") {
                let found = try await DiscoveryClient(targets: [("127.0.0.1", a.port)], window: .milliseconds(500)).discover()
                #expect(found.count == Set(found.map(\.deviceId)).count, "each speaker once: \(found)")
                return Set(found.map(\.deviceId)) == expected
            }
            await a.stop()
            await b.stop()
            await first.shutdown()
            await second.shutdown()
        }
    }

    @Test func aRelayedQueryIsReadBackAndNothingElseIsOne() {
        let relay = DiscoveryRelay(queryId: 0xDEAD_BEEF, host: "192.0.2.7", port: 40001)
        #expect(DiscoveryRelay(decoding: relay.encode()) == relay)
        var damaged = relay.encode()
        damaged[5] ^= 1
        #expect(DiscoveryRelay(decoding: damaged) == nil)
        #expect(DiscoveryRelay(decoding: DiscoveryMessage.query(queryId: 7).encode()) == nil)
        #expect(DiscoveryRelay(decoding: Array(relay.encode().dropLast())) == nil)
    }

    /// Speakers counted from 45455 skip 45456 (a receiver's default audio port) and 45454 (discovery).
    @Test func speakersCountedFrom45455LeaveTheReceiversAudioPort() {
        #expect(SpeakerSimulation.controlPorts(from: 45455, count: 3) == [45455, 45457, 45458])
        #expect(SpeakerSimulation.controlPorts(from: 45453, count: 3) == [45453, 45455, 45457])
        #expect(SpeakerSimulation.controlPorts(from: 50000, count: 2) == [50000, 50001])
        #expect(SpeakerSimulation.controlPorts(from: 65535, count: 2) == [65535])
    }
}
