/// Units per hour: one definition for the station's totals, the records report and the line dashboard.
///
/// A rate over a span shorter than `minimumSeconds` says nothing about an hour (one unit that erred in 4 ms is not
/// "828983 units/h"), so it is nil then, shown as "-"; it is never divided by a span of zero.
public enum Throughput {
    /// The shortest span a rate is given for: one minute.
    public static let minimumSeconds: Double = 60

    /// `units` × 3600 / `seconds`, or nil when `seconds` is shorter than `minimumSeconds` (or not a number).
    public static func unitsPerHour(_ units: Int, seconds: Double) -> Double? {
        guard seconds.isFinite, seconds >= minimumSeconds else { return nil }
        return Double(units) * 3600 / seconds
    }
}
