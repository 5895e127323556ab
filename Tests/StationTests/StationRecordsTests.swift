import Foundation
import Records
import Station
import Testing
import TestSupport

/// A station's set-up as a library call: the records chosen from --db and --outbox, the name held, the recipe checked.
struct StationRecordsTests {
    @Test func theRecordsFileDefaultsNextToTheRecipeAndALinesOutboxIsNamedAfterTheStation() {
        #expect(StationRecords.recordsPath(db: nil, outbox: nil, station: "s1", recipe: "/line/recipes/a.yaml") == "/line/recipes/records.sqlite")
        #expect(StationRecords.recordsPath(db: "/data/r.sqlite", outbox: nil, station: "s1", recipe: "/line/a.yaml") == "/data/r.sqlite")
        #expect(StationRecords.recordsPath(db: "postgres://line@db/line", outbox: nil, station: "bay 2/left", recipe: "/line/a.yaml")
            == "/line/bay_2_left.outbox.sqlite")
        #expect(StationRecords.recordsPath(db: "postgres://line@db/line", outbox: "/o.sqlite", station: "s1", recipe: "/line/a.yaml") == "/o.sqlite")
        #expect(!StationRecords.defaultStationName().isEmpty)
    }

    @Test func aSecondStationOfTheNameOnTheRecordsIsRefusedUntilTheFirstCloses() async throws {
        let directory = try TestSupport.TemporaryDirectory.make("station-records")
        let recipe = directory + "/recipe.yaml"
        var first: StationRecords? = try await StationRecords.open(db: nil, outbox: nil, lease: nil, station: "s1", recipe: recipe)
        #expect(first?.server == nil && first?.outboxPath == nil)
        let error = await #expect(throws: RecordsError.self) {
            _ = try await StationRecords.open(db: nil, outbox: nil, lease: nil, station: "s1", recipe: recipe)
        }
        #expect(error?.code == .stationLive)
        var notes: [String] = []
        let taken = await first?.close(uploadWait: .zero) { notes.append($0) }
        #expect(taken == false && notes.isEmpty, "a SQLite station has no outbox to upload and no line hold")
        first = nil
        // The lock goes with its last reference (the blocking executor's thread may hold it a moment longer).
        var second: StationRecords?
        try await waitUntil("the name is free once its holder is gone") {
            second = try? await StationRecords.open(db: nil, outbox: nil, lease: nil, station: "s1", recipe: recipe)
            return second != nil
        }
        #expect(second != nil)
    }

    @Test func aRecipeWhoseQuestionsNobodyCanAnswerIsRefusedAndOneWithAnAnswererLoads() async throws {
        let line = try await LineFixture.make(units: 1, edit: OperatorPromptStationTests.recipe)
        defer { Task { await line.close() } }
        let path = line.recipe.path
        let error = await #expect(throws: StationSetupError.self) { _ = try await Station.loadRecipe(path, terminal: false, page: false) }
        #expect(error?.code == .unanswerable && error?.category == .usage && error?.message.hasPrefix("\(path): ") == true)
        let loaded = try await Station.loadRecipe(path, terminal: true, page: false)
        #expect(loaded.recipe.asksOperator)
        _ = try await Station.loadRecipe(path, terminal: false, page: true)
    }
}
