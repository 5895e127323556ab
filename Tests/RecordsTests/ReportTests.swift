import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
@testable import Records
import Testing

/// The report's figures and the exports, on runs made by hand (values worked out below each case).
@Suite struct ReportTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    static func run(_ id: Int64, _ hw: String, _ outcome: RunOutcome?, start: Double, end: Double?, steps: [StepRecord],
                    station: String = "s1") -> RunRecord {
        RunRecord(id: RunID(id), start: RunStart(hardwareID: hw, station: station, slot: "tcp:a", startedAt: t0 + start),
                  endedAt: end.map { t0 + $0 }, outcome: outcome, reworkCount: 0, steps: steps)
    }

    static func step(_ name: String, _ outcome: StepOutcome, _ measurements: [Records.Measurement] = []) -> StepRecord {
        StepRecord(name: name, startedAt: t0, endedAt: t0 + 1, outcome: outcome, message: outcome == .pass ? "" : "why, \"quoted\"",
                   measurements: measurements)
    }

    static func mic(_ value: Double, _ outcome: MeasurementOutcome = .pass) -> Records.Measurement {
        Records.Measurement(name: "mic", value: value, unit: "dBFS", low: -42, high: -34, marginalLow: -41, marginalHigh: -35, outcome: outcome)
    }

    /// A: fails on its mic (-43), then passes on rework. B: passes first time. C: aborted, then errors at flash.
    /// D: open (being provisioned).
    static let runs: [RunRecord] = [
        run(1, "A", .fail, start: 0, end: 100, steps: [step("flash", .pass), step("test:mic", .fail, [mic(-43, .fail)])]),
        run(2, "B", .pass, start: 10, end: 110, steps: [step("flash", .pass), step("test:mic", .pass, [mic(-38)])]),
        run(3, "A", .pass, start: 200, end: 300, steps: [step("flash", .skipped), step("test:mic", .pass, [mic(-40.5, .marginal)])]),
        run(4, "C", .aborted, start: 300, end: 310, steps: [step("flash", .aborted)]),
        run(5, "C", .error, start: 320, end: 3600, steps: [step("flash", .error)]),
        run(6, "D", nil, start: 3000, end: nil, steps: []),
    ]

    @Test func countsYieldsAndRate() {
        let r = RecordsReport(runs: Self.runs)
        #expect(r.units == 4 && r.runs == 6)
        #expect(r.passed == 2 && r.failed == 1 && r.errors == 1 && r.aborted == 1 && r.open == 1)
        // Finished units A, B, C: first runs fail, pass, error → 1/3; last runs pass, pass, error → 2/3.
        #expect(r.firstPassYield == 1.0 / 3)
        #expect(r.finalYield == 2.0 / 3)
        // 3 finished units from t0 to t0 + 3600 s.
        #expect(r.unitsPerHour == 3)
    }

    /// One definition of units/h (`Throughput`): no rate over less than a minute, never a division by zero.
    @Test func noRateIsMadeOfARunShorterThanAMinute() {
        #expect(Throughput.unitsPerHour(1, seconds: 0) == nil)
        #expect(Throughput.unitsPerHour(1, seconds: 0.00434) == nil)
        #expect(Throughput.unitsPerHour(1, seconds: .nan) == nil)
        #expect(Throughput.unitsPerHour(2, seconds: 60) == 120)
        let short = RecordsReport(runs: [Self.run(1, "A", .error, start: 0, end: 0.004, steps: [])])
        #expect(short.unitsPerHour == nil)
        let instant = RecordsReport(runs: [Self.run(1, "A", .pass, start: 0, end: 0, steps: [])])
        #expect(instant.unitsPerHour == nil)
    }

    @Test func stepYieldsLeaveSkippedAndAbortedOut() {
        let steps = RecordsReport(runs: Self.runs).steps
        #expect(steps.map(\.step) == ["flash", "test:mic"])
        // flash: pass 2, skipped 1, aborted 1 (not counted), error 1 → 2 / 3.
        #expect(steps[0].passed == 2 && steps[0].skipped == 1 && steps[0].errors == 1 && steps[0].yield == 2.0 / 3)
        #expect(steps[1].passed == 2 && steps[1].failed == 1 && steps[1].yield == 2.0 / 3)
    }

    @Test func paretoNamesTheFailingMeasurementElseTheStep() {
        var runs = Self.runs
        runs.append(Self.run(7, "E", .fail, start: 400, end: 500, steps: [Self.step("test:mic", .fail, [Self.mic(-33, .fail)])]))
        let pareto = RecordsReport(runs: runs).pareto
        // Failing runs: A (mic), C (flash, error), E (mic) → mic 2/3, flash 1/3.
        #expect(pareto.map(\.cause) == ["mic", "flash"])
        #expect(pareto.map(\.count) == [2, 1])
        #expect(abs(pareto[0].share - 2.0 / 3) < 1e-12 && pareto[1].cumulative == 1)
    }

    @Test func measurementStatisticsAndCpk() throws {
        let m = try #require(RecordsReport(runs: Self.runs).measurements.first)
        // Values -43, -38, -40.5: mean -40.5; deviations -2.5, 2.5, 0 → sample variance 12.5 / 2 = 6.25, σ 2.5.
        #expect(m.name == "mic" && m.unit == "dBFS" && m.count == 3)
        #expect(abs(m.mean - -40.5) < 1e-12)
        #expect(abs(m.standardDeviation - 2.5) < 1e-12)
        #expect(m.minimum == -43 && m.maximum == -38)
        // Cpk = min(-34 - -40.5, -40.5 - -42) / 7.5 = min(6.5, 1.5) / 7.5 = 0.2.
        #expect(abs((m.cpk ?? 0) - 0.2) < 1e-12)
        #expect(m.marginal == 1 && m.failed == 1)
    }

    @Test func cpkOneSidedAndUndefined() {
        // Only a low limit: (mean - low) / 3σ = (25 - 18) / 3 = 2.333...
        #expect(abs((RecordsReport.cpk(mean: 25, sigma: 1, count: 5, low: 18, high: nil) ?? 0) - 7.0 / 3) < 1e-12)
        #expect(abs((RecordsReport.cpk(mean: 25, sigma: 1, count: 5, low: nil, high: 31) ?? 0) - 2) < 1e-12)
        #expect(RecordsReport.cpk(mean: 25, sigma: 0, count: 5, low: 18, high: 31) == nil, "σ = 0")
        #expect(RecordsReport.cpk(mean: 25, sigma: 1, count: 1, low: 18, high: 31) == nil, "one value")
        #expect(RecordsReport.cpk(mean: 25, sigma: 1, count: 5, low: nil, high: nil) == nil, "no limits")
    }

    @Test func filtersByOutcomeAndTime() {
        let filter = RecordsFilter(outcome: .pass, since: Self.t0 + 5, until: Self.t0 + 250)
        #expect(Self.runs.filter(filter.admits).map(\.id.rawValue) == [2, 3])
    }

    static let units: [UnitRecord] = ["A", "B", "C", "D"].map { hw in
        UnitRecord(hardwareID: hw, firstSeen: t0, identities: [
            Identity(id: IdentityID(1), kind: .serial, value: "SN-\(hw)", state: .committed, hardwareID: hw, station: "s1", lease: nil, updatedAt: t0),
        ], runs: [])
    }

    @Test func csvQuotesAsRFC4180() {
        let csv = RecordsExport.csv(units: Self.units, runs: Self.runs)
        let lines = csv.components(separatedBy: "\r\n")
        #expect(lines.first?.hasPrefix("hardware_id,serial,bt_address,run,") == true)
        #expect(csv.hasSuffix("\r\n"))
        // One row per measurement, a step without any on its own row: 2 + 2 + 2 + 1 + 1 steps; D has none.
        #expect(lines.count - 2 == 8, "\(lines.count)")
        #expect(csv.contains("\"why, \"\"quoted\"\"\""), "a comma and quotes are quoted, quotes doubled")
        #expect(lines[2].contains(",mic,-43.0,dBFS,-42.0,-34.0,-41.0,-35.0,fail"), "\(lines[2])")
    }

    @Test func junitParsesBackWithItsCounts() throws {
        let xml = RecordsExport.junit(units: Self.units, runs: Self.runs)
        let document = try XMLDocument(xmlString: xml)
        let suites = try document.nodes(forXPath: "/testsuites/testsuite")
        #expect(suites.count == 6)
        let first = try #require(suites.first as? XMLElement)
        #expect(first.attribute(forName: "name")?.stringValue == "SN-A run 1")
        #expect(first.attribute(forName: "failures")?.stringValue == "1")
        let failure = try #require(try document.nodes(forXPath: "/testsuites/testsuite[1]/testcase[2]/failure").first as? XMLElement)
        #expect(failure.attribute(forName: "message")?.stringValue == "why, \"quoted\"")
        #expect(try document.nodes(forXPath: "//testcase/skipped").count == 1)
        #expect(try document.nodes(forXPath: "//testcase/error").count == 2, "aborted and error")
        let out = try #require(try document.nodes(forXPath: "/testsuites/testsuite[1]/testcase[2]/system-out").first)
        #expect(out.stringValue?.contains("mic = -43.0 dBFS [-42.0...-34.0] fail") == true, "\(out.stringValue ?? "")")
        #expect(RecordsExport.escape("a\u{1}<b>") == "a\u{FFFD}&lt;b&gt;")
    }

    @Test func jsonHasEachUnitWithItsRuns() throws {
        let text = try RecordsExport.json(units: Self.units, runs: Self.runs)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [[String: Any]])
        #expect(array.map { $0["hardwareID"] as? String } == ["A", "B", "C", "D"])
        let runsOfA = try #require(array[0]["runs"] as? [[String: Any]])
        #expect(runsOfA.count == 2)
        #expect((runsOfA[0]["steps"] as? [[String: Any]])?.count == 2)
        #expect((runsOfA[0]["start"] as? [String: Any])?["startedAt"] as? String == "2027-01-15T08:00:00.000Z")
    }
}
