import Station
import Terminal
import Testing

/// The tools' one live renderer: a block of lines for a terminal of a given size, cut to its width and its height.
struct LiveScreenTests {
    @Test func linesAreCutToTheWidth() {
        let shown = LiveScreen.visible(["short", String(repeating: "x", count: 30)], size: TerminalSize(columns: 12, rows: 24))
        #expect(shown == ["short", String(repeating: "x", count: 10) + "…"])
    }

    @Test func aBlockTallerThanTheTerminalKeepsRowsMinusOneLinesTheLastSayingHowManyAreLeftOut() {
        let lines = (1...10).map { "line \($0)" }
        #expect(LiveScreen.visible(lines, size: TerminalSize(columns: 80, rows: 5))
            == ["line 1", "line 2", "line 3", "… 7 more lines (a taller terminal shows them)"])
        #expect(LiveScreen.visible(lines, size: TerminalSize(columns: 80, rows: 11)) == lines, "ten lines fit eleven rows")
        #expect(LiveScreen.visible(lines, size: TerminalSize(columns: 80, rows: 2)) == ["line 1"])
        #expect(LiveScreen.visible(lines, size: TerminalSize(columns: nil, rows: nil)) == lines, "an unknown height cuts nothing")
    }

    @Test func framesRedrawInPlaceByTheRowsShown() {
        var screen = LiveScreen()
        let size = TerminalSize(columns: 20, rows: 3)
        let first = screen.frame(["a", "b", "c", "d"], size: size)
        #expect(first == "\ra\u{1B}[K\n\r… 3 more lines (a …\u{1B}[K\n")
        let second = screen.frame(["e"], size: size)
        #expect(second == "\u{1B}[2A\re\u{1B}[K\n\u{1B}[J", "up by the two rows shown, the one no longer covered cleared")
        #expect(screen.clear() == "\u{1B}[1A\r\u{1B}[J")
    }

    @Test func theStationsSlotsOnASmallTerminal() {
        var view = StationLiveView()
        view.apply(.started(slots: (1...6).map { "tcp:127.0.0.1:\(4300 + $0)" }, recipe: "sim-headset", recipeHash: "00", station: "s1"))
        let lines = view.lines(columns: 40)
        let shown = LiveScreen.visible(lines, size: TerminalSize(columns: 40, rows: 4))
        #expect(shown.count == 3 && shown[0] == lines[0] && shown[2].hasPrefix("… \(lines.count - 2) more lines"))
        #expect(shown.allSatisfy { $0.count <= 39 })
    }
}
