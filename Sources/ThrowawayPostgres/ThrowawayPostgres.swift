import Failure
import Foundation
import Spawn
import Synchronization

/// Why a throwaway server could not be made or a program of it failed (the coded shape of every module's errors).
public typealias ThrowawayPostgresError = CodedFailure<ThrowawayPostgresErrors>

public enum ThrowawayPostgresErrors: ErrorDomain {
    /// A missing or failing PostgreSQL installation is a part of this machine (74).
    public static func category(of code: ThrowawayPostgresError.Code) -> FailureCategory { .localFile }
}

extension ErrorCodeIn where Domain == ThrowawayPostgresError {
    /// Debian's PostgreSQL binaries are not installed.
    public static let notInstalled = Self(rawValue: "postgres-not-installed")
    /// The server's directory could not be made, or one of its programs (initdb, pg_ctl) failed.
    public static let cannotStart = Self(rawValue: "postgres-cannot-start")
}

/// A PostgreSQL server of the test's (or benchmark's) own: Debian's binaries (`/usr/lib/postgresql/N/bin`), `initdb` into a temporary
/// directory as an unprivileged user (`nobody` when the tests run as root: initdb refuses root), listening on
/// 127.0.0.1 at a free port with its socket in that directory, trust authentication for the superuser `tuneup`.
/// Started once per test process (`shared()`) and stopped when the process exits. A machine without PostgreSQL
/// fails the tests that need it (tools/install-deps.sh installs it); they never skip.
public final class ThrowawayPostgres: Sendable {
    public let port: Int
    public let directory: String
    private let bin: String
    private let unprivileged: Bool

    private static let instance = Mutex<ThrowawayPostgres?>(nil)

    /// The server of this test process, started on first use.
    public static func shared() throws -> ThrowawayPostgres {
        try instance.withLock { server in
            if let server { return server }
            let started = try ThrowawayPostgres()
            server = started
            atexit { ThrowawayPostgres.instance.withLock { $0?.stop(); $0 = nil } }
            return started
        }
    }

    /// A server of its own (for a test that stops and starts it), stopped and removed at `stop()` or process exit.
    public static func dedicated() throws -> ThrowawayPostgres {
        let server = try ThrowawayPostgres()
        dedicatedServers.withLock { $0.append(server) }
        return server
    }

    private static let dedicatedServers: Mutex<[ThrowawayPostgres]> = {
        atexit { ThrowawayPostgres.dedicatedServers.withLock { $0.forEach { $0.stop() }; $0 = [] } }
        return Mutex([])
    }()

    private init() throws {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .filter { FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb") }
            .sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }
        guard let version = versions.last else {
            throw ThrowawayPostgresError(.notInstalled, "PostgreSQL is not installed: no \(root)/*/bin/initdb (tools/install-deps.sh installs Debian's postgresql)")
        }
        bin = "\(root)/\(version)/bin"
        unprivileged = getuid() == 0
        var template = Array((NSTemporaryDirectory() + "tuneup-pg-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw ThrowawayPostgresError(.cannotStart, "cannot make a directory for PostgreSQL: \(errno)") }
        directory = String(cString: made)
        port = try LoopbackPort.unused()
        if unprivileged {
            chmod(directory, 0o755)
            guard chown(directory, 65534, 65534) == 0 else { throw ThrowawayPostgresError(.cannotStart, "cannot give \(directory) to nobody: \(errno)") }
        }
        try run("initdb", ["-D", "\(directory)/data", "-U", "tuneup", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-instructions"])
        try start()
    }

    /// `postgres://tuneup@127.0.0.1:PORT/DATABASE?sslmode=disable`.
    public func url(_ database: String) -> String { "postgres://tuneup@127.0.0.1:\(port)/\(database)?sslmode=disable" }

    /// A new, empty database with a unique name; returns its URL.
    public func createDatabase() throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try run("createdb", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "tuneup", name])
        return url(name)
    }

    /// Runs SQL with psql against `database`; returns its output, throws with its stderr when it fails.
    @discardableResult
    public func psql(_ database: String, _ sql: String) throws -> String {
        try run("psql", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "tuneup", "-d", database, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql])
    }

    /// Starts the server and waits until it accepts connections (pg_ctl -w polls it).
    public func start() throws {
        try run("pg_ctl", ["-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "60", "-o",
                           "-h 127.0.0.1 -p \(port) -k \(directory) -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
                           "start"])
    }

    /// Stops the server (fast shutdown: open connections are cut), waiting until it is down.
    public func pause() throws {
        try run("pg_ctl", ["-D", "\(directory)/data", "-m", "fast", "-w", "-t", "60", "stop"])
    }

    /// Stops the server for good and removes its directory.
    public func stop() {
        _ = try? run("pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs one of the server's programs (as nobody when we are root), to completion, with its output in a file of
    /// the server's directory.
    ///
    /// A `ChildProcess`, not Foundation's Process: `pg_ctl start` leaves a daemon behind, and Process waits for a
    /// descriptor of its own that the daemon inherits, so it never sees pg_ctl end.
    @discardableResult
    private func run(_ program: String, _ arguments: [String]) throws -> String {
        let argv = (unprivileged
            ? ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "\(bin)/\(program)"]
            : ["\(bin)/\(program)"]) + arguments
        // Nothing else of ours reaches the program (`ChildProcess`): `pg_ctl start` leaves the server behind, which
        // must not hold our descriptors (a build lock, a test's sockets and pipes) for its whole life.
        do {
            return try ChildProcess.runToEnd(argv[0], Array(argv.dropFirst()), environment: ["LC_ALL": "C", "PGCONNECT_TIMEOUT": "10"],
                                             outputDirectory: directory)
        } catch {
            throw ThrowawayPostgresError(.cannotStart, "\(error)")
        }
    }
}
