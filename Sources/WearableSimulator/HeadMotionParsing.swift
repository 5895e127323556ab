import Foundation
import Simulator

extension HeadMotion {
    /// A scripted motion from `sim wearable --motion`: comma-separated segments still:SECONDS, turn:DEGREES:SECONDS,
    /// nod:DEGREES:COUNT:SECONDS, shake:DEGREES:COUNT:SECONDS (up to an hour each; turns within ±360°, nods and
    /// shakes within ±90°, 1...20 times).
    /// - Throws: `SimulatorError(.invalidArgument)` (a usage error) naming the segment at fault.
    public init(parsing text: String) throws(SimulatorError) {
        var segments: [Segment] = []
        for piece in text.split(separator: ",") {
            let f = piece.split(separator: ":").map { String($0).trimmingCharacters(in: .whitespaces) }
            let numbers = f.dropFirst().map { Double($0) }
            let bad = SimulatorError(
                .invalidArgument, "--motion: '\(piece)' is not still:SECONDS, turn:DEGREES:SECONDS, nod:DEGREES:COUNT:SECONDS or shake:DEGREES:COUNT:SECONDS")
            guard numbers.allSatisfy({ $0 != nil && $0!.isFinite }) else { throw bad }
            let n = numbers.map { $0! }
            guard let seconds = n.last, seconds > 0, seconds <= 3600 else { throw bad }
            switch (f.first, n.count) {
            case ("still", 1): segments.append(.init(.still, duration: seconds))
            case ("turn", 2) where abs(n[0]) <= 360: segments.append(.init(.turn(degrees: n[0]), duration: seconds))
            case ("nod", 3) where abs(n[0]) <= 90 && n[1] >= 1 && n[1] <= 20 && n[1] == n[1].rounded():
                segments.append(.init(.nod(degrees: n[0], count: Int(n[1])), duration: seconds))
            case ("shake", 3) where abs(n[0]) <= 90 && n[1] >= 1 && n[1] <= 20 && n[1] == n[1].rounded():
                segments.append(.init(.shake(degrees: n[0], count: Int(n[1])), duration: seconds))
            default: throw bad
            }
        }
        guard !segments.isEmpty else { throw SimulatorError(.invalidArgument, "--motion is empty") }
        self.init(script: segments)
    }
}
