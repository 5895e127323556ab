import Testing
import Transport

@Suite struct DurationTests {
    @Test func shortDescriptions() {
        #expect(Duration.seconds(10).shortDescription == "10 s")
        #expect(Duration.milliseconds(1500).shortDescription == "1.5 s")
        #expect(Duration.milliseconds(250).shortDescription == "250 ms")
        #expect(Duration.microseconds(40).shortDescription == "40 µs")
        #expect(Duration.zero.shortDescription == "0 s")
    }
}
