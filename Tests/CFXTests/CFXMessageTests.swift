import CFX
import Foundation
import Records
import Testing

/// Each message's JSON against a hand-written example (parsed, so key order and spacing do not matter, but every
/// field and value does).
@Suite struct CFXMessageTests {
    static let t0 = Date(timeIntervalSince1970: 1_795_795_200.25)  // 2026-11-27T16:00:00.250Z

    static func date(_ offset: Double) -> Date { t0.addingTimeInterval(offset) }

    static let run = RunRecord(
        id: RunID(7),
        start: RunStart(hardwareID: "HW-0001", station: "s1", slot: "tcp:127.0.0.1:4300", operatorName: "ana",
                        recipeHash: "abc", toolVersion: "1.0", startedAt: date(0)),
        endedAt: date(9.5), outcome: .fail, reworkCount: 0,
        steps: [
            StepRecord(name: "flash-application", startedAt: date(0.1), endedAt: date(4), outcome: .pass, message: "app 2.0.0"),
            StepRecord(name: "identity", startedAt: date(4), endedAt: date(4.5), outcome: .pass),
            StepRecord(name: "test:battery-level", startedAt: date(5), endedAt: date(6), outcome: .pass, measurements: [
                Measurement(name: "battery-level", value: 87, unit: "%", low: 20, high: 100, outcome: .pass),
            ]),
            StepRecord(name: "test:mic-sensitivity-left", startedAt: date(6), endedAt: date(9.5), outcome: .fail, retries: 2,
                       message: "mic-sensitivity-left -47.25 dBFS is outside -44.00...-40.00", measurements: [
                Measurement(name: "mic-sensitivity-left", value: -47.25, unit: "dBFS", low: -44, high: -40, outcome: .fail),
            ]),
        ])

    static let unit = CFXUnitRun(run: run, serial: "TU-2648-000001", bluetoothAddress: "02:11:22:33:44:01", bluetoothName: "Tuneup 0001")
    static let mapper = CFXMapper(source: "Tuneup.Station.s1")

