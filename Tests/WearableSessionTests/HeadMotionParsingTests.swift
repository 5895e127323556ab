import Simulator
import Testing
import WearableSimulator

/// `sim wearable --motion`'s script, parsed by the simulator library.
struct HeadMotionParsingTests {
    @Test func segmentsInOrder() throws {
        let motion = try HeadMotion(parsing: "still:1, turn:90:2,nod:20:3:1.5,shake:-30:2:1")
        #expect(motion.segments.map(\.movement) == [.still, .turn(degrees: 90), .nod(degrees: 20, count: 3), .shake(degrees: -30, count: 2)])
        #expect(motion.segments.map(\.duration) == [1, 2, 1.5, 1])
    }

    @Test func aBadSegmentIsOneUsageLineNamingIt() {
        for bad in ["turn:400:1", "nod:20:0:1", "still:0", "still:x", "hop:1", "nod:20:1.5:1"] {
            let error = #expect(throws: SimulatorError.self) { try HeadMotion(parsing: bad) }
            #expect(error?.category == .usage && error?.message.hasPrefix("--motion: '\(bad)' is not still:SECONDS") == true, "\(bad)")
        }
        #expect(throws: SimulatorError.self) { try HeadMotion(parsing: ",") }
    }
}
