import Testing
import Wearable
@testable import WearableSession

/// `ReadingFanout`, the session's hand-out of each notification's readings to its listeners: every listener gets
/// every reading in order, a bounded listener keeps the newest batches, a finished fan-out ends listeners after
/// what they hold, a cancelled listener ends and is forgotten.
@Suite struct FanoutTests {
    static func batch(_ times: ClosedRange<Int64>) -> [SensorReading] {
        times.map { t in
            SensorReading(sensor: .accelerometer, timestamp: UInt16(t), deviceTime: t, hostTime: .milliseconds(t),
                          sample: .accelerometer(RawVector(x: 0, y: 0, z: 1), accuracy: .high),
                          value: .vector(Vector(x: 0, y: 0, z: 1), accuracy: .high), missingBefore: 0)
        }
    }

    @Test func everyListenerGetsEveryReadingInOrderAndABoundedOneTheNewest() async {
        let fanout = ReadingFanout()
        let all = fanout.subscribe(limit: nil), all2 = fanout.subscribe(limit: nil), newest = fanout.subscribe(limit: 1)
        // The first listener may be waiting (handed its batch directly), the others are not (their batches queue).
        async let first = collect(all, 9)
        fanout.publish(Self.batch(1...3))
        fanout.publish(Self.batch(4...6))
        fanout.publish(Self.batch(7...9))
        fanout.finish()
        #expect(await first.map(\.deviceTime) == Array(1...9))
        #expect(await collect(all2, 100).map(\.deviceTime) == Array(1...9))
        #expect(await collect(newest, 100).map(\.deviceTime) == [7, 8, 9])
        // After finish: nothing more, and a new listener ends at once.
        fanout.publish(Self.batch(10...10))
        #expect(await collect(fanout.subscribe(limit: nil), 100).isEmpty)
    }

    @Test func aCancelledListenerEndsAndIsForgotten() async {
        let fanout = ReadingFanout()
        let stream = fanout.subscribe(limit: nil)
        let listener = Task { await collect(stream, 100).count }
        fanout.publish(Self.batch(1...2))
        listener.cancel()
        let got = await listener.value
        #expect(got <= 2)
        #expect(fanout.listenerCount == 0)
        fanout.publish(Self.batch(3...3))  // no listener left: nothing to deliver, nothing kept
        fanout.finish()
    }
}
