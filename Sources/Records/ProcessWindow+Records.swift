import Foundation

extension RecordStore {
    /// The process control window a station continues from at its start: the last `size` finished runs (pass, fail,
    /// error; aborted and open runs are left out) of `station` under the recipe `recipeHash`, oldest first, each
    /// with the measurements of its steps. A run passed the first time when it passed and its unit had no finished
    /// run (at any station, under any recipe) before it, as the station judges a unit when it starts its run.
    ///
    /// So a station restarted after 40 units of a 50-unit window judges its next unit over those 40 and it, as it
    /// would have had it not stopped. A changed recipe (another content hash) starts a new window.
    public func processWindow(station: String, recipeHash: String, size: Int) async throws -> ProcessWindow {
        var window = ProcessWindow(size: size)
        let finished: Set<RunOutcome> = [.pass, .fail, .error]
        let latest = try await latestFinishedRuns(station: station, recipeHash: recipeHash, limit: window.size)
        var unitRuns: [String: [RunRecord]] = [:]
        for run in latest {
            let hardwareID = run.start.hardwareID
            if unitRuns[hardwareID] == nil { unitRuns[hardwareID] = try await runs(hardwareID: hardwareID, station: nil) }
            let earlier = unitRuns[hardwareID]!.contains {
                $0.start.startedAt < run.start.startedAt && $0.outcome.map(finished.contains) == true
            }
            let measurements = try await self.run(run.id)?.steps.flatMap(\.measurements) ?? []
            window.add(ProcessWindow.Sample(firstPass: run.outcome == .pass && !earlier, measurements: measurements))
        }
        return window
    }
}
