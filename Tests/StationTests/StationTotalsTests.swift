import Foundation
import Records
import Station
import TestSupport
import Testing

/// issue 31 §5: the station's totals count each outcome under its own name, and a unit's first pass only when its
/// first finished run passed.
@Suite struct StationTotalsTests {
    /// Planted: a failed unit counted as an error. A unit outside its calibration limit fails: one failed, no error.
    @Test func aFailingUnitIsCountedAsFailedNotAsAnError() async throws {
        let line = try await LineFixture.make(units: 1, failShare: 1)
        defer { Task { await line.close() } }
        let station = line.station()
        let results = try await withTimeLimit(120) { try await station.run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.fail])
        let t = station.totals
        #expect(t.failed == 1 && t.errors == 0 && t.passed == 0 && t.completed == 1, "\(t)")
        #expect(t.units == 1 && t.firstPassed == 0 && t.firstPassYield == 0, "\(t)")
    }

    /// Planted: any passing run counted as a first pass. A unit whose first finished run (recorded earlier, at another
    /// station) failed passes here: it is one unit, passed, and not first-passed, as `records report` says.
    @Test func aPassAfterAnEarlierFailureIsNoFirstPass() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let hardwareID = try await line.info(0).hardwareID
        let earlier = try await line.store.startRun(RunStart(
            hardwareID: hardwareID, station: "earlier-station", slot: "1", recipeHash: line.recipe.contentHash,
            startedAt: Date(timeIntervalSinceNow: -120)))
        try await line.store.finishRun(earlier, outcome: .fail, at: Date(timeIntervalSinceNow: -110))
        let station = line.station()
        let results = try await withTimeLimit(120) { try await station.run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass], "\(results)")
        let t = station.totals
        #expect(t.passed == 1 && t.units == 1 && t.firstPassed == 0 && t.firstPassYield == 0, "\(t)")
        let report = RecordsReport(runs: try await line.store.runsWithSteps())
        #expect(report.firstPassYield == 0 && t.firstPassYield == report.firstPassYield)
    }
}
