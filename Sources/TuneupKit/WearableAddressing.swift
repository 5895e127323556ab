import Failure
import Transport

/// A wearable's address that came from $TUNEUP_DEVICE and is none, or does not answer as a wearable: the one line says
/// where the address came from and how to name the wearable instead.
public typealias WearableAddressError = CodedFailure<WearableAddressErrors>

public enum WearableAddressErrors: ErrorDomain {
    public static func category(of code: WearableAddressError.Code) -> FailureCategory { code == .notAnswering ? .connection : .usage }
}

extension ErrorCodeIn where Domain == WearableAddressError {
    /// $TUNEUP_DEVICE is not a wearable's address (a usage error).
    public static let notAWearable = Self(rawValue: "not-a-wearable")
    /// The address from $TUNEUP_DEVICE does not answer (a connection failure).
    public static let notAnswering = Self(rawValue: "not-answering")
}

extension Devices {
    /// The wearable's address: `option` (--device), else `environment` ($TUNEUP_DEVICE, as the headset commands take
    /// it), else the simulated wearable.
    /// - Throws: `TransportError` for a bad option; `WearableAddressError(.notAWearable)` for a bad $TUNEUP_DEVICE,
    ///   saying so (a headset's address most likely: then what a wearable's looks like) and how to name the wearable.
    public static func wearableAddress(option: String?, environment: String?) throws -> DeviceAddress {
        let variable = option == nil ? environment : nil
        do {
            return try parseWearableAddress(option ?? variable ?? "sim:wearable")
        } catch {
            guard let variable else { throw error }
            // Set for the headset commands, most likely: say so, and how to name the wearable instead.
            let headset = (try? parseHeadsetAddress(variable)) != nil
            if headset, let expected = error.message.range(of: ": expected ") {
                throw WearableAddressError(.notAWearable, "$TUNEUP_DEVICE is '\(variable)', a headset's address, not a wearable's: give the wearable with --device ("
                    + String(error.message[expected.upperBound...]) + ") or unset TUNEUP_DEVICE")
            }
            throw WearableAddressError(.notAWearable, "$TUNEUP_DEVICE is '\(variable)': \(error.message) (give the wearable with --device, or unset TUNEUP_DEVICE)")
        }
    }

    /// A failure to open the wearable whose address came from $TUNEUP_DEVICE (`environment`; nil: it did not): a
    /// connection failure then asks whether that address is a wearable's (a headset's tcp: or serial: address looks
    /// like a wearable's until it does not answer as one). Other errors stand.
    public static func wearableOpenFailure(_ error: any Error, environment: String?) -> any Error {
        guard let environment, let coded = error as? any CodedError, coded.category == .connection else { return error }
        return WearableAddressError(.notAnswering, "\(coded.message) (is \(environment), from $TUNEUP_DEVICE, a wearable?)")
    }
}
