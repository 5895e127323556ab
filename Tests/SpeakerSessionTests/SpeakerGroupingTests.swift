import SpeakerSession
import SpeakerSimulator
import TestSupport
import Testing

/// `speaker group`'s action as a library call (issue 31 §1): the speakers by position and id join a group or leave it.
struct SpeakerGroupingTests {
    @Test func speakersByPositionAndIdJoinAGroupAndLeaveIt() async throws {
        try await withTimeLimit {
            let sim = try await SpeakerSimulation.start(count: 3)
            let c = try await SpeakerController.connect(endpoints(sim))
            let ids = sim.speakers.map(\.deviceId)
            let joined = try await c.regroup(indices: [2], ids: [ids[0]], join: "Kitchen")
            #expect(joined.map(\.name) == ["Kitchen"] && joined[0].groupId == ids[2] && Set(joined[0].members) == [ids[2], ids[0]])
            let left = try await c.regroup(indices: [], ids: [ids[0]], join: nil)
            #expect(left.count == 1 && left[0].members == [ids[2]])
            let error = await #expect(throws: SpeakerSessionError.self) { _ = try await c.regroup(indices: [7], ids: [], join: "Den") }
            #expect(error?.code == .unknownDevice)
            #expect(try await c.regroup(indices: [], ids: [], join: nil).count == 1, "nothing named: the groups as they are")
            await c.close()
            await sim.shutdown()
        }
    }
}
