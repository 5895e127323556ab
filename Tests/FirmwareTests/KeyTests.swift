import Foundation
import Testing
@testable import Firmware

@Suite struct KeyTests {
    /// `imgtool getpub -k test-only-dev-private.pem --encoding pem`, byte for byte.
    static let devPublicPEM = """
        -----BEGIN PUBLIC KEY-----
        MCowBQYDK2VwAyEAgYd04u7iQwlCB4//DYirxtb8rWO/9JwiUHd2HbwNpSc=
        -----END PUBLIC KEY-----

        """
    /// `imgtool getpubhash -k test-only-dev-private.pem -e raw`.
    static let devKeyHash = bytes(hex: "b5490897895557c123561b22dbbd6dddb25e0071a058b8d4fb5a56871166a88e")

    @Test func readsImgtoolKeysAndWritesTheSamePEM() throws {
        let key = try SigningKey(pem: DevelopmentKeys.testOnlyPrivateKeyPEM)
        #expect(key.pem == DevelopmentKeys.testOnlyPrivateKeyPEM)
        #expect(key.publicKey.pem == Self.devPublicPEM)
        #expect(key.publicKey.keyHash == Self.devKeyHash)
        #expect(DevelopmentKeys.publicKey == key.publicKey)
        let pub = try VerificationKey(pem: Self.devPublicPEM)
        #expect(pub == key.publicKey)
        #expect(pub.der.count == 44)
        #expect(pub.rawRepresentation.count == 32)
    }

    @Test func generatedKeysRoundTripThroughPEM() throws {
        let a = SigningKey.generate(), b = SigningKey.generate()
        #expect(a.publicKey != b.publicKey)
        let again = try SigningKey(pem: a.pem)
        #expect(again.publicKey == a.publicKey)
        #expect(try VerificationKey(pem: a.publicKey.pem) == a.publicKey)
        // A private key PEM is accepted where a public key is expected (as imgtool verify -k does).
        #expect(try VerificationKey(pem: a.pem) == a.publicKey)
        let message: [UInt8] = Array("digest".utf8)
        let sig = a.signature(for: message)
        #expect(sig.count == 64)
        #expect(a.publicKey.isValidSignature(sig, for: message))
        #expect(!b.publicKey.isValidSignature(sig, for: message))
        #expect(Set([a.publicKey, again.publicKey, b.publicKey]).count == 2)
    }

    @Test func pemToleratesCRLFAndSurroundingText() throws {
        let text = "comment line\r\n" + DevelopmentKeys.testOnlyPrivateKeyPEM.replacingOccurrences(of: "\n", with: "\r\n") + "trailer\r\n"
        #expect(try SigningKey(pem: text).publicKey == DevelopmentKeys.publicKey)
    }

    /// `imgtool keygen -t x25519` and `imgtool getpub --encoding pem` of an `ecdsa-p256` key.
    static let x25519PEM = """
        -----BEGIN PRIVATE KEY-----
        MC4CAQAwBQYDK2VuBCIEIIBTSocLFgXlmYSmGnYyP4cC9PU6ss5EBTPvQS5nbnlk
        -----END PRIVATE KEY-----
        """
    static let p256PublicPEM = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE3/wJ3rOR+Obv/uhLY80DixsIoLEH
        y2h3RHFlXqJ5ZqdxvbjNP3Okfj108S1JfLzm4y0lLA8mY9aLBAR3drMcYw==
        -----END PUBLIC KEY-----
        """

    @Test func rejectsUnusableKeysWithClearMessages() {
        func check(_ code: ImageError.Code, _ fragment: String, _ body: () throws -> Void) {
            let e = imageError(body)
            #expect(e?.code == code)
            #expect(e?.message.contains(fragment) == true, "\(e?.message ?? "no error")")
        }
        check(.badKey, "public key") { _ = try SigningKey(pem: Self.devPublicPEM) }
        check(.badKey, "X25519") { _ = try SigningKey(pem: Self.x25519PEM) }
        check(.badKey, "X25519") { _ = try VerificationKey(pem: Self.x25519PEM) }
        check(.badKey, "ECDSA") { _ = try VerificationKey(pem: Self.p256PublicPEM) }
        check(.badKey, "not a PEM") { _ = try SigningKey(pem: "hello") }
        check(.badKey, "encrypted") {
            _ = try SigningKey(pem: "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n")
        }
        check(.badKey, "base64") { _ = try SigningKey(pem: "-----BEGIN PRIVATE KEY-----\n!!!!\n-----END PRIVATE KEY-----\n") }
        check(.badKey, "END") { _ = try SigningKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n") }
        check(.badKey, "PKCS#8") { _ = try SigningKey(pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n") }
        check(.badKey, "RSA PRIVATE KEY") { _ = try SigningKey(pem: "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n") }
        check(.badKey, "32 bytes") { _ = try VerificationKey(rawRepresentation: [1, 2, 3]) }
    }

    @Test func loadNamesTheFile() throws {
        let dir = try TempDir()
        let path = try dir.write("k.pem", "nonsense")
        let e = imageError { _ = try SigningKey.load(path: path) }
        #expect(e?.code == .badKey)
        #expect(e?.message.hasPrefix(path + ":") == true)
        let missing = imageError { _ = try VerificationKey.load(path: dir.file("missing.pem")) }
        #expect(missing?.code == .io)
        #expect(missing?.message.contains("missing.pem") == true)
        #expect(try VerificationKey.load(path: try dir.write("p.pem", Self.devPublicPEM)) == DevelopmentKeys.publicKey)
    }
}
