/// A fixed-size heap buffer owned by the scanner: plain pointer access in the hot loops, freed
/// with its owner.
final class Buffer<Element> {
    let base: UnsafeMutablePointer<Element>
    let count: Int

    /// `count` elements, zero-filled (the element types here are plain numbers and flags).
    init(count: Int) {
        self.count = count
        base = .allocate(capacity: max(count, 1))
        UnsafeMutableRawPointer(base).initializeMemory(as: UInt8.self, repeating: 0,
                                                       count: max(count, 1) * MemoryLayout<Element>.stride)
    }

    /// A copy of `values`.
    init(_ values: [Element]) {
        count = values.count
        base = .allocate(capacity: max(values.count, 1))
        if !values.isEmpty {
            values.withUnsafeBufferPointer { base.initialize(from: $0.baseAddress!, count: values.count) }
        }
    }

    deinit { base.deallocate() }

    @inline(__always)
    subscript(_ i: Int) -> Element {
        get { base[i] }
        set { base[i] = newValue }
    }
}
