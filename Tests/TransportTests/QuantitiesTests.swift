import Testing
@testable import Transport

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

    @Test func linkConditionsUseTheSameCounts() throws {
        // k is 1000 in a disconnect byte count exactly as in a bandwidth, and KiB is 1024.
        #expect(try LinkConditions(parsing: "disconnect=64k").disconnectAfterBytes == 64_000)
        #expect(try LinkConditions(parsing: "disconnect=64KiB").disconnectAfterBytes == 65_536)
        #expect(try LinkConditions(parsing: "disconnect=0x100").disconnectAfterBytes == 256)
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
}
