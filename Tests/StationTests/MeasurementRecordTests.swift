import Foundation
import Recipe
import Records
import Station
import TestSupport
import Testing

/// issue 31 §5: what the records hold of a measurement is the recipe's test: its limits and its marginal band each at
/// its own end, and the outcome the value has under them.
@Suite struct MeasurementRecordTests {
    @Test func aRecordedMeasurementCarriesItsLimitsAndBandAtTheirEnds() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let results = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass], "\(results)")
        let hardwareID = try #require(results.first?.hardwareID)
        let unit = try #require(try await line.store.unit(hardwareID))
        let run = try #require(try await line.store.run(unit.runs[0].id))
        var checked = 0
        for test in line.recipe.recipe.tests {
            let step = try #require(run.steps.first { $0.name == "test:\(test.name)" }, "the step of \(test.name)")
            let m = try #require(step.measurements.first { $0.name == test.name })
            #expect(m.low == test.limits.low && m.high == test.limits.high, "\(test.name): \(m)")
            #expect(m.marginalLow == test.marginal?.low && m.marginalHigh == test.marginal?.high, "\(test.name): \(m)")
            if let low = m.marginalLow, let high = m.marginalHigh { #expect(low <= high, "\(test.name): \(m)") }
            #expect(m.unit == test.unit.rawValue)
            #expect(m.outcome.rawValue == test.judge(m.value).rawValue, "\(test.name): \(m)")
            checked += test.marginal == nil ? 0 : 1
        }
        #expect(checked >= 1, "the recipe has a test with a marginal band")
    }
}

extension MeasurementRecordTests {
    /// issue 31 §5 (planted: a marginal reading retried like a failing one): a marginal reading is the step's
    /// result at once: it passes marked marginal, with no retry, though the test may be tried 3 times.
    @Test func aMarginalReadingIsNotRetried() async throws {
        let line = try await LineFixture.make(units: 1) { text in
            // A band no reading of the simulated unit falls in, inside limits that every reading does.
            text.replacingOccurrences(of: "marginal: { low: -41, high: -35 }", with: "marginal: { low: -34.02, high: -34.01 }")
        }
        defer { Task { await line.close() } }
        let test = try #require(line.recipe.recipe.tests.first { $0.name == "mic-sensitivity-left" })
        #expect(test.retry.attempts == 3 && test.marginal?.low == -34.02)
        let results = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.pass], "\(results)")
        let hardwareID = try #require(results.first?.hardwareID)
        let unit = try #require(try await line.store.unit(hardwareID))
        let run = try #require(try await line.store.run(unit.runs[0].id))
        let step = try #require(run.steps.first { $0.name == "test:mic-sensitivity-left" })
        let m = try #require(step.measurements.first)
        #expect(m.outcome == .marginal, "\(m)")
        #expect(step.outcome == .pass && step.message == "marginal", "\(step)")
        #expect(step.retries == 0, "a marginal reading was retried \(step.retries) times")
    }
}

extension MeasurementRecordTests {
    /// issue 31 §5 (planted: the first retry not counted): a reading that fails every time is tried as often as the
    /// recipe says, and the step's record counts every try after the first.
    @Test func aFailingReadingIsTriedAgainAndEveryRetryIsCounted() async throws {
        let line = try await LineFixture.make(units: 1) { text in
            // Limits no reading of the simulated unit meets.
            text.replacingOccurrences(of: "limits: { low: -42, high: -34 }\n    marginal: { low: -41, high: -35 }",
                                      with: "limits: { low: 10, high: 20 }")
        }
        defer { Task { await line.close() } }
        let test = try #require(line.recipe.recipe.tests.first { $0.name == "mic-sensitivity-left" })
        #expect(test.retry.attempts == 3 && test.limits.low == 10 && test.marginal == nil)
        let results = try await withTimeLimit(120) { try await line.station().run(slots: line.slots) }
        #expect(results.map(\.outcome) == [.fail], "\(results)")
        let hardwareID = try #require(results.first?.hardwareID)
        let unit = try #require(try await line.store.unit(hardwareID))
        let run = try #require(try await line.store.run(unit.runs[0].id))
        let step = try #require(run.steps.first { $0.name == "test:mic-sensitivity-left" })
        #expect(step.outcome == .fail, "\(step)")
        #expect(step.retries == 2, "3 tries are 2 retries, recorded \(step.retries)")
    }
}
