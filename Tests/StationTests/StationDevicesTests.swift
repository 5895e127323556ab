import Station
import Testing
import Transport
import TuneupKit

/// The station opens what the registry in its options holds, nothing else: on the real back ends alone
/// (`DeviceRegistry.real`, what the station target links) a simulator's address is refused before anything starts.
@Suite struct StationDevicesTests {
    @Test func aStationOnTheRealBackEndsRefusesASimulatorsAddress() async throws {
        let line = try await LineFixture.make(units: 1)
        defer { Task { await line.close() } }
        let station = Station(recipe: line.recipe, store: line.store, options: StationOptions(devices: .real, station: "real"))
        for text in ["sim", "sim:headset", "sim:wearable"] {
            do {
                let results = try await station.run(slots: [Slot(address: text)])
                Issue.record("a station without simulators took '\(text)': \(results)")
            } catch let error as TransportError {
                #expect(error.code == .invalidAddress)
                #expect(error.message.hasPrefix("unknown "), "\(error.message)")
            }
        }
        #expect(try await line.store.runs().isEmpty)
    }
}
