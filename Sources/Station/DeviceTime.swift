import Foundation
import Synchronization

/// Splits a unit's wall time into waiting on the device and the link, and the rest: the station's own time (its
/// decisions, the records, the events). Every device call of a run goes through `device(_:)`.
final class DeviceTime: Sendable {
    private let waited = Mutex<Duration>(.zero)
    private let start = ContinuousClock.now

    /// Runs `body` (a device or link operation) and counts its duration as waiting on the device.
    func device<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        let begin = ContinuousClock.now
        defer {
            let spent = ContinuousClock.now - begin
            waited.withLock { $0 += spent }
        }
        return try await body()
    }

    /// (wall, station) seconds since the run started.
    var seconds: (wall: Double, station: Double) {
        let wall = (ContinuousClock.now - start).seconds
        let device = waited.withLock { $0 }.seconds
        return (wall, max(0, wall - device))
    }
}

extension Duration {
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
