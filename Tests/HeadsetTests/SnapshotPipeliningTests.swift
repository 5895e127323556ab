import Foundation
import LightX
import Synchronization
import Testing
@testable import Headset

/// A probe costs a few round trips, not one per setting: `snapshot()` keeps its independent reads in flight together.
@Suite struct SnapshotPipeliningTests {
    @Test func aSnapshotHasItsIndependentReadsInFlightTogether() async throws {
        // The device answers nothing until it holds 8 requests, then everything at once (NotSupported: the snapshot
        // is then all "not supported"). A snapshot that waited for each reply before the next request would never
        // get an answer: on a clock that never moves nothing times out, and the time limit below fails the test.
        let held = Mutex<[Packet]?>([])
        let (device, host) = FakeDevice.start { request, _ in
            let release: [Packet]? = held.withLock { h in
                guard var waiting = h else { return [request] }
                waiting.append(request)
                if waiting.count < 8 { h = waiting; return nil }
                h = nil
                return waiting
            }
            return (release ?? []).map { reply($0, .notSupported) }
        }
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(10), retransmissions: 0), clock: ManualClock())
        let headset = Headset(session: session)
        let snapshot = try await withTimeLimit(60) { try await headset.snapshot() }
        #expect(snapshot.identity.product == nil && snapshot.firmwareVersion == nil && snapshot.eq.graphic == nil)
        let first = device.requests.prefix(8).map(\.header.param0)
        #expect(Set(first).count == 8, "the first 8 requests are 8 different reads: \(first)")
        #expect(await session.statistics.timeouts == 0)
        await headset.close()
        await device.stop()
    }
}
