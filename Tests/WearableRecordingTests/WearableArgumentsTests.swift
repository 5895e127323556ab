import Testing
import Wearable
import WearableRecording

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
