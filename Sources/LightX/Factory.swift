/// Factory provisioning (docs/protocol.md §7): the fact sheet's Config writes and Diagnostic values 0x71, 0x72, 0x75,
/// and the Tuneup extensions 0x68-0x6B (hardware id, lock, unlock, measurement). Pure values and codecs; the decoders are strict
/// (a buffer of the wrong length is an error, never a guess), because a factory value read wrong is a unit shipped
/// wrong.
extension Command {
    /// Diagnostic 0x71 AncStartCalibration: write starts the measurement; read (Tuneup) is the status.
    public static let diagAncStartCalibration = Command(rawValue: 0x71)
    /// Diagnostic 0x72 AncStoreCalibrationData: write stores the measured gains; read (Tuneup) the stored ones.
    public static let diagAncStoreCalibrationData = Command(rawValue: 0x72)
    /// Diagnostic 0x75 BDAddr: the Bluetooth address, read and write.
    public static let diagBDAddr = Command(rawValue: 0x75)
    /// **Extension** 0x68: the chip's unique id (read), readable before provisioning and when locked.
    public static let factoryHardwareID = Command(rawValue: 0x68)
    /// **Extension** 0x69: the factory lock, read u32 0/1; write u32 1 locks.
    public static let factoryLock = Command(rawValue: 0x69)
    /// **Extension** 0x6A: the factory unlock, write the 16-byte factory key.
    public static let factoryUnlock = Command(rawValue: 0x6A)
    /// **Extension** 0x6B: a factory measurement, read with a u32 measurement id; the reply is an i32 in hundredths
    /// of the measurement's unit.
    public static let factoryMeasurement = Command(rawValue: 0x6B)
}

/// Exact-length check shared by the factory decoders.
private func exactly(_ buffer: ArraySlice<UInt8>, _ count: Int, _ what: String) throws(LightXError) {
    if buffer.count < count {
        throw LightXError(.truncated, "\(what): \(buffer.count) bytes, expected \(count)")
    }
    if buffer.count > count {
        throw LightXError(.malformed, "\(what): \(buffer.count) bytes, expected \(count)")
    }
}

/// A chip's unique id: 8 bytes, fixed at manufacture, the key of a unit's factory record.
public struct HardwareID: Sendable, Hashable, CustomStringConvertible {
    public static let length = 8
    /// The uid as a number (least significant byte first on the wire).
    public let value: UInt64

    public init(_ value: UInt64) { self.value = value }

    /// Nil unless exactly 8 bytes (wire order).
    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.init(bytes.reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }

    /// The 8 bytes in wire order.
    public var bytes: [UInt8] { (0..<8).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) } }

    /// 16 lowercase hex digits, most significant byte first.
    public var description: String { bytes.reversed().map { hex2($0) }.joined() }

    public static let codec = ValueCodec<HardwareID>(
        encode: { $0.bytes },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            try exactly(b, HardwareID.length, "hardware id")
            return HardwareID(bytes: Array(b))!
        })
}

/// A Bluetooth device address. On the wire 6 bytes least significant first (as HCI); written `AA:BB:CC:DD:EE:FF`
/// most significant first.
public struct BDAddress: Sendable, Hashable, CustomStringConvertible {
    public static let length = 6
    /// Most significant first (display order).
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    /// Parses `AA:BB:CC:DD:EE:FF` (case-insensitive); nil for anything else.
    public init?(parsing text: some StringProtocol) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard p.count == 2, p.allSatisfy(\.isHexDigit), let b = UInt8(p, radix: 16) else { return nil }
            out.append(b)
        }
        bytes = out
    }

    public var description: String { bytes.map { hex2($0).uppercased() }.joined(separator: ":") }

    public static let codec = ValueCodec<BDAddress>(
        encode: { $0.bytes.reversed() },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            try exactly(b, BDAddress.length, "Bluetooth address")
            return BDAddress(bytes: b.reversed())!
        })
}

/// A Bluetooth address as a number (address blocks of a provisioning recipe count through them).
extension BDAddress: Comparable, Encodable {
    /// The address as a number, 0...2^48-1 (the first written byte is the most significant).
    public var value: UInt64 { bytes.reduce(0) { $0 << 8 | UInt64($1) } }

    /// The largest address.
    public static let max = BDAddress(value: (1 << 48) - 1)!

    /// The address whose number is `value`; nil beyond 48 bits.
    public init?(value: UInt64) {
        guard value < (1 << 48) else { return nil }
        self.init(bytes: (0..<6).map { UInt8(truncatingIfNeeded: value >> (8 * (5 - $0))) })
    }

