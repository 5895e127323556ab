import LightX

extension MCUbootImage {
    /// Parses the structure of an MCUboot image: header, payload bounds, protected and unprotected TLV areas.
    ///
    /// Throws `.truncated` when the data ends before the header, payload or a TLV area the header announces,
    /// `.badMagic`, `.badHeader` (header size below 32, encrypted or compressed images), and `.badTLV` (wrong info
    /// magic, protected size disagreeing with the header, records overrunning their area, SHA256/KEYHASH/ED25519
    /// with the wrong length, duplicated or in the protected area, a model that is not UTF-8, a region that is not
    /// "app" or "resource"). Does not check the hash or signature: see `verify(with:)`. Never traps.
    public init(parsing bytes: [UInt8]) throws(ImageError) {
        let count = bytes.count
        guard count >= Self.headerLength else {
            throw ImageError(.truncated, "has \(count) bytes, fewer than the 32-byte MCUboot header")
        }
        func u16(_ at: Int) -> UInt16 { LE.u16(bytes, at) ?? 0 }
        func u32(_ at: Int) -> UInt32 { LE.u32(bytes, at) ?? 0 }

        let magic = u32(0)
        guard magic == Self.magic else {
            throw ImageError(.badMagic, "has magic \(Hex.number(magic)), not MCUboot's 0x96f3b83d")
        }
        let headerSize = Int(u16(8))
        let protectedSize = Int(u16(10))
        let payloadSize = Int(u32(12))
        let flags = u32(16)
        let version = ImageVersion(major: bytes[20], minor: bytes[21], revision: u16(22), build: u32(24))
        guard headerSize >= Self.headerLength else {
            throw ImageError(.badHeader, "header size \(headerSize) is smaller than the 32-byte MCUboot header")
        }
        if flags & (Flags.encryptedAES128 | Flags.encryptedAES256) != 0 {
            throw ImageError(.badHeader, "is encrypted (flags \(Hex.number(flags))); encrypted images are not supported")
        }
        if flags & Flags.compressed != 0 {
            throw ImageError(.badHeader, "is compressed (flags \(Hex.number(flags))); compressed images are not supported")
        }
        guard headerSize <= count else {
            throw ImageError(.truncated, "header size \(Hex.number(headerSize)) points past the end of the data (\(count) bytes)")
        }
        let tlvStart = headerSize + payloadSize
        guard tlvStart <= count else {
            throw ImageError(.truncated, "header says the payload ends at byte \(tlvStart), but there are only \(count) bytes")
        }
        guard tlvStart + 4 <= count else {
            throw ImageError(.truncated, "ends at byte \(count), where the TLV area should start (byte \(tlvStart))")
        }

        var tlvs: [TLV] = []
        var unprotectedStart = tlvStart
        if u16(tlvStart) == Self.protectedTLVInfoMagic {
            let total = Int(u16(tlvStart + 2))
            guard total == protectedSize else {
                throw ImageError(.badTLV, "protected TLV area says it has \(total) bytes, the header says \(protectedSize)")
            }
            guard total >= 4 else { throw ImageError(.badTLV, "protected TLV area size \(total) is below its 4-byte info header") }
            guard tlvStart + total <= count else {
                throw ImageError(.truncated, "protected TLV area (bytes \(tlvStart)..<\(tlvStart + total)) runs past the end (\(count) bytes)")
            }
            tlvs += try Self.records(bytes, start: tlvStart, end: tlvStart + total, isProtected: true)
            unprotectedStart = tlvStart + total
        } else if protectedSize != 0 {
            throw ImageError(.badTLV, "header announces \(protectedSize) bytes of protected TLVs, but byte \(tlvStart) has info magic \(Hex.number(u16(tlvStart))), not 0x6908")
        }
        guard unprotectedStart + 4 <= count else {
            throw ImageError(.truncated, "ends at byte \(count), where the unprotected TLV area should start (byte \(unprotectedStart))")
        }
        let infoMagic = u16(unprotectedStart)
        guard infoMagic == Self.tlvInfoMagic else {
            throw ImageError(.badTLV, "TLV info magic at byte \(unprotectedStart) is \(Hex.number(infoMagic)), expected 0x6907")
        }
        let total = Int(u16(unprotectedStart + 2))
        guard total >= 4 else { throw ImageError(.badTLV, "TLV area size \(total) is below its 4-byte info header") }
        let imageEnd = unprotectedStart + total
        guard imageEnd <= count else {
            throw ImageError(.truncated, "TLV area (bytes \(unprotectedStart)..<\(imageEnd)) runs past the end (\(count) bytes)")
        }
        tlvs += try Self.records(bytes, start: unprotectedStart, end: imageEnd, isProtected: false)

        // Standard TLVs this code relies on: right length, at most one, never in the protected area.
        let expectedLength: [UInt16: Int] = [Self.sha256TLV: 32, Self.keyHashTLV: 32, Self.ed25519TLV: 64]
        var seen: Set<UInt16> = []
        var model: String?
        var region: FlashRegion?
        for tlv in tlvs {
            let name = Self.tlvName(tlv.type)
            if let length = expectedLength[tlv.type] {
                guard !tlv.isProtected else { throw ImageError(.badTLV, "\(name) TLV is not allowed in the protected TLV area") }
                guard tlv.value.count == length else {
                    throw ImageError(.badTLV, "\(name) TLV has \(tlv.value.count) bytes, expected \(length)")
                }
                guard seen.insert(tlv.type).inserted else { throw ImageError(.badTLV, "has more than one \(name) TLV") }
            } else if tlv.type == Self.publicKeyTLV, tlv.isProtected {
                throw ImageError(.badTLV, "PUBKEY TLV is not allowed in the protected TLV area")
            } else if tlv.isProtected && (tlv.type == Self.modelTLV || tlv.type == Self.regionTLV) {
                guard seen.insert(tlv.type).inserted else { throw ImageError(.badTLV, "has more than one \(name) TLV") }
                guard let text = String(validating: tlv.value, as: UTF8.self), !text.isEmpty else {
                    throw ImageError(.badTLV, "\(name) TLV (\(Hex.short(tlv.value))) is not a non-empty UTF-8 string")
                }
                if tlv.type == Self.modelTLV {
                    model = text
                } else {
                    guard let r = FlashRegion(rawValue: text) else {
                        throw ImageError(.badTLV, "region TLV '\(text)' is not 'app' or 'resource'")
                    }
                    region = r
                }
            }
        }
        self.init(bytes: bytes, headerSize: headerSize, payloadSize: payloadSize, loadAddress: u32(4), flags: flags,
                  version: version, protectedTLVSize: protectedSize, tlvs: tlvs, imageEnd: imageEnd, model: model,
                  region: region)
    }

