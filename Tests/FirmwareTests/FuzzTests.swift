import Testing
import LightX
import TestSupport
@testable import Firmware

/// Seeded mutations of valid inputs: nothing traps, and every accepted mutation is harmless.
@Suite struct FuzzTests {
    /// 20 000 mutated MCUboot images. Property: parsing and verifying either throws an `ImageError`, or everything the
    /// signature vouches for is unchanged: the hashed bytes (header, payload, protected TLVs) and the signature.
    /// (The unprotected TLV area is not signed, by MCUboot's design: appended bytes, or a KEYHASH record retyped to
    /// an unknown type, leave a still-valid image.) Seconds of signature checks in a debug build: the loop yields to
    /// the cooperative pool's other tasks every 100 images, so it never holds one of its threads for long.
    @Test func mutatedImagesNeverTrapAndNeverVerifyWhenChanged() async {
        let originalImage = sampleImage(size: 700)
        let original = originalImage.bytes
        let signed = Array(original[originalImage.hashedRange])
        let key = DevelopmentKeys.publicKey
        var rng = TestRandom(seed: 0x5EED_F1A5)
        var accepted = 0, thrown = 0, changedButValid = 0
        var codes: Set<ImageError.Code> = []
        for n in 0..<20_000 {
            if n % 100 == 0 { await Task.yield() }
            var b = original
            let kind = Int.random(in: 0..<10, using: &rng)
            switch kind {
            case 0:  // truncate anywhere
                b.removeLast(Int.random(in: 1...b.count, using: &rng))
            case 1:  // append junk
                b += (0..<Int.random(in: 1...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            case 2:  // insert or delete a few bytes somewhere
                let at = Int.random(in: 0..<b.count, using: &rng)
                if Bool.random(using: &rng) {
                    b.insert(contentsOf: (0..<Int.random(in: 1...8, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }, at: at)
                } else {
                    b.removeSubrange(at..<min(b.count, at + Int.random(in: 1...8, using: &rng)))
                }
            case 3, 4:  // header fields
                for _ in 0..<Int.random(in: 1...3, using: &rng) { b[Int.random(in: 0..<32, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            case 5, 6:  // TLV areas (the last 200 bytes)
                for _ in 0..<Int.random(in: 1...3, using: &rng) {
                    b[Int.random(in: (b.count - 200)..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
                }
            case 7:  // single bit flip anywhere
                b[Int.random(in: 0..<b.count, using: &rng)] ^= 1 << UInt8.random(in: 0...7, using: &rng)
            default:  // random bytes anywhere, sometimes "interesting" values
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
                    let v: UInt8 = [0x00, 0xFF, 0x7F, 0x80, 0x01].randomElement(using: &rng)!
                    b[Int.random(in: 0..<b.count, using: &rng)] = Bool.random(using: &rng) ? v : UInt8.random(in: 0...255, using: &rng)
                }
            }
            do {
                let image = try MCUbootImage(parsing: b)
                _ = (image.payload.count, image.model, image.region, image.hashedRange)
                try image.verify(with: key)
                accepted += 1
                #expect(Array(image.bytes[image.hashedRange]) == signed && image.signature == originalImage.signature,
                        "a changed image verified (mutation kind \(kind))")
                if Array(b.prefix(original.count)) != original { changedButValid += 1 }
            } catch {
                thrown += 1
                codes.insert(error.code)
                #expect(!error.message.isEmpty && !error.message.contains("\n"))
            }
            // The wrappers must not trap either.
            _ = try? FirmwareImage(bytes: b, name: "fuzz.img", region: .application)
            _ = AppManifest.find(in: b)
        }
        #expect(accepted + thrown == 20_000)
        #expect(accepted > 0 && thrown > 10_000)
        #expect(changedButValid < 100, "only rare unsigned-area edits survive: \(changedButValid)")
        // The mutations reach every structural check.
        for code: ImageError.Code in [.truncated, .badMagic, .badHeader, .badTLV, .badHash, .badSignature, .wrongKey] {
            #expect(codes.contains(code), "no mutation produced \(code)")
        }
    }

    /// Every prefix of a valid image is rejected as truncated (or, very short, as missing its magic).
    @Test func everyTruncationThrows() {
        let original = sampleImage(size: 300).bytes
        for length in 0..<original.count {
            let e = imageError { _ = try MCUbootImage(parsing: Array(original.prefix(length))) }
            #expect(e?.code == .truncated || (length < 4 && e != nil), "length \(length): \(e?.message ?? "accepted")")
        }
    }

    /// Random bytes and mutated Intel HEX / manifests never trap.
    @Test func otherDecodersNeverTrap() async {
        var rng = TestRandom(seed: 42)
        let hex = Array(IntelHex.encode((0..<300).map { UInt8($0 & 0xFF) }, base: 0x0800_0000).utf8)
        let manifest = AppManifest.factory.encoded()
        for _ in 0..<3_000 {
            await Task.yield()  // a long loop in a debug build: let the cooperative pool's other tasks run
            var h = hex
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                h[Int.random(in: 0..<h.count, using: &rng)] = [UInt8(ascii: ":"), UInt8(ascii: "0"), UInt8(ascii: "F"), 0x0A, 0x41,
                                                              UInt8.random(in: 0...255, using: &rng)].randomElement(using: &rng)!
            }
            if Bool.random(using: &rng) { h.removeLast(Int.random(in: 0..<h.count, using: &rng)) }
            _ = try? IntelHex.decode(String(decoding: h, as: UTF8.self))
            _ = try? ImageFile(bytes: h, name: "fuzz.hex")

            var m = manifest
            for _ in 0..<Int.random(in: 1...3, using: &rng) { m[Int.random(in: 0..<m.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng) }
            if Bool.random(using: &rng) { m.removeLast(Int.random(in: 0..<m.count, using: &rng)) }
            if let decoded = try? AppManifest(decoding: m[...]) { #expect((try? decoded.validate()) != nil) }

            let random = (0..<Int.random(in: 0...80, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = try? MCUbootImage(parsing: [0x3D, 0xB8, 0xF3, 0x96] + random)
            _ = try? ImageFile(bytes: random, name: "r")
        }
    }
}
