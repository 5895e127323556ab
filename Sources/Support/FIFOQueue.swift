/// A first-in, first-out queue whose front removal is O(1): a head index into an array instead of `removeFirst` (O(n)
/// a call). A taken slot is emptied at once (its memory released), the array is reset when drained and compacted when
/// mostly taken. For the queues that hand packets or batches to one reader (the USB gadget's packets, a wearable
/// listener's readings).
public struct FIFOQueue<Element> {
    private var slots: [Element?] = []
    private var head = 0

    public init() {}

    public var count: Int { slots.count - head }
    public var isEmpty: Bool { head == slots.count }

    public mutating func append(_ element: Element) {
        if head > 64, head * 2 > slots.count {
            slots.removeFirst(head)
            head = 0
        }
        slots.append(element)
    }

    /// The oldest element, removed; nil when empty.
    public mutating func popFirst() -> Element? {
        guard head < slots.count else { return nil }
        let element = slots[head]
        slots[head] = nil
        head += 1
        if head == slots.count {
            slots.removeAll(keepingCapacity: true)
            head = 0
        }
        return element
    }

    public mutating func removeAll() {
        slots.removeAll()
        head = 0
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
