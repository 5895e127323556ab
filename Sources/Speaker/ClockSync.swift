/// The speaker's answer to `clockSync(t1)`: the controller's send time echoed, and the speaker's receive (t2) and send
/// (t3) times on its own clock. All times are nanoseconds on a monotonic clock.
public struct ClockSyncReply: Sendable, Hashable {
    /// The controller's send time, echoed.
    public var t1: UInt64
    /// When the request arrived, speaker clock.
    public var t2: UInt64
    /// When the reply left, speaker clock (t3 ≥ t2).
    public var t3: UInt64

    /// Throws `.valueOutOfRange` when t3 < t2.
    public init(t1: UInt64, t2: UInt64, t3: UInt64) throws(SpeakerError) {
        guard t3 >= t2 else { throw SpeakerError(.valueOutOfRange, "clock sync reply sent (t3 \(t3)) before it was received (t2 \(t2))") }
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
    }
}

/// One clock-sync exchange completed by the controller's receive time t4 (controller clock).
///
/// As NTP: offset θ = ((t2 − t1) + (t3 − t4)) / 2 (speaker clock minus controller clock, exact when the two network
/// legs take equally long) and round-trip delay δ = (t4 − t1) − (t3 − t2); the error of θ is at most δ / 2.
public struct ClockSample: Sendable, Hashable {
    public var t1: UInt64
    public var t2: UInt64
    public var t3: UInt64
    public var t4: UInt64

    public init(_ reply: ClockSyncReply, receivedAt t4: UInt64) {
        t1 = reply.t1
        t2 = reply.t2
        t3 = reply.t3
        self.t4 = t4
    }

    /// θ in nanoseconds, rounded toward zero (wrapping arithmetic: never traps).
    public var offset: Int64 {
        let a = Int64(bitPattern: t2 &- t1)
        let b = Int64(bitPattern: t3 &- t4)
        return a / 2 &+ b / 2 &+ (a % 2 &+ b % 2) / 2
    }

    /// δ in nanoseconds (negative only if a clock went backwards).
    public var delay: Int64 { Int64(bitPattern: (t4 &- t1) &- (t3 &- t2)) }

    /// The controller time the offset applies to: the middle of t1 and t4.
    public var midpoint: UInt64 { t1 &+ (t4 &- t1) / 2 }
}

/// The controller's estimate of one speaker's clock, sent to it with `setClockMap` so that it can turn presentation
/// times on the controller's timeline into times on its own (DAC) clock:
///
/// `speakerTime(c) = speakerReference + d + trunc(d × rate / 10⁹)`, `d = c − controllerReference` (signed, ns)
///
/// where `rate` is the speaker clock's drift relative to the controller's in parts per billion (positive: the
/// speaker's clock runs fast). Both sides compute it with `speakerTime(forControllerTime:)`, so they agree to the
/// nanosecond.
public struct ClockMap: Sendable, Hashable {
    /// The largest |rate|: 10,000 ppm, well above what crystals drift (AirPlay 2 copes with 2,800 ppm).
    public static let maxRate: Int32 = 10_000_000

    public let controllerReference: UInt64
    public let speakerReference: UInt64
    /// Parts per billion.
    public let rate: Int32

    /// Throws `.valueOutOfRange` when |rate| > 10,000,000 ppb.
    public init(controllerReference: UInt64, speakerReference: UInt64, rate: Int32) throws(SpeakerError) {
        guard rate >= -Self.maxRate, rate <= Self.maxRate else {
            throw SpeakerError(.valueOutOfRange, "clock rate \(rate) ppb is outside ±\(Self.maxRate)")
        }
        self.controllerReference = controllerReference
        self.speakerReference = speakerReference
        self.rate = rate
    }

    /// The speaker-clock time of controller time `c` (wrapping arithmetic: never traps).
    public func speakerTime(forControllerTime c: UInt64) -> UInt64 {
        let d = Int64(bitPattern: c &- controllerReference)
        let product = d.multipliedFullWidth(by: Int64(rate))
        // |d × rate / 10⁹| ≤ |d| / 100, so the quotient always fits.
        let adjustment = Int64(1_000_000_000).dividingFullWidth(product).quotient
        return speakerReference &+ UInt64(bitPattern: d &+ adjustment)
    }

    /// Fits a map to `samples` by least squares of offset against controller time, after dropping the samples whose
    /// delay is above the median (they carry the largest errors). The reference is the newest sample's midpoint.
    /// Nil without samples; with one kept sample the rate is 0. The rate is clamped to ±`maxRate`.
    public static func fit(_ samples: [ClockSample]) -> ClockMap? {
        guard !samples.isEmpty else { return nil }
        let delays = samples.map(\.delay).sorted()
        let median = delays[(delays.count - 1) / 2]
        let kept = samples.filter { $0.delay <= median }
        return fit(kept, weights: kept.map { _ in 1 })
    }

