import Failure
import Foundation
import Spawn
import Synchronization

/// Why a throwaway broker could not be made, or a program of it (or the consumer) failed.
public typealias ThrowawayRabbitMQError = CodedFailure<ThrowawayRabbitMQErrors>

public enum ThrowawayRabbitMQErrors: ErrorDomain {
    /// A missing or failing RabbitMQ installation is a part of this machine (74).
    public static func category(of code: ThrowawayRabbitMQError.Code) -> FailureCategory { .localFile }
}

extension ErrorCodeIn where Domain == ThrowawayRabbitMQError {
    /// Debian's rabbitmq-server is not installed.
    public static let notInstalled = Self(rawValue: "rabbitmq-not-installed")
    /// The broker's directory or port could not be made, or rabbitmq-server (or rabbitmqctl) failed.
    public static let cannotStart = Self(rawValue: "rabbitmq-cannot-start")
    /// The AMQP consumer (tools/cfx-consume.py) failed or printed something it should not.
    public static let consumerFailed = Self(rawValue: "amqp-consumer-failed")
}

/// A RabbitMQ broker of the test's (or benchmark's) own, with AMQP 1.0 (Debian's rabbitmq-server 3.x and its
/// `rabbitmq_amqp1_0` plugin): its own node name, AMQP, distribution and epmd ports, data and log directories, and a
/// throwaway Erlang cookie (HOME in its directory), listening on 127.0.0.1 only; guest as the anonymous user. Started
/// once per test process (`shared()`) and stopped when the process exits; `pause()`/`resume()` stop the broker and
/// start it again on the same ports and data (durable queues and persistent messages survive), for outages. A
/// machine without RabbitMQ fails the tests that need it (tools/install-deps.sh installs it); they never skip.
///
/// Every method blocks (it runs the broker's programs to completion): call it off the cooperative pool (`Blocking.perform`; tests: `offThePool`).
public final class ThrowawayRabbitMQ: Sendable {
    public let port: Int
    public let directory: String
    private let distributionPort: Int
    private let epmdPort: Int
    private let nodeName: String
    private let server = Mutex<ChildProcess?>(nil)

    static let bin = "/usr/lib/rabbitmq/bin"

    private static let instance = Mutex<ThrowawayRabbitMQ?>(nil)

    /// The broker of this test process, started on first use.
    public static func shared() throws -> ThrowawayRabbitMQ {
        try instance.withLock { broker in
            if let broker { return broker }
            let started = try ThrowawayRabbitMQ()
            broker = started
            atexit { ThrowawayRabbitMQ.instance.withLock { $0?.stop(); $0 = nil } }
            return started
        }
    }

