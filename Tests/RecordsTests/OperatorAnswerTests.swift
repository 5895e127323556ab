import Foundation
import Records
import TestSupport
import Testing

/// Operator answers (schema v5): recorded with a run in every store (SQLite, PostgreSQL, a station's outbox), found by
/// code, and in every export; an outbox uploads them and finds the line's bindings.
@Suite struct OperatorAnswerTests {
    static let at = Date(timeIntervalSince1970: 1_795_000_000.123)
    static let scan = OperatorAnswer(step: "scan", kind: .scan, label: "PCB serial", value: "PCB-4006381333931", answeredBy: "ann", source: "page", answeredAt: at)
    static let led = OperatorAnswer(step: "prompt:led-blue", kind: .passFail, label: "Is the LED blue?", value: "pass", answeredBy: "ann",
                                    source: "terminal", answeredAt: at.addingTimeInterval(1))

    /// Records a run of `hw-1` with the two answers and checks what the store gives back.
    static func roundTrip(_ store: any RecordStore) async throws -> RunRecord {
        let run = try await store.startRun(RunStart(hardwareID: "hw-1", station: "s1", slot: "a", operatorName: "ann"))
        try await store.recordAnswer(scan, in: run)
        try await store.recordAnswer(led, in: run)
        _ = try await store.recordStep(StepRecord(name: "scan", startedAt: at, endedAt: at, outcome: .pass), in: run)
        try await store.finishRun(run, outcome: .pass, at: at.addingTimeInterval(2))
        // A finished run takes no more answers.
        await #expect(throws: RecordsError.self) { try await store.recordAnswer(scan, in: run) }
        let record = try #require(try await store.run(run))
        #expect(record.answers == [scan, led])
        let bound = try await store.bindings(ofCode: "PCB-4006381333931")
        #expect(bound.map(\.hardwareID) == ["hw-1"] && bound.first?.run == run)
        #expect(try await store.bindings(ofCode: "pass").isEmpty, "only scans bind")
        return record
    }

    @Test(arguments: StoreKind.allCases) func storesKeepAnswersAndExportThem(_ kind: StoreKind) async throws {
        try await withStores(kind) { stores in
        let store = try await stores.open()
        let run = try await Self.roundTrip(store)
        let units = try await store.units()
        let json = try RecordsExport.render(.json, units: units, runs: [run])
        #expect(json.contains("\"answers\"") && json.contains("\"answeredBy\" : \"ann\"") && json.contains("\"source\" : \"page\""), "\(json)")
        #expect(json.contains("\"answeredAt\" : \"2026-11-18T") && json.contains("PCB-4006381333931"))
        let csv = try RecordsExport.render(.csv, units: units, runs: [run])
        let rows = csv.components(separatedBy: "\r\n")
        #expect(rows[0].hasSuffix(",attachments,scan,answers"), "\(rows[0])")
        #expect(rows[1].hasSuffix(",PCB-4006381333931,prompt:led-blue=pass"), "\(rows[1])")
        let junit = try RecordsExport.render(.junit, units: units, runs: [run])
        #expect(junit.contains("<property name=\"scan\" value=\"PCB-4006381333931 (by ann on the page, "), "\(junit)")
        #expect(junit.contains("<property name=\"answer.prompt:led-blue\" value=\"pass (by ann on the terminal, "))
        }
    }

    @Test func theOutboxUploadsAnswersAndFindsTheLinesBindings() async throws {
        let (server, _) = try await PostgresRecordStoreTests.store()
        let bound = try await server.startRun(RunStart(hardwareID: "hw-1", station: "s1", slot: "a", operatorName: "ann"))
        try await server.recordAnswer(Self.scan, in: bound)
        // A station's outbox: answers kept locally, uploaded with the run, found by code on the line.
        let path = try TestSupport.TemporaryDirectory.make("answers-outbox") + "/outbox.sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let outbox = OutboxRecordStore(server: server, outbox: try await SQLiteRecordStore.open(path: path), station: "s2")
        let run = try await outbox.startRun(RunStart(hardwareID: "hw-2", station: "s2", slot: "b", operatorName: "bob"))
        let code = OperatorAnswer(step: "scan", kind: .scan, label: "PCB serial", value: "PCB-5012345678900", answeredBy: "bob", source: "terminal", answeredAt: Self.at)
        try await outbox.recordAnswer(code, in: run)
        try await outbox.finishRun(run, outcome: .pass, at: Self.at.addingTimeInterval(1))
        #expect(try await outbox.bindings(ofCode: "PCB-4006381333931").map(\.hardwareID) == ["hw-1"], "the line's binding, from the server")
        let left = await outbox.finish(within: .seconds(20))
        #expect(left.isEmpty, "\(left)")
        let uploaded = try await server.runs(hardwareID: "hw-2", station: nil)
        let first = try #require(uploaded.first)
        let full = try #require(try await server.run(first.id))
        #expect(full.answers == [code])
        #expect(try await server.bindings(ofCode: "PCB-5012345678900").map(\.hardwareID) == ["hw-2"])
        await server.close()
    }
}
