import Testing
import Wearable
@testable import WearableRecording

/// Sensors, gestures and periods as the wearable commands take them, read by the library (issue 31 §1).
struct WearableArgumentsTests {
    @Test func namesIdsAndPeriods() throws {
        #expect(try WearableText.sensorArgument("game-rotation") == .gameRotation)
        #expect(try WearableText.gestureArgument("0x81") == GestureType(rawValue: 0x81))
        #expect(try WearableText.periodArgument("40ms") == SamplePeriod(milliseconds: 40))
        #expect(try WearableText.periodArgument("20") == SamplePeriod(milliseconds: 20))
        let negative = #expect(throws: WearableArgumentError.self) { try WearableText.sensorArgument("-1") }
        #expect(negative?.message.hasPrefix("unknown sensor '-1' (") == true && negative?.category == .usage)
        let period = #expect(throws: WearableArgumentError.self) { try WearableText.periodArgument("30ms", option: "--every") }
        #expect(period?.message == "--every '30ms' is not a sample period (320ms, 160ms, 80ms, 40ms or 20ms)")
    }
}

/// `record`'s text, made by the library (issue 31 §1).
struct WrittenTextTests {
    @Test func theSummaryThenWhatWasWrittenWhere() {
        let written = WearableStreaming.Written(jsonl: "/t/a.jsonl", csv: "/t/a.csv", split: ["/t/a.accelerometer.csv"], samples: 1, gestures: 2,
                                                summary: WearableLine(type: "summary"))
        #expect(written.text.hasSuffix("\nwrote 1 sample and 2 gestures to /t/a.jsonl, /t/a.csv, /t/a.accelerometer.csv"))
        #expect(written.text.hasPrefix(WearableText.summary(WearableLine(type: "summary"))))
    }
}
