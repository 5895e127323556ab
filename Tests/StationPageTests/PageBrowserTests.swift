import Foundation
import Records
import Spawn
import Station
import StationPage
import Synchronization
import TestSupport
import Testing

/// The operator page in a real headless browser (Debian's chromium): a station that ran before (its units come
/// from the records) and the station running now (its tiles and totals from its events); the DOM is checked against
/// the records, and a screenshot goes to the tests' output directory. Fails (does not skip) without chromium.
@Suite struct StationPageBrowserTests {
    @Test func theOperatorPageShowsTilesTotalsAndTheLastUnitsAsRecorded() async throws {
        let fixture = try await PageFixture.make(units: 4, failShare: 0.5, seed: 5)
        defer { Task { await fixture.close() } }
        let operatorName = "Ada & <Bob>"
        // The station's previous process: its runs are in the records only.
        _ = try await fixture.station(name: "bench-1", operatorName: operatorName) { _ in }.run(slots: fixture.slots)

        // The station again, with its page: it reads the last units from the records, then follows the events.
        let feed = StationFeed(store: fixture.store, station: "bench-1", recipe: fixture.recipe.path, operatorName: operatorName)
        await feed.start()
        let server = try await feed.serve(on: ListenAddress(host: "127.0.0.1", port: 0))
        defer { Task { await server.stop(); feed.stop() } }
        let station = fixture.station(name: "bench-1", operatorName: operatorName) { feed.handle($0) }
        let results = try await station.run(slots: fixture.slots)
        let runs = try await fixture.store.runsWithSteps(RecordsFilter(station: "bench-1"))
        #expect(runs.count == 8)
        try await waitUntil("the records of this run's units are on the page") {
            let m = try decodeMessage(feed.sections.fullMessage())
            return (m.sections["units"]?.array ?? []).filter { !($0["steps"]?.array.isEmpty ?? true) }.count == runs.count
        }

        let dom = try await Browser.dumpDOM(server.url)
        // The script ran and drew the state.
        #expect(dom.contains("<h1 id=\"title\">Station bench-1</h1>"))
        #expect(dom.contains("operator Ada &amp; &lt;Bob&gt;"), "the operator, as text")
        // A tile per slot: this run's unit and its result.
        let tiles = tags(in: dom, with: "data-slot")
        #expect(tiles.count == fixture.slots.count)
        for result in results {
            let tile = try #require(tiles.first { attribute("data-slot", of: $0) == result.slot }, "tile of \(result.slot)")
            #expect(attribute("data-unit", of: tile) == result.hardwareID)
            #expect(attribute("data-state", of: tile) == result.outcome.rawValue)
        }
        // The totals of this run.
        let totals = station.totals
        #expect(dom.contains("<div id=\"t-passed\"><b>\(totals.passed)</b>passed</div>"))
        #expect(dom.contains("<div id=\"t-failed\"><b>\(totals.failed)</b>failed</div>"))
        // The last units: every run of the records (both processes), newest first, with its outcome.
        let rows = tags(in: dom, with: "data-run")
        // This process's units first (in the order they finished), then the previous one's, newest first.
        let thisRun = Set(results.compactMap(\.run).map(String.init))
        let listed = rows.compactMap { attribute("data-run", of: $0) }
        #expect(listed.prefix(thisRun.count).allSatisfy(thisRun.contains), "\(listed)")
        #expect(Array(listed.dropFirst(thisRun.count)) == runs.filter { !thisRun.contains(String($0.id.rawValue)) }.reversed().map { String($0.id.rawValue) })
        #expect(Set(rows.compactMap { attribute("data-run", of: $0) }) == Set(runs.map { String($0.id.rawValue) }))
        for run in runs {
            let row = try #require(rows.first { attribute("data-run", of: $0) == String(run.id.rawValue) })
            #expect(attribute("data-outcome", of: row) == run.outcome?.rawValue)
            #expect(attribute("data-hwid", of: row) == run.start.hardwareID)
        }
        // The Pareto of this shift (the runs of this process), as `records report` counts causes.
        let shift = runs.filter { run in results.contains { $0.run == run.id.rawValue } }
        let pareto = RecordsReport(runs: shift).pareto
        let causes = tags(in: dom, with: "data-cause")
        #expect(causes.compactMap { attribute("data-cause", of: $0) } == pareto.map(\.cause))
        #expect(causes.compactMap { attribute("data-count", of: $0) } == pareto.map { String($0.count) })
        if pareto.isEmpty { #expect(dom.contains("id=\"no-failures\"")) }

        let (path, png) = try await Browser.screenshot(server.url, name: "station-page")
        let size = try #require(Browser.pngSize(png), "\(path) is a PNG")
        #expect(size == (1100, 900))
    }
}

extension StationPageBrowserTests {
    /// A change made after the page was loaded reaches the browser only through the WebSocket: a headless Chromium
    /// (running on the real clock, no virtual time) draws it and its script acknowledges each message it drew.
    @Test func thePageDrawsWhatIsPushedAfterItLoaded() async throws {
        let (store, directory) = try await StationPageTests.emptyStore()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let feed = StationFeed(store: store, station: "push", operatorName: "Ada")
        await feed.start()
        feed.handle(.started(slots: ["slot-a"], recipe: "r.yaml", recipeHash: "h", station: "push"))
        let drawn = Drawn()
        let server = try await feed.serve(on: ListenAddress(host: "127.0.0.1", port: 0)) { changes in
            drawn.value.withLock { $0 = max($0, changes) }
        }
        let loaded = feed.sections.changes
        let chromium = try await offThePool {
            try ChildProcess(try Browser.chromium(), Browser.arguments(directory + "/chromium", ["--remote-debugging-port=0", server.url]),
                             environment: try HeadlessChromium.environment(), stdout: .null, stderr: .null)
        }
        defer { chromium.terminate() }
        try await waitUntil("the page drew its first message", within: 60) { drawn.value.withLock { $0 } >= loaded }
        feed.handle(.arrived(slot: "slot-a", hardwareID: "pushed-after-load"))
        feed.handle(.progress(slot: "slot-a", hardwareID: "pushed-after-load", step: "flash-application", fraction: 0.5))
        let pushed = feed.sections.changes
        #expect(pushed > loaded)
        try await waitUntil("the page drew the pushed changes", within: 60) { drawn.value.withLock { $0 } >= pushed }
        chromium.terminate()
        _ = await chromium.exited(within: 10)
        await server.stop()
        feed.stop()
    }

