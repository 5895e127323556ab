import WearableRecording

/// The live view of `wearable stream` and `record` on a terminal: `WearableLiveView`'s lines on a `LiveDisplay`
/// (cut to the terminal's width and height, redrawn at most 10 times a second; an event redraws at once).
public struct WearableTerminalView {
    public private(set) var view: WearableLiveView
    private let display = LiveDisplay()

    public init(device: String) { view = WearableLiveView(device: device) }

    /// One line of the stream.
    public mutating func take(_ line: WearableLine) {
        view.take(line, at: .now)
        draw(force: line.type == "event")
    }

    /// Redraws the block (at most 10 times a second unless forced).
    public func draw(force: Bool = false) {
        let view = self.view
        display.draw(force: force) { view.lines(at: .now) }
    }
}
