import Testing
import Wearable

/// Every way a payload can be wrong is refused with its stable code and one line, never a trap; values that cannot
/// exist cannot be built either.
@Suite struct BadInputTests {
    static let info = TestVectorTests.sensorInformation  // accelerometer, gyroscope, rotation, gameRotation
    static let accelerometerRecord = bytes("00 12 34 10 00 f0 00 00 00 03")

    /// The code `body` throws, and checks its message is one non-empty line in the `.device` category.
    func refusal(_ body: () throws(WearableError) -> Void, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        do throws(WearableError) {
            try body()
            return nil
        } catch {
            #expect(!error.message.isEmpty && !error.message.contains("\n"), sourceLocation: sourceLocation)
            #expect(error.category == .device, sourceLocation: sourceLocation)
            return error.code.rawValue
        }
    }

    @Test func deviceInformation() {
        let good = bytes("01 02 40 20 01 00 00 00 0f 00 00 00 0f 28 00 b4 03 00 05")
        func code(_ b: [UInt8]) -> String? { refusal { () throws(WearableError) in _ = try DeviceInformation(decoding: b) } }
        #expect(code(good) == nil)
        #expect(code([]) == "truncated")
        #expect(code(Array(good.dropLast())) == "truncated")
        #expect(code(good + [0]) == "malformed")
        var b = good; b[8] = 0x80  // sensor bit 7
        #expect(code(b) == "reserved-bits")
        b = good; b[5] = 0x80  // sensor bit 31
        #expect(code(b) == "reserved-bits")
        b = good; b[12] = 0x10  // gesture bit 4 (a later gesture)
        #expect(code(b) == "reserved-bits")
        b = good; b[17] = 0x00; b[18] = 0x10  // status bit 4
        #expect(code(b) == "reserved-bits")
        b = good; b[17] = 0x80  // status bit 15
        #expect(code(b) == "reserved-bits")
    }

