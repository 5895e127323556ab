import Foundation
import Recipe
import Records
import Station
import Synchronization
import TestSupport
import Testing
import TuneupKit

/// Scans and prompts as the station runs them, answered from a scripted terminal: a wrong code and a code bound to
/// another unit are refused (the prompt goes on waiting), FAIL fails the unit at its prompt, the answers are recorded.
@Suite struct OperatorPromptStationTests {
    static func recipe(_ text: String) -> String {
        text.replacingOccurrences(of: "tests:\n", with: """
            tests:
              - prompt: { name: led-blue, text: Is the status LED blue?, answer: pass-fail }

            """).replacingOccurrences(of: "    retry: { attempts: 2, delay: 500ms }\n", with: """
                retry: { attempts: 2, delay: 500ms }
              - prompt: { name: current, text: Read the meter, answer: value, unit: mA, limits: { low: 10, high: 30 } }

            """) + "\nscan:\n  label: PCB serial\n  pattern: \"PCB-[0-9]{13}\"\n  check-digit: gs1\n"
    }

    /// Waits until the desk holds a prompt of `step` at `slot` (the station is there), and returns it.
    static func prompt(_ desk: OperatorDesk, slot: String, step: String) async throws -> OperatorPrompt {
        try await withTimeLimit(60) {
            while true {
                if let found = desk.waiting.first(where: { $0.slot == slot && $0.step == step }) { return found }
                try await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    @Test func terminalAnswersScansAndPrompts() async throws {
        let line = try await LineFixture.make(units: 2, edit: Self.recipe)
        defer { Task { await line.close() } }
        #expect(line.recipe.recipe.prompts?.map(\.position) == [0, 4])
        let events = EventLog()
        let desk = OperatorDesk()
        let station = Station(recipe: line.recipe, store: line.store,
                              options: StationOptions(devices: .real, station: "prompts", operatorName: "ann", toolVersion: "test", deviceWait: .seconds(10)),
                              desk: desk) { events.append($0) }
        let (lines, typing) = AsyncStream.makeStream(of: String.self)
        let reports = Mutex<[String]>([])
        let terminal = Task { await TerminalAnswers.serve(lines, desk: desk) { r in reports.withLock { $0.append(r) } } }
        defer { terminal.cancel() }
        let running = Task { try await station.run(slots: line.slots) }
        let (a, b) = (line.slots[0].name, line.slots[1].name)

        let scanA = try await Self.prompt(desk, slot: a, step: "scan")
        let scanB = try await Self.prompt(desk, slot: b, step: "scan")
        #expect(scanA.text == "Scan the PCB serial" && scanA.kind == .scan)
        // A misread (wrong check digit) is refused and the prompt waits on.
        typing.yield("#\(scanA.id) PCB-4006381333932")
        try await withTimeLimit(60) { while desk.waiting.first(where: { $0.id == scanA.id })?.refusal == nil { try await Task.sleep(for: .milliseconds(5)) } }
        #expect(desk.waiting.first { $0.id == scanA.id }?.refusal?.contains("check digit") == true)
        typing.yield("#\(scanA.id) PCB-4006381333931")
        _ = try await Self.prompt(desk, slot: a, step: "prompt:led-blue")
        // The same code on the other unit is refused, naming the unit it is bound to.
        let unitA = try await line.info(0).hardwareID
        typing.yield("#\(scanB.id) PCB-4006381333931")
        try await withTimeLimit(60) { while desk.waiting.first(where: { $0.id == scanB.id })?.refusal == nil { try await Task.sleep(for: .milliseconds(5)) } }
        let duplicate = desk.waiting.first { $0.id == scanB.id }?.refusal ?? ""
        #expect(duplicate.contains("bound to unit \(unitA)"), "\(duplicate)")
        typing.yield("#\(scanB.id) PCB-5012345678900")
        // A line without #N answers the oldest prompt: A's LED check (asked before B's).
        let ledB = try await Self.prompt(desk, slot: b, step: "prompt:led-blue")
        typing.yield("pass")
        let current = try await Self.prompt(desk, slot: a, step: "prompt:current")
        typing.yield("#\(ledB.id) fail")
        typing.yield("#\(current.id) 12.5")
        let results = try await withTimeLimit(120) { try await running.value }
        #expect(results.map(\.outcome) == [.pass, .fail], "\(results)")
        #expect(results[1].failedStep == "prompt:led-blue" && results[1].message?.contains("answered FAIL on the terminal") == true, "\(results[1])")
        #expect(reports.withLock { $0 }.contains { $0.hasPrefix("#\(scanA.id): ") && $0.contains("check digit") })

        let idA = try #require(results[0].run), idB = try #require(results[1].run)
        let runA = try #require(try await line.store.run(RunID(idA)))
        #expect(runA.answers.map(\.step) == ["scan", "prompt:led-blue", "prompt:current"])
        #expect(runA.answers.map(\.value) == ["PCB-4006381333931", "pass", "12.5"])
        #expect(runA.answers.allSatisfy { $0.answeredBy == "ann" && $0.source == "terminal" })
        #expect(runA.steps.first { $0.name == "prompt:current" }?.measurements.first?.value == 12.5)
        #expect(runA.steps.map(\.name).prefix(2) == ["scan", "flash-application"])
        let runB = try #require(try await line.store.run(RunID(idB)))
        #expect(runB.answers.map(\.value) == ["PCB-5012345678900", "fail"])
        #expect(try await line.store.bindings(ofCode: "PCB-4006381333931").map(\.hardwareID) == [unitA])
        // The FAIL is the Pareto's cause, as a failing step is.
        #expect(RecordsReport(runs: [runB]).pareto.first?.cause == "prompt:led-blue")
    }

    @Test func aWaitingPromptEndsWithCancellationOrItsTimeout() async throws {
        let clock = ManualClock()
        let desk = OperatorDesk(clock: clock)
        let asked = Task {
            try await desk.ask(slot: "s", hardwareID: "hw", step: "prompt:x", kind: .passFail, text: "?", image: nil, hint: nil, timeout: .seconds(30)) {
                _ in .success(.passFail(true))
            }
        }
        try await withTimeLimit(30) { while clock.pendingSleeps == 0 || desk.waiting.isEmpty { try await Task.sleep(for: .milliseconds(2)) } }
        clock.advance(by: .seconds(29))
        #expect(desk.waiting.count == 1, "29 s: still waiting")
        clock.advance(by: .seconds(1))
        await #expect(throws: (any Error).self) { _ = try await asked.value }
        #expect(desk.waiting.isEmpty)
        // No timeout: only cancellation ends it (at once).
        let forever = Task {
            try await desk.ask(slot: "s", hardwareID: "hw", step: "scan", kind: .scan, text: "?", image: nil, hint: nil, timeout: nil) {
                _ in .success(.code("x"))
            }
        }
        try await withTimeLimit(30) { while desk.waiting.isEmpty { try await Task.sleep(for: .milliseconds(2)) } }
        forever.cancel()
        await #expect(throws: CancellationError.self) { _ = try await forever.value }
        #expect(desk.waiting.isEmpty)
        #expect(await desk.answer("pass", source: "page") == .noPrompt("no prompt waits"))
    }
}
