import DeviceAccess
import Foundation
import LightX
import Recipe
import Records
import Synchronization

/// The identity a station gives one unit: its serial and Bluetooth address as issued by the records (unique across
/// every station of the line), and the Bluetooth name the recipe makes of them.
///
/// The name is not an identity of the records: a template such as `Tuneup {serial[-4:]}` repeats by design.
struct IssuedIdentity: Sendable {
    var serial: Identity
    var address: Identity
    var name: String

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
        let address: Identity
        do {
            address = try await store.reserveIdentity(.bluetoothAddress, for: hardwareID, station: station) { [self] attempt in
                guard attempt < block.count else { return nil }  // one lap of the block
                self.tried.add(1, ordering: .relaxed)
                let index = self.hint.withLock { next in
                    defer { next = (next + 1) % block.count }
                    return next
                }
                return block.address(at: index)?.description
            }
        } catch let error as RecordsError where error.code == .poolExhausted {
            throw RecordsError(.poolExhausted, "the Bluetooth address block \(block.start)...\(block.last) is used up (\(block.count) addresses)")
        }
        guard let bd = BDAddress(parsing: address.value), bd.value >= block.start.value,
              bd.value - block.start.value < UInt64(block.count) else {
            throw RecordsError(.invalidArgument, "the unit \(hardwareID) holds the address \(address.value), outside the recipe's block \(block.start)...\(block.last)")
        }
        let index = Int(bd.value - block.start.value)
        let counter = rules.firstCounter + index
        let date = Date()
        // The serial is made from the address's place in the block, so a unit's serial and address always pair
        // (on a line too: the address is the station's by lease, so its serial needs no lease of its own).
        guard rules.counters.contains(counter) else {
            throw RecordsError(.poolExhausted, "the serial numbers of '\(rules.serial.text)' end before counter \(counter) (address \(address.value))")
        }
        let paired = try rules.serial.render(counter: counter, date: date)
        let serial: Identity
        do {
            serial = try await store.reserveIdentity(.serial, exactly: paired, for: hardwareID, station: station)
        } catch let error as RecordsError where error.code == .poolExhausted {
            throw RecordsError(.poolExhausted, "the serial \(paired), made from address \(address.value), is held otherwise or voided")
        }
        let name = try rules.bluetoothName.render(counter: counter, date: date, serial: serial.value, model: generator.model)
        return IssuedIdentity(serial: serial, address: address, name: name)
    }

    /// The unit holds them (written and read back). Returns them as the records hold them now. The two are marked at
    /// once: one round trip to the records, not two (at 64 units at once each is a wait for the writer and the pool).
    func markWritten(_ identity: IssuedIdentity) async throws -> IssuedIdentity {
        async let serial = advance(identity.serial, to: .written)
        async let address = advance(identity.address, to: .written)
        return IssuedIdentity(serial: try await serial, address: try await address, name: identity.name)
    }

    /// The unit passed: its identities are its own for good (both at once).
    func commit(_ identity: IssuedIdentity) async throws {
        async let serial = advance(identity.serial, to: .committed)
        async let address = advance(identity.address, to: .committed)
        _ = try await (serial, address)
    }

    /// `held` moved on to `target` (written, then committed) as far as it is not there yet.
    private func advance(_ held: Identity, to target: IdentityState) async throws -> Identity {
        var held = held
        if held.state == .reserved { held = try await store.markWritten(held.id) }
        if target == .committed, held.state != .committed { held = try await store.commit(held.id) }
        return held
    }
}
