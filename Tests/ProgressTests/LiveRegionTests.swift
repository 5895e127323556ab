import Progress
import Testing

/// The live block's frames: lines cut to the terminal's width, so redraws move up by the rows really drawn.
struct LiveRegionTests {
    @Test func linesWiderThanTheTerminalAreCutWithAnEllipsis() {
        let line = "slot-1  a0a0a0a0a0a0a0a0  flash-application  37%  FAIL at identity: the unit answered 0x07"
        let cut = LiveRegion.fit(line, columns: 40)
        #expect(cut.count == 39, "one column is left free: \(cut)")
        #expect(cut.hasSuffix("…") && line.hasPrefix(String(cut.dropLast())))
        #expect(LiveRegion.fit("short", columns: 40) == "short")
        #expect(LiveRegion.fit(String(repeating: "x", count: 39), columns: 40).count == 39)
        #expect(LiveRegion.fit(String(repeating: "x", count: 40), columns: 40) == String(repeating: "x", count: 38) + "…")
    }

    @Test func wideCharactersCountTwoColumnsAndControlCharactersNone() {
        #expect(LiveRegion.fit("耳机耳机耳机", columns: 8) == "耳机耳…")
        #expect(LiveRegion.fit("a\u{1B}b\tc", columns: 80) == "abc")
        #expect(LiveRegion.fit("anything", columns: nil) == "anything", "unknown width: 80 columns")
    }

    @Test func framesMoveUpByTheRowsDrawnAndClearWhatTheyNoLongerCover() {
        var region = LiveRegion()
        let first = region.frame(["a", "b", "c"], columns: 20)
        #expect(!first.contains("\u{1B}[3A") && first.split(separator: "\n", omittingEmptySubsequences: false).count == 4)
        #expect(region.drawnRows == 3)
        let second = region.frame([String(repeating: "w", count: 50), "b"], columns: 20)
        #expect(second.hasPrefix("\u{1B}[3A"), "up by the three rows drawn")
        #expect(second.hasSuffix("\u{1B}[J"), "the third row, no longer drawn, is cleared")
        #expect(!second.contains(String(repeating: "w", count: 20)), "the wide line is cut, so it takes one row")
        #expect(region.drawnRows == 2)
        #expect(region.clear() == "\u{1B}[2A\r\u{1B}[J")
        #expect(region.clear() == "" && region.drawnRows == 0)
    }
}
