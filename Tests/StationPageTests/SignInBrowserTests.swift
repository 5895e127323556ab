import Foundation
import Recipe
import Records
import Spawn
import Station
import StationPage
import TestSupport
import Testing
import TuneupKit

/// An operator signs in on the operator page in a real headless Chromium (the header's form), as they would at the
/// start of a shift: the run started after it records that operator; a name the records would refuse is refused on
/// the page; signing out returns to the station's `--operator`.
@Suite struct SignInBrowserTests {
    @Test func theOperatorWhoSignedInOnThePageIsRecordedOnTheNextRun() async throws {
        let directory = try TemporaryDirectory.make("signin-page")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (path, recipe) = try await offThePool {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let path = try writeShippedRecipe(to: directory)
            return (path, try ProvisioningRecipe.load(path: path))
        }
        let simulator = try await PageStation.simulatedHeadset()
        defer { Task { await simulator.shutdown() } }
        let store = try await SQLiteRecordStore.open(path: directory + "/records.sqlite")
        let desk = OperatorDesk()
        let page = try await PageStation.start(recipe: recipe, path: path, store: store, desk: desk, directory: directory)
        defer { page.close() }
        let (station, devTools) = (page.station, page.devTools)
        try await DevTools.waitUntil("the page is live with its sign-in form", within: 60) {
            try await devTools.evaluate("document.body.dataset.link + ' ' + !!document.getElementById('signin-name')") == "open true"
        }
        #expect(try await devTools.evaluate("document.getElementById('subtitle').textContent").hasSuffix("operator ann"))

        // A name the records would refuse (over 64 characters) is refused on the page; nobody is signed in.
        _ = try await devTools.evaluate("document.getElementById('signin-name').focus(), 'focused'")
        try await devTools.type(String(repeating: "x", count: 65))
        _ = try await devTools.evaluate("document.getElementById('signin-form').requestSubmit(), 'sent'")
        try await DevTools.waitUntil("the refusal is shown in the header", within: 60) {
            try await devTools.evaluate("(document.getElementById('signin-refusal') || {}).textContent || ''").contains("longer than 64")
        }
        #expect(desk.signedInOperator == nil)

        // Bob signs in (typing, then Enter's submit): the header says so, and the next run is his.
        _ = try await devTools.evaluate("document.getElementById('signin-name').focus(), 'focused'")
        try await devTools.type("bob")
        _ = try await devTools.evaluate("document.getElementById('signin-form').requestSubmit(), 'sent'")
        try await DevTools.waitUntil("the header shows bob signed in", within: 60) {
            try await devTools.evaluate("(document.getElementById('signed-in') || {}).textContent || ''") == "signed in: bob"
        }
        #expect(desk.currentOperator == "bob")
        let slot = Slot(address: simulator.endpoints[0])
        let first = try await withTimeLimit(120) { try await station.run(slots: [slot]) }
        let bobs = try #require(first.first?.run)
        #expect(try await store.run(RunID(bobs))?.start.operatorName == "bob")

        // Signing out returns to the station's operator, on the page and in the records.
        _ = try await devTools.evaluate("document.getElementById('signout').click(), 'clicked'")
        try await DevTools.waitUntil("the sign-in form is back", within: 60) {
            try await devTools.evaluate("!!document.getElementById('signin-name') + ' ' + document.getElementById('subtitle').textContent")
                .hasSuffix("true recipe \(path) · operator ann")
        }
        #expect(desk.signedInOperator == nil && desk.currentOperator == "ann")
        let second = try await withTimeLimit(120) { try await station.run(slots: [slot]) }
        let anns = try #require(second.first?.run)
        #expect(try await store.run(RunID(anns))?.start.operatorName == "ann")
        await page.stop()
    }
}