    final class Drawn: Sendable {
        let value = Mutex(0)
    }
}

/// The line dashboard over two stations on one throwaway PostgreSQL: both alive with their counts, then one stops
/// and the dashboard (refreshed on its timer, pushed to the page) shows it stopped.
@Suite struct LineDashboardBrowserTests {
    @Test func theDashboardShowsBothStationsAliveWithTheirCounts() async throws {
        let pg = try await offThePool { try ThrowawayPostgres.shared() }
        let url = try await offThePool { try pg.createDatabase() }
        let server = try await PostgresRecordStore.open(url: url)
        let fixture = try await PageFixture.make(units: 5, failShare: 0.4, seed: 9)
        defer { Task { await fixture.close(); await server.close() } }

        // Station s1 has slots 0-2, s2 slots 3-4; each keeps an outbox and beats its heartbeat, as `station run` does.
        var stores: [OutboxRecordStore] = []
        var beats: [StationHeartbeat] = []
        var stations: [Station] = []
        for (k, name) in ["s1", "s2"].enumerated() {
            let outbox = try await SQLiteRecordStore.open(path: "\(fixture.directory)/\(name).outbox.sqlite")
            let store = OutboxRecordStore(server: server, outbox: outbox, station: name, leaseSize: 4)
            stores.append(store)
            beats.append(StationHeartbeat.start(server, station: name, slots: k == 0 ? 3 : 2, interval: .milliseconds(200)))
            stations.append(fixture.station(name: name, operatorName: "op-\(name)", store: store) { _ in })
        }
        let slots = fixture.slots
        async let first = stations[0].run(slots: Array(slots[0..<3]))
        async let second = stations[1].run(slots: Array(slots[3...]))
        let results = try await [first, second]
        for store in stores { #expect(await store.finish(within: .seconds(30)).isEmpty, "outbox uploaded") }

        let dashboard = LineDashboard(store: server, options: .init(refresh: .milliseconds(200), aliveWithin: .seconds(30)))
        try await dashboard.start()
        let page = try await dashboard.serve(on: ListenAddress(host: "127.0.0.1", port: 0))
        defer { Task { await page.stop(); dashboard.stop() } }

        let dom = try await Browser.dumpDOM(page.url)
        let rows = tags(in: dom, with: "data-station")
        #expect(rows.count == 2)
        for (k, name) in ["s1", "s2"].enumerated() {
            let row = try #require(rows.first { attribute("data-station", of: $0) == name }, "row of \(name)")
            #expect(attribute("data-alive", of: row) == "true", "\(name) alive")
            let recorded = try await server.runs(hardwareID: nil, station: name).filter { [.pass, .fail, .error].contains($0.outcome) }
            #expect(recorded.count == results[k].filter { $0.outcome != .aborted }.count)
            #expect(attribute("data-units", of: row) == String(recorded.count), "\(name) units")
        }
        let all = try await server.runsWithSteps()
        #expect(dom.contains("<div id=\"l-alive\"><b>2 / 2</b>stations alive</div>"))
        #expect(dom.contains("<div id=\"l-units\"><b>\(all.count)</b>units</div>"))
        #expect(Set(tags(in: dom, with: "data-run").compactMap { attribute("data-run", of: $0) }) == Set(all.map { String($0.id.rawValue) }))
        // Cpk per measurement, over the same values `records report` takes.
        let report = RecordsReport(runs: all)
        let measured = tags(in: dom, with: "data-measurement").filter { $0.hasPrefix("<tr") && attribute("data-count", of: $0) != nil }
        #expect(measured.compactMap { attribute("data-measurement", of: $0) }.sorted() == report.measurements.map(\.name).sorted())
        for m in report.measurements {
            #expect(measured.contains { attribute("data-measurement", of: $0) == m.name && attribute("data-count", of: $0) == String(m.count) })
        }
        let causes = tags(in: dom, with: "data-cause")
        #expect(causes.compactMap { attribute("data-cause", of: $0) } == report.pareto.map(\.cause))

        let (path, png) = try await Browser.screenshot(page.url, name: "line-dashboard")
        #expect(Browser.pngSize(png) != nil, "\(path) is a PNG")

        // s2 stops: its last beat says so; the next refresh pushes it.
        let socket = PageSocket(port: page.port)
        defer { socket.close() }
        await beats[1].stop()
        try await withTimeLimit(60) {
            for await message in socket.messages {
                let stations = try decodeMessage(message.text).sections["stations"]?.array ?? []
                if let s2 = stations.first(where: { $0["station"]?.string == "s2" }), s2["alive"] == .bool(false) { return }
            }
            throw TestFailure("the page was not told that s2 stopped")
        }
        let after = try await Browser.dumpDOM(page.url)
        let s2 = try #require(tags(in: after, with: "data-station").first { attribute("data-station", of: $0) == "s2" })
        #expect(attribute("data-alive", of: s2) == "false")
        #expect(after.contains("<div id=\"l-alive\"><b>1 / 2</b>stations alive</div>"))
        await beats[0].stop()
    }
}