    @Test func sensorInformation() {
        let good = bytes(TestVectorTests.sensorInformationHex)
        func code(_ b: [UInt8]) -> String? { refusal { () throws(WearableError) in _ = try SensorInformation(decoding: b) } }
        #expect(code(good) == nil)
        for cut in [1, 11, 13, 47] { #expect(code(Array(good.prefix(cut))) == "truncated", "\(cut) bytes") }
        var b = good; b[12] = 7
        #expect(code(b) == "unknown-sensor")
        b = good; b[0] = 0xFF
        #expect(code(b) == "unknown-sensor")
        b = good; b[12] = 0  // accelerometer twice
        #expect(code(b) == "duplicate-entry")
        b = good; b[5...8] = [0x12, 0x34, 0x12, 0x34]  // minRaw == maxRaw: division by zero
        #expect(code(b) == "invalid-range")
        b = good; b[1...4] = [0x00, 0x10, 0xff, 0xf0]  // minScaled > maxScaled
        #expect(code(b) == "invalid-range")
        b = good; b[1...4] = [0x00, 0x00, 0x00, 0x00]  // a zero scaled span
        #expect(code(b) == "invalid-range")
        b = good; b[10] = 0x20  // period bit 5
        #expect(code(b) == "reserved-bits")
        b = good; b[9] = 0x80  // period bit 15
        #expect(code(b) == "reserved-bits")
        for length: UInt8 in [0, 6, 8, 10, 0xFF] {
            b = good; b[11] = length  // the accelerometer's sample is 7 bytes
            #expect(code(b) == "sample-length-mismatch", "\(length)")
        }
        b = good; b[47] = 10  // the gameRotation's sample is 8 bytes, not rotation's 10
        #expect(code(b) == "sample-length-mismatch")
        // The message names the entry and its offset.
        b = good; b[24] = 9
        do {
            _ = try SensorInformation(decoding: b)
            Issue.record("accepted")
        } catch {
            #expect(error.message == "sensor information: entry 2 (offset 24): unknown sensor id 9")
        }
    }

    @Test func sensorConfiguration() {
        func code(_ text: String) -> String? { refusal { () throws(WearableError) in _ = try SensorConfiguration(decoding: bytes(text)) } }
        #expect(code("") == nil)
        #expect(code("00 00 14 01 00 14") == nil)
        #expect(code("00 00") == "truncated")
        #expect(code("00 00 14 01") == "truncated")
        #expect(code("07 00 14") == "unknown-sensor")
        for period in ["00 01", "00 04", "00 0a", "00 15", "01 3f", "ff ff"] {
            #expect(code("00 " + period) == "unknown-period", "\(period)")
        }
        #expect(code("00 00 14 01 00 28") == "mixed-periods")
        #expect(code("00 00 14 01 00 00 02 01 40") == "mixed-periods")
        #expect(code("00 00 00 00 00 00") == "duplicate-entry")
        #expect(code("00 00 14 02 00 00 00 00 14") == "duplicate-entry")
    }

    @Test func sensorData() {
        func code(_ b: [UInt8], _ info: SensorInformation = Self.info) -> String? {
            refusal { () throws(WearableError) in _ = try SensorDataNotification(decoding: b, using: info) }
        }
        let record = Self.accelerometerRecord
        #expect(code(record) == nil)
        #expect(code([]) == "truncated")
        for cut in 1..<record.count { #expect(code(Array(record.prefix(cut))) == "truncated", "\(cut) bytes") }
        for cut in 1..<record.count { #expect(code(record + record.prefix(cut)) == "truncated", "a second record of \(cut) bytes") }
        #expect(code(bytes("07 00 00 00 00 00 00 00 00 00")) == "unknown-sensor")
        #expect(code(record + [0xFF]) == "unknown-sensor")
        #expect(code(bytes("05 00 00 00 00 00 00 00 00 03")) == "sensor-not-listed")  // a magnetometer: not in the information
        #expect(code(record, try! SensorInformation([])) == "sensor-not-listed")
        var b = record; b[9] = 4
        #expect(code(b) == "malformed")  // accuracy above 3
        b = record; b[9] = 0xFF
        #expect(code(b) == "malformed")
        // A rotation record's length read as gameRotation's (10 vs 8 bytes): the rest does not add up.
        let rotation = bytes("02 00 01 00 00 00 00 00 00 40 00 00 c8")
        #expect(code(rotation) == nil)
        var asGame = rotation; asGame[0] = 3
        #expect(code(asGame) == "truncated")  // 11 bytes of gameRotation, then "00 c8" starts an accelerometer record
        // The message names the record and its offset.
        do {
            _ = try SensorDataNotification(decoding: record + [7] + record.dropFirst(), using: Self.info)
            Issue.record("accepted")
        } catch {
            #expect(error.message == "sensor data: record 1 (offset 10): unknown sensor id 7")
        }
    }

    @Test func gestures() {
        func info(_ t: String) -> String? { refusal { () throws(WearableError) in _ = try GestureInformation(decoding: bytes(t)) } }
        func config(_ t: String) -> String? { refusal { () throws(WearableError) in _ = try GestureConfiguration(decoding: bytes(t)) } }
        func data(_ t: String) -> String? { refusal { () throws(WearableError) in _ = try GestureData(decoding: bytes(t)) } }
        #expect(info("") == nil && info("80 00 00") == nil)
        #expect(info("80 00") == "truncated" && info("80 00 00 81") == "truncated")
        #expect(info("84 00 00") == "unknown-gesture" && info("00 00 00") == "unknown-gesture" && info("7f 00 00") == "unknown-gesture")
        #expect(info("80 00 00 80 00 01") == "duplicate-entry")
        #expect(config("") == nil && config("80 01") == nil)
        #expect(config("80") == "truncated" && config("80 01 81") == "truncated")
        #expect(config("80 02") == "malformed" && config("80 ff") == "malformed")
        #expect(config("ff 01") == "unknown-gesture")
        #expect(config("81 01 81 00") == "duplicate-entry")
        #expect(data("81 00 01") == nil)
        #expect(data("") == "truncated" && data("81 00") == "truncated")
        #expect(data("81 00 01 00") == "malformed")
        #expect(data("84 00 01") == "unknown-gesture")
    }

    @Test func valuesThatCannotExistCannotBeBuilt() throws {
        let range = try SensorRange(minScaled: -1, maxScaled: 1, minRaw: -1, maxRaw: 1)
        let entry = SensorInformation.Entry(sensor: .gyroscope, range: range, availablePeriods: [])
        #expect(throws: WearableError(.duplicateEntry, "")) { try SensorInformation([entry, entry]) }
        #expect(throws: WearableError(.mixedPeriods, "")) {
            try SensorConfiguration([.init(sensor: .accelerometer, period: ._20ms), .init(sensor: .gyroscope, period: ._40ms)])
        }
        #expect(throws: WearableError(.duplicateEntry, "")) {
            try SensorConfiguration([.init(sensor: .accelerometer, period: nil), .init(sensor: .accelerometer, period: nil)])
        }
        #expect(throws: WearableError(.truncated, "")) { try SensorDataNotification(records: []) }
        #expect(throws: WearableError(.duplicateEntry, "")) {
            try GestureInformation([.init(gesture: .headNod, payloadLength: 0), .init(gesture: .headNod, payloadLength: 1)])
        }
        #expect(throws: WearableError(.duplicateEntry, "")) {
            try GestureConfiguration([.init(gesture: .headNod, enabled: true), .init(gesture: .headNod, enabled: true)])
        }
        #expect(throws: WearableError(.reservedBits, "")) { try DeviceStatus(rawValue: 0x0010) }
        let error = try #require(throws: WearableError.self) { try SensorInformation([entry, entry]) }
        #expect(error.category == .usage)
    }

    /// A stream of notifications, some bad: each bad one is counted by its code and skipped, the good ones around it
    /// are decoded as if nothing happened.
    @Test func aParserCountsAndSkipsBadNotifications() throws {
        var parser = SensorDataParser(information: Self.info)
        let good = Self.accelerometerRecord + bytes("03 00 02 40 00 00 00 00 00 00 00")
        let stream: [[UInt8]] = [good, [], good, bytes("07 00 00"), Array(good.dropLast()), good, good + [5], bytes("05 00 00 00 00 00 00 00 00 03"), good]
        var decoded: [[SensorRecord]] = []
        var refusals: [String] = []
        for notification in stream {
            switch parser.parse(notification) {
            case .success(let records): decoded.append(records)
            case .failure(let error): refusals.append(error.code.rawValue)
            }
        }
        #expect(decoded.count == 4 && Set(decoded.map { $0.map(\.sensor) }) == [[.accelerometer, .gameRotation]])
        #expect(refusals == ["truncated", "unknown-sensor", "truncated", "sensor-not-listed", "sensor-not-listed"])
        #expect(parser.statistics.accepted == 4 && parser.statistics.records == 8 && parser.statistics.refused == 5)
        #expect(parser.statistics.refusedByCode == [.truncated: 2, .unknownSensor: 1, .sensorNotListed: 2])
        #expect(parser.lastError?.code == .sensorNotListed)
    }

    /// The views path (`parseViews`: the kept shape checked in place, else a walk) accepts, refuses and counts
    /// exactly as `parse` does, hands out the same records, and re-checks the accuracy byte of a known shape.
    @Test func viewsAgreeWithTheDecoder() throws {
        let good = Self.accelerometerRecord + bytes("03 00 02 40 00 00 00 00 00 00 00")
        var badAccuracy = good
        badAccuracy[9] = 4   // the accelerometer's accuracy byte: the same shape, out of 0...3
        let other = bytes("01 00 05 00 01 00 02 00 03 02") + Self.accelerometerRecord
        let stream: [[UInt8]] = [good, [], good, badAccuracy, bytes("07 00 00"), Array(good.dropLast()), other, good, good + [5], other,
                                 bytes("05 00 00 00 00 00 00 00 00 03"), good]
        var decoder = SensorDataParser(information: Self.info), views = SensorDataParser(information: Self.info)
        for notification in stream {
            var viewed: [SensorRecord] = []
            var handed = 0
            let accepted = views.parseViews(notification) { view in
                handed += 1
                if let record = try? view.record() { viewed.append(record) }
            }
            switch decoder.parse(notification) {
            case .success(let records): #expect(accepted && viewed == records && handed == records.count, "\(notification)")
            case .failure(let error):
                #expect(!accepted && handed == 0, "\(notification)")
                #expect(views.lastError?.code == error.code)
            }
        }
        #expect(views.statistics == decoder.statistics)
        #expect(views.statistics.accepted == 6 && views.statistics.refused == 6, "\(views.statistics)")
    }

    @Test func everyCodeIsDistinctAndKebabCase() {
        let names = WearableError.Code.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count)
        #expect(names.allSatisfy { $0.allSatisfy { $0.isLowercase || $0 == "-" } })
        #expect(WearableError(.truncated, "a") == WearableError(.truncated, "b"), "errors compare by code")
    }
}
