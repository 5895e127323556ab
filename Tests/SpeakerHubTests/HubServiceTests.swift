import Foundation
import Logging
import SpeakerHub
import SpeakerSession
import SpeakerSimulator
import Synchronization
import TestSupport
import Testing

/// `tuneup speaker hub`'s whole service as one library call (issue 31 §1): started on free ports, served until told
/// to stop, everything closed.
struct HubServiceTests {
    @Test func servesTheAPIAndSnapcastControlUntilToldToStop() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 1)
            let parts = sim.endpoints[0].split(separator: ":")
            let controller = try await SpeakerController.connect([(String(parts[0]), UInt16(parts[1])!)])
            let media = try TemporaryDirectory.make("hub-service")
            defer { try? FileManager.default.removeItem(atPath: media) }
            let service = try await HubService.start(controller, unreached: [], media: try MediaFolder(path: media), sessionTimeout: .seconds(60),
                                                     host: "127.0.0.1", port: 0, controlPort: 0, logger: Logger(label: "test"))
            #expect(service.hub.url.hasPrefix("http://127.0.0.1:") && service.control != nil && service.warning == nil)
            let answer = try await httpGet(service.hub.port, "/v1/init_session?Priority=100")
            #expect(answer.body.contains("SessionID"))
            let stop = Mutex(false)
            try await service.run(until: { stop.withLock { $0 = true } })
            #expect(stop.withLock { $0 })
            await sim.shutdown()
        }
    }
}
