import ArgumentParser
import Failure
import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import Logging
import Terminal
import Transport
import TuneupKit

/// Exit codes: distinct classes of failure a script can branch on.
enum Exit {
    static let usage: Int32 = 64
    static let device: Int32 = 65
    static let connection: Int32 = 69
    static let localIO: Int32 = 74

    /// The exit code of every module's failure category.
    static func code(for category: FailureCategory) -> Int32 {
        switch category {
        case .usage: return usage
        case .device: return device
        case .connection: return connection
        case .localFile: return localIO
        }
    }
}

/// A failure already explained to the user, carrying its exit code. The one error of the project that is not a
/// `CodedError`, on purpose: it is the CLI's own last word, made where a command decides its exit, and some of those
/// exits are not a failure category's (1: the job ran and failed, 3: a station's SPC alarm, 66: no such record).
/// Library errors stay coded; a command turns one into this only to give it such an exit.
struct CommandFailure: Error {
    var message: String
    var code: Int32
}

/// Prints one line to stderr.
func printError(_ message: String) {
    Console.err("tuneup: \(message)\n")
}

/// Prints the one stderr line for `error` and returns its exit code (`ExitCode` values pass through silently:
/// their line was printed already). A command stopped by a signal exits 128 + the signal.
func failureExit(_ error: Error) -> ExitCode {
    if let e = error as? ExitCode { return e }
    let (message, code) = describeFailure(error)
    if let signal = Interrupts.received {
        printError(error is CancellationError || !(error is CommandFailure) ? "stopped by \(Interrupts.name(signal))" : message)
        return ExitCode(Interrupts.exitCode(signal))
    }
    printError(message)
    return ExitCode(code)
}

/// The one rule that maps every module's error to a message and an exit code: 64 usage (arguments, settings,
/// environment variables), 65 the device refused or the image is invalid, 69 the device could not be reached or
/// stopped answering, 74 a local file or directory could not be read or written.
func describeFailure(_ error: Error) -> (String, Int32) {
    switch error {
    case let e as any CodedError:
        return (e.message, Exit.code(for: e.category))
    case let e as CommandFailure:
        return (e.message, e.code)
    case let e as ValidationError:
        return (e.message, Exit.usage)
    case is CancellationError:
        return ("interrupted", 130)
    default:
        return ("\(error)", 1)
    }
}

/// Opens the device, runs `body`, closes the device (`Devices.withHeadset`); failures become one stderr line and an
/// exit code.
func withHeadset<T>(_ options: DeviceOptions, _ body: (Headset) async throws -> T) async throws -> T {
    LoggingSetup.bootstrap()
    var logger = Logger(label: "tuneup")
    logger.logLevel = options.verbose ? .trace : .warning
    do {
        return try await Devices.withHeadset(try options.address(), options: options.connectionOptions(transportLogger: options.verbose ? logger : nil),
                                             logger: logger, body)
    } catch {
        throw failureExit(error)
    }
}

/// Logging to stderr; each logger's level is set where it is made.
enum LoggingSetup {
    private static let done: Void = {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .trace
            return handler
        }
    }()

    static func bootstrap() { _ = done }
}

/// Opens the device, runs `action`, and prints its result: as JSON with `--format json`, else as `text(result)`.
func present<T: Encodable>(
    _ device: DeviceOptions, _ output: OutputOptions, text: (T) -> String, _ action: (Headset) async throws -> T
) async throws {
    let value = try await withHeadset(device, action)
    try Output.emit(value, json: output.json) { text(value) }
}
