import LightX

/// The requests of every host link waiting for a headset to process them, in arrival order, with flow control: at
/// most `depth` (Q) wait. What happens to a request arriving when Q wait is the device's choice (the bootloader answers
/// NotReady, the application stops reading the link until there is room).
struct RequestQueue {
    struct Item {
        let host: UInt64
        let request: Packet
        let arrived: ContinuousClock.Instant
    }

    /// The most requests that may wait.
    let depth: Int
    private var items: [Item] = []
    private var head = 0

    init(depth: Int) {
        self.depth = depth
    }

    /// Whether `depth` requests wait.
    var isFull: Bool { count >= depth }
    var isEmpty: Bool { count == 0 }
    private var count: Int { items.count - head }

    mutating func append(_ item: Item) {
        items.append(item)
    }

    /// Takes the oldest request.
    mutating func next() -> Item? {
        guard head < items.count else { return nil }
        let item = items[head]
        head += 1
        if head > 64, head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return item
    }

    /// Drops every waiting request unprocessed.
    mutating func removeAll() {
        items.removeAll()
        head = 0
    }
}