    func parsed(_ text: String) throws -> NSDictionary {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? NSDictionary)
    }

    func check(_ envelope: CFXEnvelope, _ expected: String) throws {
        let got = try parsed(envelope.text())
        let want = try parsed(expected)
        #expect(got == want, "got \(envelope.text())")
    }

    var ids: (transaction: String, started: String, personalized: String, tested: String, completed: String) {
        let m = Self.mapper, r = Self.run
        return (m.transactionID(r), m.uniqueID(.workStarted, run: r), m.uniqueID(.unitsPersonalized, run: r),
                m.uniqueID(.unitsTested, run: r), m.uniqueID(.workCompleted, run: r))
    }

    @Test func workStarted() throws {
        try check(Self.mapper.workStarted(Self.unit), """
            {"MessageName": "CFX.Production.WorkStarted", "Version": "1.4", "TimeStamp": "2026-11-27T16:00:00.250+00:00",
             "UniqueID": "\(ids.started)", "Source": "Tuneup.Station.s1", "Target": null, "RequestID": null,
             "MessageBody": {"$type": "CFX.Production.WorkStarted, CFX", "TransactionID": "\(ids.transaction)", "UnitCount": 1,
               "Units": [{"UnitIdentifier": "HW-0001", "PositionNumber": 1, "PositionName": "tcp:127.0.0.1:4300"}]}}
            """)
    }

    @Test func unitsPersonalized() throws {
        let message = try #require(Self.mapper.unitsPersonalized(Self.unit))
        try check(message, """
            {"MessageName": "CFX.Production.Assembly.UnitsPersonalized", "Version": "1.4", "TimeStamp": "2026-11-27T16:00:04.750+00:00",
             "UniqueID": "\(ids.personalized)", "Source": "Tuneup.Station.s1", "Target": null, "RequestID": null,
             "MessageBody": {"$type": "CFX.Production.Assembly.UnitsPersonalized, CFX", "TransactionId": "\(ids.transaction)",
               "PersonalizedUnits": [{"UnitIdentifier": "TU-2648-000001", "UnitPositionNumber": 1, "Characteristics": [
                 {"Name": "Serial Number", "Value": "TU-2648-000001"}, {"Name": "Bluetooth Address", "Value": "02:11:22:33:44:01"},
                 {"Name": "Bluetooth Name", "Value": "Tuneup 0001"}, {"Name": "Hardware ID", "Value": "HW-0001"}]}]}}
            """)
    }

    @Test func unitsTested() throws {
        let message = Self.mapper.unitsTested(Self.unit)
        // The nested ids are derived from the message's: checked for shape here, for stability below.
        let body = try #require(try parsed(message.text())["MessageBody"] as? NSDictionary)
        let unit = try #require((body["TestedUnits"] as? [NSDictionary])?.first)
        let tests = try #require(unit["Tests"] as? [NSDictionary])
        let testIDs = tests.map { $0["UniqueIdentifier"] as? String ?? "" }
        let measurementIDs = tests.compactMap { ($0["Measurements"] as? [NSDictionary])?.first?["UniqueIdentifier"] as? String }
        #expect(Set(testIDs + measurementIDs).count == 6)
        try check(message, """
            {"MessageName": "CFX.Production.TestAndInspection.UnitsTested", "Version": "1.4", "TimeStamp": "2026-11-27T16:00:09.750+00:00",
             "UniqueID": "\(ids.tested)", "Source": "Tuneup.Station.s1", "Target": null, "RequestID": null,
             "MessageBody": {"$type": "CFX.Production.TestAndInspection.UnitsTested, CFX", "TransactionId": "\(ids.transaction)",
               "TestMethod": "Automated", "Tester": {"OperatorIdentifier": "ana", "ActorType": "Human"},
               "TestedUnits": [{"UnitIdentifier": "TU-2648-000001", "UnitPositionNumber": 1, "OverallResult": "Failed", "Tests": [
                 {"UniqueIdentifier": "\(testIDs[0])", "TestName": "flash-application", "TestStartTime": "2026-11-27T16:00:00.350+00:00",
                  "TestEndTime": "2026-11-27T16:00:04.250+00:00", "Comments": "app 2.0.0", "Result": "Passed", "Measurements": []},
                 {"UniqueIdentifier": "\(testIDs[1])", "TestName": "identity", "TestStartTime": "2026-11-27T16:00:04.250+00:00",
                  "TestEndTime": "2026-11-27T16:00:04.750+00:00", "Comments": null, "Result": "Passed", "Measurements": []},
                 {"UniqueIdentifier": "\(testIDs[2])", "TestName": "test:battery-level", "TestStartTime": "2026-11-27T16:00:05.250+00:00",
                  "TestEndTime": "2026-11-27T16:00:06.250+00:00", "Comments": null, "Result": "Passed", "Measurements": [
                   {"$type": "CFX.Structures.NumericMeasurement, CFX",
                    "MeasuredValue": {"Value": 87.0, "ValueUnits": "%", "ExpectedValue": null, "ExpectedValueUnits": null,
                                      "MinimumAcceptableValue": 20.0, "MaximumAcceptableValue": 100.0},
                    "UniqueIdentifier": "\(measurementIDs[0])", "MeasurementName": "battery-level",
                    "TimeRecorded": "2026-11-27T16:00:06.250+00:00", "Sequence": 0, "Result": "Passed"}]},
                 {"UniqueIdentifier": "\(testIDs[3])", "TestName": "test:mic-sensitivity-left", "TestStartTime": "2026-11-27T16:00:06.250+00:00",
                  "TestEndTime": "2026-11-27T16:00:09.750+00:00", "Comments": "mic-sensitivity-left -47.25 dBFS is outside -44.00...-40.00",
                  "Result": "Failed", "Measurements": [
                   {"$type": "CFX.Structures.NumericMeasurement, CFX",
                    "MeasuredValue": {"Value": -47.25, "ValueUnits": "dBFS", "ExpectedValue": null, "ExpectedValueUnits": null,
                                      "MinimumAcceptableValue": -44.0, "MaximumAcceptableValue": -40.0},
                    "UniqueIdentifier": "\(measurementIDs[1])", "MeasurementName": "mic-sensitivity-left",
                    "TimeRecorded": "2026-11-27T16:00:09.750+00:00", "Sequence": 0, "Result": "Failed"}]}]}]}}
            """)
    }

    @Test func workCompleted() throws {
        try check(Self.mapper.workCompleted(Self.unit), """
            {"MessageName": "CFX.Production.WorkCompleted", "Version": "1.4", "TimeStamp": "2026-11-27T16:00:09.750+00:00",
             "UniqueID": "\(ids.completed)", "Source": "Tuneup.Station.s1", "Target": null, "RequestID": null,
             "MessageBody": {"$type": "CFX.Production.WorkCompleted, CFX", "TransactionID": "\(ids.transaction)", "Result": "Failed"}}
            """)
    }

    /// The ids are name-based: fixed values (a change would make every resend after an upgrade a new message), distinct
    /// per message, run, unit and station, and RFC 4122 version 5.
    @Test func uniqueIDsAreStableAndDistinct() {
        #expect(CFXIdentifier.uuid("Tuneup.Station.s1|HW-0001|7|WorkStarted") == ids.started)
        #expect(ids.started == "\(CFXIdentifier.uuid("Tuneup.Station.s1|HW-0001|7|WorkStarted"))")
        let all = [ids.transaction, ids.started, ids.personalized, ids.tested, ids.completed]
        #expect(Set(all).count == 5)
        for id in all {
            #expect(id.count == 36)
            #expect(Array(id)[14] == "5")
            #expect("89ab".contains(Array(id)[19]))
        }
        var other = Self.run
        other.id = RunID(8)
        #expect(Self.mapper.uniqueID(.workStarted, run: other) != ids.started)
        #expect(CFXMapper(source: "Tuneup.Station.s2").uniqueID(.workStarted, run: Self.run) != ids.started)
        // Pinned: the same run gives the same id in every version (an upgrade must not make a resend a new message).
        #expect(ids.tested == "32eeafe1-6590-559f-8773-5e9a67c7a23f")
    }

    /// The four messages in order; a run that never wrote the identity has no UnitsPersonalized; an aborted run
    /// completes as Aborted; the same run gives the same bytes.
    @Test func messagesOfARun() {
        let all = Self.mapper.messages(for: Self.unit)
        #expect(all.map(\.kind) == [.workStarted, .unitsPersonalized, .unitsTested, .workCompleted])
        #expect(Self.mapper.messages(for: Self.unit).map { $0.text() } == all.map { $0.text() })
        var early = Self.run
        early.steps = [StepRecord(name: "flash-application", startedAt: Self.date(0), endedAt: Self.date(1), outcome: .error)]
        early.outcome = .aborted
        let messages = Self.mapper.messages(for: CFXUnitRun(run: early, serial: nil, bluetoothAddress: nil, bluetoothName: nil))
        #expect(messages.map(\.kind) == [.workStarted, .unitsTested, .workCompleted])
        #expect(messages.last?.text().contains("\"Result\":\"Aborted\"") == true)
        #expect(messages.first?.text().contains("\"UnitIdentifier\":\"HW-0001\"") == true)
    }

    @Test func timesCarryMillisecondsAndTheOffset() {
        #expect(CFXTime.text(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000+00:00")
        #expect(CFXTime.text(Date(timeIntervalSince1970: 1.9996)) == "1970-01-01T00:00:02.000+00:00")
        #expect(CFXTime.text(Date(timeIntervalSince1970: 14400.5), timeZone: TimeZone(secondsFromGMT: -4 * 3600)!) == "1970-01-01T00:00:00.500-04:00")
    }
}
