import ArgumentParser
import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import Logging
import Terminal
import Transport
import TuneupKit
import Support

/// Runs `body` with a bootloader client for the device options (reconnecting as the device resets); errors become one
/// stderr line and an exit code.
func withBootloader<T>(_ device: DeviceOptions, wait: Double, _ body: (BootloaderClient) async throws -> T) async throws -> T {
    LoggingSetup.bootstrap()
    var logger = Logger(label: "tuneup")
    logger.logLevel = device.verbose ? .trace : .warning
    do {
        return try await Devices.withBootloaderClient(address: try device.address(), wait: .milliseconds(Int64(wait * 1000)),
                                                      connection: device.connectionOptions(transportLogger: device.verbose ? logger : nil),
                                                      logger: logger, body)
    } catch {
        throw failureExit(error)
    }
}

struct BootloaderCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bootloader",
        abstract: "Show the bootloader status, enter the bootloader, or leave it for the application.",
        discussion: """
            Examples:
              tuneup bootloader status
              tuneup bootloader enter      # authenticate, shut the application down, jump, wait until ready
              tuneup bootloader leave      # start the committed application
            """,
        subcommands: [Status.self, Enter.self, Leave.self],
        defaultSubcommand: Status.self)

    struct WaitOption: ParsableArguments {
        @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for the device to become ready after a jump.", valueName: "seconds"))
        var wait: Double = 30
        func validate() throws {
            try checkSeconds(wait, "--wait")
        }
    }

    /// Runs `action` on the bootloader, then prints the device's status.
    static func report(_ device: DeviceOptions, _ wait: WaitOption, _ output: OutputOptions,
                       _ action: @escaping (BootloaderClient) async throws -> Void) async throws {
        let status = try await withBootloader(device, wait: wait.wait) { client in
            try await action(client)
            return try await client.status()
        }
        try Output.emit(status, json: output.json) { status.text }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "status", abstract: "Show whether the bootloader or the application runs, and the firmware versions.")
        @OptionGroup var wait: WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws { try await report(device, wait, output) { _ in } }
    }

    struct Enter: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "enter", abstract: "Authenticate and jump to the bootloader; wait until it is ready.")
        @OptionGroup var wait: WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws { try await report(device, wait, output) { try await $0.enter() } }
    }

    struct Leave: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "leave", abstract: "Start the committed application; wait until it runs.")
        @OptionGroup var wait: WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var output: OutputOptions
        func run() async throws { try await report(device, wait, output) { try await $0.leave() } }
    }
}

struct FirmwareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "firmware",
        abstract: "Read firmware back from the device.",
        subcommands: [Read.self])

    struct Read: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "read",
            abstract: "Read a flash region back into a file (through the bootloader).",
            discussion: """
                By default the length is that of the signed image at the start of the region (its header says so), \
                else the whole region. The device is taken to its bootloader if needed and back to its application \
                afterwards (unless --stay). The file is written only once the read is complete. Example:
                  tuneup firmware read --region app -o app-readback.img
                """)
        @Option(help: ArgumentHelp("Region to read: app or resource.", valueName: "region"))
        var region: FlashRegion = .application
        @Option(name: .shortAndLong, help: ArgumentHelp("Output file.", valueName: "file"))
        var output: String
        @Option(parsing: .unconditional, help: ArgumentHelp(
            "Bytes to read, decimal or 0x hex, with K/KiB or M/MiB (default: the image's size, else the whole region).",
            valueName: "bytes"))
        var length: String?
        @Flag(help: "Stay in the bootloader afterwards.")
        var stay = false
        @OptionGroup var wait: BootloaderCommand.WaitOption
        @OptionGroup var device: DeviceOptions
        @OptionGroup var format: OutputOptions

        func validate() throws { _ = try byteCount() }

        /// --length in bytes (the same grammar as the image commands' sizes).
        func byteCount() throws -> Int? {
            guard let length else { return nil }
            guard let bytes = ImageCommand.parseSize(length), (1...region.maxSize).contains(bytes) else {
                throw ValidationError("--length must be 1...\(region.maxSize) bytes for the \(region.rawValue) region (e.g. 4096, 0x1000, 4KiB), got '\(length)'")
            }
            return bytes
        }

        func run() async throws {
            let region = self.region
            let length = try byteCount()
            do {
                // Checked before the device is touched: a path that would be refused is refused before a long read.
                _ = try await Blocking.perform("check \(output)") { [output] in try SafeOutput.check(output, existing: .replace) }
            } catch {
                throw failureExit(error)
            }
            let read = try await withBootloader(device, wait: wait.wait) { [stay, output] client in
                try await client.readBack(region, length: length, stay: stay, file: output)
            }
            do {
                // Replaced whole; a symbolic link, device, FIFO or directory is refused (exit 74).
                try await Blocking.perform("write \(output)") { [output] in try SafeOutput.write(read.bytes, to: output) }
            } catch {
                throw failureExit(error)
            }
            try Output.emit(read.report, json: format.json) { read.report.text }
        }
    }
}
