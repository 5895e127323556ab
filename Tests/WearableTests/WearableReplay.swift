// The checks the Wearable fuzzer makes on every input, shared by the fuzzer (tools/fuzz/wearable/run.sh compiles this
// file together with Sources/Failure, Sources/Wearable and tools/fuzz/wearable/FuzzWearable.swift) and by
// WearableFuzzRegressionTests, which replays every kept fuzzer input through it on a normal `swift test`. In the
// fuzzer build Wearable is not a module.
#if canImport(Wearable)
import Wearable
#endif

/// Which decoder an input goes to: its first byte modulo 8.
enum ReplayTarget: Int, CaseIterable, Sendable {
    case deviceInformation = 0, sensorInformation, sensorConfiguration, gestureInformation, gestureConfiguration,
         gestureData, sensorData, sensorDataWithParser

    /// The first byte that selects this target.
    var selector: UInt8 { UInt8(rawValue) }
}

/// What replaying one input gave, and every invariant it broke.
struct WearableReplay: Sendable {
    var target: ReplayTarget
    /// Nil when the decoder accepted the payload; else the refusal's code.
    var errorCode: String?
    /// Records decoded (sensor data targets).
    var records = 0
    /// Broken invariants, in words; empty when the codec behaved.
    var problems: [String] = []
}

/// Every sensor listed with plausible ranges: the information sensor data is decoded with when an input does not
/// carry a valid one of its own.
let replaySensorInformation: SensorInformation = {
    func entry(_ s: SensorType, _ scaled: Int16, _ raw: Int16) -> SensorInformation.Entry {
        SensorInformation.Entry(sensor: s, range: try! SensorRange(minScaled: -scaled, maxScaled: scaled, minRaw: -raw, maxRaw: raw),
                                availablePeriods: Set(SamplePeriod.allCases))
    }
    return try! SensorInformation([
        entry(.accelerometer, 16, 32767), entry(.gyroscope, 2000, 32767), entry(.rotation, 1, 16384),
        entry(.gameRotation, 1, 16384), entry(.orientation, 180, 32767), entry(.magnetometer, 4912, 32767),
        entry(.uncalibratedMagnetometer, 4912, 32767),
    ])
}()

