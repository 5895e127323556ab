import Foundation
import Support
import Transport

/// Lines typed on standard input for a running tool: the simulators' control commands ('quit', 'press anc', ...),
/// a station's answers to its prompts (a barcode scanner types the code and Enter). Read on a thread of its own
/// (`Threads`: standard input blocks), handed over as a stream in order.
public enum ControlInput {
    /// The lines of standard input: trimmed of surrounding blanks, empty ones skipped (`trimmed`). With `stopOnSignals`
    /// the stream ends at SIGINT or SIGTERM only (the end of standard input does not end it); without, at the end of
    /// standard input. `warn` (default: a line on stderr) is told when signals
    /// cannot be caught or the system refuses the reading thread.
    public static func lines(trimmed: Bool = true, stopOnSignals: Bool = true,
                             warn: (String) -> Void = { Console.err("tuneup: \($0)\n") }) -> AsyncStream<String> {
        let (stream, continuation) = AsyncStream.makeStream(of: String.self)
        do {
            try Threads.spawn(name: "tuneup-stdin") {
                while let line = readLine(strippingNewline: true) {
                    guard trimmed else { continuation.yield(line); continue }
                    let text = line.trimmingCharacters(in: .whitespaces)
                    if !text.isEmpty { continuation.yield(text) }
                }
                // The end of standard input does not stop a tool that signals stop (a simulator run in the background
                // with stdin closed or /dev/null serves until SIGINT/SIGTERM or 'quit'); a reader of answers ends.
                if !stopOnSignals { continuation.finish() }
            }
        } catch {
            warn("cannot read standard input: \(error.message)")
        }
        guard stopOnSignals else { return stream }
        do {
            let signals = try TerminationSignals.subscribe()
            let watcher = Task.detached {
                for await sig in signals where sig == SIGINT || sig == SIGTERM {
                    continuation.finish()
                    return
                }
            }
            continuation.onTermination = { _ in watcher.cancel() }
        } catch {
            warn("signals will not stop the simulator (use 'quit' on stdin): \(error.message)")
        }
        return stream
    }
}
