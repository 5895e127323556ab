import Foundation
import Support
import Synchronization
@_exported import ThrowawayPostgres
@_exported import ThrowawayRabbitMQ
// ManualClock (the injected clock of timing tests) lives in Support, beside the code that sleeps on it.
@_exported import class Support.ManualClock

// Helpers shared by the test targets.

extension Result where Failure == any Error {
    /// The outcome of an async throwing body.
    init(catching body: () async throws -> Success) async {
        do { self = .success(try await body()) } catch { self = .failure(error) }
    }
}

/// A test failure with a message.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Fails (instead of hanging the whole run) when `body` takes longer than `seconds`.
///
/// This is a hang guard, not a performance bound: the whole suite runs in parallel on two cores, where a step that
/// takes milliseconds alone can take several seconds, so the default is a generous 60 s.
@discardableResult
public func withTimeLimit<T: Sendable>(
    _ seconds: Double = 60,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    // The project's one deadline helper: not a task group (a group's scope waits for every child, so a body that does
    // not honour cancellation would turn the guard itself into a hang); the body is cancelled and left behind.
    try await withDeadline(.seconds(seconds), late: { TestFailure("test step did not finish within \(seconds) s") }, body)
}

/// Waits until `condition` holds, polling every few milliseconds; throws after `seconds` (a hang guard, so generous).
/// Use this instead of a fixed sleep to "let the other side reach state X": it is as fast as the machine allows and
/// does not go wrong when the machine is slow.
public func waitUntil(
    _ what: @autoclosure () -> String,
    within seconds: Double = 30,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        if ContinuousClock.now > deadline { throw TestFailure("\(what()) did not happen within \(seconds) s") }
        try await Task.sleep(for: .milliseconds(2))
    }
}

/// Polls `measure` until it is below `limit` or `seconds` passed; returns the last value, for the caller's check.
/// For process-wide counts (open descriptors) that tests running in parallel push up for a moment: noise settles,
/// a leak does not.
public func settledValue(below limit: Int, within seconds: Double = 10, _ measure: () -> Int) async throws -> Int {
    let deadline = ContinuousClock.now + .seconds(seconds)
    var value = measure()
    while value >= limit, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
        value = measure()
    }
    return value
}

/// Runs blocking `body` (a subprocess wait, a blocking syscall, a long computation) on the blocking executor, so that
/// it does not hold one of the few threads of Swift's cooperative pool (one per core) that every other test in the
/// run needs.
public func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await Blocking.perform("test", body)
}

/// SplitMix64: a tiny seeded generator so property tests are reproducible.
public struct TestRandom: RandomNumberGenerator, Sendable {
    public var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A u32 in little-endian bytes, as LightX arguments carry it.
public func u32(_ v: UInt32) -> [UInt8] {
    [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8), UInt8(truncatingIfNeeded: v >> 16), UInt8(truncatingIfNeeded: v >> 24)]
}

/// Runs `body` with a PostgreSQL server of its own, stopped (on the blocking executor, not the cooperative pool)
/// whether `body` returns or throws.
public func withDedicatedPostgres<T: Sendable>(_ body: (ThrowawayPostgres) async throws -> T) async throws -> T {
    let pg = try await offThePool { try ThrowawayPostgres.dedicated() }
    let result: Result<T, any Error>
    do { result = .success(try await body(pg)) } catch { result = .failure(error) }
    _ = try? await offThePool { pg.stop() }
    return try result.get()
}
