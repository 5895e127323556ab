import Testing
@testable import Transport

@Suite struct LinkConditionsTests {
    @Test func parsesTheFullExample() throws {
        let c = try LinkConditions(parsing: "bw=700k,latency=15ms,corrupt=0.001,drop=0.01,stall=0.01:200ms,disconnect=100000,seed=7")
        #expect(c.bitsPerSecond == 700_000)
        #expect(c.latency == .milliseconds(15))
        #expect(c.corruptionRate == 0.001)
        #expect(c.dropRate == 0.01)
        #expect(c.stallRate == 0.01)
        #expect(c.stallDuration == .milliseconds(200))
        #expect(c.disconnectAfterBytes == 100_000)
        #expect(c.seed == 7)
        #expect(c.linkBufferBytes == 4096)
        #expect(c.description == "bw=700k,latency=15ms,corrupt=0.001,drop=0.01,stall=0.01:200ms,disconnect=100000,seed=7")
    }

    @Test func emptyAndNoneArePerfect() throws {
        #expect(try LinkConditions(parsing: "") == .perfect)
        #expect(try LinkConditions(parsing: "none") == .perfect)
        #expect(try LinkConditions(parsing: "  ") == .perfect)
        #expect(LinkConditions.perfect.description == "none")
    }

    @Test(arguments: [
        ("bw=9600", 9600), ("bw=115200", 115_200), ("bw=2M", 2_000_000), ("bw=1.5M", 1_500_000),
        ("bw=1G", 1_000_000_000), ("bw=700k", 700_000),
    ])
    func parsesBandwidths(spec: String, bps: Int) throws {
        #expect(try LinkConditions(parsing: spec).bitsPerSecond == bps)
    }

    @Test(arguments: [
        ("latency=0", Duration.zero), ("latency=250us", .microseconds(250)), ("latency=250µs", .microseconds(250)),
        ("latency=1s", .seconds(1)), ("latency=1.5ms", .microseconds(1500)), ("latency=100ns", .nanoseconds(100)),
    ])
    func parsesDurations(spec: String, latency: Duration) throws {
        #expect(try LinkConditions(parsing: spec).latency == latency)
    }

    @Test func parsesTheOtherForms() throws {
        let c = try LinkConditions(parsing: " bw = unlimited , corrupt=0.5% , disconnect=64KiB , seed=0x10 , buffer=1k ")
        #expect(c.bitsPerSecond == nil)
        #expect(c.corruptionRate == 0.005)
        #expect(c.disconnectAfterBytes == 65_536)
        #expect(c.seed == 16)
        #expect(c.linkBufferBytes == 1000)
        #expect(try LinkConditions(parsing: "drop=1").dropRate == 1)
        #expect(try LinkConditions(parsing: "corrupt=1e-4").corruptionRate == 0.0001)
    }

    @Test(arguments: [
        LinkConditions.perfect,
        LinkConditions(bitsPerSecond: 12_345, latency: .microseconds(1500), corruptionRate: 1e-5, dropRate: 0.25,
                       stallRate: 0.5, stallDuration: .seconds(2), disconnectAfterBytes: 99, seed: 42, linkBufferBytes: 512),
        LinkConditions(latency: .nanoseconds(7)),
    ])
    func descriptionRoundTrips(conditions: LinkConditions) throws {
        #expect(try LinkConditions(parsing: conditions.description) == conditions)
    }

    @Test(arguments: [
        ("bw", "'bw' is not KEY=VALUE"),
        ("speed=9600", "unknown key 'speed'"),
        ("bw=fast", "bad bandwidth 'fast'"),
        ("bw=0", "bad bandwidth '0'"),
        ("bw=-5", "bad bandwidth '-5'"),
        ("bw=1.5", "bad bandwidth '1.5'"),
        ("latency=15", "bad latency '15'"),
        ("latency=15m", "bad latency '15m'"),  // minutes or milliseconds? (15min is a duration, 15m is not)
        ("latency=-1ms", "bad latency '-1ms'"),
        ("corrupt=2", "bad corrupt rate '2'"),
        ("corrupt=-0.1", "bad corrupt rate '-0.1'"),
        ("drop=abc", "bad drop rate 'abc'"),
        ("stall=0.1", "bad stall '0.1'"),
        ("stall=0.1:forever", "bad stall '0.1:forever'"),
        ("stall=2:1s", "bad stall rate '2'"),
        ("disconnect=0", "bad disconnect '0'"),
        ("disconnect=lots", "bad disconnect 'lots'"),
        ("seed=-1", "bad seed '-1'"),
        ("seed=0xZZ", "bad seed '0xZZ'"),
        ("buffer=0", "bad buffer '0'"),
        ("bw=1k,bw=2k", "'bw' is given twice"),
        ("bw=1k,,drop=0", "'' is not KEY=VALUE"),
    ])
    func rejectsBadSpecs(spec: String, fragment: String) async {
        let error = await expectTransportError(.invalidAddress) { _ = try LinkConditions(parsing: spec) }
        #expect(error?.message.hasPrefix("bad link conditions '\(spec)': ") == true)
        #expect(error?.message.contains(fragment) == true, "message: \(error?.message ?? "-")")
        #expect(error?.message.contains("\n") == false)
    }

    @Test func linkConditionsUseTheSameCounts() throws {
        // k is 1000 in a disconnect byte count exactly as in a bandwidth (Support's Quantities), and KiB is 1024.
        #expect(try LinkConditions(parsing: "disconnect=64k").disconnectAfterBytes == 64_000)
        #expect(try LinkConditions(parsing: "disconnect=64KiB").disconnectAfterBytes == 65_536)
        #expect(try LinkConditions(parsing: "disconnect=0x100").disconnectAfterBytes == 256)
    }
}
