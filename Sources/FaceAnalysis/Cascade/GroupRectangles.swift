/// Neighbour grouping as OpenCV's `groupRectangles(rects, weights, groupThreshold, eps)` defines
/// it: partition the raw windows into classes of similar boxes, average each class, keep classes
/// with more than `groupThreshold` members, and drop a kept box that lies inside a better
/// supported one.
enum GroupRectangles {
    /// Two boxes are similar when every edge moves by at most `eps` times the mean of their
    /// smaller width and smaller height.
    static func similar(_ a: Detection, _ b: Detection, eps: Double) -> Bool {
        let delta = eps * Double(min(a.width, b.width) + min(a.height, b.height)) * 0.5
        return Double(abs(a.x - b.x)) <= delta && Double(abs(a.y - b.y)) <= delta
            && Double(abs(a.x + a.width - b.x - b.width)) <= delta
            && Double(abs(a.y + a.height - b.y - b.height)) <= delta
    }

    /// Equivalence classes of `rects` under `similar` (transitively closed), numbered in the order
    /// their first member appears. Returns the label of every box and the class count.
    static func partition(_ rects: [Detection], eps: Double) -> (labels: [Int], classes: Int) {
        let n = rects.count
        var parent = [Int](repeating: -1, count: n)
        func root(_ i: Int) -> Int {
            var r = i
            while parent[r] >= 0 { r = parent[r] }
            var j = i
            while parent[j] >= 0 { let next = parent[j]; parent[j] = r; j = next }
            return r
        }
        for i in 0..<n {
            for j in 0..<i where similar(rects[i], rects[j], eps: eps) {
                let ri = root(i), rj = root(j)
                if ri != rj { parent[max(ri, rj)] = min(ri, rj) }
            }
        }
        var labels = [Int](repeating: 0, count: n)
        var classOfRoot = [Int](repeating: -1, count: n)
        var classes = 0
        for i in 0..<n {
            let r = root(i)
            if classOfRoot[r] < 0 { classOfRoot[r] = classes; classes += 1 }
            labels[i] = classOfRoot[r]
        }
        return (labels, classes)
    }

    /// OpenCV's `saturate_cast<int>(float)`: round half to even.
    private static func roundToInt(_ value: Float) -> Int {
        Int(value.rounded(.toNearestOrEven))
    }

    /// The grouped boxes with their member counts in `neighbors`. With `groupThreshold` <= 0 the
    /// boxes come back unchanged, each with one neighbour.
    static func group(_ rects: [Detection], groupThreshold: Int, eps: Double = 0.2) -> [Detection] {
        if groupThreshold <= 0 || rects.isEmpty {
            return rects.map { Detection(x: $0.x, y: $0.y, width: $0.width, height: $0.height, neighbors: 1) }
        }
        let (labels, classes) = partition(rects, eps: eps)
        var sums = [(x: Int, y: Int, w: Int, h: Int)](repeating: (0, 0, 0, 0), count: classes)
        var counts = [Int](repeating: 0, count: classes)
        for (i, r) in rects.enumerated() {
            let c = labels[i]
            sums[c].x += r.x; sums[c].y += r.y; sums[c].w += r.width; sums[c].h += r.height
            counts[c] += 1
        }
        var averaged: [Detection] = []
        averaged.reserveCapacity(classes)
        for c in 0..<classes {
            let s: Float = 1 / Float(counts[c])
            averaged.append(Detection(x: roundToInt(Float(sums[c].x) * s), y: roundToInt(Float(sums[c].y) * s),
                                      width: roundToInt(Float(sums[c].w) * s), height: roundToInt(Float(sums[c].h) * s),
                                      neighbors: counts[c]))
        }
        var result: [Detection] = []
        for i in 0..<classes {
            let r1 = averaged[i], n1 = counts[i]
            if n1 <= groupThreshold { continue }
            var inside = false
            for j in 0..<classes where j != i {
                let n2 = counts[j]
                if n2 <= groupThreshold { continue }
                let r2 = averaged[j]
                let dx = Int((Double(r2.width) * eps).rounded(.toNearestOrEven))
                let dy = Int((Double(r2.height) * eps).rounded(.toNearestOrEven))
                if r1.x >= r2.x - dx && r1.y >= r2.y - dy
                    && r1.x + r1.width <= r2.x + r2.width + dx && r1.y + r1.height <= r2.y + r2.height + dy
                    && (n2 > max(3, n1) || n1 < 3) {
                    inside = true
                    break
                }
            }
            if !inside { result.append(r1) }
        }
        return result
    }
}