    private init() throws {
        guard FileManager.default.isExecutableFile(atPath: "\(Self.bin)/rabbitmq-server") else {
            throw ThrowawayRabbitMQError(.notInstalled, "RabbitMQ is not installed: no \(Self.bin)/rabbitmq-server (tools/install-deps.sh installs Debian's rabbitmq-server)")
        }
        var template = Array((NSTemporaryDirectory() + "tuneup-rabbitmq-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else { throw ThrowawayRabbitMQError(.cannotStart, "cannot make a directory for RabbitMQ: \(errno)") }
        directory = String(cString: made)
        port = try ThrowawayRabbitMQ.freePort()
        distributionPort = try ThrowawayRabbitMQ.freePort()
        epmdPort = try ThrowawayRabbitMQ.freePort()
        nodeName = "tuneup\(getpid())x\(port)@localhost"
        try FileManager.default.createDirectory(atPath: "\(directory)/home", withIntermediateDirectories: true)
        try "[rabbitmq_amqp1_0].\n".write(toFile: "\(directory)/enabled_plugins", atomically: true, encoding: .utf8)
        try """
            listeners.tcp.default = 127.0.0.1:\(port)
            amqp1_0.default_user = guest
            log.file.level = warning
            log.console = false

            """.write(toFile: "\(directory)/rabbitmq.conf", atomically: true, encoding: .utf8)
        do {
            try resume()
        } catch {
            stop()
            throw error
        }
    }

    /// `amqp://127.0.0.1:PORT/ADDRESS` (ADDRESS such as `/queue/NAME`).
    public func url(_ address: String) -> String { "amqp://127.0.0.1:\(port)/\(address)" }

    /// A queue name no other test uses.
    public func newQueue() -> String { "/queue/t-" + UUID().uuidString.prefix(8).lowercased() }

    private var environment: [String: String?] {
        [
            "HOME": "\(directory)/home",
            "RABBITMQ_NODENAME": nodeName,
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": String(port),
            "RABBITMQ_DIST_PORT": String(distributionPort),
            "ERL_EPMD_PORT": String(epmdPort),
            "RABBITMQ_MNESIA_BASE": "\(directory)/mnesia",
            "RABBITMQ_LOG_BASE": "\(directory)/log",
            "RABBITMQ_PID_FILE": "\(directory)/broker.pid",
            "RABBITMQ_ENABLED_PLUGINS_FILE": "\(directory)/enabled_plugins",
            "RABBITMQ_CONFIG_FILE": "\(directory)/rabbitmq",
            "RABBITMQ_CONF_ENV_FILE": "/dev/null",
            "RABBITMQ_ADVANCED_CONFIG_FILE": "\(directory)/advanced.config",
            // The Erlang schedulers spin when they run out of work before they sleep: a broker sharing two cores with
            // the station it serves took ~15 % of them spinning (perf, tuneup-bench station --cfx). No busy waiting,
            // as distributions that co-locate RabbitMQ with other services configure it.
            "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "+sbwt none +sbwtdcpu none +sbwtdio none",
            "LC_ALL": "C.UTF-8",
        ]
    }

    /// Starts the broker (again) and waits until it accepts connections.
    public func resume() throws {
        let started = try server.withLock { running -> ChildProcess in
            if let running, running.isRunning { return running }
            let child: ChildProcess
            do {
                child = try ChildProcess("\(Self.bin)/rabbitmq-server", [], environment: environment,
                                         stdout: .file("\(directory)/server.out"), stderr: .stdout)
            } catch {
                throw ThrowawayRabbitMQError(.cannotStart, "cannot start rabbitmq-server: \(error)")
            }
            running = child
            return child
        }
        do {
            // `wait` waits for the pid file, then for the broker to have started (await_startup fails at once while
            // the node is not registered yet).
            try ctl(["wait", "\(directory)/broker.pid", "--timeout", "120"])
        } catch {
            if !started.isRunning {
                let output = (try? String(contentsOfFile: "\(directory)/server.out", encoding: .utf8)) ?? ""
                throw ThrowawayRabbitMQError(.cannotStart, "rabbitmq-server ended at start: \(output.suffix(2000))")
            }
            throw error
        }
    }

    /// Stops the broker (its clients see the connection drop), waiting until it is down.
    public func pause() throws {
        let child = server.withLock { $0 }
        guard let child, child.isRunning else { return }
        _ = try? ctl(["stop", "\(directory)/broker.pid"])
        if child.waitUntilExit(within: 60) != .exit(0) {}
    }

    /// Stops the broker for good and removes its directory.
    public func stop() {
        try? pause()
        if let epmd = try? ChildProcess("/usr/bin/epmd", ["-port", String(epmdPort), "-kill"], stdout: .null, stderr: .null) {
            _ = epmd.waitUntilExit(within: 10)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Messages waiting in a queue (`/queue/NAME` or NAME) and those delivered but not acknowledged.
    public func queueDepth(_ queue: String) throws -> (ready: Int, unacknowledged: Int) {
        let name = queue.hasPrefix("/queue/") ? String(queue.dropFirst("/queue/".count)) : queue
        let output = try ctl(["list_queues", "--quiet", "--no-table-headers", "name", "messages_ready", "messages_unacknowledged"])
        for line in output.split(separator: "\n") {
            let fields = line.split(whereSeparator: { $0 == "\t" || $0 == " " })
            if fields.count == 3, fields[0] == name { return (Int(fields[1]) ?? 0, Int(fields[2]) ?? 0) }
        }
        return (0, 0)
    }

    /// Runs rabbitmqctl against this broker; returns its output, throws with it when it fails.
    @discardableResult
    public func ctl(_ arguments: [String]) throws -> String {
        do {
            return try ChildProcess.runToEnd("\(Self.bin)/rabbitmqctl", ["-n", nodeName] + arguments, environment: environment,
                                             outputDirectory: directory, within: 180)
        } catch {
            throw ThrowawayRabbitMQError(.cannotStart, error.description)
        }
    }

    /// A port nobody listens on now.
    public static func freePort() throws -> Int {
        do { return try LoopbackPort.unused() } catch { throw ThrowawayRabbitMQError(.cannotStart, error.description) }
    }
}

/// Receives the messages of an AMQP 1.0 node with tools/cfx-consume.py (Debian's python3-qpid-proton): runs until
/// `expect` distinct message ids arrived (or fails after `timeout` seconds). Returns every message received, in
/// order, duplicates included. Blocks: call it off the cooperative pool (`Blocking.perform`; tests: `offThePool`).
public func consumeAMQP(url: String, address: String, expect: Int, timeout: Double = 120) throws -> [(id: String, body: String)] {
    let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("tools/cfx-consume.py").path
    let directory = NSTemporaryDirectory()
    let outputPath = directory + "cfx-consume-\(UUID().uuidString).out"
    let errorPath = outputPath + ".err"
    defer { unlink(outputPath); unlink(errorPath) }
    let child: ChildProcess
    do {
        child = try ChildProcess("/usr/bin/python3", [script, url, address, String(expect), String(timeout)],
                                 stdout: .file(outputPath), stderr: .file(errorPath))
    } catch {
        throw ThrowawayRabbitMQError(.consumerFailed, "cannot run \(script): \(error)")
    }
    let end = child.waitUntilExit(within: timeout + 60)
    let errors = (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? ""
    guard end == .exit(0) else { throw ThrowawayRabbitMQError(.consumerFailed, "cfx-consume.py failed (\(end)): \(errors)") }
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    return try text.split(separator: "\n").map { line in
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let id = object["id"] as? String, let body = object["body"] as? String else {
            throw ThrowawayRabbitMQError(.consumerFailed, "cfx-consume.py printed an unexpected line: \(line)")
        }
        return (id, body)
    }
}