    /// The records of one TLV area `start..<end` (the area's info header is at `start`).
    static func records(_ bytes: [UInt8], start: Int, end: Int, isProtected: Bool) throws(ImageError) -> [TLV] {
        let area = isProtected ? "protected TLV area" : "TLV area"
        var result: [TLV] = []
        var at = start + 4
        while at < end {
            guard at + 4 <= end, let type = LE.u16(bytes, at), let length = LE.u16(bytes, at + 2) else {
                throw ImageError(.badTLV, "\(area): record header at byte \(at) overruns the area's end (byte \(end))")
            }
            let valueStart = at + 4
            guard valueStart + Int(length) <= end else {
                throw ImageError(.badTLV, "\(area): record \(Hex.number(type)) at byte \(at) has \(length) bytes and overruns the area's end (byte \(end))")
            }
            result.append(TLV(type: type, value: Array(bytes[valueStart..<(valueStart + Int(length))]), offset: valueStart,
                              isProtected: isProtected))
            at = valueStart + Int(length)
        }
        return result
    }

    /// A readable name for a TLV type.
    public static func tlvName(_ type: UInt16) -> String {
        switch type {
        case keyHashTLV: return "KEYHASH"
        case publicKeyTLV: return "PUBKEY"
        case sha256TLV: return "SHA256"
        case 0x11: return "SHA384"
        case 0x12: return "SHA512"
        case 0x20: return "RSA2048"
        case 0x22: return "ECDSASIG"
        case 0x23: return "RSA3072"
        case ed25519TLV: return "ED25519"
        case 0x25: return "SIG_PURE"
        case 0x50: return "SEC_CNT"
        case modelTLV: return "model"
        case regionTLV: return "region"
        default: return Hex.number(type)
        }
    }
}
