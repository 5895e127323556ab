import Records
import Testing

/// issue 31 §5 (planted: the first-pass yield alarm on `<=`): a window exactly at its minimum is no alarm; "below"
/// means below.
@Suite struct ProcessAlarmEdgeTests {
    func sample(firstPass: Bool) -> ProcessWindow.Sample {
        ProcessWindow.Sample(firstPass: firstPass, measurements: [])
    }

    @Test func aFirstPassYieldExactlyAtItsMinimumIsNoAlarm() {
        var window = ProcessWindow(size: 4)
        for first in [true, false, true, true] { window.add(sample(firstPass: first)) }
        #expect(window.firstPassYield == 0.75)
        #expect(window.alarm(SPCLimits(window: 4, minFirstPassYield: 0.75)) == nil, "exactly at the minimum")
        let below = window.alarm(SPCLimits(window: 4, minFirstPassYield: 0.76))
        #expect(below?.kind == .firstPassYield && below?.value == 0.75 && below?.limit == 0.76)
    }
}
