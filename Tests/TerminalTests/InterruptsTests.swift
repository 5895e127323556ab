import Glibc
import Testing
@testable import Terminal

/// What a command's signals do, in the library (issue 31 §1): the first cancels, a later one ends the process.
struct InterruptsTests {
    @Test func theFirstSignalIsKeptAndOnlyItCancels() {
        var latch = SignalLatch()
        #expect(latch.first == nil)
        #expect(latch.receive(SIGTERM) && latch.first == SIGTERM)
        #expect(!latch.receive(SIGINT) && latch.first == SIGTERM)
    }

    @Test func namesAndExitCodes() {
        #expect(Interrupts.name(SIGINT) == "SIGINT" && Interrupts.name(SIGHUP) == "SIGHUP" && Interrupts.name(SIGUSR1) == "signal \(SIGUSR1)")
        #expect(Interrupts.exitCode(SIGINT) == 130 && Interrupts.exitCode(SIGTERM) == 143)
    }
}
