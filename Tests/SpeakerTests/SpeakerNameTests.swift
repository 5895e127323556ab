import Speaker
import Testing

/// The speaker name's rule, in the codec (issue 31 §1): 1...255 bytes of UTF-8.
struct SpeakerNameTests {
    @Test func oneTo255BytesOfUTF8() throws {
        #expect(try WireText.speakerName("Kitchen").value == "Kitchen")
        #expect(try WireText.speakerName(String(repeating: "é", count: 127)).value.utf8.count == 254)
        let empty = #expect(throws: SpeakerError.self) { try WireText.speakerName("") }
        #expect(empty?.message == "a speaker name is 1...255 bytes of UTF-8")
        let long = #expect(throws: SpeakerError.self) { try WireText.speakerName(String(repeating: "x", count: 256)) }
        #expect(long?.code == .badText)
    }
}
