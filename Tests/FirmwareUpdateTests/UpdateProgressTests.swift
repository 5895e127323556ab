import Progress
import Testing
@testable import FirmwareUpdate

/// The updater's phases as a weighted tree, and its reporter on that tree.
@Suite struct UpdateProgressTests {
    /// Where each phase starts and how wide it is: the same numbers the updater has always reported.
    @Test func phaseSpansAreTheUpdatersOwn() throws {
        let tracker = ProgressTracker(UpdatePhase.tree)
        let expected: [(UpdatePhase, Double, Double)] = [
            (.connect, 0.00, 0.02), (.authenticate, 0.02, 0.02), (.enterBootloader, 0.04, 0.06), (.erase, 0.10, 0.80),
            (.write, 0.10, 0.80), (.verify, 0.90, 0.04), (.commit, 0.94, 0.02), (.reboot, 0.96, 0.03), (.confirm, 0.99, 0.01),
        ]
        for (phase, start, width) in expected {
            let path = try #require(phase.path)
            let span = try #require(tracker.span(of: path), "\(phase)")
            #expect(span == ProgressSpan(start: start, width: width), "\(phase)")
        }
        #expect(UpdatePhase.reconnect.path == nil && UpdatePhase.done.path == nil)
    }

    @Test func reporterFractionNeverGoesBackAndEveryConsumerSeesTheSame() async {
        let reporter = ProgressReporter()
        let first = reporter.subscribe()
        reporter.phase(.connect, message: "connecting")
        reporter.phase(.enterBootloader)
        reporter.transfer(phase: .write, bytesWritten: 512, sectorsErased: 1, workFraction: 0.5, window: 4)
        let second = reporter.subscribe()
        reporter.phase(.reconnect, message: "reconnecting")
        // Resumed with less acknowledged than before the loss.
        reporter.transfer(phase: .write, bytesWritten: 256, sectorsErased: 1, workFraction: 0.25, window: 2)
        reporter.phase(.verify)
        reporter.finish(done: true)
        var a: [UpdateProgress] = [], b: [UpdateProgress] = []
        for await e in first { a.append(e) }
        for await e in second { b.append(e) }
        #expect(a == b)
        #expect(a.map(\.phase) == [.connect, .enterBootloader, .write, .reconnect, .write, .verify, .done], "\(a.map(\.phase))")
        #expect(a.map(\.fraction) == [0, 0.04, 0.5, 0.5, 0.5, 0.9, 1])
    }
}
