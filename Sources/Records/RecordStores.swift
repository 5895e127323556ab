import Foundation
import NIOPosix
import NIOSSL
import PostgresNIO
import Support

/// Opens the records a `--db` names: a `postgres://` (or `postgresql://`) URL is a PostgreSQL database shared by a
/// line of stations, anything else a SQLite file.
public enum RecordStores {
    /// Opens (creating or migrating as needed) the records at `location`; a relative file path is taken relative to
    /// `directory` when one is given.
    public static func open(_ location: String, relativeTo directory: String? = nil) async throws -> any RecordStore {
        try check(location)
        if PostgresLocation.isURL(location) { return try await PostgresRecordStore.open(url: location) }
        var path = location
        if let directory, !path.hasPrefix("/") { path = (directory.isEmpty ? "." : directory) + "/" + path }
        return try await SQLiteRecordStore.open(path: path)
    }

    /// Whether `location` names a database server rather than a file.
    public static func isServer(_ location: String) -> Bool { PostgresLocation.isURL(location) }

    /// Whether a SQLite database file is there to be opened (a file, not a directory): what reading or releasing
    /// needs, since neither creates a database. Asked on the blocking executor (a stat), never on the pool.
    public static func fileExists(_ path: String) async -> Bool {
        (try? await Blocking.run("records stat") { () -> Bool in
            var isDirectory: ObjCBool = false
            return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
        }) ?? false
    }

    /// Checks a records location without opening it: a PostgreSQL URL must parse; any other `SCHEME://` (mysql://,
    /// sqlite://, ...) is refused as unsupported instead of being taken for a file path; an empty location is
    /// refused. Throws `invalidArgument` (a usage error, 64) naming the scheme, never the credentials.
    public static func check(_ location: String) throws(RecordsError) {
        guard !location.isEmpty else { throw RecordsError(.invalidArgument, "the records location is empty: give a SQLite file or postgres://USER@HOST[:PORT]/DB") }
        if PostgresLocation.isURL(location) {
            do { _ = try PostgresLocation(location) } catch let error as RecordsError { throw error } catch {
                throw RecordsError(.invalidArgument, "the PostgreSQL URL does not parse")
            }
            return
        }
        if let scheme = urlScheme(location) {
            throw RecordsError(.invalidArgument, "'\(scheme)://' databases are not supported: the records are a SQLite file (a path) or a PostgreSQL database (postgres://USER@HOST[:PORT]/DB)")
        }
    }

    /// The scheme of a `SCHEME://...` text (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`), else nil.
    static func urlScheme(_ text: String) -> String? {
        guard let range = text.range(of: "://") else { return nil }
        let scheme = text[..<range.lowerBound]
        guard let first = scheme.first, first.isASCII, first.isLetter,
              scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else { return nil }
        return String(scheme)
    }

    /// Checks the records options of a station: the location (`check`), and that the options only a line's
    /// PostgreSQL database takes (an outbox, a lease size, an upload wait) are not given with a SQLite file, where
    /// they would do nothing. `given` names the options given, as the caller spells them (`--outbox`, `--lease`,
    /// `--upload-wait`). Throws `invalidArgument` (64).
    public static func checkStation(db: String?, lineOnlyOptions given: [String]) throws(RecordsError) {
        if let db { try check(db) }
        guard !isServer(db ?? ""), let option = given.first else { return }
        throw RecordsError(.invalidArgument, "\(option) is for a PostgreSQL --db (postgres://...): a SQLite file has no outbox, no lease and nothing to upload")
    }
}

/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require]`.
struct PostgresLocation {
    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String
    var sslMode: SSLMode
    /// `HOST:PORT/DATABASE` (no credentials), for messages.
    var name: String { "\(host):\(port)/\(database)" }

    static func isURL(_ text: String) -> Bool { text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") }

    init(_ text: String) throws {
        func bad(_ why: String) -> RecordsError {
            RecordsError(.invalidArgument, "'\(text)' is not a usable PostgreSQL URL: \(why) (postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE)")
        }
        guard Self.isURL(text), let url = URLComponents(string: text) else { throw bad("it does not parse") }
        guard let host = url.host, !host.isEmpty else { throw bad("no host") }
        guard let user = url.user, !user.isEmpty else { throw bad("no user") }
        let database = String(url.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw bad("no database name after the host") }
        if let port = url.port, !(1...65535).contains(port) { throw bad("port \(port) is out of range") }
        self.user = user.removingPercentEncoding ?? user
        password = url.password.map { $0.removingPercentEncoding ?? $0 }
        self.host = host
        port = url.port ?? 5432
        self.database = database
        switch url.queryItems?.first(where: { $0.name == "sslmode" })?.value ?? "prefer" {
        case "disable": sslMode = .disable
        case "prefer", "allow": sslMode = .prefer
        case "require", "verify-ca", "verify-full": sslMode = .require
        case let other: throw bad("sslmode '\(other)' is not disable, prefer or require")
        }
    }

    enum SSLMode { case disable, prefer, require }

    /// The pool's configuration (`maximumConnections` per station).
    func client(timeout: Duration) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS = switch sslMode {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
        var configuration = PostgresClient.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = timeout
        configuration.options.maximumConnections = 8
        return configuration
    }

    /// One connection's configuration (the first, which reports why a server refuses: the pool only retries).
    func connection(timeout: Duration) throws -> PostgresConnection.Configuration {
        let tls: PostgresConnection.Configuration.TLS = switch sslMode {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
        var configuration = PostgresConnection.Configuration(
            host: host, port: port, username: user, password: password, database: database, tls: tls)
        configuration.options.connectTimeout = .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
        return configuration
    }
}
