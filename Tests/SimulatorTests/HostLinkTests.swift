import Synchronization
import Testing
import TestSupport
import Transport
@testable import HeadsetSimulator

/// A host link's writer: what is queued while a send is in flight goes out together.
@Suite struct HostLinkTests {
    @Test(arguments: [LinkFraming.byteStream, .packets])
    func repliesQueuedBehindASendInFlightGoOutInOneWrite(framing: LinkFraming) async throws {
        try await withTimeLimit {
            let (client, served) = InMemoryTransport.pair(framing: framing)
            let held = HeldTransport(served)
            let host = HostLink(link: held, replyDelay: nil)
            let order = Mutex<[Int]>([])
            host.reply([1]) { order.withLock { $0.append(1) } }
            try await waitUntil("the first reply is on the link and held") { held.holding }
            for n in 2...5 { host.reply([UInt8(n)]) { order.withLock { $0.append(n) } } }
            host.push([6])
            held.release()
            try await waitUntil("every frame was sent") { held.sends.flatMap { $0 } == [1, 2, 3, 4, 5, 6] }
            if framing == .byteStream {
                #expect(held.sends == [[1], [2, 3, 4, 5, 6]], "one write for what was queued")
            } else {
                #expect(held.sends == [[1], [2], [3], [4], [5], [6]], "one report per frame on a packet link")
            }
            try await waitUntil("every reply's after ran") { order.withLock { $0.count } == 5 }
            #expect(order.withLock { $0 } == [1, 2, 3, 4, 5])
            host.finish()
            await host.drainAndClose()
            await client.close()
        }
    }
}
