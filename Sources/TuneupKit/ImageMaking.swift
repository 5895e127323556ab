import Firmware
import Foundation
import LightX
import Support

// What `tuneup image keygen`, `sign` and `build-sim-app` do and report, with their text for people: a program that
// makes keys, images and simulated payloads does and says what tuneup does without writing it again.

/// A signing key written (`image keygen`): the files and the public key's hash.
public struct KeygenReport: Encodable, Sendable {
    public var privateKey: String
    public var publicKey: String?
    public var keyHash: String

    /// "wrote key.pem (Ed25519 private key) and pub.pem (public key), key hash ...".
    public var text: String {
        "wrote \(privateKey) (Ed25519 private key)" + (publicKey.map { " and \($0) (public key)" } ?? "") + ", key hash \(keyHash)"
    }

    /// Generates an Ed25519 key and writes it to `privateKey` (mode 0600) and its public key to `publicKey`; an
    /// existing file is replaced only with `force` (blocking: file I/O).
    /// - Throws: `ImageError(.exists)` (a usage error) before anything is written, `ImageError(.io)`.
    public static func generate(privateKey: String, publicKey: String?, force: Bool) throws(ImageError) -> KeygenReport {
        for path in [privateKey, publicKey].compactMap({ $0 }) where !force && FileManager.default.fileExists(atPath: path) {
            throw ImageError(.exists, "\(path) exists; use --force to replace it")
        }
        let key = SigningKey.generate()
        try FileAccess.write(Array(key.pem.utf8), to: privateKey, mode: 0o600)
        if let publicKey { try FileAccess.write(Array(key.publicKey.pem.utf8), to: publicKey) }
        return KeygenReport(privateKey: privateKey, publicKey: publicKey, keyHash: ImageText.hex(key.publicKey.keyHash))
    }
}

/// An image signed and written (`image sign`): what it holds (its inspection), the warnings, and a line.
public struct SignedImageReport: Sendable {
    public var inspection: ImageInspection
    public var warnings: [String]
    public var text: String

    /// Signs the payload file `payload` (raw or Intel HEX) with the key at `keyPath` (nil: unsigned) into `output`
    /// (Intel HEX at the region's address when the name ends in .hex); blocking (file I/O).
    /// - Throws: `ImageError`.
    public static func sign(payload: String, output: String, keyPath: String?, version: ImageVersion?, model: String?,
                            region: FlashRegion?, headerSize: Int) throws -> SignedImageReport {
        let signingKey = try keyPath.map { try SigningKey.load(path: $0) }
        let signed = try ImageSigning.sign(payload: try FileAccess.read(payload), name: payload, key: signingKey, version: version, model: model,
                                           region: region, headerSize: headerSize, output: output)
        let image = signed.image
        try FileAccess.write(ImageSigning.fileBytes(image.bytes, for: output, hexBase: signed.region?.versionFileAddress ?? 0), to: output)
        let file = try ImageFile(bytes: image.bytes, name: output)
        let text = "wrote \(output): MCUboot image \(signed.version), model \(signed.model ?? "none"), region \(signed.region?.rawValue ?? "none"), "
            + "\(image.payloadSize)-byte payload, \(image.bytes.count) bytes, "
            + (signingKey.map { "signed with key \(ImageText.short($0.publicKey.keyHash))" } ?? "unsigned")
        return SignedImageReport(inspection: ImageInspection(file: file, region: signed.region, key: signingKey?.publicKey),
                                 warnings: signed.warnings, text: text)
    }
}

/// A simulated application's payload written (`image build-sim-app`).
public struct SimulatedAppReport: Encodable, Sendable {
    public var file: String
    public var size: Int
    public var seed: UInt64
    public var manifest: AppManifest
    /// Said when the manifest alone is larger than the size asked for.
    public var warning: String?

    private enum CodingKeys: String, CodingKey { case file, size, seed, manifest }

    /// "wrote payload.bin: 131072 bytes, manifest 1.5.0 TS1 (10 bands, 3 presets: ...)".
    public var text: String {
        "wrote \(file): \(size) bytes, manifest \(manifest.version) \(manifest.model)"
            + " (\(manifest.bandFrequencies.count) bands, \(manifest.presets.count) presets: \(manifest.presets.map(\.name).joined(separator: ", ")))"
    }

    /// Builds the payload of the manifest at `manifestPath` ("factory": the factory application), `size` bytes of
    /// it seeded filler, and writes it to `output` (Intel HEX at the application's address when the name ends in
    /// .hex); blocking (file I/O).
    /// - Throws: `ImageError` (a manifest that cannot be read or parsed names its file).
    public static func build(manifest manifestPath: String, size: Int, sizeText: String, seed: UInt64, output: String) throws(ImageError) -> SimulatedAppReport {
        let app: AppManifest
        if manifestPath == "factory" {
            app = .factory
        } else {
            do throws(ImageError) {
                app = try AppManifest(json: try FileAccess.read(manifestPath, limit: AppManifest.maxJSONLength))
            } catch {
                throw error.naming(manifestPath)
            }
        }
        let bytes = AppManifest.buildPayload(app, size: size, seed: seed)
        try FileAccess.write(ImageSigning.fileBytes(bytes, for: output, hexBase: FlashRegion.application.versionFileAddress), to: output)
        return SimulatedAppReport(file: output, size: bytes.count, seed: seed, manifest: app,
                                  warning: bytes.count > size ? "the manifest alone is \(bytes.count) bytes, more than --size \(sizeText)" : nil)
    }
}
