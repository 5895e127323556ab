import Foundation
import Testing
@testable import Firmware
import LightX
import TestSupport

/// Bytes from a hex string (whitespace ignored). Test vectors only.
func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.utf8.filter { !$0.isWhitespace })
    var out: [UInt8] = []
    var i = 0
    while i + 1 < digits.count {
        out.append(UInt8(IntelHex.hexValue(digits[i])! << 4 | IntelHex.hexValue(digits[i + 1])!))
        i += 2
    }
    return out
}

extension UInt8 {
    var isWhitespace: Bool { self == 0x20 || self == 0x0A || self == 0x0D || self == 0x09 }
}

/// A fresh temporary directory, removed when the value goes away.
final class TempDir: @unchecked Sendable {
    let path: String
    init() throws {
        path = try TemporaryDirectory.make("fwtests")
    }
    func file(_ name: String) -> String { path + "/" + name }
    func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let p = file(name)
        try Data(bytes).write(to: URL(fileURLWithPath: p))
        return p
    }
    func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }
    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: URL(fileURLWithPath: file(name)))) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// Runs `body` and returns the ImageError it throws (nil when it does not throw). Any other error is a failure.
func imageError(_ body: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> ImageError? {
    do {
        try body()
        return nil
    } catch let error as ImageError {
        #expect(!error.message.contains("\n"), "messages are one line: \(error.message)", sourceLocation: sourceLocation)
        return error
    } catch {
        Issue.record("expected an ImageError, got \(error)", sourceLocation: sourceLocation)
        return ImageError(.io, "not an ImageError: \(error)")
    }
}

/// The test-only development key and a second, unrelated key (both fixed).
enum Keys {
    static let dev = DevelopmentKeys.testOnlySigningKey
    /// Another imgtool-generated key ("signed by another key" cases).
    static let otherPEM = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VwBCIEIC5iUt5OK8MhL/u6wpujPRyC00eLPNghdUiBNL6CawFR
        -----END PRIVATE KEY-----

        """
    static let other: SigningKey = try! SigningKey(pem: otherPEM)
}

/// A typical simulated application image: factory manifest + filler, signed with the dev key.
func sampleImage(size: Int = 4096, version: ImageVersion = ImageVersion(major: 1, minor: 5, revision: 0),
                 model: String? = "TS-1", region: FlashRegion? = .application, key: SigningKey? = Keys.dev,
                 headerSize: Int = 0x200) -> MCUbootImage {
    var manifest = AppManifest.factory
    manifest.version = "\(version.major).\(version.minor).\(version.revision)"
    return MCUbootImage.sign(payload: AppManifest.buildPayload(manifest, size: size, seed: 7), version: version,
                             model: model, region: region, key: key, headerSize: headerSize)
}
