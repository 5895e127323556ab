import Foundation
import LightX

/// A block of consecutive Bluetooth addresses: `count` addresses from `start`.
public struct AddressBlock: Sendable, Hashable, Encodable {
    public let start: BDAddress
    public let count: Int

    /// Throws `.identityExhausted` when the block is empty or runs past the last address with the start's first
    /// byte (xx:FF:FF:FF:FF:FF: the next first byte is another company's, or a group address), `.outOfRange` for a
    /// group, broadcast or all-zero start (the message is the reason; the recipe parser adds position and key).
    public init(start: BDAddress, count: Int) throws(RecipeError) {
        if let problem = start.notADeviceAddress { throw RecipeError(.outOfRange, problem) }
        guard count >= 1 else { throw RecipeError(.identityExhausted, "the block holds no address (count \(count))") }
        // The first byte's bit 0 marks group addresses, so a block ends where its first byte would change.
        let end = BDAddress(value: start.value | 0xFF_FFFF_FFFF)!
        let left = end.value - start.value + 1
        guard UInt64(count) <= left else {
            throw RecipeError(.identityExhausted, "\(count) addresses from \(start) run past \(end) (only \(left) left before the next first byte)")
        }
        self.start = start
        self.count = count
    }

    /// The `index`th address (0-based); nil past the block.
    public func address(at index: Int) -> BDAddress? {
        guard index >= 0, index < count else { return nil }
        return BDAddress(value: start.value + UInt64(index))
    }

    /// The last address of the block.
    public var last: BDAddress { BDAddress(value: start.value + UInt64(count - 1))! }
}

/// The identity rules of a recipe: serial pattern, Bluetooth name template, address block, first counter.
public struct IdentityRules: Sendable, Hashable, Encodable {
    /// The serial pattern: exactly one `{counter:N}`.
    public let serial: IdentityTemplate
    /// The Bluetooth name template (may use `{serial}`).
    public let bluetoothName: IdentityTemplate
    /// The unit with the first counter gets the block's first address, the next one the next, and so on.
    public let addressBlock: AddressBlock
    /// The counter of the first unit (it gets the block's first address).
    public let firstCounter: Int

    public init(serial: IdentityTemplate, bluetoothName: IdentityTemplate, addressBlock: AddressBlock, firstCounter: Int) {
        (self.serial, self.bluetoothName, self.addressBlock, self.firstCounter) = (serial, bluetoothName, addressBlock, firstCounter)
    }

    /// Every counter the rules can give an identity: from `firstCounter` up to where the serial's counter width or
    /// the address block ends, whichever comes first. Empty when the first counter already does not fit.
    public var counters: Range<Int> {
        let byWidth = (serial.counterCapacity ?? Int.max - 1) + 1
        let byBlock = firstCounter + addressBlock.count
        return firstCounter..<Swift.max(firstCounter, Swift.min(byWidth, byBlock))
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(serial.text, forKey: .serial)
        try c.encode(bluetoothName.text, forKey: .bluetoothName)
        try c.encode(addressBlock, forKey: .addressBlock)
        try c.encode(firstCounter, forKey: .firstCounter)
    }
    private enum Keys: String, CodingKey { case serial, bluetoothName, addressBlock, firstCounter }
}

/// The identity one unit gets.
public struct UnitIdentity: Sendable, Hashable, Codable {
    public var serial: String
    public var bluetoothName: String
    /// `AA:BB:CC:DD:EE:FF`.
    public var bluetoothAddress: String

    public init(serial: String, bluetoothName: String, bluetoothAddress: String) {
        (self.serial, self.bluetoothName, self.bluetoothAddress) = (serial, bluetoothName, bluetoothAddress)
    }
}

/// Produces a unit's identity from its counter and a date: pure, so the station can reserve a counter, generate,
/// write, read back and commit, and a re-run with the same counter and date gives the same identity.
public struct IdentityGenerator: Sendable, Hashable {
    public let rules: IdentityRules
    public let model: String

    /// The longest serial number and Bluetooth name a unit stores, in bytes of UTF-8: what the device's factory
    /// strings hold without their NUL (`FactoryStrings.capacity`, docs/protocol.md §4.14), the limit the codec
    /// checks when the station writes them.
    public static let maxStringBytes = FactoryStrings.capacity - 1

    public init(rules: IdentityRules, model: String) {
        (self.rules, self.model) = (rules, model)
    }

    /// Serial, name and address of the unit with `counter`. Throws `.identityExhausted` when the counter is below
    /// the first counter, outgrows the serial's counter width, or is past the address block; `.deviceLimit` when the
    /// device cannot store the serial or the name (`deviceProblem`).
    public func identity(counter: Int, date: Date) throws(RecipeError) -> UnitIdentity {
        guard counter >= rules.firstCounter else {
            throw RecipeError(.identityExhausted, "counter \(counter) is below the recipe's first counter \(rules.firstCounter)")
        }
        let serial = try rules.serial.render(counter: counter, date: date)
        guard let address = rules.addressBlock.address(at: counter - rules.firstCounter) else {
            throw RecipeError(.identityExhausted,
                "the Bluetooth address block \(rules.addressBlock.start)...\(rules.addressBlock.last) is used up: counter \(counter) would need address \(counter - rules.firstCounter + 1) of \(rules.addressBlock.count)")
        }
        let name = try rules.bluetoothName.render(counter: counter, date: date, serial: serial, model: model)
        if let problem = Self.deviceProblem(serial: serial) ?? Self.deviceProblem(bluetoothName: name) {
            throw RecipeError(.deviceLimit, problem)
        }
        return UnitIdentity(serial: serial, bluetoothName: name, bluetoothAddress: address.description)
    }

    /// Why the device would refuse `serial` (the codec's own check: 1...31 bytes of printable ASCII), or nil.
    public static func deviceProblem(serial: String) -> String? {
        refusal(serial, .configSerialNumber).map { "the device cannot store the serial: \($0)" }
    }

    /// Why the device would refuse `bluetoothName` (1...31 bytes of UTF-8, no control characters), or nil.
    public static func deviceProblem(bluetoothName: String) -> String? {
        refusal(bluetoothName, .configBTDisplayName).map { "the device cannot store the Bluetooth name: \($0)" }
    }

    private static func refusal(_ text: String, _ command: Command) -> String? {
        do { try FactoryStrings.validate(text, for: command); return nil } catch { return error.message }
    }

    /// Checks, before any unit is touched, that every identity the rules can give is one the device stores: the
    /// serial's length is fixed by its pattern (a padded counter, fixed-width date fields), and the name is shortest
    /// with the first counter and longest with the last one, so those two decide. Returns which template is at fault
    /// and why, or nil.
    public func deviceProblem() -> (template: IdentityTemplate, message: String)? {
        let counters = rules.counters
        guard let last = counters.last else { return nil }
        let date = Date(timeIntervalSince1970: 0)
        for counter in Set([counters.lowerBound, last]).sorted() {
            guard let serial = try? rules.serial.render(counter: counter, date: date) else { continue }
            if let problem = Self.refusal(serial, .configSerialNumber) {
                return (rules.serial, "gives serials like '\(serial)' and the device cannot store them: \(problem)")
            }
            guard let name = try? rules.bluetoothName.render(counter: counter, date: date, serial: serial, model: model) else { continue }
            if let problem = Self.refusal(name, .configBTDisplayName) {
                return (rules.bluetoothName, "gives names like '\(name)' (counter \(counter)) and the device cannot store them: \(problem)")
            }
        }
        return nil
    }
}
