import Support
/// How a `ConditionedTransport` degrades a link: bandwidth, latency and faults, applied in both directions.
///
/// Text form (`init(parsing:)`, `description`): comma-separated `key=value` pairs, e.g.
/// `bw=700k,latency=15ms,corrupt=0.001,drop=0.01,stall=0.01:200ms,disconnect=100000,seed=7`. Keys:
/// - `bw` — bandwidth in bits per second; suffixes `k`, `M`, `G` are decimal (`700k` = 700 000); `unlimited` for none.
/// - `latency` — one-way delay added in each direction: a number with unit `ns`, `us`, `ms` or `s` (`15ms`), or `0`.
/// - `corrupt` — probability per byte (0…1, or a percentage like `0.1%`) of flipping one random bit of that byte.
/// - `drop` — probability per chunk of losing the whole chunk.
/// - `stall` — `RATE:DURATION`: probability per chunk that the link pauses for DURATION before carrying it.
/// - `disconnect` — total bytes (both directions) after which the link goes down; `k`/`M` decimal, `KiB`/`MiB` binary.
/// - `seed` — the fault generator's seed (decimal or `0x` hex); the same seed and the same traffic give the same faults.
/// - `buffer` — the link buffer in bytes (default 4096): how much a sender may queue ahead of the wire.
/// The empty string and `none` mean a perfect link. Errors are `TransportError(.invalidAddress)` naming the bad part.
public struct LinkConditions: Sendable, Hashable, CustomStringConvertible {
    /// Bandwidth in bits per second; nil means unlimited (no serialisation delay).
    public var bitsPerSecond: Int?
    /// One-way latency, added to every chunk in each direction.
    public var latency: Duration
    /// Probability per byte of flipping one random bit in it.
    public var corruptionRate: Double
    /// Probability per chunk of losing the whole chunk (it still occupies the link).
    public var dropRate: Double
    /// Probability per chunk of a stall before it is carried.
    public var stallRate: Double
    /// How long a stall pauses the link.
    public var stallDuration: Duration
    /// Total bytes in both directions after which the link disconnects; nil for never.
    public var disconnectAfterBytes: Int?
    /// Seed for the fault generators.
    public var seed: UInt64
    /// Bytes a sender may queue ahead of the wire before `send` waits (at least 1).
    public var linkBufferBytes: Int

    /// Creates conditions; the defaults describe a perfect link.
    public init(
        bitsPerSecond: Int? = nil,
        latency: Duration = .zero,
        corruptionRate: Double = 0,
        dropRate: Double = 0,
        stallRate: Double = 0,
        stallDuration: Duration = .zero,
        disconnectAfterBytes: Int? = nil,
        seed: UInt64 = 0,
        linkBufferBytes: Int = 4096
    ) {
        self.bitsPerSecond = bitsPerSecond
        self.latency = latency
        self.corruptionRate = corruptionRate
        self.dropRate = dropRate
        self.stallRate = stallRate
        self.stallDuration = stallDuration
        self.disconnectAfterBytes = disconnectAfterBytes
        self.seed = seed
        self.linkBufferBytes = linkBufferBytes
    }

    /// A link with no limits and no faults.
    public static let perfect = LinkConditions()

    /// The keys understood by `init(parsing:)`, in canonical order.
    public static let keys = ["bw", "latency", "corrupt", "drop", "stall", "disconnect", "seed", "buffer"]

