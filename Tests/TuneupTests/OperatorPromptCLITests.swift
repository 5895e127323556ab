import Foundation
import Records
import Testing

/// `station run` with a recipe that asks the operator, where no one can answer; and the answers in `records show`.
@Suite struct OperatorPromptCLITests {
    typealias S = StationCLITests

    @Test func aRecipeThatAsksIsRefusedWithoutATerminalOrAPage() async throws {
        let (directory, recipe) = try S.recipe { $0 + "\nscan:\n  label: PCB serial\n  pattern: \"PCB-[0-9]+\"\n" }
        // stdin is not a terminal here, and there is no --ui: the station would wait for ever.
        let result = try await CLI.run(["station", "run", "--recipe", recipe, "-d", "tcp:127.0.0.1:9", "--station", "p1"], stdin: "")
        S.refused(result, 64, "the recipe asks the operator (scan or prompts) but stdin is not a terminal and there is no --ui")
        // Refused with the recipe: no records are opened (none created, none migrated).
        #expect(!FileManager.default.fileExists(atPath: directory + "/records.sqlite"), "the refusal created the records")
    }

    @Test func recordsShowListsTheAnswers() async throws {
        let db = Scratch.directory + "/records.sqlite"
        let store = try await SQLiteRecordStore.open(path: db)
        let run = try await store.startRun(RunStart(hardwareID: "9c1e44a2d0f1a3b7", station: "s1", slot: "a", operatorName: "ann"))
        try await store.recordAnswer(OperatorAnswer(step: "scan", kind: .scan, label: "PCB serial", value: "PCB-4006381333931",
                                                    answeredBy: "ann", source: "page"), in: run)
        try await store.recordAnswer(OperatorAnswer(step: "prompt:led-blue", kind: .passFail, label: "Is the LED blue?", value: "fail",
                                                    answeredBy: "ann", source: "terminal"), in: run)
        try await store.finishRun(run, outcome: .fail, at: Date())
        let show = try await CLI.run(["records", "show", "9c1e44a2d0f1a3b7", "--db", db])
        #expect(show.status == 0, "\(show.stderr)")
        #expect(show.stdout.contains("  scanned PCB serial: PCB-4006381333931 (by ann on the page, "), "\(show.stdout)")
        #expect(show.stdout.contains("  answered prompt:led-blue: fail (by ann on the terminal, "), "\(show.stdout)")
    }
}
