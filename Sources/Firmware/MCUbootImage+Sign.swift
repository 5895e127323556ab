import LightX

extension MCUbootImage {
    /// Builds an image exactly as `imgtool sign --pad-header --header-size H --version V [--key K]
    /// --custom-tlv 0xa0 MODEL --custom-tlv 0xa1 REGION` does (header padding 0xFF, flags 0 or RAM_LOAD when
    /// `loadAddress` is not 0, no security counter): header, payload, protected TLVs (model, then region, when
    /// given), and the unprotected TLVs SHA256, then KEYHASH and ED25519 when `key` is given.
    ///
    /// An empty model counts as none. `headerSize` is clamped to 32...0xFFFF and a model longer than 255 UTF-8 bytes is shortened (whole
    /// characters); callers validate user input before. With the same key the result is byte-identical to
    /// imgtool's on platforms whose Ed25519 signing is deterministic (Linux/BoringSSL).
    public static func sign(payload: [UInt8], version: ImageVersion, model: String?, region: FlashRegion?,
                            key: SigningKey?, headerSize: Int = 0x200, loadAddress: UInt32 = 0) -> MCUbootImage {
        let headerSize = min(max(headerSize, headerLength), Int(UInt16.max))
        var modelText = model?.isEmpty == true ? nil : model
        while let m = modelText, m.utf8.count > 255 { modelText = String(m.dropLast()) }

        var protectedTLVs: [(UInt16, [UInt8])] = []
        if let modelText { protectedTLVs.append((modelTLV, Array(modelText.utf8))) }
        if let region { protectedTLVs.append((regionTLV, Array(region.rawValue.utf8))) }
        let protectedSize = protectedTLVs.isEmpty ? 0 : 4 + protectedTLVs.reduce(0) { $0 + 4 + $1.1.count }
        let flags: UInt32 = loadAddress != 0 ? Flags.ramLoad : 0

        var out: [UInt8] = []
        out.reserveCapacity(headerSize + payload.count + protectedSize + 160)
        LE.append(magic, to: &out)
        LE.append(loadAddress, to: &out)
        LE.append(UInt16(headerSize), to: &out)
        LE.append(UInt16(protectedSize), to: &out)
        LE.append(UInt32(truncatingIfNeeded: payload.count), to: &out)
        LE.append(flags, to: &out)
        out.append(version.major)
        out.append(version.minor)
        LE.append(version.revision, to: &out)
        LE.append(version.build, to: &out)
        LE.append(UInt32(0), to: &out)
        out += [UInt8](repeating: 0xFF, count: headerSize - headerLength)
        out += payload

        var tlvs: [TLV] = []
        func addTLV(_ type: UInt16, _ value: [UInt8], protected: Bool) {
            LE.append(type, to: &out)
            LE.append(UInt16(value.count), to: &out)
            tlvs.append(TLV(type: type, value: value, offset: out.count, isProtected: protected))
            out += value
        }
        if protectedSize != 0 {
            LE.append(protectedTLVInfoMagic, to: &out)
            LE.append(UInt16(protectedSize), to: &out)
            for (type, value) in protectedTLVs { addTLV(type, value, protected: true) }
        }
        let digest = sha256(out)
        let unprotectedStart = out.count
        let unprotectedSize = 4 + 36 + (key == nil ? 0 : 36 + 68)
        LE.append(tlvInfoMagic, to: &out)
        LE.append(UInt16(unprotectedSize), to: &out)
        addTLV(sha256TLV, digest, protected: false)
        if let key {
            addTLV(keyHashTLV, key.publicKey.keyHash, protected: false)
            addTLV(ed25519TLV, key.signature(for: digest), protected: false)
        }
        return MCUbootImage(bytes: out, headerSize: headerSize, payloadSize: payload.count, loadAddress: loadAddress,
                            flags: flags, version: version, protectedTLVSize: protectedSize, tlvs: tlvs,
                            imageEnd: unprotectedStart + unprotectedSize, model: modelText, region: region)
    }
}
