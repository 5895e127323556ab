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
        // Files are read on the blocking executor, not on the pool this command's tasks share.
        let (image, verificationKey) = try await FirmwareImage.loadForUpdate(path: imagePath, region: region, keyPath: key)
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
            let (message, code) = signal.map {
                (UpdateInterruption.message("stopped by \(Interrupts.name($0))", during: renderer.latest?.phase), Interrupts.exitCode($0))
            } ?? describeFailure(error)
            renderer.emitError(message: message, code: signal != nil ? "interrupted" : UpdateInterruption.errorCode(error))
            renderer.finish()
            throw CommandFailure(message: message, code: code)
        }
        await rendering.value
        let progressProblem = renderer.finish()
        Output.line(output.json ? try Output.jsonLine(result.resultEvent) : result.text)
        // Output that could not be written does not undo the update; it is still a failure of the command.
        if let problem = progressProblem ?? Console.outputFailure {
            throw CommandFailure(message: "\(problem) (the update itself completed)", code: Exit.localIO)
        }
    }
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
