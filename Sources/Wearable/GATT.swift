/// The Bose Wearable GATT service: its UUID and its seven characteristics. Their payloads are the values of this
/// module (`DeviceInformation`, `SensorInformation`, ...); the transport that carries them is not part of it.
public enum WearableService {
    /// The 16-bit service UUID.
    public static let uuid16: UInt16 = 0xFDD2
    /// The service UUID in 128-bit form (Bluetooth base UUID).
    public static let uuid = "0000FDD2-0000-1000-8000-00805F9B34FB"
}

/// A characteristic of the Wearable service.
public enum WearableCharacteristic: CaseIterable, Sendable, Hashable, CustomStringConvertible {
    /// `DeviceInformation` (read).
    case deviceInformation
    /// `SensorInformation` (read).
    case sensorInformation
    /// `SensorConfiguration` (read, write with response, notify).
    case sensorConfiguration
    /// `SensorDataNotification` (notify).
    case sensorData
    /// `GestureInformation` (read).
    case gestureInformation
    /// `GestureConfiguration` (read, write with response, notify).
    case gestureConfiguration
    /// `GestureData` (notify).
    case gestureData

    /// The 128-bit UUID, upper case.
    public var uuid: String {
        switch self {
        case .deviceInformation: return "7B61AD83-041C-4333-A0AB-EFB2AB7BDD43"
        case .sensorInformation: return "855CB3E7-98FF-42A6-80FC-40B32A2221C1"
        case .sensorConfiguration: return "5AF38AF6-000E-404B-9B46-07F77580890B"
        case .sensorData: return "56A72AB8-4988-4CC8-A752-FBD1D54A953D"
        case .gestureInformation: return "A0384F52-F95A-4BCD-B898-7B9CEEC92DAD"
        case .gestureConfiguration: return "21E550AF-F780-477B-9334-1F983296F1D7"
        case .gestureData: return "9014DD4E-79BA-4802-A275-894D3B85AC74"
        }
    }

    /// What a client may do with the characteristic.
    public var properties: Properties {
        switch self {
        case .deviceInformation, .sensorInformation, .gestureInformation: return [.read]
        case .sensorConfiguration, .gestureConfiguration: return [.read, .writeWithResponse, .notify]
        case .sensorData, .gestureData: return [.notify]
        }
    }

    /// The characteristic whose UUID is `uuid` (any case); nil for another.
    public init?(uuid: String) {
        guard let c = Self.allCases.first(where: { $0.uuid == uuid.uppercased() }) else { return nil }
        self = c
    }

    public var description: String {
        switch self {
        case .deviceInformation: return "wearableDeviceInformation"
        case .sensorInformation: return "sensorInformation"
        case .sensorConfiguration: return "sensorConfiguration"
        case .sensorData: return "sensorData"
        case .gestureInformation: return "gestureInformation"
        case .gestureConfiguration: return "gestureConfiguration"
        case .gestureData: return "gestureData"
        }
    }

    /// GATT characteristic properties (the bits of the characteristic declaration).
    public struct Properties: OptionSet, Sendable, Hashable {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let read = Properties(rawValue: 0x02)
        public static let writeWithResponse = Properties(rawValue: 0x08)
        public static let notify = Properties(rawValue: 0x10)
    }
}
