import Foundation
import SpeakerSession
import Synchronization
import Testing
import TestSupport
import Transport
import TuneupKit

/// How the speaker commands reach their speakers, as a library value (issue 31 §1).
struct SpeakerReachTests {
    func reach(_ speakers: [String] = [], targets: [String] = [], window: Double = 1) throws -> SpeakerReach {
        try SpeakerReach(speakers: speakers, discoveryTargets: targets, window: window, connection: ConnectionOptions(),
                         requests: RequestOptions(timeout: .seconds(10), retransmissions: 1))
    }

    @Test func addressesAndDiscoveryTargetsAreParsedByTheRegistry() throws {
        let named = try reach(["127.0.0.1:4000", "sim:speaker"])
        #expect(named.addresses.count == 2 && named.discovery == nil)
        let discovering = try reach(targets: ["speaker:127.0.0.1:45454"])
        #expect(discovering.discoveryTargets.map(\.port) == [45454] && discovering.discovery != nil)
        let error = #expect(throws: TransportError.self) { try reach(targets: ["sim:speaker"]) }
        #expect(error?.message == "--discovery-target takes HOST:PORT or speaker:HOST:PORT, got 'sim:speaker'" && error?.category == .usage)
        #expect(throws: TransportError.self) { try reach(["ftp:x"]) }
    }

    @Test func noSpeakerAnsweringDiscoveryIsAConnectionFailureThatSaysHowToNameThem() async throws {
        // A target where nobody answers: discovery collects nothing for its window.
        let error = await #expect(throws: SpeakerSessionError.self) { _ = try await reach(targets: ["127.0.0.1:9"], window: 0.05).controller() }
        #expect(error?.category == .connection)
        #expect(error?.message == "no speakers answered discovery within 0.05 s (name them with --speaker HOST:PORT)")
    }

    @Test func aNamedSpeakerIsOpenedAndFollowedUntilTheDeadline() async throws {
        try await withTimeLimit {
            let reach = try reach(["sim:speaker"])
            #expect(try await reach.with { await $0.count } == 1)
            let following = Mutex<Int?>(nil)
            try await reach.followEvents(count: nil, until: .now, interval: .seconds(2), started: { n in following.withLock { $0 = n } },
                                         emit: { _ in })
            #expect(following.withLock { $0 } == 1)
        }
    }
}
