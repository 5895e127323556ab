import ArgumentParser
import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import Logging
import Transport

/// Exit codes: distinct classes of failure a script can branch on.
enum Exit {
    static let usage: Int32 = 64
    static let device: Int32 = 65
    static let connection: Int32 = 69
    static let localIO: Int32 = 74
}

/// A failure already explained to the user, carrying its exit code.
struct CommandFailure: Error {
    var message: String
    var code: Int32
}

/// Prints one line to stderr.
func printError(_ message: String) {
    FileHandle.standardError.write(Data("tuneup: \(message)\n".utf8))
}

/// Maps any error to one stderr line and an exit code.
func failureExit(_ error: Error) -> ExitCode {
    switch error {
    case let e as HeadsetError:
        printError(e.message)
        switch e.category {
        case .connection: return ExitCode(Exit.connection)
        case .device: return ExitCode(Exit.device)
        case .usage: return ExitCode(Exit.usage)
        }
    case let e as TransportError:
        printError(e.message)
        return ExitCode(e.code == .invalidAddress ? Exit.usage : Exit.connection)
    case let e as LightXError:
        printError(e.message)
        return ExitCode(Exit.device)
    case let e as UpdateError:
        printError(e.message)
        switch e.code {
        case .connectionLost, .notReady: return ExitCode(Exit.connection)
        default: return ExitCode(Exit.device)
        }
    case let e as ImageError:
        printError(e.message)
        return ExitCode(e.code == .io ? Exit.localIO : Exit.device)
    case let e as CommandFailure:
        printError(e.message)
        return ExitCode(e.code)
    case let e as ExitCode:
        return e
    case let e as ValidationError:
        printError(e.message)
        return ExitCode(Exit.usage)
    case is CancellationError:
        printError("interrupted")
        return ExitCode(130)
    default:
        printError("\(error)")
        return ExitCode.failure
    }
}

/// Opens the device, runs `body`, closes the device; failures become one stderr line and an exit code.
func withHeadset<T>(_ options: DeviceOptions, _ body: (Headset) async throws -> T) async throws -> T {
    LoggingSetup.bootstrap()
    var logger = Logger(label: "tuneup")
    logger.logLevel = options.verbose ? .trace : .warning
    let headset: Headset
    do {
        let connector = makeConnector(options, logger: options.verbose ? logger : nil)
        headset = try await Headset.open(try options.address(), connector: connector, options: options.sessionOptions, logger: logger)
    } catch {
        throw failureExit(error)
    }
    do {
        let result = try await body(headset)
        await headset.close()
        return result
    } catch {
        await headset.close()
        throw failureExit(error)
    }
}

/// The connector for every address kind: the built-in simulator for `sim`, and the USB and Bluetooth back ends.
func makeConnector(_ options: DeviceOptions, logger: Logger? = nil) -> TransportConnector {
    let usb = USBBridge(pollInterval: options.pollIntervalDuration, logger: logger)
    var connector = TransportConnector(
        connectTimeout: .seconds(5),
        simulator: { path in try await SimulatorBridge.openInProcess(statePath: path) },
        usb: { try await usb.open($0) },
        bluetooth: { try await BluetoothBridge.open($0, logger: logger) })
    connector.logger = logger
    return connector
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
