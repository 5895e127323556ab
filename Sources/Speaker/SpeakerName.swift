extension WireText {
    /// The one rule for a speaker's name (`tuneup speaker rename`): 1...255 bytes of UTF-8 (the protocol's text).
    /// - Throws: `SpeakerError(.valueOutOfRange)` for an empty name, `.badText` for a longer one; one line each.
    public static func speakerName(_ name: String) throws(SpeakerError) -> WireText {
        guard !name.isEmpty else { throw SpeakerError(.valueOutOfRange, "a speaker name is 1...255 bytes of UTF-8") }
        guard name.utf8.count <= WireText.maxBytes else { throw SpeakerError(.badText, "a speaker name is 1...255 bytes of UTF-8") }
        return try WireText(name)
    }
}
