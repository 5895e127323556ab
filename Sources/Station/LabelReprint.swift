import Labels
import Records

/// Why a unit's label is not printed again from its records (`tuneup records label`: exit 1).
public struct LabelRefusal: Error, Sendable, Hashable {
    public var message: String
}

extension LabelContent {
    /// The label a station printed when the unit passed, from its records: the product, its committed serial and
    /// Bluetooth address.
    /// - Throws: `LabelRefusal` when its last finished run did not pass, or it has no committed serial.
    public init(reprinting record: UnitRecord, product: String) throws(LabelRefusal) {
        guard let last = record.runs.last(where: { $0.outcome != nil }), last.outcome == .pass else {
            let outcome = record.runs.last(where: { $0.outcome != nil })?.outcome?.rawValue ?? "none"
            throw LabelRefusal(message: "unit \(record.hardwareID) has not passed (its last run: \(outcome)): labels are printed for passed units only")
        }
        func committed(_ kind: IdentityKind) -> String? {
            record.identities.last { $0.kind == kind && $0.state == .committed }?.value
        }
        guard let serial = committed(.serial) else {
            throw LabelRefusal(message: "unit \(record.hardwareID) has no committed serial to print")
        }
        self.init(product: product, serial: serial, bluetoothAddress: committed(.bluetoothAddress))
    }
}