    /// A group (multicast) address: the least significant bit of the first byte. A device's own address is not one.
    public var isGroup: Bool { bytes[0] & 0x01 != 0 }

    /// Why this address cannot be a device's own, nil when it can: the broadcast address, a group (multicast)
    /// address, or all zeros. Recipes' address blocks and `factory identity --bt-address` refuse such addresses.
    public var notADeviceAddress: String? {
        if bytes.allSatisfy({ $0 == 0xFF }) { return "\(self) is the broadcast address, which no device has" }
        if isGroup { return "\(self) is a group (multicast) address; a device address has bit 0 of the first byte clear" }
        if value == 0 { return "\(self) is the all-zero address, which no device has" }
        return nil
    }

    public static func < (l: Self, r: Self) -> Bool { l.value < r.value }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// The ANC calibration of a unit: one gain correction per microphone in hundredths of a dB (i16 each, 8 bytes).
public struct AncCalibration: Sendable, Hashable {
    public var feedforwardLeft: Int16
    public var feedforwardRight: Int16
    public var feedbackLeft: Int16
    public var feedbackRight: Int16
    public static let length = 8

    public init(feedforwardLeft: Int16, feedforwardRight: Int16, feedbackLeft: Int16, feedbackRight: Int16) {
        self.feedforwardLeft = feedforwardLeft
        self.feedforwardRight = feedforwardRight
        self.feedbackLeft = feedbackLeft
        self.feedbackRight = feedbackRight
    }

    /// The four gains in wire order.
    public var gains: [Int16] { [feedforwardLeft, feedforwardRight, feedbackLeft, feedbackRight] }

    /// The largest correction in dB (what a test limit checks).
    public var largestCorrectionDB: Double { Double(gains.map { abs(Int($0)) }.max() ?? 0) / 100 }

    func write(to w: inout ArgumentWriter) { gains.forEach { w.u16(UInt16(bitPattern: $0)) } }

    static func read(_ r: inout ArgumentReader) throws(LightXError) -> AncCalibration {
        let a = Int16(bitPattern: try r.u16("feedforward left")), b = Int16(bitPattern: try r.u16("feedforward right"))
        let c = Int16(bitPattern: try r.u16("feedback left")), d = Int16(bitPattern: try r.u16("feedback right"))
        return AncCalibration(feedforwardLeft: a, feedforwardRight: b, feedbackLeft: c, feedbackRight: d)
    }

    public static let codec = ValueCodec<AncCalibration>(
        encode: { var w = ArgumentWriter(); $0.write(to: &w); return w.bytes },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            try exactly(b, AncCalibration.length, "ANC calibration")
            var r = ArgumentReader(b, context: "ANC calibration")
            return try AncCalibration.read(&r)
        })
}

/// The reply to a read of 0x71: u32 state (0 none, 1 measured, not stored; 2 stored), then, for 1 and 2, the
/// 8-byte calibration. 4 or 12 bytes.
public enum CalibrationStatus: Sendable, Hashable {
    case none
    case measured(AncCalibration)
    case stored(AncCalibration)

    public static let codec = ValueCodec<CalibrationStatus>(
        encode: { status in
            var w = ArgumentWriter()
            switch status {
            case .none: w.u32(0)
            case .measured(let c): w.u32(1); c.write(to: &w)
            case .stored(let c): w.u32(2); c.write(to: &w)
            }
            return w.bytes
        },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            var r = ArgumentReader(b, context: "calibration status")
            let state = try r.u32("state")
            switch state {
            case 0:
                try exactly(b, 4, "calibration status")
                return .none
            case 1, 2:
                try exactly(b, 4 + AncCalibration.length, "calibration status")
                let c = try AncCalibration.read(&r)
                return state == 1 ? .measured(c) : .stored(c)
            default:
                throw LightXError(.malformed, "calibration status: unknown state \(state)")
            }
        })
}

/// The factory identity strings a station writes (Config group, bootloader mode, after authentication).
public enum FactoryStrings {
    /// Capacity of the serial number and the Bluetooth display name, NUL included (§4.14).
    public static let capacity = 32

    /// The Config commands a station may write.
    public static let writable: [Command] = [.configSerialNumber, .configBTDisplayName]

