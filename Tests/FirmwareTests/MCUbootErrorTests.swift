import Testing
import LightX
@testable import Firmware

/// Every way an MCUboot image is rejected, with the code and a message that says what is wrong.
@Suite struct MCUbootErrorTests {
    let image = sampleImage(size: 2000)
    var tlvStart: Int { image.headerSize + image.payloadSize }

    func parseError(_ b: [UInt8]) -> ImageError? { imageError { _ = try MCUbootImage(parsing: b) } }
    func verifyError(_ b: [UInt8], _ key: VerificationKey? = DevelopmentKeys.publicKey) -> ImageError? {
        imageError { try MCUbootImage(parsing: b).verify(with: key) }
    }
    func patched(_ at: Int, _ values: [UInt8]) -> [UInt8] {
        var b = image.bytes
        for (k, v) in values.enumerated() { b[at + k] = v }
        return b
    }

    @Test func truncated() {
        for length in [0, 1, 31, 32, 0x200, tlvStart - 1, tlvStart, tlvStart + 3, tlvStart + 10, image.bytes.count - 1] {
            let e = parseError(Array(image.bytes.prefix(length)))
            #expect(e?.code == .truncated, "length \(length): \(e?.message ?? "parsed")")
        }
        #expect(parseError(Array(image.bytes.prefix(10)))?.message.contains("fewer than the 32-byte") == true)
        #expect(parseError(Array(image.bytes.prefix(1000)))?.message.contains("payload ends at byte \(tlvStart)") == true)
    }

    @Test func sizesPointingOutsideTheData() {
        // Image size far beyond the data.
        let e = parseError(patched(12, [0xFF, 0xFF, 0xFF, 0x7F]))
        #expect(e?.code == .truncated)
        #expect(e?.message.contains("only \(image.bytes.count) bytes") == true)
        // Header size beyond the data.
        var small = MCUbootImage.sign(payload: [1], version: .init(major: 1, minor: 0, revision: 0), model: nil,
                                      region: nil, key: nil, headerSize: 32).bytes
        small[8] = 0xFF; small[9] = 0xFF
        #expect(parseError(small)?.code == .truncated)
        // The unprotected TLV area's size points past the end.
        let unprotected = tlvStart + image.protectedTLVSize
        #expect(parseError(patched(unprotected + 2, [0xFF, 0x00]))?.code == .truncated)
    }

    @Test func badMagic() {
        let e = parseError(patched(0, [0x3D, 0xB8, 0xF3, 0x97]))
        #expect(e?.code == .badMagic)
        #expect(e?.message.contains("0x97f3b83d") == true)
        #expect(parseError([UInt8](repeating: 0, count: 64))?.code == .badMagic)
    }

    @Test func badHeader() {
        #expect(parseError(patched(8, [0x10, 0x00]))?.code == .badHeader)      // header size 16
        #expect(parseError(patched(16, [0x04, 0, 0, 0]))?.code == .badHeader)  // encrypted
        #expect(parseError(patched(16, [0x00, 0x04, 0, 0]))?.message.contains("compressed") == true)
    }

    @Test func malformedTLVAreas() {
        let protStart = tlvStart
        let unprotected = tlvStart + image.protectedTLVSize
        func expectBadTLV(_ b: [UInt8], _ fragment: String, sourceLocation: SourceLocation = #_sourceLocation) {
            let e = parseError(b)
            #expect(e?.code == .badTLV, "\(e?.message ?? "parsed")", sourceLocation: sourceLocation)
            #expect(e?.message.contains(fragment) == true, "\(e?.message ?? "parsed")", sourceLocation: sourceLocation)
        }
        expectBadTLV(patched(unprotected, [0x07, 0x70]), "expected 0x6907")
        expectBadTLV(patched(protStart, [0x07, 0x69]), "not 0x6908")             // header announces protected TLVs
        expectBadTLV(patched(10, [UInt8(image.protectedTLVSize + 1), 0]), "the header says")
        var tiny = patched(10, [2, 0])
        tiny[protStart + 2] = 2
        expectBadTLV(tiny, "below its 4-byte info header")
        expectBadTLV(patched(protStart + 6, [0xFF, 0]), "overruns")               // model record longer than its area
        expectBadTLV(patched(unprotected + 6, [0x40, 0]), "overruns")             // SHA256 length 64: misaligns the rest
        expectBadTLV(patched(unprotected + 4 + 36, [0x10]), "more than one SHA256")
        expectBadTLV(patched(unprotected + 4, [0x24]), "ED25519 TLV has 32 bytes")
        var shortArea = image.bytes
        shortArea[unprotected + 2] = 0x90 - 3                                    // area ends inside the signature record
        expectBadTLV(shortArea, "overruns")
    }

