import Foundation
import Labels
import Records
import Station
import Synchronization
import Testing
import TestSupport
import Transport
import TuneupKit

/// `tuneup station run`'s sequence as one library call (issue 31 §1): the station with its display, labels and
/// companions, then labels flushed, the summary, the companions finished and the records closed, in that order.
@Suite struct StationSessionTests {
    /// What the display and a companion were told, in order.
    final class Journal: StationDisplay, StationCompanion {
        let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
        func show(_ event: StationEvent) { if case .finished(let unit) = event { add("finished \(unit.outcome)") } }
        func records(_ status: String, _ text: String) { add("records \(status)") }
        func note(_ text: String) { add("note \(text)") }
        func label(_ result: Result<PrintedLabel, LabelError>, slot: String, serial: String) { add("label \(serial)") }
        func summary(_ totals: StationTotals, stopReason: String?) { add("summary \(totals.passed)") }
        func handle(_ event: StationEvent) { if case .finished = event { add("companion saw finished") } }
        func finish(note: @escaping @Sendable (String) -> Void, warn: @escaping @Sendable (String) -> Void) async {
            add("companion finished")
            warn("companion warning")
        }
    }

    func session(_ line: LineFixture, labels: LabelPrinter?, journal: Journal) async throws -> StationSession {
        let records = try await StationRecords.open(db: line.directory + "/session.sqlite", outbox: nil, lease: nil, station: "s1",
                                                    recipe: line.recipe.path)
        var connection = ConnectionOptions()
        connection.session.timeout = .seconds(30)
        let options = StationOptions(devices: .real, station: "s1", toolVersion: "test", connection: connection, deviceWait: .seconds(10),
                                     pollInterval: .milliseconds(50))
        return StationSession(recipe: line.recipe, records: records, options: options, labels: labels, companions: [journal], uploadWait: .zero)
    }

    @Test func everyUnitLabelledThenTheSummaryThenTheCompanionsThenTheRecordsClosed() async throws {
        let line = try await LineFixture.make(units: 2)
        defer { Task { await line.close() } }
        let folder = line.directory + "/labels"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let journal = Journal()
        let warnings = Mutex<[String]>([])
        let verdict = try await withTimeLimit(120) {
            try await session(line, labels: LabelPrinter(folder: folder, printer: nil), journal: journal)
                .run(slots: line.server.endpoints, usb: false, watch: false, display: journal, warn: { w in warnings.withLock { $0.append(w) } },
                     attachedUSB: { [] })
        }
        #expect(verdict == .passed)
        let all = journal.all
        #expect(all.filter { $0 == "finished pass" }.count == 2 && all.filter { $0.hasPrefix("label ") }.count == 2)
        let summary = try #require(all.firstIndex(of: "summary 2"))
        #expect(all.lastIndex { $0.hasPrefix("label ") }! < summary, "labels are flushed before the summary")
        #expect(all.firstIndex(of: "companion finished")! > summary && all.last == "companion finished")
        #expect(warnings.withLock { $0 } == ["companion warning"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".zpl") }.count == 2)
        // The records were closed: the station's name is free again.
        try await waitUntil("the name is free once the session ended") {
            (try? await StationRecords.open(db: line.directory + "/session.sqlite", outbox: nil, lease: nil, station: "s1",
                                            recipe: line.recipe.path)) != nil
        }
    }

    @Test func noUSBHeadsetAndNoSlotIsAConnectionFailureAfterTheShutDown() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let journal = Journal()
        let error = await #expect(throws: TransportError.self) {
            _ = try await session(line, labels: nil, journal: journal)
                .run(slots: [], usb: true, watch: false, display: journal, warn: { _ in }, attachedUSB: { [] })
        }
        #expect(error?.code == .notFound && error?.category == .connection)
        #expect(error?.message == "no USB headset is attached (use --watch to wait for units)")
        #expect(journal.all == ["companion finished"], "no summary, but the companions are finished")
    }
}
