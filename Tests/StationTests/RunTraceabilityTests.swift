import Foundation
import Labels
import Records
import Station
import Testing

/// Who runs a station and the run metadata given on its command line, read by the library (issue 31 §1).
struct RunTraceabilityTests {
    @Test func anOperatorNameIsTakenOrRefusedAndTheProcessUserIsTheDefault() throws {
        #expect(try RunTraceability.operatorName("alice") == "alice")
        let empty = #expect(throws: StationSetupError.self) { try RunTraceability.operatorName("") }
        #expect(empty?.message == "--operator must not be empty" && empty?.category == .usage)
        #expect(throws: StationSetupError.self) { try RunTraceability.operatorName(String(repeating: "x", count: 65)) }
        #expect(try RunTraceability.operatorName(nil) == RunTraceability.defaultOperator() && !RunTraceability.defaultOperator().isEmpty)
    }

    @Test func metadataPairsAreAMapOfKeysGivenOnce() throws {
        #expect(try RunTraceability.metadata(["line=L1", "shift=night"]) == ["line": "L1", "shift": "night"])
        #expect(try RunTraceability.metadata(["empty="]) == ["empty": ""])
        let twice = #expect(throws: StationSetupError.self) { try RunTraceability.metadata(["a=1", "a=2"]) }
        #expect(twice?.message == "--meta a is given twice")
        let bad = #expect(throws: StationSetupError.self) { try RunTraceability.metadata(["no-equals"]) }
        #expect(bad?.message == "--meta takes KEY=VALUE, got 'no-equals'")
        #expect(throws: StationSetupError.self) { try RunTraceability.metadata(["bad key=1"]) }
    }
}

/// `records label`'s rule, made by the library (issue 31 §1): only a passed unit with a committed serial.
struct LabelReprintTests {
    static func unit(_ outcomes: [RunOutcome?], serial: IdentityState? = .committed) -> UnitRecord {
        let runs = outcomes.enumerated().map { k, outcome in
            RunRecord(id: RunID(Int64(k + 1)), start: RunStart(hardwareID: "hw-1", station: "s1", slot: "a"), endedAt: Date(), outcome: outcome,
                      reworkCount: 0)
        }
        let identities = serial.map { state in
            [Identity(id: IdentityID(1), kind: .serial, value: "TS1-1", state: state, hardwareID: "hw-1", station: "s1", lease: nil, updatedAt: Date()),
             Identity(id: IdentityID(2), kind: .bluetoothAddress, value: "02:00:00:00:00:01", state: .committed, hardwareID: "hw-1", station: "s1",
                      lease: nil, updatedAt: Date())]
        } ?? []
        return UnitRecord(hardwareID: "hw-1", firstSeen: Date(), identities: identities, runs: runs)
    }

    @Test func aPassedUnitsCommittedIdentitiesOrWhyNot() throws {
        let label = try LabelContent(reprinting: Self.unit([.fail, .pass, nil]), product: "TS-1")
        #expect(label.serial == "TS1-1" && label.bluetoothAddress == "02:00:00:00:00:01" && label.product == "TS-1")
        let failed = #expect(throws: LabelRefusal.self) { try LabelContent(reprinting: Self.unit([.pass, .fail]), product: "TS-1") }
        #expect(failed?.message == "unit hw-1 has not passed (its last run: fail): labels are printed for passed units only")
        let none = #expect(throws: LabelRefusal.self) { try LabelContent(reprinting: Self.unit([.pass], serial: .reserved), product: "TS-1") }
        #expect(none?.message == "unit hw-1 has no committed serial to print")
    }
}
