import LightX

extension Station {
    /// The names of the measurements a recipe's tests can take (the device's factory measurements, docs/protocol.md §7).
    public static var measurements: [String] { FactoryMeasurement.allCases.map(\.name) }

    /// Whether a recipe test named `name` is a measurement the station can take.
    public static func canMeasure(_ name: String) -> Bool { FactoryMeasurement(name: name) != nil }
}
