import Foundation
import Records
import TestSupport
import Testing

/// Traceability (work order, lot, fixture, metadata), attachments and releases from quarantine, on both stores and
/// through a station's outbox; and the pure statistics of process control on hand-computed numbers.
@Suite struct TraceabilityTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// The same checks on any store: written, read back, refused, released, exported.
    static func exercise(_ store: any RecordStore, kind: StoreKind) async throws {
        let traced = RunStart(
            hardwareID: "hw-1", station: "s1", slot: "1", operatorName: "ann", startedAt: start, workOrder: "WO-4711", lot: "L26-48",
            fixture: "fx-2", metadata: ["line": "A", "shift.name": "early"])
        let run = try await store.startRun(traced)
        _ = try await store.recordStep(StepRecord(
            name: "test:mic", startedAt: start, endedAt: start + 1, outcome: .fail,
            measurements: [Measurement(name: "mic", value: -43.5, unit: "dBFS", low: -42, high: -34, outcome: .fail)]), in: run)
        let curve = Data("attempt,value\r\n1,-43.5\r\n".utf8)
        try await store.recordAttachment(Attachment(name: "mic-readings.csv", step: "test:mic", mediaType: "text/csv", content: curve, createdAt: start), in: run)
        let binary = Data((0..<256).map { UInt8($0) })
        try await store.recordAttachment(Attachment(name: "blob.bin", mediaType: "application/octet-stream", content: binary, createdAt: start), in: run)

        // Refused, each with one line: a second name, too large, a bad name, bad metadata.
        let twice = await #expect(throws: RecordsError.self) {
            try await store.recordAttachment(Attachment(name: "blob.bin", mediaType: "text/plain", content: Data("x".utf8)), in: run)
        }
        #expect(twice?.code == .invalidArgument && twice?.message.contains("already") == true)
        let large = await #expect(throws: RecordsError.self) {
            try await store.recordAttachment(
                Attachment(name: "big.bin", mediaType: "application/octet-stream", content: Data(count: Traceability.maxAttachmentBytes + 1)), in: run)
        }
        #expect(large?.message.contains("at most") == true, "\(large?.message ?? "")")
        let badName = await #expect(throws: RecordsError.self) {
            try await store.recordAttachment(Attachment(name: "../etc/passwd", mediaType: "text/plain", content: Data()), in: run)
        }
        #expect(badName?.code == .invalidArgument)
        for bad in [["bad key": "x"], ["k": "two\nlines"], ["k": String(repeating: "v", count: 257)]] {
            let refused = await #expect(throws: RecordsError.self) {
                _ = try await store.startRun(RunStart(hardwareID: "hw-2", station: "s1", slot: "1", metadata: bad))
            }
            #expect(refused?.code == .invalidArgument, "\(bad)")
            #expect(refused.map { !$0.message.contains("\n") } == true)
        }
        try await store.finishRun(run, outcome: .fail, at: start + 2)

        let read = try #require(try await store.run(run))
        #expect(read.start == traced, "traceability reads back as written: \(read.start)")
        #expect(read.attachments.map(\.name) == ["mic-readings.csv", "blob.bin"])
        #expect(read.attachments.allSatisfy { $0.content == nil }, "a run lists its attachments without content")
        #expect(read.attachments[0].size == curve.count && read.attachments[0].step == "test:mic")
        #expect(read.attachments[1].sha256 == "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880", "SHA-256 of bytes 0...255")
        let back = try #require(try await store.attachment(run: run, name: "blob.bin"))
        #expect(back.content == binary && back.mediaType == "application/octet-stream")
        #expect(try await store.attachment(run: run, name: "nothing") == nil)
        // A closed run takes no attachment.
        let closed = await #expect(throws: RecordsError.self) {
            try await store.recordAttachment(Attachment(name: "late.txt", mediaType: "text/plain", content: Data()), in: run)
        }
        #expect(closed?.code == .invalidTransition)

        // Through an outbox too: a release is the line's (written to the server, after this station's runs of the
        // unit), and the unit's record carries it.
        try await releaseAndExport(store)
    }

    static func releaseAndExport(_ store: any RecordStore) async throws {
        // Rework and release: two failures, released by bob; nothing left to release then.
        let second = try await store.startRun(RunStart(hardwareID: "hw-1", station: "s1", slot: "1", startedAt: start + 10))
        try await store.finishRun(second, outcome: .error, at: start + 11)
        let runs = try await store.runs(hardwareID: "hw-1", station: nil)
        #expect(Rework.failuresSinceRelease(runs: runs, releases: []) == 2)
        let release = try await store.release("hw-1", by: "bob", reason: "microphone replaced", at: start + 20)
        #expect(release.failures == 2 && release.releasedBy == "bob" && release.releasedAt == start + 20)
        let releases = try await store.releases(of: "hw-1")
        #expect(releases == [release])
        #expect(Rework.failuresSinceRelease(runs: runs, releases: releases) == 0)
        let nothing = await #expect(throws: RecordsError.self) { _ = try await store.release("hw-1", by: "bob", reason: "", at: start + 21) }
        #expect(nothing?.code == .invalidTransition)
        let unknown = await #expect(throws: RecordsError.self) { _ = try await store.release("hw-9", by: "bob", reason: "", at: start + 21) }
        #expect(unknown?.code == .notFound)
        let twoLines = await #expect(throws: RecordsError.self) { _ = try await store.release("hw-1", by: "bob", reason: "a\nb", at: start + 21) }
        #expect(twoLines?.code == .invalidArgument)
        // A failure after the release counts again.
        let third = try await store.startRun(RunStart(hardwareID: "hw-1", station: "s1", slot: "1", startedAt: start + 30))
        try await store.finishRun(third, outcome: .fail, at: start + 31)
        #expect(Rework.failuresSinceRelease(runs: try await store.runs(hardwareID: "hw-1", station: nil), releases: releases) == 1)

        // Every export carries it.
        let unit = try #require(try await store.unit("hw-1"))
        #expect(unit.releases == [release])
        let all = try await store.runsWithSteps()
        let json = try RecordsExport.render(.json, units: try await store.units(), runs: all)
        for text in ["\"workOrder\" : \"WO-4711\"", "\"lot\" : \"L26-48\"", "\"fixture\" : \"fx-2\"", "\"shift.name\" : \"early\"",
                     "\"name\" : \"mic-readings.csv\"", "\"mediaType\" : \"text/csv\"", "\"releasedBy\" : \"bob\"", "\"reason\" : \"microphone replaced\""] {
            #expect(json.contains(text), "JSON export lacks \(text)")
        }
        #expect(!json.contains("content"), "the JSON export carries no attachment content")
        let csv = try RecordsExport.render(.csv, units: try await store.units(), runs: all)
        let rows = csv.components(separatedBy: "\r\n")
        #expect(rows[0].hasSuffix(",work_order,lot,fixture,metadata,attachments,scan,answers"))
        #expect(rows[1].hasSuffix(",WO-4711,L26-48,fx-2,line=A; shift.name=early,mic-readings.csv; blob.bin,,"), "\(rows[1])")
        let junit = try RecordsExport.render(.junit, units: try await store.units(), runs: all)
        for text in ["name=\"work-order\" value=\"WO-4711\"", "name=\"metadata.line\" value=\"A\"", "name=\"attachment.blob.bin\""] {
            #expect(junit.contains(text), "JUnit export lacks \(text)")
        }
        // The metadata properties in the order of their keys, as in the CSV: an export of the same records is the same
        // text every time (issue 31 §5: the order reversed survived the suite).
        let line = try #require(junit.range(of: "name=\"metadata.line\""))
        let shift = try #require(junit.range(of: "name=\"metadata.shift.name\""))
        #expect(line.lowerBound < shift.lowerBound)
    }

    @Test(arguments: StoreKind.allCases) func storesKeepTraceabilityAttachmentsAndReleases(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
            try await Self.exercise(try await stores.open(), kind: kind)
            if kind == .sqlite {
                // And a reader that may only read sees them.
                let reader = try await SQLiteRecordStore.openForReading(path: "\(stores.directory)/records.sqlite")
                #expect(try await reader.releases(of: "hw-1").count == 1)
            }
        }
    }

    /// A station's outbox uploads a run with its traceability and its attachments, content and all; a release made
    /// on the line's database is what the station sees.
    @Test func theOutboxCarriesTraceabilityAndAttachmentsToTheLine() async throws {
        let dir = try TemporaryDirectory()
        let (server, _) = try await PostgresRecordStoreTests.store()
        let outbox = try await SQLiteRecordStore.open(path: dir.path("s1.outbox.sqlite"))
        let store = OutboxRecordStore(server: server, outbox: outbox, station: "s1", serverWait: .seconds(10), retryInterval: .milliseconds(100))
        let run = try await store.startRun(RunStart(hardwareID: "hw-1", station: "s1", slot: "1", operatorName: "ann", startedAt: Self.start,
                                                    workOrder: "WO-1", lot: "L1", fixture: "F1", metadata: ["k": "v"]))
        let log = Data("fixture log\n".utf8)
        try await store.recordAttachment(Attachment(name: "fixture.log", step: "test:mic", mediaType: "text/plain", content: log), in: run)
        try await store.finishRun(run, outcome: .fail, at: Self.start + 1)
        let left = await store.finish(within: .seconds(60))
        #expect(left.isEmpty, "\(left)")

        let uploaded = try #require(try await server.runs(hardwareID: "hw-1", station: nil).first)
        #expect(uploaded.start.workOrder == "WO-1" && uploaded.start.lot == "L1" && uploaded.start.fixture == "F1")
        #expect(uploaded.start.metadata == ["k": "v"] && uploaded.start.operatorName == "ann")
        let full = try #require(try await server.run(uploaded.id))
        #expect(full.attachments.map(\.name) == ["fixture.log"])
        #expect(try await server.attachment(run: uploaded.id, name: "fixture.log")?.content == log)

        // Released on the line's database: the station's store sees it.
        let again = OutboxRecordStore(server: server, outbox: outbox, station: "s1", serverWait: .seconds(10), retryInterval: .milliseconds(100))
        _ = try await server.release("hw-1", by: "bob", reason: "reworked", at: Self.start + 5)
        #expect(try await again.releases(of: "hw-1").map(\.releasedBy) == ["bob"])
        let viaStation = try await again.runs(hardwareID: "hw-1", station: nil)
        #expect(Rework.failuresSinceRelease(runs: viaStation, releases: try await again.releases(of: "hw-1")) == 0)
        _ = await again.finish(within: .seconds(10))
        await server.close()
    }

    // MARK: Pure statistics, on numbers computed by hand

    static func sample(_ values: [Double], firstPass: Bool = true, low: Double? = 0, high: Double? = 10) -> ProcessWindow.Sample {
        ProcessWindow.Sample(firstPass: firstPass, measurements: values.map { Measurement(name: "m", value: $0, unit: "dB", low: low, high: high, outcome: .pass) })
    }

    @Test func cpkAndFirstPassYieldOverAWindow() {
        // 1...5 within 0...10: mean 3, σ = √2.5 = 1.58114, Cpk = min(7, 3) / 4.74342 = 0.63246.
        var wide = ProcessWindow(size: 5)
        for v in [1.0, 2, 3, 4, 5] { wide.add(Self.sample([v])) }
        let all = try! #require(wide.figures.first)
        #expect(all.count == 5 && abs(all.mean - 3) < 1e-12 && abs(all.standardDeviation - 1.5811388300841898) < 1e-12)
        #expect(abs(all.cpk! - 0.6324555320336759) < 1e-12)

        // A window of 3 keeps 3, 4, 5: mean 4, σ = 1, Cpk = min(6, 4) / 3 = 1.33333.
        var window = ProcessWindow(size: 3)
        let firsts = [true, true, false, true, true]
        for (v, first) in zip([1.0, 2, 3, 4, 5], firsts) { window.add(Self.sample([v], firstPass: first)) }
        let last = try! #require(window.figures.first)
        #expect(last.count == 3 && abs(last.mean - 4) < 1e-12 && abs(last.standardDeviation - 1) < 1e-12)
        #expect(abs(last.cpk! - 4.0 / 3) < 1e-12)
        // First passes of the last 3 units: false, true, true.
        #expect(abs(window.firstPassYield! - 2.0 / 3) < 1e-12)

        // One-sided: only a low limit of 0 → Cpl = 4 / 3.
        var lowOnly = ProcessWindow(size: 3)
        for v in [3.0, 4, 5] { lowOnly.add(Self.sample([v], high: nil)) }
        #expect(abs(lowOnly.figures[0].cpk! - 4.0 / 3) < 1e-12)
        // σ = 0: no Cpk, never an alarm.
        var flat = ProcessWindow(size: 3)
        for _ in 0..<3 { flat.add(Self.sample([5])) }
        #expect(flat.figures[0].cpk == nil)
        #expect(flat.alarm(SPCLimits(window: 3, minCpk: 1.33)) == nil)
    }

    @Test func alarmsOnlyOnAFullWindowAndNameTheCause() {
        var window = ProcessWindow(size: 3)
        for (v, first) in zip([1.0, 2, 3, 4, 5], [true, true, false, true, true]) { window.add(Self.sample([v], firstPass: first)) }
        let cpk = window.alarm(SPCLimits(window: 3, minCpk: 1.5))
        #expect(cpk?.kind == .cpk && cpk?.measurement == "m" && abs(cpk!.value - 4.0 / 3) < 1e-12 && cpk?.limit == 1.5)
        #expect(cpk?.message == "SPC alarm: m Cpk 1.33 over the last 3 units is below 1.5")
        #expect(window.alarm(SPCLimits(window: 3, minCpk: 1.2)) == nil)
        // Per measurement: its own minimum wins, 0 turns it off.
        #expect(window.alarm(SPCLimits(window: 3, minCpk: 1.2, measurements: ["m": 1.4]))?.kind == .cpk)
        #expect(window.alarm(SPCLimits(window: 3, minCpk: 2, measurements: ["m": 0])) == nil)
        let fpy = window.alarm(SPCLimits(window: 3, minFirstPassYield: 0.7))
        #expect(fpy?.kind == .firstPassYield && abs(fpy!.value - 2.0 / 3) < 1e-12)
        #expect(fpy?.message == "SPC alarm: first-pass yield 66.7 % over the last 3 units is below 70 %")
        #expect(window.alarm(SPCLimits(window: 3, minFirstPassYield: 0.6)) == nil)

        // Not full yet: no verdict, however bad.
        var young = ProcessWindow(size: 10)
        for v in [1.0, 9, 1, 9] { young.add(Self.sample([v], firstPass: false)) }
        #expect(young.alarm(SPCLimits(window: 10, minCpk: 1.33, minFirstPassYield: 0.9)) == nil)
    }

    @Test func aWindowFromRunsCountsEachUnitsFirstFinishedRun() {
        func run(_ id: Int64, _ hw: String, _ outcome: RunOutcome?, _ value: Double) -> RunRecord {
            RunRecord(id: RunID(id), start: RunStart(hardwareID: hw, station: "s", slot: "1", startedAt: Self.start + Double(id)),
                      endedAt: outcome == nil ? nil : Self.start + Double(id) + 0.5, outcome: outcome, reworkCount: 0,
                      steps: [StepRecord(name: "t", startedAt: Self.start, endedAt: Self.start, outcome: .pass,
                                         measurements: [Measurement(name: "m", value: value, low: 0, high: 10, outcome: .pass)])])
        }
        // a fails then passes (rework: not a first pass); b aborted (left out) then passes; c passes; d is open.
        let runs = [run(1, "a", .fail, 1), run(2, "b", .aborted, 100), run(3, "a", .pass, 2), run(4, "b", .pass, 3),
                    run(5, "c", .pass, 4), run(6, "d", nil, 100)]
        let window = ProcessWindow.of(runs: runs, size: 10)
        #expect(window.firstPasses == [false, false, true, true])
        #expect(window.values["m"]?.map(\.value) == [1, 2, 3, 4])
    }
}
