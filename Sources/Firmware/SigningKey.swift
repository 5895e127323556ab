import Crypto
import CryptoExtras

/// An Ed25519 private key that signs MCUboot images.
///
/// Contract: reads and writes the PKCS#8 "PRIVATE KEY" PEM that `imgtool keygen -t ed25519` writes, and imgtool
/// reads the PEM this type writes. Signing is Ed25519 over the image's 32-byte SHA-256 digest, as imgtool's
/// `sign_digest` does.
public struct SigningKey: Sendable {
    let key: Curve25519.Signing.PrivateKey

    init(key: Curve25519.Signing.PrivateKey) { self.key = key }

    /// A new random key.
    public static func generate() -> SigningKey { SigningKey(key: Curve25519.Signing.PrivateKey()) }

    /// Parses a PKCS#8 "PRIVATE KEY" PEM holding an Ed25519 key. Throws `.badKey` naming the problem: not PEM,
    /// a public key, an encrypted key, or another algorithm (X25519, ECDSA, RSA).
    public init(pem: String) throws(ImageError) {
        let block = try PEMBlock(parsing: pem)
        switch block.label {
        case "PRIVATE KEY": break
        case "PUBLIC KEY":
            throw ImageError(.badKey, "is a public key; signing needs the private key (imgtool keygen -t ed25519)")
        case "ENCRYPTED PRIVATE KEY":
            throw ImageError(.badKey, "is an encrypted private key; passwords are not supported")
        default:
            throw ImageError(.badKey, "holds a '\(block.label)' PEM block, expected an Ed25519 'PRIVATE KEY' (PKCS#8)")
        }
        guard let oid = KeyDER.algorithmOID(block.der, isPrivate: true) else {
            throw ImageError(.badKey, "is not a valid PKCS#8 private key")
        }
        guard oid == KeyDER.ed25519OID else {
            throw ImageError(.badKey, "is an \(KeyDER.algorithmName(oid)) key, expected Ed25519")
        }
        do {
            key = try Curve25519.Signing.PrivateKey(derRepresentation: block.der)
        } catch {
            throw ImageError(.badKey, "is not a valid Ed25519 private key (\(error))")
        }
    }

    /// Reads a key file (see `init(pem:)`); errors name the file, `.io` when it cannot be read.
    public static func load(path: String) throws(ImageError) -> SigningKey {
        let bytes = try FileAccess.read(path, limit: 64 * 1024)
        do {
            return try SigningKey(pem: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw error.naming(path)
        }
    }

    /// The PKCS#8 "PRIVATE KEY" PEM, ending in a newline (byte-compatible with what imgtool keygen writes).
    public var pem: String { PEMBlock.encode(label: "PRIVATE KEY", der: Array(key.derRepresentation)) }

    /// The matching public key.
    public var publicKey: VerificationKey { VerificationKey(key: key.publicKey) }

    /// The Ed25519 signature (64 bytes) of `message`.
    public func signature(for message: [UInt8]) -> [UInt8] {
        do {
            return Array(try key.signature(for: message))
        } catch {
            // Only an internal failure of the crypto library gets here; no input can cause it.
            preconditionFailure("Ed25519 signing failed: \(error)")
        }
    }
}