/// Replays `input`: its first byte picks the decoder (`ReplayTarget`), the rest is the payload. For the sensor data
/// targets the second byte gives a number of SensorInformation entries (modulo 8) that follow, then the notification;
/// when there are none or they do not decode, `replaySensorInformation` is used.
///
/// Checks: an accepted payload re-encodes to the same bytes and decodes again to the same value; a refusal is a
/// `WearableError` with a known code, the `.device` category and one non-empty line; accepted sensor data has records
/// whose lengths add up to the payload, whose record-boundary prefixes decode to the first records and whose cut
/// prefixes are refused as truncated; every raw value scales to a finite value that scales back to itself; a parser
/// that refused a notification accepts a good one next. A trap is not caught: it ends the run, which is the failure.
func replayThroughWearableDecoders(_ input: [UInt8]) -> WearableReplay {
    let target = ReplayTarget(rawValue: Int((input.first ?? 0) % 8))!
    var result = WearableReplay(target: target)
    let payload = input.dropFirst()

    func refused(_ error: WearableError) {
        result.errorCode = error.code.rawValue
        if !WearableError.Code.allCases.contains(error.code) { result.problems.append("unknown code \(error.code)") }
        if error.category != .device { result.problems.append("\(error.code): category \(error.category) for device bytes") }
        if error.message.isEmpty || error.message.contains("\n") { result.problems.append("\(error.code): message \(error.message.debugDescription)") }
    }
    func roundTrip<V: Equatable>(_ what: String, _ bytes: ArraySlice<UInt8>, _ value: V, _ encode: (V) -> [UInt8],
                                 _ decode: ([UInt8]) throws(WearableError) -> V) {
        let again = encode(value)
        if again != Array(bytes) { result.problems.append("\(what): re-encoding gave \(again.count) different bytes") }
        do throws(WearableError) {
            if try decode(again) != value { result.problems.append("\(what): decode(encode(v)) != v") }
        } catch {
            result.problems.append("\(what): its own encoding is refused: \(error)")
        }
    }
    func check<V: Equatable>(_ what: String, _ decode: (ArraySlice<UInt8>) throws(WearableError) -> V, _ encode: (V) -> [UInt8]) {
        do throws(WearableError) {
            let value = try decode(payload)
            roundTrip(what, payload, value, encode) { (b: [UInt8]) throws(WearableError) in try decode(b[...]) }
        } catch {
            refused(error)
        }
    }

    switch target {
    case .deviceInformation: check("device information", { (b: ArraySlice<UInt8>) throws(WearableError) in try DeviceInformation(decoding: b) }, { $0.encoded() })
    case .sensorInformation: check("sensor information", { (b: ArraySlice<UInt8>) throws(WearableError) in try SensorInformation(decoding: b) }, { $0.encoded() })
    case .sensorConfiguration: check("sensor configuration", { (b: ArraySlice<UInt8>) throws(WearableError) in try SensorConfiguration(decoding: b) }, { $0.encoded() })
    case .gestureInformation: check("gesture information", { (b: ArraySlice<UInt8>) throws(WearableError) in try GestureInformation(decoding: b) }, { $0.encoded() })
    case .gestureConfiguration: check("gesture configuration", { (b: ArraySlice<UInt8>) throws(WearableError) in try GestureConfiguration(decoding: b) }, { $0.encoded() })
    case .gestureData: check("gesture data", { (b: ArraySlice<UInt8>) throws(WearableError) in try GestureData(decoding: b) }, { $0.encoded() })
    case .sensorData, .sensorDataWithParser:
        let entries = Int((payload.first ?? 0) % 8)
        let infoEnd = min(payload.endIndex, payload.startIndex + 1 + entries * SensorInformation.entryLength)
        let infoBytes = payload.isEmpty ? payload : payload[(payload.startIndex + 1)..<infoEnd]
        let carried = try? SensorInformation(decoding: infoBytes)
        let information = carried.flatMap { $0.entries.isEmpty ? nil : $0 } ?? replaySensorInformation
        let notification = payload[infoEnd...]
        if target == .sensorData {
            checkLayoutAgrees(notification, information, &result)
            if let error = checkSensorData(notification, information, &result) { refused(error) }
        } else {
            checkParser(notification, information, &result)
        }
    }
    return result
}

/// The in-place layout check accepts exactly what the decoder accepts, with the same records.
private func checkLayoutAgrees(_ bytes: ArraySlice<UInt8>, _ information: SensorInformation, _ result: inout WearableReplay) {
    let decoded = try? SensorDataNotification(decoding: bytes, using: information)
    var viewed: [SensorRecord] = []
    var unreadable = false
    let count = Array(bytes).withUnsafeBytes { raw in
        SensorDataLayout(information: information).forEachRecord(in: raw) { view in
            if let record = try? view.record() { viewed.append(record) } else { unreadable = true }
        }
    }
    if (count != nil) != (decoded != nil) {
        result.problems.append("sensor data: the layout \(count == nil ? "refused" : "accepted") what the decoder \(decoded == nil ? "refused" : "accepted")")
    } else if let decoded, unreadable || viewed != decoded.records || count != decoded.records.count {
        result.problems.append("sensor data: the layout's records differ from the decoder's")
    }
}

