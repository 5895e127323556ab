import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Support
import Synchronization

/// A live station's hold on its name on a line's PostgreSQL database: while it is held, no other station of that
/// name, on any host, can start on the line (and close its open runs as a killed station's).
///
/// The hold is a session-level advisory lock (`pg_try_advisory_lock`) on a key made from the station's name
/// (`key(of:)`), taken on a connection of its own that is kept for the station's life. The server drops it with the
/// session, so a killed station's name is free as soon as the server sees its connection end (at once when the
/// process dies; within about 30 s when its host vanishes: the session's TCP keepalives are set to 10 s + 4 × 5 s).
///
/// Every `interval` the hold asks the server over its connection. When the connection is gone (an outage, a server
/// restart) the station goes on from its outbox as it does through any outage (`status` is `.lost`), and the hold
/// takes its name back on a new connection as soon as the server answers. Should another station of the name have
/// started meanwhile and hold it, `status` becomes `.taken` and `onTaken` is called once: the station stops taking
/// units. A refusal while the server still holds the name for this station's own old session (it has not yet seen
/// that connection end) is not a taking: the hold keeps trying.
public final class LineStationLock: Sendable {
    /// What the hold holds.
    public enum Status: Sendable, Equatable {
        /// The name is held on the server.
        case held
        /// The hold's connection is gone (why); it is taken back when the server answers.
        case lost(String)
        /// Another live station of this name took it while this one's connection was gone.
        case taken
    }

    /// The station whose name is held.
    public let station: String
    /// `HOST:PORT/DATABASE`.
    public let database: String
    /// The advisory lock's key.
    public let key: Int64

    private let location: PostgresLocation
    private let timeout: Duration
    private let logger: Logger
    private let state: Mutex<State>
    private let onChange: @Sendable (Status) -> Void

    private struct State {
        var status: Status = .held
        var connection: PostgresConnection?
        /// The server's process of the session that held the name last (`pg_backend_pid()`).
        var backend: Int32
        var watch: Task<Void, Never>?
        var released = false
    }

    private init(station: String, location: PostgresLocation, timeout: Duration, logger: Logger, connection: PostgresConnection,
                 backend: Int32, onChange: @escaping @Sendable (Status) -> Void) {
        self.station = station
        self.location = location
        database = location.name
        key = Self.key(of: station)
        self.timeout = timeout
        self.logger = logger
        self.onChange = onChange
        state = Mutex(State(connection: connection, backend: backend))
    }

    deinit {
        state.withLock { s in
            s.watch?.cancel()
            if let connection = s.connection { Self.drop(connection) }
        }
    }

    /// The hold's current status.
    public var status: Status { state.withLock { $0.status } }

    /// Holds `station` on the line's database at `url` until `release()` (or the process ends).
    ///
    /// Throws `RecordsError` `.stationLive` ("station NAME is running already on the line's database ...") when another
    /// live station of that name holds it, and the store's errors when the server cannot be reached or refuses.
    /// - Parameters:
    ///   - interval: how often the hold checks its connection (and, once it is gone, tries to take the name back).
    ///   - onChange: called when `status` changes (from the hold's own task; it must return at once).
    public static func acquire(
        station: String, url: String, timeout: Duration = .seconds(10), interval: Duration = .seconds(2),
        onChange: @escaping @Sendable (Status) -> Void = { _ in }
    ) async throws -> LineStationLock {
        let location = try PostgresLocation(url)
        var logger = Logger(label: "tuneup.records.station-lock")
        logger.logLevel = .critical
        let key = Self.key(of: station)
        guard let (connection, backend) = try await take(key, location: location, timeout: timeout, logger: logger) else {
            throw RecordsError(
                .stationLive,
                "station \(station) is running already on the line's database \(location.name) (on this host or another): stop it first, or name this one otherwise with --station")
        }
        let lock = LineStationLock(
            station: station, location: location, timeout: timeout, logger: logger, connection: connection, backend: backend,
            onChange: onChange)
        let watch = Task { [weak lock] in
            while !Task.isCancelled {
                do { try await Task.sleep(for: interval) } catch { return }
                guard let lock else { return }
                if await lock.check() == .taken { return }
            }
        }
        lock.state.withLock { $0.watch = watch }
        return lock
    }

    /// One round of the watch (run every `interval`; tests call it directly): asks the server over the hold's
    /// connection; when that is gone, tries to take the name back on a new one. Returns the status after it.
    @discardableResult
    public func check() async -> Status {
        let (current, connection) = state.withLock { ($0.status, $0.connection) }
        if current == .taken { return .taken }
        if let connection {
            do {
                guard !connection.isClosed else { throw RecordsError(.unreachable, "records database \(database): the connection was closed") }
                _ = try await Self.bounded(timeout, name: database) {
                    try await connection.query("SELECT 1", logger: self.logger)
                }
                return current
            } catch {
                state.withLock { if $0.connection === connection { $0.connection = nil } }
                Self.drop(connection)
                update(.lost(reason(error)))
            }
        }
        // The connection is gone: take the name back.
        do {
            if let (connection, backend) = try await Self.take(key, location: location, timeout: timeout, logger: logger) {
                let kept = state.withLock { s -> Bool in
                    guard !s.released else { return false }
                    (s.connection, s.backend) = (connection, backend)
                    return true
                }
                guard kept else {
                    Self.drop(connection)
                    return status
                }
                update(.held)
            } else if let holder = try await holder(), holder != state.withLock({ $0.backend }) {
                update(.taken)
            }
        } catch {
            update(.lost(reason(error)))
        }
        return status
    }

