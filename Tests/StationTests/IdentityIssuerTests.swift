@testable import Station
import LightX
import Recipe
import Records
import TestSupport
import Testing

/// The station's identities, reserved through the records.
@Suite struct IdentityIssuerTests {
    /// Units arriving together each try addresses of their own: a restarted station on used records walks past the
    /// taken addresses once, not once per unit (64 units at once on a used block made 64 × that many probes, all in
    /// the writer's line ahead of every run's start).
    @Test func reservationsMadeAtOnceWalkPastTakenAddressesOnce() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let generator = line.recipe.identityGenerator
        let before = IdentityIssuer(generator: generator, store: line.store, station: "before")
        for unit in 0..<40 { _ = try await before.reserve(for: "0000000000\(100 + unit)") }
        #expect(before.addressesTried == 40)

        // A new station (its hint at the block's start again) and 16 units at once.
        let issuer = IdentityIssuer(generator: generator, store: line.store, station: "after")
        let issued = try await withThrowingTaskGroup(of: IssuedIdentity.self) { group in
            for unit in 0..<16 { group.addTask { try await issuer.reserve(for: "0000000000\(200 + unit)") } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let block = generator.rules.addressBlock
        let indices = issued.map { Int(BDAddress(parsing: $0.address.value)!.value - block.start.value) }.sorted()
        #expect(indices == Array(40..<56), "each unit the next free address: \(indices)")
        #expect(issuer.addressesTried == 40 + 16, "probes: \(issuer.addressesTried)")
    }
}

extension IdentityIssuerTests {
    /// issue 31 §5: a unit that comes back holding an address outside the recipe's block (the block was made smaller)
    /// is told so, by the address: the block's last address is the unit's, the one just past it is not.
    @Test func anAddressOnePastTheBlockIsOutsideIt() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let generator = line.recipe.identityGenerator
        let rules = generator.rules
        func issuer(count: Int, station: String) throws -> IdentityIssuer {
            let block = try AddressBlock(start: rules.addressBlock.start, count: count)
            let narrowed = IdentityRules(serial: rules.serial, bluetoothName: rules.bluetoothName, addressBlock: block,
                                         firstCounter: rules.firstCounter)
            return IdentityIssuer(generator: IdentityGenerator(rules: narrowed, model: generator.model),
                                  store: line.store, station: station)
        }
        // Three units on a block of three: they hold its addresses 0, 1 and 2.
        let wide = try issuer(count: 3, station: "wide")
        var held: [String: UInt64] = [:]
        for unit in 0..<3 {
            let id = "00000000003\(unit)"
            let issued = try await wide.reserve(for: id)
            held[id] = BDAddress(parsing: issued.address.value)!.value - rules.addressBlock.start.value
        }
        #expect(held.values.sorted() == [0, 1, 2])
        // The block is two addresses now.
        let narrow = try issuer(count: 2, station: "narrow")
        for (id, index) in held.sorted(by: { $0.value < $1.value }) {
            if index < 2 {
                let again = try await narrow.reserve(for: id)
                #expect(BDAddress(parsing: again.address.value)!.value - rules.addressBlock.start.value == index)
            } else {
                do {
                    let issued = try await narrow.reserve(for: id)
                    Issue.record("the address one past the block was accepted: \(issued.address.value)")
                } catch let error as RecordsError {
                    #expect(error.code == .invalidArgument, "\(error)")
                    #expect("\(error)".contains("outside the recipe's block"), "\(error)")
                }
            }
        }
    }
}

extension IdentityIssuerTests {
    /// issue 31 §5 (planted: a lap of the block one address long): a used-up block is told after one lap of it, each
    /// address offered once.
    @Test func aUsedUpBlockIsToldAfterOneLap() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let generator = line.recipe.identityGenerator
        let rules = generator.rules
        let block = try AddressBlock(start: rules.addressBlock.start, count: 3)
        let small = IdentityGenerator(rules: IdentityRules(serial: rules.serial, bluetoothName: rules.bluetoothName, addressBlock: block,
                                                           firstCounter: rules.firstCounter), model: generator.model)
        let issuer = IdentityIssuer(generator: small, store: line.store, station: "small")
        for unit in 0..<3 { _ = try await issuer.reserve(for: "00000000004\(unit)") }
        #expect(issuer.addressesTried == 3)
        do {
            let issued = try await issuer.reserve(for: "000000000049")
            Issue.record("a fourth unit got \(issued.address.value) from a block of 3")
        } catch let error as RecordsError {
            #expect(error.code == .poolExhausted && "\(error)".contains("used up"), "\(error)")
        }
        #expect(issuer.addressesTried == 3 + 3, "one lap: \(issuer.addressesTried - 3) addresses offered")
    }
}