    /// Checks `text` is a valid value: 1...31 UTF-8 bytes, no control characters; the serial number printable
    /// ASCII. Throws `.valueOutOfRange` naming the problem.
    public static func validate(_ text: String, for command: Command) throws(LightXError) {
        let what = command == .configSerialNumber ? "serial number" : "Bluetooth name"
        let n = text.utf8.count
        guard n >= 1 else { throw LightXError(.valueOutOfRange, "\(what) is empty") }
        guard n < capacity else { throw LightXError(.valueOutOfRange, "\(what) is \(n) bytes, at most \(capacity - 1)") }
        if command == .configSerialNumber {
            if let (offset, bad) = text.unicodeScalars.enumerated().first(where: { !(0x21...0x7E).contains($0.element.value) }) {
                let hex = String(bad.value, radix: 16, uppercase: true)
                let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
                let which = bad == " " ? "a space" : bad.value < 0x20 || bad.value == 0x7F ? "a control character (\(code))" : "'\(bad)' (\(code))"
                throw LightXError(.valueOutOfRange,
                    "serial number \"\(text)\" has \(which) at character \(offset + 1): a serial number is printable ASCII without spaces")
            }
        } else if text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
            throw LightXError(.valueOutOfRange, "\(what) has control characters")
        }
    }

    /// The write argument: the text and its NUL. Validated first.
    public static func encode(_ text: String, for command: Command) throws(LightXError) -> [UInt8] {
        try validate(text, for: command)
        return Array(text.utf8) + [0]
    }

    /// The device side: the string in a write argument, which must hold a NUL within `capacity` bytes and a valid
    /// value before it.
    public static func decodeWrite(_ buffer: ArraySlice<UInt8>, for command: Command) throws(LightXError) -> String {
        guard let nul = buffer.firstIndex(of: 0) else {
            throw LightXError(buffer.count >= capacity ? .malformed : .truncated, "identity string without its NUL")
        }
        guard nul - buffer.startIndex < capacity else { throw LightXError(.malformed, "identity string longer than \(capacity - 1) bytes") }
        guard let text = String(validating: buffer[buffer.startIndex..<nul], as: UTF8.self) else {
            throw LightXError(.malformed, "identity string is not UTF-8")
        }
        try validate(text, for: command)
        return text
    }
}

/// The factory unlock key: 16 bytes a line keeps secret; 0x6A takes it after §5 authentication.
public struct FactoryKey: Sendable, Hashable {
    public static let length = 16
    public let bytes: [UInt8]

    public init?(bytes: [UInt8]) {
        guard bytes.count == Self.length else { return nil }
        self.bytes = bytes
    }

    /// Parses 32 hex digits; nil otherwise.
    public init?(hex: some StringProtocol) {
        let chars = Array(hex)
        guard chars.count == 2 * Self.length else { return nil }
        var out: [UInt8] = []
        for k in stride(from: 0, to: chars.count, by: 2) {
            guard let b = UInt8(String(chars[k...k + 1]), radix: 16) else { return nil }
            out.append(b)
        }
        bytes = out
    }

    /// The simulator's default key (tests and the simulated line only): "TUNEUP-FACTORY-0".
    public static let development = FactoryKey(bytes: Array("TUNEUP-FACTORY-0".utf8))!

    public static let codec = ValueCodec<FactoryKey>(
        encode: { $0.bytes },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            try exactly(b, FactoryKey.length, "factory key")
            return FactoryKey(bytes: Array(b))!
        })
}

/// What a station measures on a unit (extension 0x6B): the id travels as the read's u32 argument, the value comes
/// back as an i32 in hundredths of `unit`. The names are those of a provisioning recipe's tests.
public enum FactoryMeasurement: UInt32, CaseIterable, Sendable {
    /// The battery charge, percent.
    case batteryLevel = 1
    /// The sensitivity of the feedforward-left microphone, dBFS.
    case micSensitivityLeft = 2
    /// The sensitivity of the feedforward-right microphone, dBFS.
    case micSensitivityRight = 3
    /// The ANC attenuation, dB.
    case ancAttenuation = 4

    /// The recipe's test name: "battery-level", "mic-sensitivity-left", "mic-sensitivity-right", "anc-attenuation".
    public var name: String {
        switch self {
        case .batteryLevel: return "battery-level"
        case .micSensitivityLeft: return "mic-sensitivity-left"
        case .micSensitivityRight: return "mic-sensitivity-right"
        case .ancAttenuation: return "anc-attenuation"
        }
    }

    /// The measurement named `name` (exactly as `name` spells it); nil for any other text.
    public init?(name: String) {
        guard let m = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = m
    }

    /// The unit of the value: "percent", "dBFS", "dBFS", "dB".
    public var unit: String {
        switch self {
        case .batteryLevel: return "percent"
        case .micSensitivityLeft, .micSensitivityRight: return "dBFS"
        case .ancAttenuation: return "dB"
        }
    }

