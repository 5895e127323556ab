import Foundation

/// A recording read back (`PATH.jsonl` of `record`, with or without the metadata line of recordings made before it).
public struct WearableRecordingContents: Sendable {
    /// The first line's metadata, nil for an older recording.
    public var metadata: RecordingMetadata?
    /// Every other line, in order.
    public var lines: [WearableLine]

    /// A line that is not a recording's: `NAME:LINE: not a line of a wearable recording`.
    public struct NotARecording: Error, Sendable {
        public var message: String
    }

    /// Parses JSON Lines; blank lines are skipped. Throws for the first line that is not a recording's line (a cut
    /// last line too).
    public init(jsonLines text: String, name: String) throws(NotARecording) {
        let decoder = JSONDecoder()
        var lines: [WearableLine] = []
        var number = 0
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let trimmed = raw.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty else { continue }
            guard let line = try? decoder.decode(WearableLine.self, from: Data(trimmed.utf8)),
                  ["metadata", "event", "sample", "gesture", "summary"].contains(line.type) else {
                throw NotARecording(message: "\(name):\(number): not a line of a wearable recording")
            }
            if line.type == "metadata" {
                guard lines.isEmpty, metadata == nil, let m = line.metadata, m.format == RecordingMetadata.formatName else {
                    throw NotARecording(message: "\(name):\(number): a metadata line that is not a recording's first")
                }
                metadata = m
                continue
            }
            lines.append(line)
        }
        self.lines = lines
    }
}
