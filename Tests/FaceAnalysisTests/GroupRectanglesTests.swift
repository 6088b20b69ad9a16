@testable import FaceAnalysis
import Testing

/// Neighbour grouping, on cases small enough to check by hand.
@Suite struct GroupRectanglesTests {
    static func box(_ x: Int, _ y: Int, _ s: Int) -> Detection { Detection(x: x, y: y, width: s, height: s) }

    @Test func similarBoxesFormOneClassTransitively() {
        // a~b and b~c but not a~c: still one class.
        let rects = [Self.box(0, 0, 100), Self.box(18, 0, 100), Self.box(36, 0, 100), Self.box(500, 500, 50)]
        let (labels, classes) = GroupRectangles.partition(rects, eps: 0.2)
        #expect(classes == 2)
        #expect(labels == [0, 0, 0, 1])
    }

    @Test func classesNeedMoreThanThresholdMembers() {
        let rects = [Self.box(10, 10, 40), Self.box(11, 10, 40), Self.box(10, 11, 40), Self.box(300, 300, 40)]
        #expect(GroupRectangles.group(rects, groupThreshold: 3).isEmpty)
        let grouped = GroupRectangles.group(rects, groupThreshold: 2)
        #expect(grouped == [Detection(x: 10, y: 10, width: 40, height: 40, neighbors: 3)])
    }

    @Test func averagesRoundHalfToEven() {
        // x: (10 + 11) / 2 = 10.5 -> 10; y: (11 + 12) / 2 = 11.5 -> 12.
        let grouped = GroupRectangles.group([Detection(x: 10, y: 11, width: 40, height: 40),
                                             Detection(x: 11, y: 12, width: 40, height: 40)], groupThreshold: 1)
        #expect(grouped.map { [$0.x, $0.y] } == [[10, 12]])
    }

    @Test func smallBoxInsideBetterSupportedBoxIsDropped() {
        var rects: [Detection] = []
        for _ in 0..<6 { rects.append(Self.box(100, 100, 100)) }
        for _ in 0..<4 { rects.append(Self.box(130, 130, 30)) }
        let grouped = GroupRectangles.group(rects, groupThreshold: 2)
        #expect(grouped.map(\.width) == [100])
    }

    @Test func zeroThresholdKeepsEveryBox() {
        let rects = [Self.box(0, 0, 10), Self.box(1, 0, 10)]
        #expect(GroupRectangles.group(rects, groupThreshold: 0).map(\.neighbors) == [1, 1])
    }

    @Test func intersectionOverUnion() {
        #expect(Self.box(0, 0, 10).intersectionOverUnion(Self.box(0, 0, 10)) == 1)
        #expect(Self.box(0, 0, 10).intersectionOverUnion(Self.box(20, 0, 10)) == 0)
        #expect(abs(Self.box(0, 0, 10).intersectionOverUnion(Self.box(5, 0, 10)) - 50.0 / 150.0) < 1e-12)
    }
}