    @Test func tlvValueChecks() {
        // Region TLV "app" → "apq".
        let regionValue = image.tlvs.first { $0.type == MCUbootImage.regionTLV }!.offset
        let e = parseError(patched(regionValue + 2, [UInt8(ascii: "q")]))
        #expect(e?.code == .badTLV)
        #expect(e?.message.contains("'apq'") == true)
        let modelValue = image.tlvs.first { $0.type == MCUbootImage.modelTLV }!.offset
        #expect(parseError(patched(modelValue, [0xC3, 0x28]))?.code == .badTLV)  // invalid UTF-8
        // A signature in the protected area.
        var b = image.bytes
        b[tlvStart + 4] = 0x24
        #expect(parseError(b)?.code == .badTLV)
    }

    @Test func badHash() {
        var b = image.bytes
        b[image.headerSize + 100] ^= 0x01                       // payload byte
        #expect(verifyError(b)?.code == .badHash)
        #expect(verifyError(b, nil)?.code == .badHash)
        #expect(verifyError(b)?.message.contains("SHA-256 mismatch") == true)
        b = image.bytes
        b[40] ^= 0x80                                           // header padding is hashed too
        #expect(verifyError(b, nil)?.code == .badHash)
        b = image.bytes
        b[tlvStart + 5] ^= 0x01                                 // protected TLV byte (model "TS-1" → "US-1")
        #expect(verifyError(b, nil)?.code == .badHash)
        // No SHA256 TLV at all: retype it to an unknown type.
        let hashOffset = image.tlvs.first { $0.type == MCUbootImage.sha256TLV }!.offset
        b = image.bytes
        b[hashOffset - 4] = 0x77
        #expect(verifyError(b, nil)?.message.contains("no SHA256 TLV") == true)
    }

    @Test func unsignedWhereAKeyIsRequired() throws {
        let unsigned = sampleImage(key: nil)
        try unsigned.verify(with: nil)
        let e = imageError { try unsigned.verify(with: DevelopmentKeys.publicKey) }
        #expect(e?.code == .unsigned)
        #expect(e?.message.contains("a key is required") == true)
    }

    @Test func wrongKey() throws {
        let other = sampleImage(key: Keys.other)
        try other.verify(with: nil)
        try other.verify(with: Keys.other.publicKey)
        let e = imageError { try other.verify(with: DevelopmentKeys.publicKey) }
        #expect(e?.code == .wrongKey)
        #expect(e?.message.contains("another key") == true)
        // Without a KEYHASH TLV a foreign signature is still refused (as a bad signature: nothing names the signer).
        let sig = other.signature!
        var noKeyHash = Array(other.bytes[..<(other.imageEnd - 144)])
        LE.append(MCUbootImage.tlvInfoMagic, to: &noKeyHash)
        LE.append(UInt16(4 + 36 + 68), to: &noKeyHash)
        LE.append(MCUbootImage.sha256TLV, to: &noKeyHash)
        LE.append(UInt16(32), to: &noKeyHash)
        noKeyHash += other.storedHash!
        LE.append(MCUbootImage.ed25519TLV, to: &noKeyHash)
        LE.append(UInt16(64), to: &noKeyHash)
        noKeyHash += sig
        let stripped = try MCUbootImage(parsing: noKeyHash)
        #expect(stripped.keyHash == nil)
        try stripped.verify(with: Keys.other.publicKey)
        #expect(imageError { try stripped.verify(with: DevelopmentKeys.publicKey) }?.code == .badSignature)
    }

    @Test func badSignature() {
        var b = image.bytes
        b[b.count - 10] ^= 0x40
        #expect(verifyError(b)?.code == .badSignature)
        #expect(verifyError(b, nil) == nil, "without a key only the hash is checked")
        #expect(verifyError(image.bytes) == nil)
    }
}