    /// Parses the text form described on the type. Throws `TransportError(.invalidAddress)` with a one-line message.
    public init(parsing spec: String) throws {
        self.init()
        let trimmed = spec.trimmingWhitespace()
        if trimmed.isEmpty || trimmed == "none" { return }
        var seen: Set<String> = []
        for rawItem in trimmed.split(separator: ",", omittingEmptySubsequences: false) {
            let item = String(rawItem).trimmingWhitespace()
            guard let eq = item.firstIndex(of: "=") else {
                throw Self.bad(spec, "'\(item)' is not KEY=VALUE (keys: \(Self.keys.joined(separator: ", ")))")
            }
            let key = String(item[..<eq]).trimmingWhitespace()
            let value = String(item[item.index(after: eq)...]).trimmingWhitespace()
            guard Self.keys.contains(key) else {
                throw Self.bad(spec, "unknown key '\(key)' (keys: \(Self.keys.joined(separator: ", ")))")
            }
            guard seen.insert(key).inserted else { throw Self.bad(spec, "'\(key)' is given twice") }
            switch key {
            case "bw":
                if value == "unlimited" { bitsPerSecond = nil; continue }
                guard let bps = Quantities.parseCount(value, units: ["": 1, "k": 1_000, "M": 1_000_000, "G": 1_000_000_000]), bps > 0 else {
                    throw Self.bad(spec, "bad bandwidth '\(value)': expected bits per second like 9600, 700k or 2M")
                }
                bitsPerSecond = bps
            case "latency":
                guard let d = Quantities.parseDuration(value) else {
                    throw Self.bad(spec, "bad latency '\(value)': expected a duration like 15ms, 250us or 1s")
                }
                latency = d
            case "corrupt":
                corruptionRate = try Self.parseProbability(value, key: key, spec: spec)
            case "drop":
                dropRate = try Self.parseProbability(value, key: key, spec: spec)
            case "stall":
                let parts = value.split(separator: ":", omittingEmptySubsequences: false)
                guard parts.count == 2, let d = Quantities.parseDuration(String(parts[1])) else {
                    throw Self.bad(spec, "bad stall '\(value)': expected RATE:DURATION like 0.01:200ms")
                }
                stallRate = try Self.parseProbability(String(parts[0]), key: key, spec: spec)
                stallDuration = d
            case "disconnect":
                guard let n = Quantities.parseCount(value), n > 0 else {
                    throw Self.bad(spec, "bad disconnect '\(value)': expected a byte count like 100000, 64KiB or 1M")
                }
                disconnectAfterBytes = n
            case "seed":
                let parsed = value.hasPrefix("0x") ? UInt64(value.dropFirst(2), radix: 16) : (value.allSatisfy(\.isASCIIDigit) ? UInt64(value) : nil)
                guard let s = parsed else {
                    throw Self.bad(spec, "bad seed '\(value)': expected an unsigned integer (decimal or 0x hex)")
                }
                seed = s
            default: // "buffer"
                guard let n = Quantities.parseCount(value), n > 0 else {
                    throw Self.bad(spec, "bad buffer '\(value)': expected a byte count like 4096 or 4KiB")
                }
                linkBufferBytes = n
            }
        }
    }

    /// The canonical text form; `LinkConditions(parsing: c.description) == c`. A perfect link is `none`.
    public var description: String {
        var parts: [String] = []
        if let bps = bitsPerSecond { parts.append("bw=\(Self.formatScaled(bps))") }
        if latency != .zero { parts.append("latency=\(Self.formatDuration(latency))") }
        if corruptionRate != 0 { parts.append("corrupt=\(corruptionRate)") }
        if dropRate != 0 { parts.append("drop=\(dropRate)") }
        if stallRate != 0 || stallDuration != .zero { parts.append("stall=\(stallRate):\(Self.formatDuration(stallDuration))") }
        if let n = disconnectAfterBytes { parts.append("disconnect=\(n)") }
        if seed != 0 { parts.append("seed=\(seed)") }
        if linkBufferBytes != 4096 { parts.append("buffer=\(linkBufferBytes)") }
        return parts.isEmpty ? "none" : parts.joined(separator: ",")
    }

    // MARK: - Parsing helpers

    private static func bad(_ spec: String, _ why: String) -> TransportError {
        TransportError(.invalidAddress, "bad link conditions '\(spec)': \(why)")
    }

    private static func parseProbability(_ text: String, key: String, spec: String) throws -> Double {
        var body = Substring(text)
        var scale = 1.0
        if body.hasSuffix("%") {
            body = body.dropLast()
            scale = 0.01
        }
        guard !body.isEmpty, body.allSatisfy({ $0.isASCIIDigit || $0 == "." || $0 == "e" || $0 == "E" || $0 == "-" }),
              let value = Double(body).map({ $0 * scale }), (0...1).contains(value) else {
            throw bad(spec, "bad \(key) rate '\(text)': expected a probability from 0 to 1, like 0.001 or 0.1%")
        }
        return value
    }

    static func formatScaled(_ value: Int) -> String {
        for (suffix, scale) in [("G", 1_000_000_000), ("M", 1_000_000), ("k", 1_000)] where value % scale == 0 {
            return "\(value / scale)\(suffix)"
        }
        return String(value)
    }

    static func formatDuration(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
        if nanoseconds == 0 { return "0" }
        for (suffix, scale) in [("s", Int64(1_000_000_000)), ("ms", 1_000_000), ("us", 1_000)] where nanoseconds % scale == 0 {
            return "\(nanoseconds / scale)\(suffix)"
        }
        return "\(nanoseconds)ns"
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
