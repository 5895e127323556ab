import Records
import Testing

/// What `records report` and `spc` print, laid out by the library.
struct RecordsTextTests {
    @Test func tablesAlignNamesLeftNumbersRightAndLimitsLeft() {
        let lines = RecordsText.table(["Measurement", "n", "limits", "Cpk"], [["anc-left", "12", "-3...3 dB", "1.50"], ["mic", "7", "0...1 V", "-"]])
        #expect(lines == [
            "Measurement   n  limits      Cpk",
            "anc-left     12  -3...3 dB  1.50",
            "mic           7  0...1 V       -",
        ])
        #expect(RecordsText.percent(0.975) == "97.5 %" && RecordsText.percent(nil) == "-")
        #expect(RecordsText.number(1.234) == "1.23" && RecordsText.number(nil) == "-")
    }

    @Test func anEmptyWindowSaysSoInOneLine() {
        let report = ProcessWindowReport(runs: [], size: 50)
        #expect(report.text == "Last 0 units (window 50): first-pass yield -")
        #expect(UnitListEntry.entries([], station: nil).isEmpty)
    }
}
