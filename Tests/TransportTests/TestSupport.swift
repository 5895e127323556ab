import Glibc
import Support
import Testing
@testable import Transport
@_exported import TestSupport

/// Receives until exactly `count` bytes have arrived (fails if more arrive in the last chunk).
func receiveExactly(_ count: Int, from transport: any Transport) async throws -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(count)
    while out.count < count {
        let chunk = try await transport.receive()
        #expect(!chunk.isEmpty)
        out.append(contentsOf: chunk)
    }
    #expect(out.count == count)
    return out
}

/// Receives until the transport throws; returns the bytes and the error.
func receiveUntilError(_ transport: any Transport) async -> ([UInt8], any Error) {
    var out: [UInt8] = []
    while true {
        do {
            out.append(contentsOf: try await transport.receive())
        } catch {
            return (out, error)
        }
    }
}

/// Asserts that `body` throws a `TransportError` with `code`, and returns it.
@discardableResult
func expectTransportError(
    _ code: TransportError.Code,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () async throws -> Void
) async -> TransportError? {
    do {
        try await body()
        Issue.record("expected TransportError(.\(code)) but nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as TransportError {
        #expect(error.code == code, "wrong code, message: \(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected TransportError(.\(code)) but got \(error)", sourceLocation: sourceLocation)
    }
    return nil
}

/// Deterministic test payload covering all byte values.
func pattern(_ count: Int, seed: UInt64 = 1) -> [UInt8] {
    var rng = SeededRandom(seed: seed)
    var words = [UInt64](repeating: 0, count: (count + 7) / 8)
    for i in words.indices { words[i] = rng.next() }
    return words.withUnsafeBytes { Array($0.prefix(count)) }
}

/// Count of this process's open descriptors.
func openDescriptors() -> Int {
    POSIX.openDescriptorCount() ?? -1
}

/// Polls `condition` every few milliseconds until it holds (or fails the test after `seconds`, a hang guard).
func eventually(
    _ seconds: Double = 30,
    sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: () -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        if ContinuousClock.now > deadline {
            Issue.record("condition did not become true within \(seconds) s", sourceLocation: sourceLocation)
            return
        }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// Starts `transport.receive()` and returns once it is demonstrably waiting: `isPending` (the transport's own
/// "a receive is in progress" flag) holds and the receive has not finished. A receive that returns or throws with
/// nothing to receive (end of stream reported on an idle tty, say) fails here instead of being mistaken for a wait.
func receiveThatWaits(on transport: any Transport, isPending: () -> Bool) async throws -> Task<[UInt8], any Error> {
    let finished = Shared(false)
    let task = Task {
        defer { finished.withLock { $0 = true } }
        return try await transport.receive()
    }
    try await waitUntil("the receive is waiting") {
        if finished.withLock({ $0 }) {
            throw TestFailure("receive() finished with nothing to receive: \(await task.result)")
        }
        return isPending()
    }
    return task
}
