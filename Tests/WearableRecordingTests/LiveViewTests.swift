import Testing
import WearableRecording

/// The live view of `wearable stream` and `record` as lines, on explicit times (the CLI only draws them).
@Suite struct LiveViewTests {
    let t0 = ContinuousClock.now

    func event(_ name: String) -> WearableLine { WearableLine(type: "event", event: name) }

    func sample(_ sensor: String, _ deviceTime: Int64, missing: Int = 0, x: Double = 0.5) -> WearableLine {
        var l = WearableLine(type: "sample")
        (l.sensor, l.deviceTime, l.missingBefore, l.x, l.y, l.z) = (sensor, deviceTime, missing, x, -0.25, 1)
        return l
    }

    func configured() -> WearableLine {
        var l = event("configured")
        l.periods = ["accelerometer": 40, "gameRotation": 40]
        return l
    }

    @Test func stateValuesCountsGapsAndTheLatestThreeGestures() {
        var v = WearableLiveView(device: "sim:wearable", at: t0)
        #expect(v.lines(at: t0) == ["sim:wearable  opening  device time 0.0 s", "gestures 0"])
        v.take(event("opened"), at: t0)
        v.take(configured(), at: t0)
        v.take(sample("accelerometer", 1000), at: t0 + .milliseconds(40))
        v.take(sample("accelerometer", 1120, missing: 2, x: -1.5), at: t0 + .milliseconds(80))
        var q = WearableLine(type: "sample")
        (q.sensor, q.deviceTime, q.x, q.y, q.z, q.w, q.yaw, q.pitch, q.roll) = ("gameRotation", 1100, 0, 0, 0, 1, 90, -5, 12.5)
        v.take(q, at: t0 + .milliseconds(80))
        for (i, name) in ["doubleTap", "headNod", "headShake", "singleTap"].enumerated() {
            var g = WearableLine(type: "gesture")
            (g.gesture, g.deviceTime) = (name, 1500 + Int64(i) * 100)
            v.take(g, at: t0 + .milliseconds(90))
        }
        v.take(event("malformed"), at: t0 + .milliseconds(90))
        #expect(v.lines(at: t0 + .milliseconds(100)) == [
            "sim:wearable  open  device time 0.1 s",
            "accelerometer  40 ms    -1.500   -0.250   +1.000 g   2 samples, 1 gap (2 missing)",
            "gameRotation   40 ms  yaw  +90.0° pitch  -5.0° roll  +12.5°   1 sample, 0 gaps (0 missing)",
            "gestures 4: headNod @ 0.6 s, headShake @ 0.7 s, singleTap @ 0.8 s   malformed notifications 1",
        ])
    }

    /// A sensor silent for 5 periods (at least 1 s) shows as stalled; a reconnect's gap is not a stall; the state
    /// follows the link.
    @Test func stalledSensorsAndTheLinkState() {
        var v = WearableLiveView(device: "d", at: t0)
        v.take(configured(), at: t0)
        v.take(sample("accelerometer", 0), at: t0)
        #expect(!v.lines(at: t0 + .seconds(1)).joined().contains("stalled"))
        let later = v.lines(at: t0 + .milliseconds(1500))
        #expect(later[1].contains("stalled: no samples for 1.5 s") && later[2].contains("stalled: no samples for 1.5 s"), "\(later)")
        v.take(event("linkLost"), at: t0 + .seconds(2))
        #expect(v.state == "link lost, reconnecting")
        var back = event("reconnected")
        back.gapSeconds = 3.25
        v.take(back, at: t0 + .seconds(5))
        #expect(v.state == "open (reconnected after 3.2 s)" || v.state == "open (reconnected after 3.3 s)")
        #expect(!v.lines(at: t0 + .seconds(5) + .milliseconds(500)).joined().contains("stalled"))
        var closed = event("closed")
        closed.error = "the link to d was lost"
        v.take(closed, at: t0 + .seconds(6))
        #expect(v.lines(at: t0 + .seconds(6))[0].hasPrefix("d  closed: the link to d was lost"))
    }

    /// Issue 30 §25: a terminal shorter than the view (20×4) got every redraw's overflow in its scrollback: the view
    /// keeps to rows - 1 lines (the cursor rests below the block), the last saying how many are left out.
    @Test func theViewFitsATerminalShorterThanItself() {
        var v = WearableLiveView(device: "sim:wearable", at: t0)
        v.take(event("opened"), at: t0)
        var c = event("configured")
        c.periods = ["accelerometer": 40, "gyroscope": 40, "gameRotation": 40]
        v.take(c, at: t0)
        let all = v.lines(at: t0)
        #expect(all.count == 5)
        #expect(v.lines(at: t0, rows: nil) == all)
        #expect(v.lines(at: t0, rows: 6) == all)
        #expect(v.lines(at: t0, rows: 4) == [all[0], all[1], "… 3 more lines (a taller terminal shows them)"])
        #expect(v.lines(at: t0, rows: 2) == [all[0]])
        #expect(v.lines(at: t0, rows: 1) == [all[0]])
    }
}
