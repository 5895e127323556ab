import Foundation
import Recipe
import Records
import Station
import StationPage

/// `station run --ui HOST:PORT`: the operator page (StationPage) wired to the station: its feed is one of the
/// station's event listeners, its server runs until the station ends.
struct StationUI: Sendable {
    let feed: StationFeed
    let server: PageServer

    /// Reads the last units from the records and serves the page; nil without `--ui`. A bind failure is a
    /// `PageError` (exit 69, one line).
    static func start(
        _ address: String?, store: any RecordStore, station: String, recipe: String, operatorName: String, desk: OperatorDesk? = nil,
        loaded: LoadedRecipe? = nil
    ) async throws -> StationUI? {
        guard let address else { return nil }
        let listen = try ListenAddress(parsing: address, option: "--ui")
        var images: [String: PromptImage] = [:]
        for prompt in loaded?.recipe.prompts ?? [] {
            if let found = loaded?.image(of: prompt) { images[prompt.name] = PromptImage(path: found.path, mediaType: found.mediaType) }
        }
        let feed = StationFeed(store: store, station: station, recipe: recipe, operatorName: operatorName, desk: desk, images: images)
        await feed.start()
        let server: PageServer
        do { server = try await feed.serve(on: listen) } catch { feed.stop(); throw error }
        printError("operator page at \(server.url)")
        return StationUI(feed: feed, server: server)
    }

    func stop() async {
        // The last finished units' records are read first, so the page's last rows are complete.
        await feed.finish()
        await server.stop()
    }
}
