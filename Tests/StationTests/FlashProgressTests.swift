import Station
import TestSupport
import Testing

/// A flash step's live progress ends at 1.0 before the step ends: the station waits for the updater's feed to end
/// instead of cancelling its reader when the update returns (which lost the last event when it had not been read yet,
/// so a finished flash could stay at 99 % on the live view; issue 31 §5: dropping the final event survived the suite).
@Suite struct FlashProgressTests {
    @Test func everyFlashStepTellsItsEndBeforeItEnds() async throws {
        let line = try await LineFixture.make(units: 2)
        defer { Task { await line.close() } }
        let events = EventLog()
        let results = try await withTimeLimit(120) { try await line.station(events: events).run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass, .pass], "\(results)")
        var last: [String: Double] = [:]
        var flashed = 0
        for event in events.all {
            switch event {
            case let .progress(slot, _, step, fraction):
                last[slot + " " + step] = fraction
            case let .stepEnded(slot, _, step, outcome, _) where step.hasPrefix("flash-") && outcome == "pass":
                #expect(last[slot + " " + step] == 1.0, "\(slot) \(step) ended at \(String(describing: last[slot + " " + step]))")
                flashed += 1
            default:
                break
            }
        }
        #expect(flashed >= 2, "the blank units were flashed")
    }
}
