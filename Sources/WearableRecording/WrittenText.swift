extension WearableStreaming.Written {
    /// The recording's summary, then "wrote 120 samples and 2 gestures to PATH.jsonl, PATH.csv, ..." (`record`'s text).
    public var text: String {
        let paths = [jsonl, csv] + (split ?? [])
        return WearableText.summary(summary) + "\nwrote \(WearableText.counted(samples, "sample")) and "
            + "\(WearableText.counted(gestures, "gesture")) to \(paths.joined(separator: ", "))"
    }
}
