import Recipe
import Records
import Station

/// The operator page of a running station (`station run --ui`): the page's feed follows the station's events, its
/// server runs until the station ends. A `StationCompanion` of `StationSession`.
public struct OperatorPage: StationCompanion {
    public let feed: StationFeed
    public let server: PageServer

    /// Reads the last units from the records and serves the page on `address`, with the images of the recipe's
    /// prompts. A bind failure is a `PageError` (a connection failure).
    public static func start(on address: ListenAddress, store: any RecordStore, station: String, recipe: String, operatorName: String,
                             desk: OperatorDesk? = nil, loaded: LoadedRecipe? = nil) async throws -> OperatorPage {
        var images: [String: PromptImage] = [:]
        for prompt in loaded?.recipe.prompts ?? [] {
            if let found = loaded?.image(of: prompt) { images[prompt.name] = PromptImage(path: found.path, mediaType: found.mediaType) }
        }
        let feed = StationFeed(store: store, station: station, recipe: recipe, operatorName: operatorName, desk: desk, images: images)
        await feed.start()
        let server: PageServer
        do { server = try await feed.serve(on: address) } catch { feed.stop(); throw error }
        return OperatorPage(feed: feed, server: server)
    }

    /// The page's address, `http://HOST:PORT/`.
    public var url: String { server.url }

    public func handle(_ event: StationEvent) { feed.handle(event) }

    /// Stops the page: the last finished units' records are read first, so its last rows are complete.
    public func finish(note: @escaping @Sendable (String) -> Void, warn: @escaping @Sendable (String) -> Void) async {
        await feed.finish()
        await server.stop()
    }
}
