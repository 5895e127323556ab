@testable import Station
import LightX
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
