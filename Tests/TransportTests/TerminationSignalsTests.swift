import Glibc
import TestSupport
import Testing
@testable import Transport

/// Termination signals reach every subscriber (SIGHUP only: the test process keeps the default handling of SIGINT
/// and SIGTERM, so a stuck run can still be stopped).
@Suite struct TerminationSignalsTests {
    @Test func everySubscriberReceivesTheSignal() async throws {
        try await withTimeLimit(30) {
            let first = try TerminationSignals.subscribe([SIGHUP])
            let second = try TerminationSignals.subscribe([SIGHUP])
            #expect(kill(getpid(), SIGHUP) == 0)
            var a = first.makeAsyncIterator()
            var b = second.makeAsyncIterator()
            #expect(await a.next() == SIGHUP)
            #expect(await b.next() == SIGHUP)
        }
    }

    @Test func aSignalSentFromAnotherThreadArrivesToo() async throws {
        try await withTimeLimit(30) {
            let signals = try TerminationSignals.subscribe([SIGHUP])
            // A dedicated thread blocks termination signals; the handler runs wherever the kernel delivers it.
            try DedicatedThread.spawn(name: "test-sender") { _ = kill(getpid(), SIGHUP) }
            var iterator = signals.makeAsyncIterator()
            #expect(await iterator.next() == SIGHUP)
        }
    }
}