/// Checks accepted sensor data; returns the refusal when the decoder refused it.
private func checkSensorData(_ bytes: ArraySlice<UInt8>, _ information: SensorInformation, _ result: inout WearableReplay) -> WearableError? {
    let decoded: SensorDataNotification
    do throws(WearableError) {
        decoded = try SensorDataNotification(decoding: bytes, using: information)
    } catch {
        return error
    }
    result.records = decoded.records.count
    let again = decoded.encoded()
    if again != Array(bytes) { result.problems.append("sensor data: re-encoding changed the bytes") }
    if (try? SensorDataNotification(decoding: again, using: information)) != decoded {
        result.problems.append("sensor data: decode(encode(v)) != v")
    }
    if decoded.records.reduce(0, { $0 + $1.length }) != bytes.count {
        result.problems.append("sensor data: record lengths do not add up to \(bytes.count)")
    }
    var boundary = bytes.startIndex
    for (k, record) in decoded.records.enumerated() {
        guard let entry = information[record.sensor] else {
            result.problems.append("sensor data: record \(k) of unlisted \(record.sensor) accepted")
            continue
        }
        if record.length != SensorRecord.headerLength + entry.sampleLength {
            result.problems.append("sensor data: record \(k) is not \(entry.sampleLength) + 3 bytes")
        }
        checkScaling(record.sample, entry.range, &result)
        // A cut inside the record is refused as truncated; its end is a valid notification of the first k + 1 records.
        let end = boundary + record.length
        for cut in [boundary + 1, end - 1] where cut > bytes.startIndex {
            do throws(WearableError) {
                _ = try SensorDataNotification(decoding: bytes[bytes.startIndex..<cut], using: information)
                result.problems.append("sensor data: a prefix cut inside record \(k) was accepted")
            } catch {
                if error.code != .truncated { result.problems.append("sensor data: a cut record gave \(error.code)") }
            }
        }
        if (try? SensorDataNotification(decoding: bytes[bytes.startIndex..<end], using: information).records) != Array(decoded.records.prefix(k + 1)) {
            result.problems.append("sensor data: the first \(k + 1) records alone did not decode to themselves")
        }
        boundary = end
    }
    return nil
}

/// Every raw value of `sample` scales to a finite value that scales back to the same raw value.
private func checkScaling(_ sample: SensorSample, _ range: SensorRange, _ result: inout WearableReplay) {
    let value = sample.scaled(by: range)
    do throws(WearableError) {
        let back = try SensorSample(sensor: sample.sensor, value: value, in: range)
        if back != sample { result.problems.append("scaling: \(sample) came back as \(back)") }
    } catch {
        result.problems.append("scaling: \(sample) does not scale back: \(error)")
    }
}

/// A parser given the notification and then a known-good one: counts add up, and the good one is accepted whatever
/// came before.
private func checkParser(_ bytes: ArraySlice<UInt8>, _ information: SensorInformation, _ result: inout WearableReplay) {
    var parser = SensorDataParser(information: information)
    let first = parser.parse(bytes)
    switch first {
    case .success(let records): result.records = records.count
    case .failure(let error): result.errorCode = error.code.rawValue
    }
    let sensor = information.entries.first?.sensor
    if let sensor {
        let sample: SensorSample
        switch sensor {
        case .accelerometer: sample = .accelerometer(RawVector(x: 1, y: 2, z: 3), accuracy: .high)
        case .gyroscope: sample = .gyroscope(RawVector(x: 1, y: 2, z: 3), accuracy: .low)
        case .rotation: sample = .rotation(RawQuaternion(x: 0, y: 0, z: 0, w: 1), accuracy: 7)
        case .gameRotation: sample = .gameRotation(RawQuaternion(x: 0, y: 0, z: 0, w: 1))
        case .orientation: sample = .orientation(RawVector(x: 1, y: 2, z: 3), accuracy: .medium)
        case .magnetometer: sample = .magnetometer(RawVector(x: 1, y: 2, z: 3), accuracy: .unreliable)
        case .uncalibratedMagnetometer: sample = .uncalibratedMagnetometer(RawVector(x: 1, y: 2, z: 3), bias: RawVector(x: 4, y: 5, z: 6))
        }
        let good = try! SensorDataNotification(records: [SensorRecord(timestamp: 9, sample: sample)])
        if case .success(let records) = parser.parse(good.encoded()), records == good.records {} else {
            result.problems.append("parser: a good notification after the input was not accepted")
        }
    }
    let s = parser.statistics
    let seen = 1 + (sensor == nil ? 0 : 1)
    if s.accepted + s.refused != seen { result.problems.append("parser: \(s.accepted) accepted + \(s.refused) refused != \(seen)") }
    if s.refusedByCode.values.reduce(0, +) != s.refused { result.problems.append("parser: refusals by code do not add up") }
    if case .failure(let error) = first, parser.statistics.refusedByCode[error.code] != 1 || parser.lastError?.code != error.code {
        result.problems.append("parser: the refusal was not counted under \(error.code)")
    }
}