    /// Fits a map to `samples` by weighted least squares of offset against controller time (`weights[i]` for
    /// `samples[i]`, positive). The reference is the newest sample's midpoint. Nil without samples; with one sample
    /// (or all at one time) the rate is 0. The rate is clamped to ±`maxRate`. `minimumSpread`: when the points' weighted spread in time (their standard deviation,
    /// ns) is below it, the slope is not trusted and `fallbackRate` is used instead.
    public static func fit(_ samples: [ClockSample], weights: [Double], minimumSpread: Double = 0, fallbackRate: Int32 = 0) -> ClockMap? {
        guard !samples.isEmpty, weights.count == samples.count else { return nil }
        let reference = samples.map(\.midpoint).max()!
        let points = zip(samples, weights).map { (x: Double(Int64(bitPattern: $0.midpoint &- reference)), y: Double($0.offset), w: $1) }
        let total = points.map(\.w).reduce(0, +)
        guard total > 0 else { return nil }
        let meanX = points.map { $0.w * $0.x }.reduce(0, +) / total
        let meanY = points.map { $0.w * $0.y }.reduce(0, +) / total
        let sxx = points.map { $0.w * ($0.x - meanX) * ($0.x - meanX) }.reduce(0, +)
        let sxy = points.map { $0.w * ($0.x - meanX) * ($0.y - meanY) }.reduce(0, +)
        let trusted = sxx > 0 && (sxx / total).squareRoot() >= minimumSpread
        let raw = trusted ? (sxy / sxx * 1e9).rounded() : Double(fallbackRate)
        let ppb = raw.isFinite ? max(-Double(maxRate), min(Double(maxRate), raw)) : 0
        let offsetAtReference = meanY - ppb / 1e9 * meanX
        let offset = Int64(exactly: offsetAtReference.rounded()) ?? 0
        return try? ClockMap(controllerReference: reference, speakerReference: reference &+ UInt64(bitPattern: offset),
                             rate: Int32(ppb))
    }
}

/// A clock-sync datagram (version 4, docs/speaker-protocol.md §6.1): the §6 exchange over UDP, so that both sides can
/// take the arrival times from the kernel (`SO_TIMESTAMPNS`) instead of after their own scheduling. The controller
/// sends a request from any UDP port to the speaker's control port number (UDP) and the speaker answers to the
/// request's source. Request and reply have one layout and one size (as NTP's), so both legs carry the same bytes:
///
/// `"TC" (54 43) | version u8 (04) | type u8 (01 request, 02 reply) | t1 u64 | t2 u64 | t3 u64 | CRC-32 u32`
///
/// 32 bytes, big-endian. A request carries t1 (the controller's send time) and zeros for t2 and t3; a reply echoes t1
/// and gives t2 (when the request arrived) and t3 (when the reply left) on the speaker's clock, t3 ≥ t2.
public enum ClockDatagram: Sendable, Hashable {
    case request(t1: UInt64)
    case reply(ClockSyncReply)

    /// The two bytes every clock-sync datagram starts with ("TC").
    public static let magic: [UInt8] = [0x54, 0x43]
    /// Every clock-sync datagram's size.
    public static let size = 32
    /// The version of clock-sync datagrams (the first control version with them).
    public static let version: UInt8 = SpeakerProtocolVersion.udpClockSync

    /// Whether `bytes` start like a clock-sync datagram (to tell them from others on a shared socket).
    public static func looksLikeClockDatagram<C: Collection>(_ bytes: C) -> Bool where C.Element == UInt8 {
        bytes.starts(with: magic)
    }

    /// The datagram's bytes.
    public func encode() -> [UInt8] {
        var w = ByteWriter(capacity: Self.size)
        w.raw(Self.magic)
        w.u8(Self.version)
        switch self {
        case let .request(t1):
            w.u8(1)
            w.u64(t1)
            w.u64(0)
            w.u64(0)
        case let .reply(r):
            w.u8(2)
            w.u64(r.t1)
            w.u64(r.t2)
            w.u64(r.t3)
        }
        w.crc()
        return w.bytes
    }

    /// Decodes one datagram strictly. Throws `.truncated`, `.trailingBytes`, `.badMagic`, `.unsupportedVersion`,
    /// `.unknownType`, `.badChecksum` or `.valueOutOfRange` (a request whose t2 or t3 is not 0, a reply with t3 < t2).
    public static func decode<C: Collection>(_ bytes: C) throws(SpeakerError) -> ClockDatagram where C.Element == UInt8 {
        let bytes = Array(bytes)
        guard bytes.count >= size else {
            throw SpeakerError(.truncated, "a clock-sync datagram is \(size) bytes, got \(bytes.count)")
        }
        guard bytes.count == size else {
            throw SpeakerError(.trailingBytes, "a clock-sync datagram is \(size) bytes, got \(bytes.count)")
        }
        var r = ByteReader(bytes.dropLast(4), what: "clock-sync datagram")
        let m = try r.take(2)
        guard m.elementsEqual(magic) else { throw SpeakerError(.badMagic, "a clock-sync datagram starts with 54 43, got \(speakerHex(m))") }
        let v = try r.u8()
        guard v == version else { throw SpeakerError(.unsupportedVersion, "clock-sync datagram version \(v) is not supported") }
        try CRC32.verifyTrailer(bytes[...], what: "clock-sync datagram")
        let type = try r.u8()
        let t1 = try r.u64(), t2 = try r.u64(), t3 = try r.u64()
        try r.finish()
        switch type {
        case 1:
            guard t2 == 0, t3 == 0 else {
                throw SpeakerError(.valueOutOfRange, "a clock-sync request carries zeros for t2 and t3")
            }
            return .request(t1: t1)
        case 2:
            return .reply(try ClockSyncReply(t1: t1, t2: t2, t3: t3))
        default:
            throw SpeakerError(.unknownType, "clock-sync datagram type \(hex(type)) is not defined in version \(v)")
        }
    }
}