    /// Lets the name go (a clean stop): the watch ends, the lock is released and its connection closed.
    public func release() async {
        let (watch, connection) = state.withLock { s in
            s.released = true
            defer { (s.watch, s.connection) = (nil, nil) }
            return (s.watch, s.connection)
        }
        watch?.cancel()
        guard let connection else { return }
        _ = try? await Self.bounded(timeout, name: database) {
            try await connection.query("SELECT pg_advisory_unlock(\(self.key))", logger: self.logger)
        }
        try? await connection.close()
    }

    /// One line: why the server could not be used.
    private func reason(_ error: any Error) -> String {
        let mapped = PostgresRecordStore.mapped(error, name: database)
        if let records = mapped as? RecordsError { return records.message }
        return "records database \(database): \(PostgresRecordStore.describe(mapped))"
    }

    /// Sets the status; `onChange` hears of a change from held to lost, lost to held, or to taken (not of each new
    /// reason while the connection stays lost: an outage is one note).
    private func update(_ status: Status) {
        let changed = state.withLock { s -> Bool in
            guard s.status != .taken else { return false }
            let before = s.status
            s.status = status
            switch (before, status) {
            case (.held, .held), (.lost, .lost): return false
            default: return true
            }
        }
        if changed { onChange(status) }
    }

    /// The server process whose session holds the name now, if any.
    private func holder() async throws -> Int32? {
        let (high, low) = (Int64(UInt64(bitPattern: key) >> 32), Int64(UInt64(bitPattern: key) & 0xFFFF_FFFF))
        let location = location, logger = logger
        return try await Self.bounded(timeout, name: database) {
            let connection = try await PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.any(), configuration: try location.connection(timeout: self.timeout), id: 0,
                logger: logger).get()
            let holder: Int32?
            do {
                holder = try await connection.query("""
                    SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                      AND classid::bigint = \(high) AND objid::bigint = \(low)
                      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    """, logger: logger).collect().first?.decode(Int32.self)
            } catch {
                try? await connection.close()
                throw error
            }
            try? await connection.close()
            return holder
        }
    }

    /// A new connection that holds `key`, with its server process; nil when another session holds it.
    private static func take(
        _ key: Int64, location: PostgresLocation, timeout: Duration, logger: Logger
    ) async throws -> (PostgresConnection, Int32)? {
        let configuration = try location.connection(timeout: timeout)
        // A connection that holds the key after the wait gave up is closed (its hold goes with it), not dropped.
        return try await bounded(timeout, name: location.name, discard: { taken in if let (connection, _) = taken { drop(connection) } }) {
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(
                    on: MultiThreadedEventLoopGroup.singleton.any(), configuration: configuration, id: 0, logger: logger).get()
            } catch {
                throw PostgresRecordStore.mapped(error, name: location.name)
            }
            do {
                // The server notices a vanished host's connection (and drops its hold) within about 30 s, not hours.
                for setting in ["tcp_keepalives_idle = 10", "tcp_keepalives_interval = 5", "tcp_keepalives_count = 4"] {
                    try await connection.query(PostgresQuery(unsafeSQL: "SET \(setting)"), logger: logger)
                }
                let (held, backend) = try await connection.query(
                    "SELECT pg_try_advisory_lock(\(key)), pg_backend_pid()", logger: logger
                ).collect().first!.decode((Bool, Int32).self)
                guard held else {
                    try? await connection.close()
                    return nil
                }
                return (connection, backend)
            } catch {
                try? await connection.close()
                throw PostgresRecordStore.mapped(error, name: location.name)
            }
        }
    }

    private static func bounded<T: Sendable>(
        _ timeout: Duration, name: String, discard: (@Sendable (T) async -> Void)? = nil, _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        try await withDeadline(timeout, late: {
            RecordsError(.unreachable, "records database \(name) did not answer within \(PostgresRecordStore.seconds(timeout)) s (is the server running and reachable?)")
        }, discard: discard, body)
    }

    /// Closes `connection` without waiting (the server drops the session's locks with it); the connection is kept
    /// until it is closed (postgres-nio asserts that a connection is closed before it goes).
    private static func drop(_ connection: PostgresConnection) {
        let closed: EventLoopFuture<Void> = connection.close()
        closed.whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// The advisory lock key of `station`: FNV-1a (64 bits) of `tuneup station ` and its UTF-8 name.
    public static func key(of station: String) -> Int64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in "tuneup station \(station)".utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return Int64(bitPattern: hash)
    }
}
