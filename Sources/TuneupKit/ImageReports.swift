import Firmware
import Foundation
import LightX
import Support

// What `tuneup image inspect`, `verify` and `build-sim-app` report, with their text for people: a program using the
// library prints what tuneup prints without writing it again.

extension ImageInspection {
    /// Aligned lines for people: format, size, region, version, model, the MCUboot header and TLVs, hash and
    /// signature, the manifest.
    public var text: String {
        var rows: [(String, String)] = [("File", file)]
        let formatName: String
        switch format {
        case .mcuboot: formatName = "MCUboot image"
        case .intelHex: formatName = "Intel HEX" + (mcuboot != nil ? " (MCUboot image)" : "") + (hexBase.map { " at \($0)" } ?? "")
        case .raw: formatName = "raw"
        }
        rows.append(("Format", formatName))
        rows.append(("Size", "\(size) bytes, \(sectors) sectors, flash CRC \(flashCRC)"))
        if let region, let regionMaxSize {
            rows.append(("Region", "\(region) (\(regionMaxSize) bytes): " + (fitsRegion == true ? "fits" : "TOO LARGE")))
        } else {
            rows.append(("Region", "none (give --region app|resource to flash it)"))
        }
        rows.append(("Version", version?.description ?? "unknown"))
        rows.append(("Model", model ?? "none"))
        if let mcuboot {
            rows.append(("Header", "\(mcuboot.headerSize) bytes, load address \(mcuboot.loadAddress), flags \(mcuboot.flags)"))
            rows.append(("Payload", "\(mcuboot.payloadSize) bytes" + (mcuboot.trailingBytes > 0 ? ", \(mcuboot.trailingBytes) bytes after the TLVs" : "")))
            rows.append(("TLVs", mcuboot.tlvs.map { "\($0.name)\($0.protected ? "*" : "")" }.joined(separator: " ") + "  (* protected)"))
            rows.append(("SHA-256", hashOK == true ? "ok" : "BAD: \(hashError ?? "")"))
            rows.append(("Signed", signed ? "yes, Ed25519" + (keyHash.map { ", key hash \($0)" } ?? "") : "no"))
            if let signatureOK { rows.append(("Signature", signatureOK ? "ok" : "BAD: \(signatureError ?? "")")) }
        } else {
            rows.append(("Signed", "no"))
        }
        if let manifest {
            rows.append(("Manifest", "\(manifest.version) \(manifest.model)" + (manifest.product.map { " \"\($0)\"" } ?? "")))
            rows.append(("  EQ", "\(manifest.bandFrequencies.count) bands \(manifest.bandFrequencies.map { TextFormat.frequency(Int($0)) }.joined(separator: " ")), \(TextFormat.signed(Int(manifest.minGain)))...\(TextFormat.signed(Int(manifest.maxGain))) dB"))
            rows.append(("  Presets", manifest.presets.map(\.name).joined(separator: ", ")))
            rows.append(("  Ambient", "\(manifest.ambientSteps) steps"))
        } else {
            rows.append(("Manifest", "none"))
        }
        return TextTable.aligned(rows)
    }
}

/// `tuneup image verify`: an image checked (structure, SHA-256, the signature with a key, the region's size).
public struct ImageVerification: Encodable, Sendable {
    public var file: String
    public var ok: Bool
    public var format: ImageFormat
    public var version: ImageVersion?
    public var model: String?
    public var region: String?
    public var signed: Bool
    public var signatureChecked: Bool
    public var keyHash: String?
    /// The text for people.
    private var summary: String

    enum CodingKeys: String, CodingKey { case file, ok, format, version, model, region, signed, signatureChecked, keyHash }

    /// Verifies the image at `path` (MCUboot, binary or Intel HEX, or raw) against the key at `keyPath` (public or
    /// private PEM; none: the hash only) and `region` (default: its region TLV).
    /// - Throws: `ImageError` (65: a bad image or key; 74: a file that cannot be read).
    public static func verify(path: String, keyPath: String?, region: FlashRegion?) throws -> ImageVerification {
        let key = try keyPath.map { try VerificationKey.load(path: $0) }
        let file = try ImageFile.load(path: path)
        let verified = try ImageSigning.verify(file, key: key, region: region)
        let m = file.mcuboot
        var summary: String
        if let m {
            var parts = ["MCUboot image \(m.version)", "model \(m.model ?? "none")", "region \(verified.region?.rawValue ?? "none")", "SHA-256 ok"]
            if let key {
                parts.append("signature ok (key \(ImageText.short(key.keyHash)))")
            } else {
                parts.append(m.isSigned ? "signature not checked (no --key)" : "unsigned")
            }
            summary = "\(path): OK: " + parts.joined(separator: ", ")
        } else {
            summary = "\(path): OK: \(file.format == .intelHex ? "Intel HEX" : "raw") image without a signature (nothing to verify)"
        }
        return ImageVerification(file: path, ok: true, format: file.format, version: m?.version ?? file.manifest?.imageVersion,
                                 model: m?.model ?? file.manifest?.model, region: verified.region?.rawValue, signed: m?.isSigned ?? false,
                                 signatureChecked: verified.signatureChecked, keyHash: m?.keyHash.map(ImageText.hex), summary: summary)
    }

    public var text: String { summary }
}

/// Bytes and key hashes for people.
public enum ImageText {
    /// Lower-case hex.
    public static func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 { bytes.map { String(format: "%02x", $0) }.joined() }
    /// The first 8 bytes in hex and "…" (a key hash).
    public static func short(_ bytes: [UInt8]) -> String { hex(bytes.prefix(8)) + "…" }
}
