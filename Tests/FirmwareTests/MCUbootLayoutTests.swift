import Foundation
import Testing
import LightX
@testable import Firmware

/// Byte-exact layout against images imgtool 2.5.0 produced with the committed test-only key.
@Suite struct MCUbootLayoutTests {
    /// `imgtool sign --key test-only-dev-private.pem --header-size 0x20 --pad-header --version 1.2.3+4
    ///  --slot-size 0x80000 --custom-tlv 0xa0 TS-1 --custom-tlv 0xa1 app` of "hello world".
    static let imgtoolSigned = bytes(hex: """
        3db8f39600000000200013000b0000000000000001020300040000000000000068656c6c6f20776f726c6408691300a000040054532d31\
        a100030061707007699000100020002f0810eea1367298c979861506027d7661d9b7eab6de5fd2f0fa5aee881fda1e01002000b5490897\
        895557c123561b22dbbd6dddb25e0071a058b8d4fb5a56871166a88e24004000e817c879fc3e32c19f18a2e91d97fdc6db53f46396d0f0\
        c67f27a43151a1dd055c7a70604b02f6c417e3e0e4b19149a63036bef6a277364a67d0147c48dcc702
        """)
    /// `imgtool sign --header-size 0x40 --pad-header --version 0.1.0 --slot-size 0x1000 --load-addr 0x20000000`
    /// of "hello world" (no key: SHA256 TLV only; header padding 0xFF; RAM_LOAD flag).
    static let imgtoolUnsigned = bytes(hex: """
        3db8f39600000020400000000b00000020000000000100000000000000000000ffffffffffffffffffffffffffffffffffffffffffffff\
        ffffffffffffffffff68656c6c6f20776f726c640769280010002000deb03941002e0e650fa53ef1b53fd333e80e085d60b1b8c86160cc\
        ead045181f
        """)
    static let hello = Array("hello world".utf8)

    @Test func signMatchesImgtoolByteForByte() throws {
        let ours = MCUbootImage.sign(payload: Self.hello, version: ImageVersion(major: 1, minor: 2, revision: 3, build: 4),
                                     model: "TS-1", region: .application, key: Keys.dev, headerSize: 0x20)
        #expect(ours.bytes.count == Self.imgtoolSigned.count)
        let signatureStart = ours.bytes.count - 64
        // Everything up to the signature is deterministic on every platform.
        #expect(Array(ours.bytes[..<signatureStart]) == Array(Self.imgtoolSigned[..<signatureStart]))
        #if os(Linux)
        // BoringSSL's Ed25519 is deterministic, so the signature is identical too.
        #expect(ours.bytes == Self.imgtoolSigned)
        #endif
        try ours.verify(with: DevelopmentKeys.publicKey)

        let unsigned = MCUbootImage.sign(payload: Self.hello, version: ImageVersion(major: 0, minor: 1, revision: 0),
                                         model: nil, region: nil, key: nil, headerSize: 0x40, loadAddress: 0x2000_0000)
        #expect(unsigned.bytes == Self.imgtoolUnsigned)
    }

    @Test func parsesImgtoolImage() throws {
        let image = try MCUbootImage(parsing: Self.imgtoolSigned)
        #expect(image.headerSize == 0x20)
        #expect(image.payloadSize == 11)
        #expect(Array(image.payload) == Self.hello)
        #expect(image.version == ImageVersion(major: 1, minor: 2, revision: 3, build: 4))
        #expect(image.loadAddress == 0)
        #expect(image.flags == 0)
        #expect(image.protectedTLVSize == 0x13)
        #expect(image.model == "TS-1")
        #expect(image.region == .application)
        #expect(image.isSigned)
        #expect(image.keyHash == KeyTests.devKeyHash)
        #expect(image.imageEnd == image.bytes.count)
        #expect(image.trailingSize == 0)
        #expect(image.tlvs.map(\.type) == [0xA0, 0xA1, 0x10, 0x01, 0x24])
        #expect(image.tlvs.map(\.isProtected) == [true, true, false, false, false])
        #expect(image.hashedRange == 0..<(0x20 + 11 + 0x13))
        #expect(image.storedHash == image.computedHash)
        try image.verify(with: nil)
        try image.verify(with: DevelopmentKeys.publicKey)

        let unsigned = try MCUbootImage(parsing: Self.imgtoolUnsigned)
        #expect(unsigned.flags == MCUbootImage.Flags.ramLoad)
        #expect(unsigned.loadAddress == 0x2000_0000)
        #expect(unsigned.model == nil && unsigned.region == nil && !unsigned.isSigned)
        #expect(unsigned.protectedTLVSize == 0)
        try unsigned.verify(with: nil)
        #expect(imageError { try unsigned.verify(with: DevelopmentKeys.publicKey) }?.code == .unsigned)
    }

