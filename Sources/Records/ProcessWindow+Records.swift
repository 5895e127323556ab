import Foundation

extension RecordStore {
    /// The process control window a station continues from at its start: the last `size` finished runs (pass, fail,
    /// error; aborted and open runs are left out) of `station` under the recipe `recipeHash`, oldest first, each
    /// with the measurements of its steps. A run passed the first time when it passed and its unit's first finished
    /// run (at any station, under any recipe) passed: it, or an earlier one (a passing re-run of a unit that passed),
    /// as the station judges a unit and as `RecordsReport` counts first passes.
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
            let earliest = unitRuns[hardwareID]!.filter {
                $0.start.startedAt < run.start.startedAt && $0.outcome.map(finished.contains) == true
            }.min { ($0.start.startedAt, $0.id) < ($1.start.startedAt, $1.id) }
            let measurements = try await self.run(run.id)?.steps.flatMap(\.measurements) ?? []
            let firstPass = run.outcome == .pass && (earliest.map { $0.outcome == .pass } ?? true)
            window.add(ProcessWindow.Sample(firstPass: firstPass, measurements: measurements))
        }
        return window
    }
}
