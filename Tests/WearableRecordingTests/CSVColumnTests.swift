import Foundation
import Testing
import WearableRecording

/// issue 31 §5: every value of a sample lands in the column its header names (the orientation's three angles too,
/// not only yaw).
@Suite struct CSVColumnTests {
    @Test func aSampleRowPutsEachValueUnderItsHeader() throws {
        var l = WearableLine(type: "sample")
        (l.sensor, l.timestamp, l.deviceTime, l.hostTime) = ("gameRotation", 7, 1100, 2.5)
        (l.x, l.y, l.z, l.w) = (0.125, -0.25, 0.5, 0.75)
        (l.biasX, l.biasY, l.biasZ, l.missingBefore) = (0.01, 0.02, 0.03, 4)
        (l.yaw, l.pitch, l.roll, l.epochMs) = (90, -5, 12.5, 1_700_000_000_000)
        let header = WearableLine.csvHeader.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let row = try #require(l.csvRow).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        #expect(header.count == row.count, "\(header) / \(row)")
        let cell = Dictionary(uniqueKeysWithValues: zip(header, row))
        #expect(cell["kind"] == "sample" && cell["sensor_or_gesture"] == "gameRotation")
        #expect(cell["timestamp"] == "7" && cell["device_time_ms"] == "1100" && cell["host_time_s"] == "2.5")
        #expect(cell["x"] == "0.125" && cell["y"] == "-0.25" && cell["z"] == "0.5" && cell["w"] == "0.75")
        #expect(cell["bias_x"] == "0.01" && cell["bias_y"] == "0.02" && cell["bias_z"] == "0.03")
        #expect(cell["missing_before"] == "4")
        #expect(cell["yaw_deg"] == "90.0", "\(cell)")
        #expect(cell["pitch_deg"] == "-5.0", "\(cell)")
        #expect(cell["roll_deg"] == "12.5", "\(cell)")
        #expect(cell["epoch_ms"] == "1700000000000" && cell["gap_s"] == "")
    }
}

extension CSVColumnTests {
    /// issue 31 §5 (planted: the reader putting pitch into roll): a sample line written as the recorder writes it
    /// (JSONEncoder) reads back field for field, the three angles each in its own.
    @Test func aSampleLineReadsBackFieldForField() throws {
        var l = WearableLine(type: "sample")
        (l.sensor, l.timestamp, l.deviceTime, l.hostTime) = ("gameRotation", 7, 1100, 2.5)
        (l.x, l.y, l.z, l.w) = (0.125, -0.25, 0.5, 0.75)
        (l.biasX, l.biasY, l.biasZ, l.missingBefore) = (0.01, 0.02, 0.03, 4)
        (l.yaw, l.pitch, l.roll, l.epochMs) = (90, -5, 12.5, 1_700_000_000_000)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let text = String(decoding: try encoder.encode(l), as: UTF8.self) + "\n"
        let read = try WearableRecordingContents(jsonLines: text, name: "r.jsonl").lines
        #expect(read.count == 1)
        let back = try #require(read.first)
        #expect(back.yaw == 90 && back.pitch == -5 && back.roll == 12.5, "\(back)")
        #expect(back == l, "\(back)")
    }
}

extension CSVColumnTests {
    /// issue 31 §5 (planted: the gesture row one column short): every row kind has a cell for every header column,
    /// its values under their own headers.
    @Test func everyRowKindHasTheHeadersColumns() throws {
        let header = WearableLine.csvHeader.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        var g = WearableLine(type: "gesture")
        (g.gesture, g.timestamp, g.deviceTime, g.hostTime, g.epochMs) = ("doubleTap", 3, 1500, 1.25, 1_700_000_000_500)
        var r = WearableLine(type: "event", event: "reconnected")
        (r.hostTime, r.gapSeconds) = (4.5, 2.25)
        for line in [g, r] {
            let row = try #require(line.csvRow).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            #expect(row.count == header.count, "\(line.type): \(row)")
        }
        let gesture = Dictionary(uniqueKeysWithValues: zip(header, try #require(g.csvRow).split(separator: ",", omittingEmptySubsequences: false).map(String.init)))
        #expect(gesture["kind"] == "gesture" && gesture["sensor_or_gesture"] == "doubleTap" && gesture["device_time_ms"] == "1500")
        #expect(gesture["epoch_ms"] == "1700000000500" && gesture["gap_s"] == "" && gesture["roll_deg"] == "", "\(gesture)")
        let reconnected = Dictionary(uniqueKeysWithValues: zip(header, try #require(r.csvRow).split(separator: ",", omittingEmptySubsequences: false).map(String.init)))
        #expect(reconnected["kind"] == "reconnected" && reconnected["host_time_s"] == "4.5" && reconnected["gap_s"] == "2.25", "\(reconnected)")
    }
}
