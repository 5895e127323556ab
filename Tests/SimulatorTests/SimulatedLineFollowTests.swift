import HeadsetSimulator
import Synchronization
import Testing
import TestSupport

/// `tuneup sim line`'s event lines and its run until done or quit, made by the library (issue 31 §1).
struct SimulatedLineFollowTests {
    @Test func eachEventsLine() {
        #expect(SimulatedLine.Event.arrived(slot: 0, unit: 3, address: "tcp:127.0.0.1:4400").text == "slot 0: unit 3 arrived (tcp:127.0.0.1:4400)")
        #expect(SimulatedLine.Event.left(slot: 1, unit: 2).text == "slot 1: unit 2 taken out")
        #expect(SimulatedLine.Event.done.text == "every unit has come and gone")
    }

    @Test func aQuitLineEndsTheFollowWhileUnitsRemain() async throws {
        try await withTimeLimit {
            var options = SimulatorOptions(timeScale: 0)
            options.production = ProductionLine(seed: 1, failShare: 0)
            let line = try await SimulatedLine.start(.init(slots: 1, units: 3, simulator: options))
            let (control, input) = AsyncStream.makeStream(of: String.self)
            input.yield("status")
            input.yield("quit")
            let seen = Mutex<[SimulatedLine.Event]>([])
            await line.follow(until: control) { event in seen.withLock { $0.append(event) } }
            #expect(!seen.withLock { $0 }.contains(.done), "nobody used the units: they never left")
            await line.shutdown()
        }
    }
}
