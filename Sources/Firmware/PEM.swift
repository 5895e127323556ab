import Foundation

/// One PEM block: its label ("PRIVATE KEY", "PUBLIC KEY", ...) and the DER bytes it carries.
struct PEMBlock {
    var label: String
    var der: [UInt8]

    /// The first PEM block in `text`. Throws `.badKey` when there is none or its base64 is broken.
    init(parsing text: String) throws(ImageError) {
        let lines = text.split(omittingEmptySubsequences: true, whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
        guard let begin = lines.firstIndex(where: { $0.hasPrefix("-----BEGIN ") && $0.hasSuffix("-----") }) else {
            throw ImageError(.badKey, "not a PEM file (no -----BEGIN ...----- line)")
        }
        let label = String(lines[begin].dropFirst("-----BEGIN ".count).dropLast(5))
        let endLine = "-----END \(label)-----"
        guard let end = lines[(begin + 1)...].firstIndex(of: endLine) else {
            throw ImageError(.badKey, "PEM block '\(label)' has no '\(endLine)' line")
        }
        let body = lines[(begin + 1)..<end]
        if body.contains(where: { $0.contains(":") }) {
            throw ImageError(.badKey, "PEM block '\(label)' has headers (an encrypted legacy key?); only unencrypted PKCS#8 / SPKI keys are supported")
        }
        guard let data = Data(base64Encoded: body.joined()), !data.isEmpty else {
            throw ImageError(.badKey, "PEM block '\(label)' does not hold valid base64")
        }
        self.label = label
        self.der = Array(data)
    }

    /// The PEM text: BEGIN line, base64 in 64-column lines, END line, final newline (as OpenSSL and imgtool write it).
    static func encode(label: String, der: [UInt8]) -> String {
        let b64 = Data(der).base64EncodedString()
        var lines = ["-----BEGIN \(label)-----"]
        var rest = Substring(b64)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(64)))
            rest = rest.dropFirst(64)
        }
        lines.append("-----END \(label)-----")
        return lines.joined(separator: "\n") + "\n"
    }
}

/// Just enough DER to find a key's algorithm: the AlgorithmIdentifier OID of a PKCS#8 PrivateKeyInfo or a
/// SubjectPublicKeyInfo. Every read is bounds-checked.
enum KeyDER {
    /// 1.3.101.112, id-Ed25519 (RFC 8410).
    static let ed25519OID: [UInt8] = [0x2B, 0x65, 0x70]

    /// Names for OIDs people are likely to pass by mistake.
    static func algorithmName(_ oid: [UInt8]) -> String {
        switch oid {
        case [0x2B, 0x65, 0x70]: return "Ed25519"
        case [0x2B, 0x65, 0x6E]: return "X25519"
        case [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]: return "ECDSA"
        case [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]: return "RSA"
        default: return "OID " + Hex.string(oid)
        }
    }

    /// Reads one TLV at `at`: (tag, content range). nil when it does not fit.
    static func element(_ b: [UInt8], _ at: Int, end: Int) -> (tag: UInt8, content: Range<Int>)? {
        guard at >= 0, at + 2 <= end, end <= b.count else { return nil }
        let tag = b[at]
        var length = Int(b[at + 1])
        var start = at + 2
        if length & 0x80 != 0 {
            let n = length & 0x7F
            guard (1...3).contains(n), start + n <= end else { return nil }
            length = 0
            for i in 0..<n { length = length << 8 | Int(b[start + i]) }
            start += n
        }
        guard length <= end - start else { return nil }
        return (tag, start..<(start + length))
    }

    /// The algorithm OID of a PKCS#8 PrivateKeyInfo (`isPrivate`) or a SubjectPublicKeyInfo.
    static func algorithmOID(_ der: [UInt8], isPrivate: Bool) -> [UInt8]? {
        guard let outer = element(der, 0, end: der.count), outer.tag == 0x30 else { return nil }
        var at = outer.content.lowerBound
        if isPrivate {
            guard let version = element(der, at, end: outer.content.upperBound), version.tag == 0x02 else { return nil }
            at = version.content.upperBound
        }
        guard let alg = element(der, at, end: outer.content.upperBound), alg.tag == 0x30,
              let oid = element(der, alg.content.lowerBound, end: alg.content.upperBound), oid.tag == 0x06
        else { return nil }
        return Array(der[oid.content])
    }
}
