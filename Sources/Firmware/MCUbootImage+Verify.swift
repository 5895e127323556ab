extension MCUbootImage {
    /// Checks the SHA-256 TLV; with a key, also requires an Ed25519 signature by that key (KEYHASH must match when
    /// present). Throws .badHash, .unsigned, .wrongKey, .badSignature.
    ///
    /// In order: `.badHash` when there is no SHA256 TLV or it differs from the SHA-256 of header, payload and
    /// protected TLVs; then, only when `key` is given: `.unsigned` without an ED25519 TLV, `.wrongKey` when the
    /// KEYHASH (or PUBKEY) TLV names another key, `.badSignature` when the signature does not verify over the
    /// digest. Without a key an unsigned image passes (the hash is still checked).
    public func verify(with key: VerificationKey?) throws(ImageError) {
        guard let stored = storedHash else {
            throw ImageError(.badHash, "has no SHA256 TLV, so its integrity cannot be checked")
        }
        let digest = computedHash
        guard stored == digest else {
            throw ImageError(.badHash, "SHA-256 mismatch: the image says \(Hex.short(stored)), its contents hash to \(Hex.short(digest)) (corrupted or modified)")
        }
        guard let key else { return }
        guard let signature else {
            let others = tlvs.filter { !$0.isProtected && [0x20, 0x22, 0x23].contains($0.type) }.map { Self.tlvName($0.type) }
            let found = others.isEmpty ? "" : " (it has \(others.joined(separator: ", ")), which this tool does not check)"
            throw ImageError(.unsigned, "is not signed: no ED25519 signature TLV\(found), but a key is required")
        }
        if let keyHash, keyHash != key.keyHash {
            throw ImageError(.wrongKey, "is signed by another key (key hash \(Hex.short(keyHash)), expected \(Hex.short(key.keyHash)))")
        }
        if let full = unprotected(Self.publicKeyTLV)?.value, full != key.der {
            throw ImageError(.wrongKey, "is signed by another key (its PUBKEY TLV holds a different public key)")
        }
        guard key.isValidSignature(signature, for: digest) else {
            throw ImageError(.badSignature, "Ed25519 signature does not verify with key \(Hex.short(key.keyHash)) (corrupted signature)")
        }
    }
}
