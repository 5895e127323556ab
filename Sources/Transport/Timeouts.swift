/// Time limits for async operations.
public enum Timeouts {
    /// Runs `operation`, throwing `timeoutError` if it has not finished after `timeout`.
    ///
    /// On timeout the operation is cancelled; if it nevertheless produced a value, `discard` receives it (so a
    /// connection that completed at the last moment is closed instead of leaked).
    public static func run<T: Sendable>(
        limit timeout: Duration,
        timeoutError: @autoclosure () -> TransportError,
        discard: @escaping @Sendable (T) async -> Void,
        _ operation: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let outcome: T? = try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await operation() }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { return nil }
            group.cancelAll()
            while let late = await group.nextResult() {
                if case .success(let value?) = late { await discard(value) }
            }
            return first
        }
        guard let outcome else { throw timeoutError() }
        return outcome
    }

}

extension Duration {
    /// For messages: "5 s", "1.5 s", "250 ms", "40 µs".
    public var shortDescription: String {
        let (seconds, attoseconds) = components
        if seconds >= 1 || self == .zero {
            let tenths = Int64(attoseconds / 100_000_000_000_000_000)
            return tenths == 0 ? "\(seconds) s" : "\(seconds).\(tenths) s"
        }
        let ms = attoseconds / 1_000_000_000_000_000
        return ms >= 1 ? "\(ms) ms" : "\(attoseconds / 1_000_000_000_000) µs"
    }
}
