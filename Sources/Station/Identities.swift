import DeviceAccess
import Foundation
import LightX
import Recipe
import Records
import Synchronization

/// The identity a station gives one unit: its serial and Bluetooth address as issued by the records (unique across
/// every station of the line), and the Bluetooth name the recipe makes of them.
///
/// The name is a `bt-name` identity of the records when the recipe's template names every unit apart (it holds the
/// counter or the whole serial); a template such as `Tuneup {serial[-4:]}` repeats by design and is not recorded so.
struct IssuedIdentity: Sendable {
    var serial: Identity
    var address: Identity
    var name: String
    /// The name's record, when the template names every unit apart.
    var nameRecord: Identity? = nil

    var factoryIdentity: FactoryIdentity {
        FactoryIdentity(serialNumber: serial.value, bluetoothName: name, bluetoothAddress: BDAddress(parsing: address.value))
    }

    var summary: String { "serial \(serial.value), address \(address.value), name '\(name)'" }
}

/// Issues identities through the records: reserved for a unit's hardware id (the same ones when it comes back),
/// marked written once read back from the unit, committed when its run passes.
final class IdentityIssuer: Sendable {
    let generator: IdentityGenerator
    let store: any RecordStore
    let station: String
    /// The place in the block of the next address to try (the records still decide: this only saves probing). Each
    /// candidate handed to the records moves it on, so reservations made at once (64 units arriving together) each
    /// try addresses of their own instead of all walking the same taken ones from the same start.
    private let hint = Mutex(0)
    private let tried = Atomic(0)

    init(generator: IdentityGenerator, store: any RecordStore, station: String) {
        (self.generator, self.store, self.station) = (generator, store, station)
    }

    /// How many addresses this issuer has offered the records so far (each one free or taken).
    var addressesTried: Int { tried.load(ordering: .relaxed) }

    /// The unit's identity: the one the records hold for it, or new ones. The address comes first (the block is
    /// the scarce resource); its place in the block is the unit's counter, which the serial and name are made from.
    /// Throws `RecordsError.poolExhausted` (the message says which pool) when no identity is left.
    func reserve(for hardwareID: String) async throws -> IssuedIdentity {
        let rules = generator.rules
        let block = rules.addressBlock
        let date = Date()
        // How far the pair got, for the error: no address yet, the address is the unit's, its serial was made.
        let stage = PairStage()
        let address: Identity, serial: Identity
        do {
            // The address and its serial in one write where the records can (one round trip, both or neither).
            (address, serial) = try await store.reserveIdentityPair(
                .bluetoothAddress, .serial, for: hardwareID, station: station,
                candidates: { [self] attempt in
                    guard attempt < block.count else { return nil }  // one lap of the block
                    self.tried.add(1, ordering: .relaxed)
                    let index = self.hint.withLock { next in
                        defer { next = (next + 1) % block.count }
                        return next
                    }
                    return block.address(at: index)?.description
                },
                paired: { address in
                    stage.set(.pairing)
                    // The serial is made from the address's place in the block, so a unit's serial and address always
                    // pair (on a line too: the address is the station's by lease, so its serial needs no lease).
                    let counter = try Self.counter(of: address, in: rules, for: hardwareID)
                    let serial = try rules.serial.render(counter: counter, date: date)
                    stage.set(.serial(serial, address: address.value))
                    return serial
                })
        } catch let error as RecordsError where error.code == .poolExhausted {
            switch stage.value {
            case .address:
                throw RecordsError(.poolExhausted, "the Bluetooth address block \(block.start)...\(block.last) is used up (\(block.count) addresses)")
            case .pairing:
                throw error
            case let .serial(value, address):
                throw RecordsError(.poolExhausted, "the serial \(value), made from address \(address), is held otherwise or voided")
            }
        }
        let counter = try Self.counter(of: address, in: rules, for: hardwareID)
        var name = try rules.bluetoothName.render(counter: counter, date: date, serial: serial.value, model: generator.model)
        var nameRecord: Identity?
        if rules.bluetoothName.namesEveryUnitApart {
            // Made from the unit's own counter or serial: reserved exactly (no lease), the one it holds when it comes back.
            do {
                let record = try await store.reserveIdentity(.bluetoothName, exactly: name, for: hardwareID, station: station)
                (name, nameRecord) = (record.value, record)
            } catch let error as RecordsError where error.code == .poolExhausted {
                throw RecordsError(.conflict, "the Bluetooth name '\(name)' is held by another unit or voided")
            }
        }
        return IssuedIdentity(serial: serial, address: address, name: name, nameRecord: nameRecord)
    }

    /// The unit's counter: its address's place in the recipe's block, within the serial's counters.
    private static func counter(of address: Identity, in rules: IdentityRules, for hardwareID: String) throws -> Int {
        let block = rules.addressBlock
        guard let bd = BDAddress(parsing: address.value), bd.value >= block.start.value,
              bd.value - block.start.value < UInt64(block.count) else {
            throw RecordsError(.invalidArgument, "the unit \(hardwareID) holds the address \(address.value), outside the recipe's block \(block.start)...\(block.last)")
        }
        let counter = rules.firstCounter + Int(bd.value - block.start.value)
        guard rules.counters.contains(counter) else {
            throw RecordsError(.poolExhausted, "the serial numbers of '\(rules.serial.text)' end before counter \(counter) (address \(address.value))")
        }
        return counter
    }

    /// The unit holds them (written and read back). Returns them as the records hold them now. The two are marked at
    /// once: one round trip to the records, not two (at 64 units at once each is a wait for the writer and the pool).
    func markWritten(_ identity: IssuedIdentity) async throws -> IssuedIdentity {
        async let serial = advance(identity.serial, to: .written)
        async let address = advance(identity.address, to: .written)
        async let name = advanceIfHeld(identity.nameRecord, to: .written)
        return IssuedIdentity(serial: try await serial, address: try await address, name: identity.name, nameRecord: try await name)
    }

    /// The unit passed: its identities are its own for good (all at once).
    func commit(_ identity: IssuedIdentity) async throws {
        async let serial = advance(identity.serial, to: .committed)
        async let address = advance(identity.address, to: .committed)
        async let name = advanceIfHeld(identity.nameRecord, to: .committed)
        _ = try await (serial, address, name)
    }

    private func advanceIfHeld(_ held: Identity?, to target: IdentityState) async throws -> Identity? {
        guard let held else { return nil }
        return try await advance(held, to: target)
    }

    /// `held` moved on to `target` (written, then committed) as far as it is not there yet.
    private func advance(_ held: Identity, to target: IdentityState) async throws -> Identity {
        var held = held
        if held.state == .reserved { held = try await store.markWritten(held.id) }
        if target == .committed, held.state != .committed { held = try await store.commit(held.id) }
        return held
    }
}

/// How far a reservation of an address and its serial got (for its error).
private final class PairStage: Sendable {
    enum Stage: Sendable {
        case address
        case pairing
        case serial(String, address: String)
    }

    private let stage = Mutex(Stage.address)
    var value: Stage { stage.withLock { $0 } }
    func set(_ new: Stage) { stage.withLock { $0 = new } }
}
