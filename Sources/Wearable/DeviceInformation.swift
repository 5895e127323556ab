/// The device's status bits (DeviceInformation's u16 at offset 17): bit 0 pairing enabled, bit 1 secure BLE
/// pairing required, bit 2 already paired, bit 3 service suspended. Other bits are reserved.
public struct DeviceStatus: Sendable, Hashable {
    public var pairingEnabled: Bool
    public var secureBLEPairingRequired: Bool
    public var alreadyPaired: Bool
    public var serviceSuspended: Bool

    /// A status with these bits.
    public init(pairingEnabled: Bool = false, secureBLEPairingRequired: Bool = false, alreadyPaired: Bool = false,
                serviceSuspended: Bool = false) {
        self.pairingEnabled = pairingEnabled
        self.secureBLEPairingRequired = secureBLEPairingRequired
        self.alreadyPaired = alreadyPaired
        self.serviceSuspended = serviceSuspended
    }

    /// The u16 on the wire.
    public var rawValue: UInt16 {
        (pairingEnabled ? 1 : 0) | (secureBLEPairingRequired ? 2 : 0) | (alreadyPaired ? 4 : 0) | (serviceSuspended ? 8 : 0)
    }

    /// The status of `rawValue`; throws `.reservedBits` when a bit above 3 is set.
    public init(rawValue: UInt16) throws(WearableError) {
        guard rawValue & ~0x000F == 0 else {
            throw WearableError(.reservedBits, "device information: device status 0x\(hex16(rawValue)) sets bits above 3")
        }
        self.init(pairingEnabled: rawValue & 1 != 0, secureBLEPairingRequired: rawValue & 2 != 0,
                  alreadyPaired: rawValue & 4 != 0, serviceSuspended: rawValue & 8 != 0)
    }
}

/// The wearableDeviceInformation characteristic: 19 bytes, big-endian.
///
///     major u8 @0, minor u8 @1, productID u16 @2, variant u8 @4, sensor mask u32 @5, gesture mask u32 @9,
///     transmissionPeriod u8 @13, maxPayloadPerTransmissionPeriod u16 @14, maxActiveSensors u8 @16,
///     deviceStatus u16 @17
///
/// The sensor mask has bit n for the sensor with id n (0...6); the gesture mask bit n for gesture 0x80 + n (0...3).
/// Any other mask bit is rejected (`.reservedBits`), so every value is one this module can re-encode byte for byte.
public struct DeviceInformation: Sendable, Hashable {
    /// The payload's length.
    public static let length = 19

    /// Wearable protocol version, major.
    public var majorVersion: UInt8
    /// Wearable protocol version, minor.
    public var minorVersion: UInt8
    /// The product (a Bose product id).
    public var productID: UInt16
    /// The product's variant (colour, model).
    public var variant: UInt8
    /// The sensors the device has.
    public var availableSensors: Set<SensorType>
    /// The gestures the device recognises.
    public var availableGestures: Set<GestureType>
    /// How often the device sends sensor data, in ms; 0 = as soon as a sample is available.
    public var transmissionPeriod: UInt8
    /// The most sensor-data bytes the device sends per transmission period.
    public var maxPayloadPerTransmissionPeriod: UInt16
    /// How many sensors may be enabled at once.
    public var maxActiveSensors: UInt8
    /// Pairing and service state.
    public var status: DeviceStatus

    /// A device information of these fields (every combination is valid).
    public init(majorVersion: UInt8, minorVersion: UInt8, productID: UInt16, variant: UInt8,
                availableSensors: Set<SensorType>, availableGestures: Set<GestureType>, transmissionPeriod: UInt8,
                maxPayloadPerTransmissionPeriod: UInt16, maxActiveSensors: UInt8, status: DeviceStatus) {
        self.majorVersion = majorVersion
        self.minorVersion = minorVersion
        self.productID = productID
        self.variant = variant
        self.availableSensors = availableSensors
        self.availableGestures = availableGestures
        self.transmissionPeriod = transmissionPeriod
        self.maxPayloadPerTransmissionPeriod = maxPayloadPerTransmissionPeriod
        self.maxActiveSensors = maxActiveSensors
        self.status = status
    }

    /// Decodes exactly 19 bytes; throws `.truncated` (fewer), `.malformed` (more) or `.reservedBits` (a mask or
    /// status bit with no meaning).
    public init(decoding bytes: ArraySlice<UInt8>) throws(WearableError) {
        let context = "device information"
        guard bytes.count >= Self.length else {
            throw WearableError(.truncated, "\(context): \(bytes.count) bytes, expected \(Self.length)")
        }
        var r = WireReader(bytes, context: context)
        majorVersion = try r.u8("major")
        minorVersion = try r.u8("minor")
        productID = try r.u16("product id")
        variant = try r.u8("variant")
        availableSensors = try members(of: try r.u32("sensor mask"), position: { (s: SensorType) in Int(s.rawValue) },
                                       what: "sensor", in: context)
        availableGestures = try members(of: try r.u32("gesture mask"), position: { (g: GestureType) in g.bitPosition },
                                        what: "gesture", in: context)
        transmissionPeriod = try r.u8("transmission period")
        maxPayloadPerTransmissionPeriod = try r.u16("max payload per transmission period")
        maxActiveSensors = try r.u8("max active sensors")
        status = try DeviceStatus(rawValue: try r.u16("device status"))
        try r.expectEnd()
    }

    /// Decodes `bytes` (see `init(decoding:)` on a slice).
    public init(decoding bytes: [UInt8]) throws(WearableError) { try self.init(decoding: bytes[...]) }

    /// The 19 bytes.
    public func encoded() -> [UInt8] {
        var w = WireWriter(capacity: Self.length)
        w.u8(majorVersion)
        w.u8(minorVersion)
        w.u16(productID)
        w.u8(variant)
        w.u32(mask32(availableSensors.map { Int($0.rawValue) }))
        w.u32(mask32(availableGestures.map(\.bitPosition)))
        w.u8(transmissionPeriod)
        w.u16(maxPayloadPerTransmissionPeriod)
        w.u8(maxActiveSensors)
        w.u16(status.rawValue)
        return w.bytes
    }
}
