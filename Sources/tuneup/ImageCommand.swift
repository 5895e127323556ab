import ArgumentParser
import Firmware
import LightX
import Support
import Terminal
import Transport
import TuneupKit

/// `tuneup image ...`: create keys, sign, verify and inspect firmware images, and build simulated application
/// payloads. A thin layer over the `Firmware` library; every failure is one stderr line and a distinct exit code.
struct ImageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image",
        abstract: "Create keys, sign, verify and inspect firmware images (MCUboot format, Intel HEX, raw).",
        discussion: """
            Signed images use MCUboot's format, so MCUboot's imgtool checks them (imgtool verify -k PUB.pem IMAGE) \
            and tuneup checks imgtool's. Keys are Ed25519 PEM files as imgtool keygen -t ed25519 writes them.

            Exit codes: 0 success, 64 bad arguments, 65 a bad image, key or manifest (corrupt, wrong key, \
            too large, ...), 74 a file that cannot be read or written.

            Examples:
              tuneup image keygen -o my-key.pem --public-out my-pub.pem
              tuneup image build-sim-app --manifest firmware-images/manifests/app-1.5.0.json --size 128KiB -o payload.bin
              tuneup image sign payload.bin -o app.img --key my-key.pem --version 1.5.0
              tuneup image verify app.img --key my-pub.pem
              tuneup image inspect app.img --format json
            """,
        subcommands: [Keygen.self, Sign.self, Verify.self, Inspect.self, BuildSimApp.self])

    // MARK: - Shared pieces

    /// Runs `body`; a failure becomes one stderr line and its exit code (an `ImageError`: 74 for I/O, 64 for a
    /// missing version, 65 otherwise).
    static func run(_ body: () throws -> Void) throws {
        do {
            try body()
        } catch {
            throw failureExit(error)
        }
    }

    /// A warning on stderr (not a failure).
    static func warn(_ message: String) { printError("warning: \(message)") }

    /// A byte count in the one grammar of `Quantities` (decimal or 0x hex; k/M decimal, KiB/MiB binary), at most
    /// 4 GiB - 1.
    static func parseSize(_ text: String) -> Int? {
        Quantities.parseCount(text).flatMap { $0 <= Int(UInt32.max) ? $0 : nil }
    }


    // MARK: - keygen

    struct Keygen: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keygen",
            abstract: "Generate an Ed25519 signing key (PKCS#8 PEM, readable by imgtool).",
            discussion: "The private key file is created with mode 0600. Example: tuneup image keygen -o key.pem --public-out pub.pem")

        @Option(name: .shortAndLong, help: ArgumentHelp("Private key file to write.", valueName: "key.pem"))
        var output: String
        @Option(help: ArgumentHelp("Also write the public key (SubjectPublicKeyInfo PEM) here.", valueName: "pub.pem"))
        var publicOut: String?
        @Flag(help: "Replace existing files.")
        var force = false
        @OptionGroup var format: OutputOptions

        func run() throws {
            try ImageCommand.run {
                let report = try KeygenReport.generate(privateKey: output, publicKey: publicOut, force: force)
                try Output.emit(report, json: format.json) { report.text }
            }
        }
    }

    // MARK: - sign

    struct Sign: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "sign",
            abstract: "Sign a raw or Intel HEX payload into an MCUboot image.",
            discussion: """
                The result is what imgtool sign --pad-header --header-size SIZE --version V --custom-tlv 0xa0 MODEL \
                --custom-tlv 0xa1 REGION writes. When the payload starts with a simulated-application manifest, \
                --version, --model and --region default to its version, its model and 'app'. An output name ending \
                in .hex is written as Intel HEX at the region's address (0x40000 app, 0xC0000 resource).
                Example: tuneup image sign payload.bin -o app.img --key my-key.pem --version 1.5.0
                """)

        @Argument(help: ArgumentHelp("The payload: raw binary or Intel HEX.", valueName: "payload"))
        var payload: String
        @Option(name: .shortAndLong, help: ArgumentHelp("The image file to write.", valueName: "image"))
        var output: String
        @Option(help: ArgumentHelp("Ed25519 private key PEM to sign with.", valueName: "key.pem"))
        var key: String?
        @Flag(help: "Write an unsigned image (SHA-256 only) instead of giving --key.")
        var unsigned = false
        @Option(help: ArgumentHelp("Image version major.minor.revision[+build] (default: the payload manifest's).", valueName: "version"))
        var version: String?
        @Option(help: ArgumentHelp("Hardware model for the 0xA0 TLV (default: the payload manifest's).", valueName: "model"))
        var model: String?
        @Option(help: ArgumentHelp("Target region for the 0xA1 TLV: app or resource (default: app when the payload has a manifest).", valueName: "region"))
        var region: FlashRegion?
        @Option(help: ArgumentHelp("Header size, at least 32 (0x20); decimal or 0x hex.", valueName: "size"))
        var headerSize: String = "0x200"
        @OptionGroup var format: OutputOptions

        func validate() throws {
            if key == nil && !unsigned { throw ValidationError("give --key KEY.pem, or --unsigned for an image without a signature") }
            if key != nil && unsigned { throw ValidationError("--key and --unsigned cannot be combined") }
            guard let size = ImageCommand.parseSize(headerSize), (32...0xFFFF).contains(size) else {
                throw ValidationError("--header-size must be 32...65535 (e.g. 0x200), got '\(headerSize)'")
            }
            if let version, ImageVersion(parsing: version) == nil {
                throw ValidationError("--version must look like 1.5.0 or 1.5.0+3 (major, minor ≤ 255, revision ≤ 65535), got '\(version)'")
            }
            if let model, !(1...64).contains(model.utf8.count) { throw ValidationError("--model must be 1...64 bytes") }
        }

        func run() throws {
            try ImageCommand.run {
                let signed = try SignedImageReport.sign(payload: payload, output: output, keyPath: key, version: version.flatMap(ImageVersion.init(parsing:)),
                                                        model: model, region: region, headerSize: ImageCommand.parseSize(headerSize) ?? 0x200)
                for warning in signed.warnings { ImageCommand.warn(warning) }
                try Output.emit(signed.inspection, json: format.json) { signed.text }
            }
        }
    }

    // MARK: - verify

    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check an image: structure, SHA-256, signature (with --key), and that it fits its region.",
            discussion: """
                Without --key only the integrity hash is checked. Exits 65 with one line on stderr when the image \
                is truncated, corrupted, unsigned (with --key), signed by another key, badly signed, or too large.
                Example: tuneup image verify firmware-images/app-1.5.0.img --key firmware-images/dev-public.pem
                """)

        @Argument(help: ArgumentHelp("The image: MCUboot (binary or Intel HEX), or raw.", valueName: "image"))
        var image: String
        @Option(help: ArgumentHelp("Public (or private) key PEM the image must be signed with.", valueName: "pub.pem"))
        var key: String?
        @Option(help: ArgumentHelp("Region to check the size against (default: the image's region TLV).", valueName: "region"))
        var region: FlashRegion?
        @OptionGroup var format: OutputOptions

        func run() throws {
            try ImageCommand.run {
                let report = try ImageVerification.verify(path: image, keyPath: key, region: region)
                try Output.emit(report, json: format.json) { report.text }
            }
        }
    }

    // MARK: - inspect

    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect",
            abstract: "Show what an image holds: format, region, size, version, model, signature, hash, manifest.",
            discussion: """
                A corrupted hash or signature is reported, not an error; only an image whose structure cannot be \
                read exits 65. With --key the signature is checked against that key.
                Example: tuneup image inspect firmware-images/app-1.5.0.img --format json
                """)

        @Argument(help: ArgumentHelp("The image: MCUboot (binary or Intel HEX), or raw.", valueName: "image"))
        var image: String
        @Option(help: ArgumentHelp("Check the signature against this public (or private) key PEM.", valueName: "pub.pem"))
        var key: String?
        @Option(help: ArgumentHelp("Region to assume for a raw image (default: the image's region TLV).", valueName: "region"))
        var region: FlashRegion?
        @OptionGroup var format: OutputOptions

        func run() throws {
            try ImageCommand.run {
                let report = try ImageInspection.inspect(path: image, keyPath: key, region: region)
                try Output.emit(report, json: format.json) { report.text }
            }
        }
    }

    // MARK: - build-sim-app

    struct BuildSimApp: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "build-sim-app",
            abstract: "Write a simulated-headset application payload: a manifest, then seeded filler.",
            discussion: """
                The manifest is JSON with the fields version, model, product (optional), bandFrequencies, minGain, \
                maxGain, presets [{name, gains}], ambientSteps; 'factory' stands for the factory application (1.4.2). \
                The same manifest, size and seed always give the same bytes. Sign the result with 'tuneup image sign'.
                Example: tuneup image build-sim-app --manifest firmware-images/manifests/app-1.5.0.json --size 128KiB --seed 150 -o payload.bin
                """)

        @Option(help: ArgumentHelp("Manifest JSON file, or 'factory'.", valueName: "manifest.json"))
        var manifest: String
        @Option(help: ArgumentHelp("Payload size in bytes (e.g. 131072, 128KiB, 0x20000).", valueName: "bytes"))
        var size: String
        @Option(help: ArgumentHelp("Seed for the filler bytes.", valueName: "n"))
        var seed: UInt64 = 1
        @Option(name: .shortAndLong, help: ArgumentHelp("Payload file to write (.hex: Intel HEX at 0x40000).", valueName: "payload.bin"))
        var output: String
        @OptionGroup var format: OutputOptions

        func validate() throws {
            guard let bytes = ImageCommand.parseSize(size), bytes <= 16 * 1024 * 1024 else {
                throw ValidationError("--size must be a byte count up to 16 MiB (e.g. 131072, 128KiB, 0x20000), got '\(size)'")
            }
            _ = bytes
        }

        func run() throws {
            try ImageCommand.run {
                let report = try SimulatedAppReport.build(manifest: manifest, size: ImageCommand.parseSize(size) ?? 0, sizeText: size, seed: seed, output: output)
                if let warning = report.warning { ImageCommand.warn(warning) }
                try Output.emit(report, json: format.json) { report.text }
            }
        }
    }
}

