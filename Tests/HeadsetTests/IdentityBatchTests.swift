import LightX
import Synchronization
import Testing
@testable import Headset

/// `identity()` reads its strings in one batch; when several fail, the error is that of the first in request order,
/// whatever order the replies come in.
@Suite struct IdentityBatchTests {
    @Test func theFirstFailingStringInRequestOrderIsTheError() async throws {
        // The device holds the 7 requests, then answers them last first: product (the first) Fail, bt-name (the
        // last) NotReady, the rest NotSupported.
        let count = ConfigStrings.identity.count
        let held = Mutex<[Packet]?>([])
        let (device, host) = FakeDevice.start { request, _ in
            let release: [Packet]? = held.withLock { h in
                guard var waiting = h else { return [request] }
                waiting.append(request)
                if waiting.count < count { h = waiting; return nil }
                h = nil
                return waiting
            }
            return (release ?? []).enumerated().reversed().map { index, request in
                reply(request, index == 0 ? .fail : index == count - 1 ? .notReady : .notSupported)
            }
        }
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(10), retransmissions: 0), clock: ManualClock())
        let headset = Headset(session: session)
        let error = await #expect(throws: HeadsetError.self) { try await withTimeLimit(60) { try await headset.identity() } }
        #expect(error?.code == .deviceFailed)
        #expect(error?.command == ConfigStrings.identity[0].command)
        #expect(device.requests.count == count)
        await headset.close()
        await device.stop()
    }

    /// The snapshot reads in batches, but when several reads fail its error is still the one it always threw: the
    /// settings' before the battery's (and the ANC's, read in the first batch too).
    @Test func aSnapshotThrowsTheErrorOfTheEarliestFailingReadInItsOrder() async throws {
        let (device, host) = FakeDevice.start { request, _ in
            switch request.command {
            case AppSettings.batteryLevel.command: [reply(request, .notReady)]
            case AppSettings.ancEnabled.command: [reply(request, .exceededLimits)]
            case AppSettings.autoOff.command: [reply(request, .fail)]
            default: [reply(request, .notSupported)]
            }
        }
        let session = LightXSession(transport: host, options: .init(timeout: .seconds(10), retransmissions: 0), clock: ManualClock())
        let headset = Headset(session: session)
        let error = await #expect(throws: HeadsetError.self) { try await withTimeLimit(60) { try await headset.snapshot() } }
        #expect(error?.code == .deviceFailed)
        #expect(error?.command == AppSettings.autoOff.command)
        await headset.close()
        await device.stop()
    }
}
