import Firmware
import Foundation
import Support
import Testing
import TestSupport
import TuneupKit

/// `tuneup image keygen`, `sign` and `build-sim-app` as library calls (issue 31 §1).
struct ImageMakingTests {
    @Test func aKeyAPayloadAndItsSignedImage() async throws {
        let directory = try TemporaryDirectory.make("image-making")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await Blocking.perform("image making") {
            let key = try KeygenReport.generate(privateKey: directory + "/key.pem", publicKey: directory + "/pub.pem", force: false)
            #expect(key.text == "wrote \(directory)/key.pem (Ed25519 private key) and \(directory)/pub.pem (public key), key hash \(key.keyHash)")
            let again = #expect(throws: ImageError.self) { try KeygenReport.generate(privateKey: directory + "/key.pem", publicKey: nil, force: false) }
            #expect(again?.code == .exists && again?.category == .usage && again?.message == "\(directory)/key.pem exists; use --force to replace it")
            _ = try KeygenReport.generate(privateKey: directory + "/key.pem", publicKey: nil, force: true)

            let app = try SimulatedAppReport.build(manifest: "factory", size: 4096, sizeText: "4KiB", seed: 7, output: directory + "/payload.bin")
            #expect(app.size == 4096 && app.warning == nil && app.text.hasPrefix("wrote \(directory)/payload.bin: 4096 bytes, manifest 1.4.2 "))
            let tiny = try SimulatedAppReport.build(manifest: "factory", size: 8, sizeText: "8", seed: 7, output: directory + "/tiny.bin")
            #expect(tiny.warning == "the manifest alone is \(tiny.size) bytes, more than --size 8")
            let missing = #expect(throws: ImageError.self) {
                try SimulatedAppReport.build(manifest: directory + "/none.json", size: 8, sizeText: "8", seed: 1, output: directory + "/x.bin")
            }
            #expect(missing?.message.hasPrefix("\(directory)/none.json") == true)

            let signed = try SignedImageReport.sign(payload: directory + "/payload.bin", output: directory + "/app.img", keyPath: directory + "/key.pem",
                                                    version: nil, model: nil, region: nil, headerSize: 0x200)
            #expect(signed.text.hasPrefix("wrote \(directory)/app.img: MCUboot image 1.4.2, model ") && signed.text.contains(", signed with key "))
            #expect(signed.inspection.signed)
        }
    }
}
