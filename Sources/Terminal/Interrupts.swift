import Dispatch
import Glibc
import Support
import Synchronization
import Transport

/// SIGINT, SIGTERM and SIGHUP while a command runs: the first cancels it (it stops at a safe point and says in
/// what state it leaves the device); a second ends the process at once, after what is written so far had a second to
/// reach its reader. Process-wide: a tool installs it once, around its command.
public enum Interrupts {
    private static let state = Mutex(SignalLatch())

    /// The first signal received, if any.
    public static var received: Int32? { state.withLock { $0.first } }

    /// The exit code for a command stopped by a signal: 128 + the signal.
    public static func exitCode(_ signal: Int32) -> Int32 { 128 + signal }

    /// "SIGINT", "SIGTERM", "SIGHUP", else "signal N".
    public static func name(_ signal: Int32) -> String {
        switch signal {
        case SIGINT: return "SIGINT"
        case SIGTERM: return "SIGTERM"
        case SIGHUP: return "SIGHUP"
        default: return "signal \(signal)"
        }
    }

    /// Turns the first termination signal into `cancel()`, a second into the process's exit; `warn` says it when
    /// signals cannot be caught (then they end the process as they would).
    public static func install(warn: (String) -> Void, cancel: @escaping @Sendable () -> Void) {
        let signals: AsyncStream<Int32>
        do {
            signals = try TerminationSignals.subscribe()
        } catch {
            warn("signals will not stop this command: \(error.message)")
            return
        }
        Task.detached {
            for await sig in signals {
                if state.withLock({ $0.receive(sig) }) {
                    cancel()
                } else {
                    // A second signal ends the process: what is written so far gets a second to reach its reader (a
                    // stalled reader must not keep the process alive), then it exits whatever.
                    let flushed = DispatchSemaphore(value: 0)
                    if (try? Threads.spawn(name: "final flush", { Console.flush(); flushed.signal() })) != nil {
                        _ = flushed.wait(timeout: .now() + 1)
                    }
                    _exit(exitCode(sig))
                }
            }
        }
    }
}

/// The signals a command received: the first is kept; `receive` says whether a signal is the first.
struct SignalLatch: Sendable, Hashable {
    private(set) var first: Int32?

    /// True for the first signal (the command is cancelled), false for any later one (the process ends).
    mutating func receive(_ signal: Int32) -> Bool {
        guard first == nil else { return false }
        first = signal
        return true
    }
}
