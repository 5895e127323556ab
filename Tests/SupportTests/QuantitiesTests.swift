import Testing
@testable import Support

/// One grammar for counts and durations: SI suffixes are decimal, binary suffixes binary, everywhere; a duration
/// needs its unit.
@Suite struct QuantitiesTests {
    @Test(arguments: [
        ("4096", 4096), ("0x1000", 4096), ("0x1", 1), ("4KiB", 4096), ("4k", 4000), ("1.5k", 1500), ("2M", 2_000_000),
        ("1MiB", 1_048_576), ("1GiB", 1 << 30), ("0", 0), ("0x2KiB", 2048),
    ])
    func countsParse(text: String, value: Int) {
        #expect(Quantities.parseCount(text) == value, "\(text)")
    }

    @Test(arguments: ["", "K", "4K", "4 KiB", "-1", "1.25", "0x", "0xZZ", "1e3", "99999999999999999999", "4kb", "abc"])
    func badCountsAreRefused(text: String) {
        #expect(Quantities.parseCount(text) == nil, "\(text)")
    }

    @Test(arguments: [("50ms", Duration.milliseconds(50)), ("0.5s", .milliseconds(500)), ("250us", .microseconds(250)),
                      ("250µs", .microseconds(250)), ("100ns", .nanoseconds(100)), ("0", .zero)])
    func durationsParse(text: String, value: Duration) {
        #expect(Quantities.parseDuration(text) == value, "\(text)")
    }

    @Test(arguments: ["50", "1.5", "", "ms", "5 ms", "-5ms", "5m", "1e3ms"])
    func durationsNeedAUnit(text: String) {
        #expect(Quantities.parseDuration(text) == nil, "\(text)")
    }

    /// Minutes and hours are units like the others (the wearable's --duration offered "2min" and refused it).
    @Test(arguments: [("2min", Duration.seconds(120)), ("1min", .seconds(60)), ("1.5min", .seconds(90)), ("1h", .seconds(3600)),
                      ("24h", .seconds(86400)), ("0.5h", .seconds(1800)), ("10s", .seconds(10)), ("500ms", .milliseconds(500))])
    func minutesAndHoursParse(text: String, value: Duration) {
        #expect(Quantities.parseDuration(text) == value, "\(text)")
        #expect(Quantities.parseDuration(text, bare: .seconds(1)) == value, "\(text)")
    }

    /// Where an option counts in seconds, a plain number (with a fraction) is seconds; elsewhere it is still refused.
    @Test(arguments: [("10", Duration.seconds(10)), ("2.5", .milliseconds(2500)), ("0", .zero), ("86400", .seconds(86400)), ("0.02", .milliseconds(20))])
    func aBareNumberIsSecondsWhereTheOptionSaysSo(text: String, value: Duration) {
        #expect(Quantities.parseDuration(text, bare: .seconds(1)) == value, "\(text)")
        #expect(Quantities.parseDuration(text) == (text == "0" ? .zero : nil), "\(text)")
    }

    @Test(arguments: ["2m", "2mins", "1hr", "h", "min", "-1", "-1min", "1e3", "1 h", "2min30s", "..5s", "1.2.3", "abc", ""])
    func badDurationsAreRefusedEvenWithABareUnit(text: String) {
        #expect(Quantities.parseDuration(text, bare: .seconds(1)) == nil, "\(text)")
    }

    @Test func theFormsInMessagesAllParse() {
        for form in ["500ms", "10s", "2min", "1h"] {
            #expect(Quantities.durationForms.contains(form) && Quantities.parseDuration(form) != nil, "\(form)")
        }
    }
}
