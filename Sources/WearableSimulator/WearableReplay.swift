import Wearable

/// A recording played back as a device (docs/wearable.md §8.1): its samples and gestures at their recorded device
/// times, so a field recording becomes a test case. Pure value.
///
/// A link that writes a sensor configuration starts the replay: a sample recorded at device time `d` goes out at
/// `start + 1 + (d - origin)` ms on the device's clock (in the transmission period holding that time), with the u16
/// timestamp it was recorded with (so a listener unwraps the same `deviceTime`), quantized with the device's ranges
/// (a recorded value is a scaled raw value, so the raw value comes back exactly). Samples missing from the recording
/// stay missing (the same gaps); only sensors the link enabled are sent; after the last sample the device is silent.
/// A link that enabled a sensor at a longer period than it was recorded at gets the first sample of each of its periods
/// (as a device sampling slower would); `WearableProfile.replaying` makes the device offer only the sensors the
/// recording holds, at their recorded period or longer, so that anything else is refused as a device refuses it.
public struct WearableReplay: Sendable, Hashable {
    public struct Sample: Sendable, Hashable {
        public var sensor: SensorType
        public var deviceTime: Int64
        public var value: SensorValue
        public init(sensor: SensorType, deviceTime: Int64, value: SensorValue) {
            (self.sensor, self.deviceTime, self.value) = (sensor, deviceTime, value)
        }
    }

    public struct Gesture: Sendable, Hashable {
        public var gesture: GestureType
        public var deviceTime: Int64
        public init(gesture: GestureType, deviceTime: Int64) { (self.gesture, self.deviceTime) = (gesture, deviceTime) }
    }

    /// In device time order.
    public let samples: [Sample]
    public let gestures: [Gesture]
    /// The first device time of the recording (sample or gesture).
    public let origin: Int64
    /// Per recorded sensor, the period it was recorded at: the shortest step between two of its samples, as a sample
    /// period (20 ms for a sensor with one sample).
    public let periods: [SensorType: SamplePeriod]
    /// Per recorded sensor, the device time of its first sample.
    let firstTimes: [SensorType: Int64]

    /// Nil when there is nothing to replay.
    public init?(samples: [Sample], gestures: [Gesture]) {
        let s = samples.enumerated().sorted { ($0.element.deviceTime, $0.offset) < ($1.element.deviceTime, $1.offset) }.map(\.element)
        let g = gestures.sorted { $0.deviceTime < $1.deviceTime }
        guard let origin = [s.first?.deviceTime, g.first?.deviceTime].compactMap({ $0 }).min() else { return nil }
        (self.samples, self.gestures, self.origin) = (s, g, origin)
        var last: [SensorType: Int64] = [:], step: [SensorType: Int64] = [:], first: [SensorType: Int64] = [:]
        for sample in s {
            if first[sample.sensor] == nil { first[sample.sensor] = sample.deviceTime }
            if let previous = last[sample.sensor], sample.deviceTime > previous {
                step[sample.sensor] = min(step[sample.sensor] ?? .max, sample.deviceTime - previous)
            }
            last[sample.sensor] = sample.deviceTime
        }
        firstTimes = first
        periods = first.keys.reduce(into: [:]) { out, sensor in
            let ms = step[sensor] ?? 20
            // The longest period not longer than the step (jitter never makes a step shorter than the period).
            out[sensor] = SamplePeriod.allCases.filter { Int64($0.milliseconds) <= ms }.max { $0.milliseconds < $1.milliseconds } ?? ._20ms
        }
    }

    /// Whether `sample` goes out to a link that enabled its sensor at `period`: every sample at its recorded period
    /// (or shorter), else the first of each `period` counted from the sensor's first sample.
    public func keeps(_ sample: Sample, at period: SamplePeriod) -> Bool {
        guard let recorded = periods[sample.sensor], period.milliseconds > recorded.milliseconds else { return true }
        let p = Int64(period.milliseconds), offset = sample.deviceTime - (firstTimes[sample.sensor] ?? origin)
        return ((offset % p) + p) % p < Int64(recorded.milliseconds)
    }

    /// The replay's length in ms (from its first to its last sample or gesture).
    public var duration: Int64 { max(samples.last?.deviceTime ?? origin, gestures.last?.deviceTime ?? origin) - origin }

    /// The index of the first sample recorded after `time` (a device time of the recording).
    func firstSample(after time: Int64) -> Int {
        var lo = 0, hi = samples.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if samples[mid].deviceTime <= time { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }
}
