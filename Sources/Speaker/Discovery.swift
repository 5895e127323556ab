/// Discovery (UDP): a controller sends a query to the multicast group 239.255.84.83 and to the broadcast address,
/// port 45454; every speaker answers to the query's source address and port. Controllers query every 2 s.
///
/// `"TD" (54 44) | version u8 | type u8 (01 query, 02 answer) | query id u32 | payload | CRC-32 u32`
public enum DiscoveryMessage: Sendable, Hashable {
    /// The UDP port speakers listen on for queries.
    public static let port: UInt16 = 45454
    /// The IPv4 multicast group of queries (administratively scoped; 84 83 = "TS").
    public static let multicastGroup = "239.255.84.83"
    /// The two bytes every discovery datagram starts with ("TD").
    public static let magic: [UInt8] = [0x54, 0x44]
    /// Magic, version, type, query id.
    public static let headerSize = 8
    /// The largest datagram (an answer with two 255-byte texts is 546 bytes).
    public static let maxDatagramSize = 1024

    /// "Who is there?" The id is echoed by answers, so a controller can tell them from answers to older queries.
    case query(queryId: UInt32)
    /// "I am": a speaker's identity and where to reach it.
    case answer(DiscoveryAnswer)

    /// The datagram's bytes.
    public func encode() -> [UInt8] {
        var w = ByteWriter()
        w.raw(Self.magic)
        w.u8(SpeakerProtocolVersion.current)
        switch self {
        case .query(let id):
            w.u8(1)
            w.u32(id)
        case .answer(let a):
            w.u8(2)
            w.u32(a.queryId)
            w.u64(a.deviceId)
            w.u16(a.controlPort)
            w.u16(a.audioPort)
            w.u8(a.protocolVersions.lowerBound)
            w.u8(a.protocolVersions.upperBound)
            w.text(a.deviceName)
            w.text(a.modelName)
        }
        w.crc()
        return w.bytes
    }

    /// Decodes one datagram strictly. Throws `.truncated`, `.tooLarge`, `.badMagic`, `.unsupportedVersion`,
    /// `.unknownType`, `.badChecksum`, `.valueOutOfRange`, `.badText` or `.trailingBytes`.
    public static func decode(_ bytes: [UInt8]) throws(SpeakerError) -> DiscoveryMessage {
        guard bytes.count <= maxDatagramSize else {
            throw SpeakerError(.tooLarge, "a discovery datagram is at most \(maxDatagramSize) bytes, got \(bytes.count)")
        }
        guard bytes.count >= headerSize + 4 else {
            throw SpeakerError(.truncated, "a discovery datagram is at least \(headerSize + 4) bytes, got \(bytes.count)")
        }
        var r = ByteReader(bytes.dropLast(4), what: "discovery datagram")
        let m = try r.take(2)
        guard m.elementsEqual(magic) else { throw SpeakerError(.badMagic, "a discovery datagram starts with 54 44, got \(speakerHex(m))") }
        let version = try r.u8()
        guard SpeakerProtocolVersion.datagrams.contains(version) else {
            throw SpeakerError(.unsupportedVersion, "discovery protocol version \(version) is not supported")
        }
        try CRC32.verifyTrailer(bytes[...], what: "discovery datagram")
        let type = try r.u8()
        let id = try r.u32()
        let message: DiscoveryMessage
        switch type {
        case 1:
            message = .query(queryId: id)
        case 2:
            let device = try r.u64()
            let control = try r.u16()
            let audio = try r.u16()
            let low = try r.u8()
            let high = try r.u8()
            let name = try r.text("device name")
            let model = try r.text("model name")
            do {
                message = .answer(try DiscoveryAnswer(queryId: id, deviceId: device, controlPort: control, audioPort: audio,
                                                      protocolVersions: low, high, deviceName: name, modelName: model))
            } catch {
                throw SpeakerError(error.code, "discovery datagram: \(error.message)")
            }
        default:
            throw SpeakerError(.unknownType, "discovery datagram type \(hex(type)) is not defined in version 1")
        }
        try r.finish()
        return message
    }
}

/// A speaker's answer to a discovery query.
public struct DiscoveryAnswer: Sendable, Hashable {
    /// The query's id, echoed.
    public let queryId: UInt32
    public let deviceId: UInt64
    /// The TCP port of the control protocol.
    public let controlPort: UInt16
    /// The UDP port of the audio protocol.
    public let audioPort: UInt16
    /// The control protocol versions the speaker speaks (for the controller's hello).
    public let protocolVersions: ClosedRange<UInt8>
    public let deviceName: WireText
    public let modelName: WireText

    /// Throws `.valueOutOfRange` for port 0 or a version range that is empty or starts at 0.
    public init(queryId: UInt32, deviceId: UInt64, controlPort: UInt16, audioPort: UInt16, protocolVersions low: UInt8,
                _ high: UInt8, deviceName: WireText, modelName: WireText) throws(SpeakerError) {
        guard controlPort != 0, audioPort != 0 else { throw SpeakerError(.valueOutOfRange, "port 0 cannot be reached") }
        guard low >= 1, low <= high else {
            throw SpeakerError(.valueOutOfRange, "protocol version range \(low)...\(high) is empty or starts at 0")
        }
        self.queryId = queryId
        self.deviceId = deviceId
        self.controlPort = controlPort
        self.audioPort = audioPort
        self.protocolVersions = low...high
        self.deviceName = deviceName
        self.modelName = modelName
    }
}
