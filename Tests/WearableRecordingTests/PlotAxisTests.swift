import Foundation
import Testing
import WearableRecording

/// The plot of a recording too short for its axes (issue 20, defect 7: "a one-sample recording plots empty with ticks
/// '0 0 0 0.001'").
@Suite struct PlotAxisTests {
    /// The texts of the x axis's tick labels in the first panel.
    static func timeLabels(_ svg: String) -> [String] {
        guard let axis = svg.components(separatedBy: "<g class=\"x-axis\">").dropFirst().first?.components(separatedBy: "</g>").first else { return [] }
        return axis.components(separatedBy: "text-anchor=\"middle\">").dropFirst().compactMap { $0.components(separatedBy: "<").first }
            .filter { $0 != "device time (s)" }
    }

    /// One sample: a dot where it is (a polyline of one point draws nothing), on a 1 s axis whose ticks read 0, 0.2, … 1.
    @Test func aRecordingOfOneSampleShowsItsDotOnAReadableAxis() throws {
        let plot = try WearablePlot(jsonLines: PlotTests.sample("accelerometer", 0, x: 0.5, y: -0.25, z: 1), name: "one.jsonl")
        let svg = plot.svg()
        #expect(svg.components(separatedBy: "<circle ").count - 1 == 3, "x, y and z each a dot: \(svg)")
        #expect(!svg.contains("<polyline"))
        let labels = Self.timeLabels(svg)
        #expect(labels == ["0", "0.2", "0.4", "0.6", "0.8", "1"], "\(labels)")
    }

    /// Ticks closer than a thousandth keep their decimals: two samples 1 ms apart are not labelled "0 0 0 0.001".
    @Test func closeTicksKeepTheirDecimals() throws {
        let plot = try WearablePlot(jsonLines: [PlotTests.sample("accelerometer", 0, x: 0.5), PlotTests.sample("accelerometer", 1, x: 0.6)]
            .joined(separator: "\n"), name: "two.jsonl")
        let labels = Self.timeLabels(plot.svg())
        #expect(labels.count >= 5 && Set(labels).count == labels.count, "every tick its own label: \(labels)")
        #expect(labels.first == "0" && labels.last == "0.0010", "\(labels)")
    }
}
