extension Duration {
    /// For messages: "5 s", "1.5 s", "250 ms", "40 µs".
    public var shortDescription: String {
        let (seconds, attoseconds) = components
        if seconds >= 1 || self == .zero {
            let tenths = Int64(attoseconds / 100_000_000_000_000_000)
            return tenths == 0 ? "\(seconds) s" : "\(seconds).\(tenths) s"
        }
        let ms = attoseconds / 1_000_000_000_000_000
        return ms >= 1 ? "\(ms) ms" : "\(attoseconds / 1_000_000_000_000) µs"
    }
}
