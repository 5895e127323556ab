import Progress
import Testing

@Suite struct ProgressTrackerTests {
    static let update: [ProgressPhase] = [
        ProgressPhase("enter", weight: 1), ProgressPhase("transfer", weight: 8), ProgressPhase("verify", weight: 1),
    ]

    @Test func weightsDivideTheWhole() throws {
        var t = ProgressTracker(Self.update)
        #expect(t.span(of: ["enter"]) == ProgressSpan(start: 0, width: 0.1))
        #expect(t.span(of: ["transfer"]) == ProgressSpan(start: 0.1, width: 0.8))
        #expect(t.span(of: ["verify"]) == ProgressSpan(start: 0.9, width: 0.1))
        #expect(abs(try t.advance(["transfer"], to: 0.5) - 0.5) < 1e-12)
        #expect(t.current == ["transfer"] && t.phaseFraction == 0.5)
        #expect(try t.advance(["verify"], to: 1) == 1)
    }

    @Test func nestedPhasesShareTheirParentsSpan() throws {
        // A station: two units, each flashed (an update nested as one phase) then tested.
        let unit = [ProgressPhase("flash", weight: 3, Self.update), ProgressPhase("test", weight: 1)]
        var t = ProgressTracker([ProgressPhase("unit-1", weight: 1, unit), ProgressPhase("unit-2", weight: 1, unit)])
        #expect(t.span(of: ["unit-2"]) == ProgressSpan(start: 0.5, width: 0.5))
        #expect(t.span(of: ["unit-2", "test"]) == ProgressSpan(start: 0.875, width: 0.125))
        let transfer = try #require(t.span(of: ["unit-1", "flash", "transfer"]))
        #expect(abs(transfer.start - 0.0375) < 1e-12 && abs(transfer.width - 0.3) < 1e-12)
        // Half of unit 1's transfer: 0.0375 + 0.15.
        #expect(abs(try t.advance(["unit-1", "flash", "transfer"], to: 0.5) - 0.1875) < 1e-12)
        // The parent phase itself can be advanced with a nested job's own overall fraction.
        #expect(try t.advance(["unit-2", "flash"], to: 1) == 0.875)
    }

    @Test func theOverallFractionNeverGoesBack() throws {
        var t = ProgressTracker(Self.update)
        var seen: [Double] = []
        seen.append(try t.advance(["transfer"], to: 0.75))
        // A reconnect resumes the transfer with less acknowledged; an earlier phase is entered again.
        seen.append(try t.advance(["transfer"], to: 0.25))
        seen.append(try t.advance(["enter"]))
        seen.append(try t.advance(["transfer"], to: .nan))
        seen.append(try t.advance(["transfer"], to: 0.9))
        let transfer = try #require(t.span(of: ["transfer"]))
        let high = transfer.overall(at: 0.75)
        #expect(abs(high - 0.7) < 1e-12)
        #expect(seen == [high, high, high, high, transfer.overall(at: 0.9)])
        #expect(try t.advance(["verify"], to: 7) == 1, "fractions beyond a phase are clamped")
    }

    @Test func unknownPhasesAndOddWeights() throws {
        var t = ProgressTracker([ProgressPhase("a", weight: -3), ProgressPhase("b", weight: .nan), ProgressPhase("c", weight: 2)])
        #expect(t.span(of: ["a"])?.width == 0 && t.span(of: ["c"]) == ProgressSpan(start: 0, width: 1))
        _ = try t.advance(["c"], to: 0.5)
        let error = #expect(throws: ProgressError.self) { try t.advance(["c", "x"], to: 1) }
        #expect(error?.code == .unknownPhase && error?.message.contains("c/x") == true)
        #expect(t.overall == 0.5 && t.current == ["c"], "a failed advance changes nothing")
        var empty = ProgressTracker([])
        #expect(throws: ProgressError.self) { try empty.advance(["a"]) }
        empty.finish()
        #expect(empty.overall == 1)
    }
}

@Suite struct ProgressMonitorTests {
    @Test func twoConsumersSeeTheSameSequence() async throws {
        let monitor = ProgressMonitor([ProgressPhase("one", weight: 1), ProgressPhase("two", weight: 3)])
        let early = monitor.subscribe()
        try monitor.advance(["one"], message: "starting")
        let late = monitor.subscribe()  // subscribes mid-job: replays what was sent
        let a = Task { var all: [ProgressSnapshot] = []; for await s in early { all.append(s) }; return all }
        let b = Task { var all: [ProgressSnapshot] = []; for await s in late { all.append(s) }; return all }
        for step in 1...20 { try monitor.advance(["two"], to: Double(step) / 20) }
        try monitor.advance(["one"], to: 1)  // going back does not move the fraction
        monitor.finish(message: "done")
        let first = await a.value, second = await b.value
        #expect(first.count == 23 && first == second)
        #expect(first.first?.message == "starting" && first.last?.finished == true && first.last?.overall == 1)
        let overall = first.map(\.overall)
        #expect(zip(overall, overall.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(first[21].phase == ["one"] && first[21].overall == first[20].overall)
        // After the end a new consumer's stream ends at once.
        var after = 0
        for await _ in monitor.subscribe() { after += 1 }
        #expect(after == 0)
    }

    @Test func aFeedReplaysTheNewestEvents() async {
        let feed = ProgressFeed<Int>(replayLimit: 3)
        for i in 1...5 { feed.publish(i) }
        feed.publish { nil }  // nothing to send
        var events = feed.subscribe().makeAsyncIterator()
        var got: [Int] = []
        for _ in 1...3 { if let i = await events.next() { got.append(i) } }
        feed.publish(6)
        feed.finish()
        while let i = await events.next() { got.append(i) }
        #expect(got == [3, 4, 5, 6] && feed.latest == 6)
    }
}
