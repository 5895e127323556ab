import CShims
import Glibc
import Support
import Synchronization

/// Termination signals (SIGINT, SIGTERM, SIGHUP) as streams, for any number of subscribers, without losing one.
///
/// A real handler (not SIG_IGN) forwards each signal's number through a pipe to a dedicated thread, which hands it
/// to every subscriber. Unlike a dispatch signal source over SIG_IGN — where a thread that does not block the signal
/// may take it first and the kernel discards it — a signal sent to the process always arrives. A signal's handler is
/// installed when it is first subscribed to and stays for the life of the process.
package enum TerminationSignals {
    private static let broadcast = Broadcast<Int32>()
    private static let installed = Mutex<Set<Int32>>([])

    /// The pipe's write end, once the forwarding thread runs.
    private static let started: Result<Int32, TransportError> = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            let e = errno
            return .failure(TransportError(.io, "cannot create the signal pipe: \(POSIX.describe(e))", errno: e))
        }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        // A full pipe must never block the handler: a signal that cannot be written is one of many pending anyway.
        _ = fcntl(writeEnd, F_SETFL, fcntl(writeEnd, F_GETFL) | O_NONBLOCK)
        do throws(TransportError) {
            try DedicatedThread.spawn(name: "tuneup-signals") {
                var byte: UInt8 = 0
                while true {
                    let n = read(readEnd, &byte, 1)
                    if n == 1 {
                        broadcast.yield(Int32(byte))
                    } else if n < 0 && errno == EINTR {
                        continue
                    } else {
                        return
                    }
                }
            }
        } catch {
            POSIX.close(readEnd)
            POSIX.close(writeEnd)
            return .failure(error)
        }
        return .success(writeEnd)
    }()

    /// Every one of `signals` the process receives from now on, in order (the handlers are installed first).
    package static func subscribe(_ signals: Set<Int32> = [SIGINT, SIGTERM, SIGHUP]) throws(TransportError) -> AsyncStream<Int32> {
        let writeEnd = try started.get()
        // Subscribe before the handlers exist: a signal that arrives right after installing must find us listening.
        let all = broadcast.subscribe()
        try installed.withLock { (installed: inout Set<Int32>) throws(TransportError) in
            let missing = Array(signals.subtracting(installed))
            guard !missing.isEmpty else { return }
            guard tuneup_forward_signals(missing, Int32(missing.count), writeEnd) == 0 else {
                let e = errno
                throw TransportError(.io, "cannot install the signal handlers: \(POSIX.describe(e))", errno: e)
            }
            installed.formUnion(missing)
        }
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let forwarding = Task {
            for await signal in all where signals.contains(signal) { continuation.yield(signal) }
            continuation.finish()
        }
        continuation.onTermination = { _ in forwarding.cancel() }
        return stream
    }
}