    /// The read request (0x6B with the u32 id).
    public func readRequest(_ style: RequestStyle = .spp) -> Packet {
        FactorySettings.readMeasurement(id: rawValue, style)
    }

    /// The device side: the measurement a 0x6B read asks for. The argument must be exactly a u32 (else `.truncated`
    /// or `.malformed`: the device answers Fail); an id no case has is `.valueOutOfRange` (ExceededLimits).
    public static func decodeRequest(_ buffer: ArraySlice<UInt8>) throws(LightXError) -> FactoryMeasurement {
        try exactly(buffer, 4, "measurement id")
        var r = ArgumentReader(buffer, context: "measurement id")
        let id = try r.u32("id")
        guard let m = FactoryMeasurement(rawValue: id) else {
            throw LightXError(.valueOutOfRange, "measurement id \(id) is not one of 1...\(allCases.count)")
        }
        return m
    }

    /// The reply: an i32 in hundredths of the unit (strict: exactly 4 bytes).
    public static let hundredthsCodec = ValueCodec<Int32>(
        encode: { var w = ArgumentWriter(); w.i32($0); return w.bytes },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            try exactly(b, 4, "measurement value")
            var r = ArgumentReader(b, context: "measurement value")
            return try r.i32("value")
        })

    /// A reply buffer's value in the unit (hundredths divided by 100).
    public static func decodeValue(_ buffer: ArraySlice<UInt8>) throws(LightXError) -> Double {
        Double(try hundredthsCodec.decode(buffer)) / 100
    }

    /// `value` in hundredths for the reply, rounded to the nearest and clamped to the i32 range.
    public static func hundredths(_ value: Double) -> Int32 {
        guard value.isFinite else { return value.isNaN ? 0 : (value > 0 ? .max : .min) }
        return Int32(max(Double(Int32.min), min(Double(Int32.max), (value * 100).rounded())))
    }
}

/// The typed factory settings and requests.
public enum FactorySettings {
    public static let hardwareID = Setting("hardware id", .factoryHardwareID, .readOnly, HardwareID.codec)
    public static let bluetoothAddress = Setting("Bluetooth address", .diagBDAddr, .readWrite, BDAddress.codec)
    public static let calibrationStatus = Setting("calibration status", .diagAncStartCalibration, .readWrite, CalibrationStatus.codec)
    public static let storedCalibration = Setting("stored calibration", .diagAncStoreCalibrationData, .readWrite, AncCalibration.codec)
    /// u32 0 unlocked, 1 locked (strict: 4 bytes).
    public static let lock = Setting("factory lock", .factoryLock, .readWrite, ValueCodec<Bool>(
        encode: { var w = ArgumentWriter(); w.u32($0 ? 1 : 0); return w.bytes },
        decode: { (b: ArraySlice<UInt8>) throws(LightXError) in
            try exactly(b, 4, "factory lock")
            var r = ArgumentReader(b, context: "factory lock")
            let v = try r.u32("state")
            guard v <= 1 else { throw LightXError(.malformed, "factory lock: state \(v) is neither 0 nor 1") }
            return v == 1
        }))
    public static let unlock = Setting("factory unlock", .factoryUnlock, .writeOnly, FactoryKey.codec)

    /// Write 0x71 with u32 0: start the measurement.
    public static func startCalibration(_ style: RequestStyle = .spp) -> Packet {
        try! style.request(.write, .diagAncStartCalibration, argument: [0, 0, 0, 0])
    }

    /// Write 0x72 with u32 0: store the measured calibration.
    public static func storeCalibration(_ style: RequestStyle = .spp) -> Packet {
        try! style.request(.write, .diagAncStoreCalibrationData, argument: [0, 0, 0, 0])
    }

    /// Read 0x6B with the u32 measurement `id` as its argument (any id: a device answers an unknown one with
    /// ExceededLimits). `FactoryMeasurement.readRequest` is the typed form.
    public static func readMeasurement(id: UInt32, _ style: RequestStyle = .spp) -> Packet {
        var w = ArgumentWriter()
        w.u32(id)
        // A 4-byte argument and a zero address are always valid.
        return try! style.request(.read, .factoryMeasurement, argument: w.bytes)
    }

    /// Write a Config identity string (0x04 serial, 0x11 Bluetooth name).
    public static func writeString(_ text: String, _ command: Command, _ style: RequestStyle = .spp) throws(LightXError) -> Packet {
        guard FactoryStrings.writable.contains(command) else {
            throw LightXError(.valueOutOfRange, "command \(command) is not a writable identity string")
        }
        return try style.request(.write, command, argument: FactoryStrings.encode(text, for: command))
    }
}

private func hex2(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
}
