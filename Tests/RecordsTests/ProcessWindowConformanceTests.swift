import Foundation
import Records
import TestSupport
import Testing

/// The process control window a station continues from at its start (`RecordStore.processWindow`), against every
/// store alike.
@Suite struct ProcessWindowConformanceTests {
    /// A finished run of `hardwareID` at `station` under `recipe` with one measurement `m` of `value`.
    static func record(
        _ store: any RecordStore, _ hardwareID: String, station: String = "s1", recipe: String = "r1", at start: Int64,
        outcome: RunOutcome?, value: Double
    ) async throws {
        let run = try await store.startRun(RunStart(hardwareID: hardwareID, station: station, slot: "1", recipeHash: recipe, startedAt: at(start)))
        let step = StepRecord(
            name: "test:m", startedAt: at(start), endedAt: at(start + 1), outcome: .pass,
            measurements: [Records.Measurement(name: "m", value: value, unit: "dB", low: 0, high: 100, outcome: .pass)])
        _ = try await store.recordStep(step, in: run)
        if let outcome { try await store.finishRun(run, outcome: outcome, at: at(start + 2)) }
    }

    @Test(arguments: StoreKind.allCases) func theWindowIsTheStationsLastFinishedUnitsUnderItsRecipe(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            // Another station saw uid-3 first (and failed it): its pass at s1 is not a first pass.
            let other = try await stores.open(station: "s2")
            try await Self.record(other, "uid-3", station: "s2", at: 0, outcome: .fail, value: 99)
            _ = try await stores.lineView()
            let store = try await stores.open(station: "s1")
            try await Self.record(store, "uid-0", at: 10, outcome: .pass, value: 1)      // left out of a window of 4
            try await Self.record(store, "uid-1", at: 20, outcome: .pass, value: 2)
            try await Self.record(store, "uid-2", at: 30, outcome: .fail, value: 3)
            try await Self.record(store, "uid-x", at: 35, outcome: .aborted, value: 77)  // interruptions are not units
            try await Self.record(store, "uid-y", recipe: "r0", at: 36, outcome: .pass, value: 66)  // another recipe
            try await Self.record(store, "uid-3", at: 40, outcome: .pass, value: 4)
            try await Self.record(store, "uid-2", at: 50, outcome: .pass, value: 5)      // reworked: not a first pass
            try await Self.record(store, "uid-z", at: 60, outcome: nil, value: 55)       // still open

            let restarted = try await stores.open(station: "s1")
            let window = try await restarted.processWindow(station: "s1", recipeHash: "r1", size: 4)
            #expect(window.firstPasses == [true, false, false, false], "\(window.firstPasses)")
            #expect(window.values["m"]?.map(\.value) == [2, 3, 4, 5], "\(window.values)")
            #expect(window.names == ["m"])

            // It judges as the station's own window of the same units would.
            var live = ProcessWindow(size: 4)
            for (first, value) in zip([true, false, false, false], [2.0, 3, 4, 5]) {
                live.add(.init(firstPass: first, measurements: [Records.Measurement(name: "m", value: value, unit: "dB", low: 0, high: 100, outcome: .pass)]))
            }
            #expect(window == live)
            // A station with no runs yet, or another recipe, starts empty.
            #expect(try await restarted.processWindow(station: "s9", recipeHash: "r1", size: 4).firstPasses.isEmpty)
            #expect(try await restarted.processWindow(station: "s1", recipeHash: "r0", size: 4).values["m"]?.map(\.value) == [66])
        }
    }

    /// A passing re-run of a unit whose first finished run passed is a first pass again (as the report and the
    /// station's totals count it); a rework's pass is not.
    @Test(arguments: StoreKind.allCases) func aPassingReRunOfAPassedUnitIsAFirstPass(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            let store = try await stores.open(station: "s1")
            try await Self.record(store, "uid-a", at: 10, outcome: .pass, value: 1)
            try await Self.record(store, "uid-b", at: 20, outcome: .fail, value: 2)
            try await Self.record(store, "uid-a", at: 30, outcome: .pass, value: 3)   // re-run of a passed unit
            try await Self.record(store, "uid-b", at: 40, outcome: .pass, value: 4)   // rework
            let window = try await store.processWindow(station: "s1", recipeHash: "r1", size: 4)
            #expect(window.firstPasses == [true, false, true, false], "\(window.firstPasses)")
            let runs = try await store.runsWithSteps(RecordsFilter(station: "s1"))
            #expect(ProcessWindow.of(runs: runs, size: 4).firstPasses == window.firstPasses)
            #expect(RecordsReport(runs: runs).firstPassYield == 0.5)
        }
    }
}
