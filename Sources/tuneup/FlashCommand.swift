import ArgumentParser
import Firmware
import FirmwareUpdate
import Foundation
import Headset
import LightX
import Logging
import Support
import Terminal
import Transport
import TuneupKit

struct FlashCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flash",
        abstract: "Update a headset's firmware: authenticate, enter the bootloader, write, verify, commit, reboot, confirm.",
        discussion: """
            IMAGE is a signed image (MCUboot format), an Intel HEX file or a raw .bin (raw and HEX need --region). \
            Before touching the device, tuneup refuses an image for another model, one too large for its region, \
            an older version than installed (unless --allow-downgrade) and, with --key, an unsigned or badly signed \
            image. An interrupted update (lost link, power cut, Ctrl-C) resumes where the device's CRC says it \
            stopped; the device keeps running its old firmware or stays in its bootloader until the new image is \
            verified and committed.

            Requests are pipelined when the device's bootloader advertises a queue (a Tuneup extension); otherwise, \
            and with --window 1, one request at a time as the vendor tools do.

            Progress: a bar on a terminal, plain lines otherwise; with --format json, JSON Lines on stdout \
            ({"type":"progress",...} then {"type":"result",...}); --progress-file appends the progress events.

            Examples:
              tuneup flash firmware-images/app-1.5.0.img
              tuneup flash firmware-images/raw-app-1.5.0-no-region.bin --region app --device tcp:127.0.0.1:4100 --window 1
              tuneup flash firmware-images/app-1.5.0.img --key firmware-images/dev-public.pem --format json --progress-file update.jsonl
            """)

    @Argument(help: ArgumentHelp("The image file.", valueName: "image"))
    var imagePath: String

    @Option(help: ArgumentHelp("Target region for raw or Intel HEX images: app or resource.", valueName: "region"))
    var region: FlashRegion?

    @Option(parsing: .unconditional, help: ArgumentHelp("Requests in flight (default: adaptive up to the device's queue; 1 = one at a time).", valueName: "n"))
    var window: Int?

    @Flag(help: "Allow installing an older version than the device runs.")
    var allowDowngrade = false

    @Option(help: ArgumentHelp("Only flash images signed by this Ed25519 public key (PEM).", valueName: "pub.pem"))
    var key: String?

    @Flag(help: "Rewrite everything instead of skipping sectors the device already holds.")
    var noResume = false

    @Flag(help: "Flash even when the device already runs the image's version.")
    var force = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds to wait for the device to come back after a jump, reboot or lost link.", valueName: "seconds"))
    var wait: Double = 30

    @Option(help: ArgumentHelp("Append JSON Lines progress events to this file.", valueName: "file"))
    var progressFile: String?

    @OptionGroup var device: DeviceOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        if let window, !(1...256).contains(window) { throw ValidationError("--window must be 1...256") }
        try checkSeconds(wait, "--wait")
    }

    func run() async throws {
        LoggingSetup.bootstrap()
        var logger = Logger(label: "tuneup")
        logger.logLevel = device.verbose ? .trace : .warning
        let image: FirmwareImage
        let verificationKey: VerificationKey?
        do {
            // Files are read on the blocking executor, not on the pool this command's tasks share.
            (image, verificationKey) = try await Blocking.perform("flash image") { [imagePath, region, key] in
                (try FirmwareImage.load(path: imagePath, region: region), try key.map { try VerificationKey.load(path: $0) })
            }
        } catch let error as ImageError {
            throw error
        } catch {
            throw CommandFailure(message: "cannot read \(key ?? imagePath): \(error.localizedDescription)", code: Exit.localIO)
        }
        let address = try device.address()
        let options = UpdateOptions(
            window: window, allowDowngrade: allowDowngrade, verificationKey: verificationKey,
            requestTimeout: device.sessionOptions.timeout, readyWait: .milliseconds(Int64(wait * 1000)),
            reconnectWait: .milliseconds(Int64(wait * 1000)), resume: !noResume, force: force)
        let updater = Devices.updater(
            image: image, address: address, options: options,
            connection: device.connectionOptions(transportLogger: device.verbose ? logger : nil), logger: logger)
        let renderer = try await Blocking.perform("progress file") { [json = output.json, progressFile] in
            try ProgressRenderer(json: json, progressFile: progressFile, title: "\(image.name) → \(address)")
        }
        let rendering = Task { await renderer.consume(updater.progress) }
        let result: UpdateResult
        do {
            result = try await updater.run()
        } catch {
            await rendering.value
            let signal = Interrupts.received
            let (message, code) = signal.map { (Self.interrupted(by: $0, during: renderer.latest?.phase), Interrupts.exitCode($0)) }
                ?? describeFailure(error)
            renderer.emitError(message: message, code: signal != nil ? "interrupted" : Self.errorCode(error))
            renderer.finish()
            throw CommandFailure(message: message, code: code)
        }
        await rendering.value
        let progressProblem = renderer.finish()
        try emitResult(result)
        // Output that could not be written does not undo the update; it is still a failure of the command.
        if let problem = progressProblem ?? Console.outputFailure {
            throw CommandFailure(message: "\(problem) (the update itself completed)", code: Exit.localIO)
        }
    }

    /// The stable code of an update failure, for the JSON error event.
    static func errorCode(_ error: Error) -> String? {
        (error as? UpdateError)?.code.rawValue ?? (error as? HeadsetError)?.code.rawValue
    }

    /// What an update stopped by a signal leaves behind, by the phase it was in.
    static func interrupted(by signal: Int32, during phase: UpdatePhase?) -> String {
        let stopped = "stopped by \(Interrupts.name(signal))"
        switch phase {
        case nil, .connect?, .authenticate?:
            return "\(stopped) before the update began; the device is unchanged"
        case .enterBootloader?:
            return "\(stopped) while entering the bootloader; the application is unchanged but the device may wait in "
                + "its bootloader: run the same command again to update it, or 'tuneup bootloader leave'"
        case .commit?:
            return "\(stopped) while committing; the device is in its bootloader: run the same command again to verify and commit"
        case .reboot?, .confirm?, .done?:
            return "\(stopped) after the new image was committed; the device is starting it (check with 'tuneup probe')"
        case let phase?:
            return "\(stopped) during \(phase.rawValue); the device is in its bootloader with a partial image: "
                + "run the same command again to resume"
        }
    }

    private func emitResult(_ r: UpdateResult) throws {
        if output.json {
            Output.line(try Output.jsonLine(TaggedResult(type: "result", result: r)))
            return
        }
        if r.alreadyInstalled {
            Output.line("Already installed: the device runs \(r.newVersion ?? "this version"); nothing was written (--force flashes it again).")
            return
        }
        var rows: [(String, String)] = [
            ("Image", "\(r.image) (\(r.imageBytes) bytes, \(r.sectors) sectors, \(r.region.rawValue) region)"),
            ("Version", (r.previousVersion ?? "unknown") + " → " + (r.newVersion ?? "unknown")),
            ("Written", "\(r.bytesWritten) bytes in \(String(format: "%.2f", r.transferSeconds)) s"
                + (r.bytesPerSecond > 0 ? String(format: " (%.1f KiB/s)", r.bytesPerSecond / 1024) : "")),
        ]
        if r.skippedSectors > 0 { rows.append(("Resumed", "\(r.skippedSectors) sectors were already on the device")) }
        rows.append(("Total", String(format: "%.2f s", r.seconds) + ", window up to \(r.maxWindow)"
                     + (r.resent > 0 ? ", \(r.resent) resent" : "") + (r.redoneSectors > 0 ? ", \(r.redoneSectors) sectors redone" : "")
                     + (r.reconnects > 0 ? ", \(r.reconnects) reconnects" : "")))
        Output.line("Updated.\n" + Output.table(rows))
    }
}

struct TaggedResult: Encodable {
    var type: String
    var result: UpdateResult
    func encode(to encoder: Encoder) throws {
        try result.encode(to: encoder)
        var c = encoder.container(keyedBy: Key.self)
        try c.encode(type, forKey: .type)
    }
    enum Key: String, CodingKey { case type }
}

extension FlashRegion: ExpressibleByArgument {
    public init?(argument: String) {
        switch argument.lowercased() {
        case "app", "application": self = .application
        case "resource", "rsrc": self = .resource
        default: return nil
        }
    }
    public static var allValueStrings: [String] { ["app", "resource"] }
}
