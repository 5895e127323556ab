import Failure
import Foundation
import Firmware
import FirmwareUpdate
import Headset
import LightX
import Simulator
import Testing
import Transport

/// Every module's errors have one shape: a stable code, a category, one line; codes are open sets.
@Suite struct CodedErrorTests {
    static let errors: [(any CodedError, String, FailureCategory)] = [
        (HeadsetError(.timeout, "device did not answer"), "timeout", .connection),
        (HeadsetError(.invalidArgument, "ambient left level must be 0...7"), "invalid-argument", .usage),
        (HeadsetError(.deviceNotSupported, "not supported"), "device-not-supported", .device),
        (TransportError(.invalidAddress, "bad address"), "invalid-address", .usage),
        (TransportError(.connectionRefused, "refused"), "connection-refused", .connection),
        (LightXError(.truncated, "short"), "truncated", .device),
        (UpdateError(.deviceBusy, "another host"), "device-busy", .connection),
        (UpdateError(.badSignature, "other key"), "bad-signature", .device),
        (ImageError(.io, "cannot read"), "io", .localFile),
        (ImageError(.badHash, "hash"), "bad-hash", .device),
        (SimulatorError(.stateLocked, "in use"), "state-locked", .localFile),
        (SimulatorError(.invalidFaults, "bad spec"), "invalid-faults", .usage),
    ]

    @Test func everyModuleSpeaksTheSameShape() {
        for (error, code, category) in Self.errors {
            #expect(error.codeName == code)
            #expect(error.category == category, "\(error.codeName)")
            #expect(!error.message.isEmpty && !error.description.contains("\n"))
        }
    }

    /// Errors compare and hash by code only (messages and details differ from one occurrence to the next).
    @Test func errorsCompareByCode() {
        #expect(HeadsetError(.timeout, "a", command: .appBatteryLevel) == HeadsetError(.timeout, "b"))
        #expect(HeadsetError(.timeout, "a") != HeadsetError(.disconnected, "a"))
        #expect(Set([TransportError(.closed, "x", errno: 9), TransportError(.closed, "y")]).count == 1)
        #expect(LightXError(.truncated, "a") == LightXError(.truncated, "b"))
        #expect(UpdateError(.deviceBusy, "a") == UpdateError(.deviceBusy, "b"))
        #expect(ImageError(.io, "a") == ImageError(.io, "b") && ImageError(.io, "a") != ImageError(.badHash, "a"))
        #expect(SimulatorError(.io, "a").hashValue == SimulatorError(.io, "b").hashValue)
    }

    /// A code this version does not know (from a newer module, or JSON) is a value like any other: it compares,
    /// round-trips through JSON, and a caller's `switch` takes its `default`.
    @Test func codesAreOpen() throws {
        let future = UpdateError.Code(rawValue: "battery-too-low")
        #expect(!UpdateError.Code.allCases.contains(future))
        #expect(future == UpdateError.Code(rawValue: "battery-too-low") && future != .deviceBusy)
        let data = try JSONEncoder().encode([ImageError.Code(rawValue: "encrypted"), .badHash])
        #expect(String(decoding: data, as: UTF8.self) == #"["encrypted","bad-hash"]"#)
        #expect(try JSONDecoder().decode([ImageError.Code].self, from: data).last == .badHash)
        func handled(_ code: UpdateError.Code) -> String {
            switch code {
            case .disconnected, .deviceBusy: return "retry later"
            case .badSignature: return "sign it"
            default: return "other"
            }
        }
        #expect(handled(future) == "other" && handled(.deviceBusy) == "retry later")
        // Known codes keep their raw values (they are part of the JSON output).
        #expect(TransportError.Code.allCases.map(\.rawValue).contains("connection-refused"))
        #expect(Set(HeadsetError.Code.allCases).count == HeadsetError.Code.allCases.count)
    }
}
