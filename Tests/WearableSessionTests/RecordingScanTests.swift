import Foundation
import Testing
import WearableRecording

/// The recording reader scans flat sample lines itself (a 30-minute recording is 180k of them): it must read exactly
/// what JSONDecoder reads, and leave everything else to it.
@Suite struct RecordingScanTests {
    static let lines = [
        #"{"accuracy":3,"deviceTime":20,"epochMs":1800000000020,"hostTime":0.0458,"missingBefore":0,"sensor":"accelerometer","timestamp":20,"type":"sample","x":-0.000244144,"y":-0.00024,"z":0.99977}"#,
        #"{"deviceTime":65556,"estimatedAccuracy":0.012207,"hostTime":1.5,"missingBefore":2,"pitch":-1.5e-3,"roll":0,"sensor":"rotation","timestamp":20,"type":"sample","w":0.866028,"x":0,"y":0,"yaw":60,"z":0.5}"#,
        #"{ "type" : "sample", "sensor":"uncalibratedMagnetometer","deviceTime":7,"x":1E2,"y":-2,"z":3,"biasX":0.5,"biasY":-0.5,"biasZ":1e-9 } "#,
        // Left to the decoder: an escape, an event, a key the scan does not know, a gesture.
        #"{"deviceTime":20,"sensor":"accel\u0065rometer","type":"sample","x":1,"y":2,"z":3}"#,
        #"{"attempts":1,"event":"reconnected","gapSeconds":0.008356,"hostTime":0.83663,"reconnects":1,"type":"event"}"#,
        #"{"deviceTime":2711,"gesture":"headNod","hostTime":1.691788,"timestamp":2711,"type":"gesture"}"#,
    ]

    @Test func theScanReadsWhatTheDecoderReads() throws {
        let read = try WearableRecordingContents(jsonLines: Self.lines.joined(separator: "\n") + "\n", name: "t")
        let decoded = try Self.lines.map { try JSONDecoder().decode(WearableLine.self, from: Data($0.utf8)) }
        #expect(read.lines == decoded)
        #expect(read.lines[3].sensor == "accelerometer")
    }

    @Test(arguments: [
        #"{"deviceTime":20,"sensor":"accelerometer","type":"sample","x":nan,"y":2,"z":3}"#,
        #"{"deviceTime":2.5,"sensor":"accelerometer","type":"sample","x":1,"y":2,"z":3}"#,
        #"{"deviceTime":20,"sensor":"accelerometer","type":"sample","x":1,"y":2,"z":3"#,
        #"{"deviceTime":20,"sensor":"accelerometer","type":"sample","x":1,"y":2,"z":3}}"#,
        #"{"deviceTime":20,"sensor":"accelerometer","type":"sampled","x":1}"#,
    ])
    func whatNeitherReadsIsRefused(line: String) {
        #expect(throws: WearableRecordingContents.NotARecording.self) { try WearableRecordingContents(jsonLines: line, name: "t") }
    }
}
