/// The gestureInformation characteristic: one 3-byte entry per gesture the device offers, big-endian.
///
///     gesture id u8, payload length u16
///
/// Strict: a length that is not a whole number of entries, an unknown gesture id or a gesture listed twice throw.
/// Entries keep their wire order.
public struct GestureInformation: Sendable, Hashable {
    /// The length of one entry.
    public static let entryLength = 3

    /// One entry of the payload.
    public struct Entry: Sendable, Hashable {
        /// The gesture.
        public var gesture: GestureType
        /// The payload length the device gives the gesture (the sheet does not say what it counts; kept as is).
        public var payloadLength: UInt16

        /// `gesture` with its payload length.
        public init(gesture: GestureType, payloadLength: UInt16) {
            self.gesture = gesture
            self.payloadLength = payloadLength
        }
    }

    /// The entries in wire order, one per gesture.
    public let entries: [Entry]

    /// Throws `.duplicateEntry` when a gesture appears twice.
    public init(_ entries: [Entry]) throws(WearableError) {
        var seen = Set<GestureType>()
        for (i, e) in entries.enumerated() where !seen.insert(e.gesture).inserted {
            throw WearableError(.duplicateEntry, "gesture information: entry \(i) lists \(e.gesture) a second time", category: .usage)
        }
        self.entries = entries
    }

    /// The gestures offered, in wire order.
    public var availableGestures: [GestureType] { entries.map(\.gesture) }

    /// Decodes the payload; throws `WearableError` as the type's description lists, never traps.
    public init(decoding bytes: ArraySlice<UInt8>) throws(WearableError) {
        var entries: [Entry] = []
        try forEachEntry(in: bytes, size: Self.entryLength, context: "gesture information") { (r: inout WireReader, _: Int) throws(WearableError) in
            let gesture = try GestureType(id: try r.u8("gesture id"), in: r.context)
            let length = try r.u16("payload length")
            if entries.contains(where: { $0.gesture == gesture }) {
                throw WearableError(.duplicateEntry, "\(r.context): \(gesture) is listed a second time")
            }
            entries.append(Entry(gesture: gesture, payloadLength: length))
        }
        self.entries = entries
    }

    /// Decodes `bytes` (see `init(decoding:)` on a slice).
    public init(decoding bytes: [UInt8]) throws(WearableError) { try self.init(decoding: bytes[...]) }

    /// The payload's bytes; decoding them gives this value back.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: entries.count * Self.entryLength)
        for e in entries {
            w.u8(e.gesture.rawValue)
            w.u16(e.payloadLength)
        }
        return w.bytes
    }
}

/// The gestureConfiguration characteristic: one 2-byte entry per gesture, big-endian.
///
///     gesture id u8, enabled u8 (0 or 1)
///
/// Strict: an enabled byte other than 0 or 1 is `.malformed`, an unknown id or a gesture twice throw too.
public struct GestureConfiguration: Sendable, Hashable {
    /// The length of one entry.
    public static let entryLength = 2

    /// One entry of the payload.
    public struct Entry: Sendable, Hashable {
        /// The gesture.
        public var gesture: GestureType
        /// Whether the device reports the gesture.
        public var enabled: Bool

        /// `gesture`, enabled or not.
        public init(gesture: GestureType, enabled: Bool) {
            self.gesture = gesture
            self.enabled = enabled
        }
    }

    /// The entries in wire order, one per gesture.
    public private(set) var entries: [Entry]

    /// Throws `.duplicateEntry` when a gesture appears twice.
    public init(_ entries: [Entry]) throws(WearableError) {
        var seen = Set<GestureType>()
        for (i, e) in entries.enumerated() where !seen.insert(e.gesture).inserted {
            throw WearableError(.duplicateEntry, "gesture configuration: entry \(i) lists \(e.gesture) a second time", category: .usage)
        }
        self.entries = entries
    }

    /// The enabled gestures, in wire order.
    public var enabledGestures: [GestureType] { entries.filter(\.enabled).map(\.gesture) }

    /// Whether `gesture` is listed and enabled.
    public func isEnabled(_ gesture: GestureType) -> Bool { entries.first { $0.gesture == gesture }?.enabled ?? false }

    /// Enables or disables `gesture`, listing it when it is not.
    public mutating func set(gesture: GestureType, enabled: Bool) {
        if let i = entries.firstIndex(where: { $0.gesture == gesture }) {
            entries[i].enabled = enabled
        } else {
            entries.append(Entry(gesture: gesture, enabled: enabled))
        }
    }

    /// Disables every gesture (they stay listed).
    public mutating func disableAll() {
        for i in entries.indices { entries[i].enabled = false }
    }

    /// Decodes the payload; throws `WearableError` as the type's description lists, never traps.
    public init(decoding bytes: ArraySlice<UInt8>) throws(WearableError) {
        var entries: [Entry] = []
        try forEachEntry(in: bytes, size: Self.entryLength, context: "gesture configuration") { (r: inout WireReader, _: Int) throws(WearableError) in
            let gesture = try GestureType(id: try r.u8("gesture id"), in: r.context)
            let flag = try r.u8("enabled")
            guard flag <= 1 else {
                throw WearableError(.malformed, "\(r.context): \(gesture) enabled byte \(flag) is not 0 or 1")
            }
            if entries.contains(where: { $0.gesture == gesture }) {
                throw WearableError(.duplicateEntry, "\(r.context): \(gesture) is listed a second time")
            }
            entries.append(Entry(gesture: gesture, enabled: flag == 1))
        }
        self.entries = entries
    }

    /// Decodes `bytes` (see `init(decoding:)` on a slice).
    public init(decoding bytes: [UInt8]) throws(WearableError) { try self.init(decoding: bytes[...]) }

    /// The payload's bytes; decoding them gives this value back.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: entries.count * Self.entryLength)
        for e in entries {
            w.u8(e.gesture.rawValue)
            w.u8(e.enabled ? 1 : 0)
        }
        return w.bytes
    }
}

/// The gestureData characteristic: one gesture the device recognised, 3 bytes big-endian.
///
///     gesture id u8, timestamp u16 (ms)
public struct GestureData: Sendable, Hashable {
    /// The payload's length.
    public static let length = 3

    /// The gesture.
    public var gesture: GestureType
    /// Milliseconds of the device clock (wraps every 65.536 s).
    public var timestamp: SensorTimestamp

    /// A gesture recognised at `timestamp`.
    public init(gesture: GestureType, timestamp: SensorTimestamp) {
        self.gesture = gesture
        self.timestamp = timestamp
    }

    /// Decodes exactly 3 bytes; throws `.truncated`, `.malformed` (longer) or `.unknownGesture`.
    public init(decoding bytes: ArraySlice<UInt8>) throws(WearableError) {
        let context = "gesture data"
        guard bytes.count >= Self.length else {
            throw WearableError(.truncated, "\(context): \(bytes.count) bytes, expected \(Self.length)")
        }
        var r = WireReader(bytes, context: context)
        gesture = try GestureType(id: try r.u8("gesture id"), in: context)
        timestamp = try r.u16("timestamp")
        try r.expectEnd()
    }

    /// Decodes `bytes` (see `init(decoding:)` on a slice).
    public init(decoding bytes: [UInt8]) throws(WearableError) { try self.init(decoding: bytes[...]) }

    /// The payload's bytes; decoding them gives this value back.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: Self.length)
        w.u8(gesture.rawValue)
        w.u16(timestamp)
        return w.bytes
    }
}
