import Crypto
import CryptoExtras

/// An Ed25519 public key that checks MCUboot image signatures.
///
/// Contract: reads the SubjectPublicKeyInfo "PUBLIC KEY" PEM (`imgtool getpub --encoding pem`) and, like
/// `imgtool verify -k`, also a private key's PEM (its public half is used). `pem` is byte-identical to
/// `imgtool getpub --encoding pem`. `keyHash` is SHA-256 of the SPKI DER, the value MCUboot's KEYHASH TLV holds.
/// Equal keys are equal values.
public struct VerificationKey: Sendable, Hashable {
    let key: Curve25519.Signing.PublicKey

    init(key: Curve25519.Signing.PublicKey) { self.key = key }

    /// Parses a "PUBLIC KEY" PEM (or an Ed25519 "PRIVATE KEY" PEM, whose public half is taken). Throws `.badKey`.
    public init(pem: String) throws(ImageError) {
        let block = try PEMBlock(parsing: pem)
        switch block.label {
        case "PUBLIC KEY":
            guard let oid = KeyDER.algorithmOID(block.der, isPrivate: false) else {
                throw ImageError(.badKey, "is not a valid SubjectPublicKeyInfo public key")
            }
            guard oid == KeyDER.ed25519OID else {
                throw ImageError(.badKey, "is an \(KeyDER.algorithmName(oid)) key, expected Ed25519")
            }
            do {
                key = try Curve25519.Signing.PublicKey(derRepresentation: block.der)
            } catch {
                throw ImageError(.badKey, "is not a valid Ed25519 public key (\(error))")
            }
        case "PRIVATE KEY":
            key = try SigningKey(pem: pem).key.publicKey
        default:
            throw ImageError(.badKey, "holds a '\(block.label)' PEM block, expected an Ed25519 'PUBLIC KEY'")
        }
    }

    /// A key from its 32 raw bytes. Throws `.badKey` for another length.
    public init(rawRepresentation: [UInt8]) throws(ImageError) {
        do {
            key = try Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation)
        } catch {
            throw ImageError(.badKey, "an Ed25519 public key has 32 bytes, got \(rawRepresentation.count)")
        }
    }

    /// Reads a key file (see `init(pem:)`); errors name the file, `.io` when it cannot be read.
    public static func load(path: String) throws(ImageError) -> VerificationKey {
        let bytes = try FileAccess.read(path, limit: 64 * 1024)
        do {
            return try VerificationKey(pem: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw error.naming(path)
        }
    }

    /// The SubjectPublicKeyInfo "PUBLIC KEY" PEM, ending in a newline.
    public var pem: String { PEMBlock.encode(label: "PUBLIC KEY", der: der) }

    /// The SubjectPublicKeyInfo DER (44 bytes); MCUboot's PUBKEY TLV holds it.
    public var der: [UInt8] { Array(key.derRepresentation) }

    /// The 32 raw key bytes.
    public var rawRepresentation: [UInt8] { Array(key.rawRepresentation) }

    /// SHA-256 of the SubjectPublicKeyInfo DER: what MCUboot's KEYHASH TLV (0x01) holds.
    public var keyHash: [UInt8] { sha256(der) }

    /// Whether `signature` is a valid Ed25519 signature of `message` by this key.
    public func isValidSignature(_ signature: [UInt8], for message: [UInt8]) -> Bool {
        key.isValidSignature(signature, for: message)
    }

    /// Keys are equal when their raw bytes are.
    public static func == (l: VerificationKey, r: VerificationKey) -> Bool { l.rawRepresentation == r.rawRepresentation }
    /// Hashes the raw bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(rawRepresentation) }
}
