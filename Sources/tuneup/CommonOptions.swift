import ArgumentParser
import Foundation
import Headset
import Transport

/// Where the device is and how patiently to talk to it. Shared by every device command.
struct DeviceOptions: ParsableArguments {
    @Option(name: .shortAndLong, help: ArgumentHelp(
        "Device address: sim[:STATEFILE], tcp:HOST:PORT, serial:PATH, usb:VID:PID[:SERIAL], bt:ADDR[:CHANNEL].",
        discussion: "Defaults to $TUNEUP_DEVICE, else 'sim' (the built-in simulated headset).",
        valueName: "addr"))
    var device: String?

    @Option(help: ArgumentHelp("Seconds to wait for each reply before sending the request again.", valueName: "seconds"))
    var timeout: Double = 2

    @Option(help: ArgumentHelp("How many times to resend a request the device did not answer.", valueName: "n"))
    var retries: Int = 2

    @Flag(name: .shortAndLong, help: "Log every frame sent and received to stderr.")
    var verbose = false

    func validate() throws {
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 seconds") }
        guard (0...20).contains(retries) else { throw ValidationError("--retries must be 0...20") }
        _ = try address()
    }

    /// The parsed address (option, environment, or the simulator).
    func address() throws -> DeviceAddress {
        let text = device ?? ProcessInfo.processInfo.environment["TUNEUP_DEVICE"].flatMap { $0.isEmpty ? nil : $0 } ?? "sim"
        do {
            return try DeviceAddress(parsing: text)
        } catch let error as TransportError {
            throw ValidationError(error.message)
        }
    }

    var sessionOptions: LightXSession.Options {
        LightXSession.Options(timeout: .milliseconds(Int64(timeout * 1000)), retransmissions: retries)
    }
}

/// Output format shared by every command that prints results.
struct OutputOptions: ParsableArguments {
    enum Format: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    @Option(help: ArgumentHelp("Output format: text for people, json for scripts (stable field names).", valueName: "format"))
    var format: Format = .text

    var json: Bool { format == .json }
}