    @Test func headerFieldsAtTheirOffsets() throws {
        let image = MCUbootImage.sign(payload: [UInt8](repeating: 0xAB, count: 1000),
                                      version: ImageVersion(major: 2, minor: 7, revision: 0x1234, build: 0xA1B2_C3D4),
                                      model: "TS-9", region: .resource, key: Keys.dev)
        let b = image.bytes
        #expect(Array(b[0..<4]) == [0x3D, 0xB8, 0xF3, 0x96])
        #expect(Array(b[8..<10]) == [0x00, 0x02])                 // header size 0x200
        #expect(Array(b[10..<12]) == [4 + 8 + 12, 0])             // protected: info + "TS-9" + "resource"
        #expect(Array(b[12..<16]) == [0xE8, 0x03, 0, 0])           // 1000
        #expect(Array(b[20..<28]) == [2, 7, 0x34, 0x12, 0xD4, 0xC3, 0xB2, 0xA1])
        #expect(b[32..<0x200].allSatisfy { $0 == 0xFF })
        let tlvStart = 0x200 + 1000
        #expect(Array(b[tlvStart..<(tlvStart + 4)]) == [0x08, 0x69, 24, 0])
        #expect(Array(b[(tlvStart + 24)..<(tlvStart + 28)]) == [0x07, 0x69, 0x90, 0x00])
        #expect(b.count == tlvStart + 24 + 0x90)
        let parsed = try MCUbootImage(parsing: b)
        #expect(parsed.model == "TS-9")
        #expect(parsed.region == .resource)
        #expect(parsed.version.description == "2.7.4660+2712847316")
        #expect(parsed.tlvs == image.tlvs)
        #expect(parsed.imageEnd == image.imageEnd)
        try parsed.verify(with: DevelopmentKeys.publicKey)
    }

    @Test func signClampsOddArguments() throws {
        let image = MCUbootImage.sign(payload: [1, 2, 3], version: ImageVersion(major: 1, minor: 0, revision: 0),
                                      model: String(repeating: "é", count: 200), region: nil, key: nil, headerSize: 4)
        let parsed = try MCUbootImage(parsing: image.bytes)
        #expect(parsed.headerSize == 32)
        #expect(parsed.model.map { $0.utf8.count <= 255 && $0.allSatisfy { $0 == "é" } } == true)
        let empty = MCUbootImage.sign(payload: [], version: ImageVersion(major: 1, minor: 0, revision: 0),
                                      model: "", region: nil, key: nil)
        #expect(try MCUbootImage(parsing: empty.bytes).model == nil)
        #expect(empty.payloadSize == 0)
    }

    @Test func acceptsTrailingBytesAndKeepsThem() throws {
        let image = sampleImage(size: 300)
        let padded = image.bytes + [UInt8](repeating: 0xFF, count: 100)
        let parsed = try MCUbootImage(parsing: padded)
        #expect(parsed.bytes == padded)
        #expect(parsed.imageEnd == image.bytes.count)
        #expect(parsed.trailingSize == 100)
        try parsed.verify(with: DevelopmentKeys.publicKey)
    }
}
