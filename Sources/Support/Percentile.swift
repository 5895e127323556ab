/// The one percentile definition of the project (benchmarks, playback analysis): the **nearest-rank** rule. The p-th
/// percentile (0...100) of n values sorted ascending is the value of rank ⌈p/100 × n⌉ (1-based), the smallest value
/// for p = 0 — always one of the values, never an interpolation. The median is the 50th percentile: of 4 values the
/// 2nd, of 5 the 3rd.
public enum Percentile {
    /// The 0-based index of the p-th percentile in `count` sorted values (`count` > 0; p clamped to 0...100).
    public static func index(_ p: Double, count: Int) -> Int {
        precondition(count > 0, "a percentile of no values")
        let clamped = p.isNaN ? 0 : Swift.min(100, Swift.max(0, p))
        let rank = Int((clamped / 100 * Double(count)).rounded(.up))
        return Swift.min(count - 1, Swift.max(0, rank - 1))
    }

    /// The p-th percentile of values already sorted ascending; nil when there are none.
    public static func of<Value>(sorted values: [Value], _ p: Double) -> Value? {
        values.isEmpty ? nil : values[index(p, count: values.count)]
    }
}
