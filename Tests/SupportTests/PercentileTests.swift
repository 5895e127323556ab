import Support
import Testing

@Suite struct PercentileTests {
    @Test func nearestRankOnHandCountedValues() {
        let ten = (1...10).map(Double.init)
        #expect(Percentile.of(sorted: ten, 0) == 1)
        #expect(Percentile.of(sorted: ten, 10) == 1)
        #expect(Percentile.of(sorted: ten, 11) == 2)
        #expect(Percentile.of(sorted: ten, 50) == 5)
        #expect(Percentile.of(sorted: ten, 90) == 9)
        #expect(Percentile.of(sorted: ten, 99) == 10)
        #expect(Percentile.of(sorted: ten, 100) == 10)
        // The median of an even count is the lower middle value, of an odd count the middle one.
        #expect(Percentile.of(sorted: [1, 2, 3, 4], 50) == 2)
        #expect(Percentile.of(sorted: [1, 2, 3, 4, 5], 50) == 3)
        // p99 of 1000 values is the 990th, not the 991st or the largest.
        let thousand = Array(1...1000)
        #expect(Percentile.of(sorted: thousand, 99) == 990)
    }

    @Test func edgesAreClampedAndEmptyIsNil() {
        #expect(Percentile.of(sorted: [Int](), 50) == nil)
        #expect(Percentile.of(sorted: [7], 0) == 7)
        #expect(Percentile.of(sorted: [7], 100) == 7)
        #expect(Percentile.of(sorted: [1, 2, 3], -5) == 1)
        #expect(Percentile.of(sorted: [1, 2, 3], 250) == 3)
        #expect(Percentile.of(sorted: [1, 2, 3], .nan) == 1)
    }
}
