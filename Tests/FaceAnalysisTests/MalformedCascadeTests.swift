import FaceAnalysis
import Testing

/// Broken, truncated and foreign cascade files: each is a thrown error with a stable code.
@Suite struct MalformedCascadeTests {
    /// A small valid stump cascade: one stage, one two-rectangle feature.
    static let tiny = """
    <?xml version="1.0"?>
    <opencv_storage>
    <cascade type_id="opencv-cascade-classifier"><stageType>BOOST</stageType>
      <featureType>HAAR</featureType><height>4</height><width>4</width>
      <stageParams><maxWeakCount>1</maxWeakCount></stageParams>
      <featureParams><maxCatCount>0</maxCatCount></featureParams>
      <stageNum>1</stageNum>
      <stages><_><maxWeakCount>1</maxWeakCount><stageThreshold>-1.</stageThreshold>
        <weakClassifiers><_><internalNodes>0 -1 0 0.5</internalNodes>
          <leafValues>-2. 2.</leafValues></_></weakClassifiers></_></stages>
      <features><_><rects><_>0 0 4 4 -1.</_><_>0 0 2 4 2.</_></rects></_></features>
    </cascade>
    </opencv_storage>
    """

    static func load(_ text: String) throws -> CascadeClassifier {
        try CascadeClassifier(xml: Array(text.utf8), identifier: "test")
    }

    @Test func tinyCascadeLoads() throws {
        let cascade = try Self.load(Self.tiny)
        #expect(cascade.windowSize.width == 4 && cascade.stageCount == 1)
    }

    @Test(arguments: [
        ("", FaceAnalysisError.Code.malformedXML),
        ("not xml at all", .malformedXML),
        ("\u{0}\u{1}\u{2}\u{ff}binary", .malformedXML),
        ("<opencv_storage><cascade>", .malformedXML),
        ("<a><b></a></b>", .malformedXML),
        ("<a attr=unquoted></a>", .malformedXML),
        ("<a>&bogus;</a>", .malformedXML),
        ("<a></a><b></b>", .malformedXML),
        ("<!-- never closed", .malformedXML),
        ("<opencv_storage></opencv_storage>", .invalidCascade),
        ("<opencv_storage><something><x>1</x></something></opencv_storage>", .invalidCascade),
    ])
    func rejectsBrokenDocuments(text: String, code: FaceAnalysisError.Code) {
        #expect { try Self.load(text) } throws: { ($0 as? FaceAnalysisError)?.code == code }
    }

    @Test func everyTruncationIsAnError() {
        let bytes = Array(Self.tiny.utf8)
        // Cut the document at every 7th byte: never a crash, always a malformed-XML error.
        for end in stride(from: 0, to: bytes.count - 1, by: 7) {
            #expect(throws: FaceAnalysisError.self) { try CascadeClassifier(xml: Array(bytes[0..<end])) }
        }
    }

    @Test func deepNestingIsRefused() {
        let text = String(repeating: "<a>", count: 10_000) + String(repeating: "</a>", count: 10_000)
        #expect { try Self.load(text) } throws: { ($0 as? FaceAnalysisError)?.code == .malformedXML }
    }

    @Test(arguments: [
        // A stage type other than BOOST.
        ("<stageType>BOOST</stageType>", "<stageType>GENTLE</stageType>", FaceAnalysisError.Code.unsupportedCascade),
        // HOG features (OpenCV 3+ refuses them too).
        ("<featureType>HAAR</featureType>", "<featureType>HOG</featureType>", .unsupportedCascade),
        // A node naming a feature that does not exist.
        ("0 -1 0 0.5", "0 -1 7 0.5", .invalidCascade),
        // A child link past the end of its tree.
        ("0 -1 0 0.5", "1 -1 0 0.5", .invalidCascade),
        // Leaf count that does not match the nodes.
        ("-2. 2.", "-2.", .invalidCascade),
        // A rectangle outside the window.
        ("0 0 2 4 2.", "3 0 2 4 2.", .invalidCascade),
        // A threshold that is not a number.
        ("0 -1 0 0.5", "0 -1 0 zero", .invalidCascade),
        // A window size of zero.
        ("<width>4</width>", "<width>0</width>", .invalidCascade),
        // No stages.
        ("stages>", "stagez>", .invalidCascade),
        // Haar with categorical splits.
        ("<maxCatCount>0</maxCatCount>", "<maxCatCount>256</maxCatCount>", .unsupportedCascade),
        // Not a number where one is required.
        ("<stageThreshold>-1.</stageThreshold>", "<stageThreshold>inf</stageThreshold>", .invalidCascade),
    ])
    func rejectsBadContent(original: String, replacement: String, code: FaceAnalysisError.Code) throws {
        #expect(Self.tiny.contains(original))
        let text = Self.tiny.replacingOccurrences(original, with: replacement)
        #expect { try Self.load(text) } throws: { ($0 as? FaceAnalysisError)?.code == code }
    }
}

extension String {
    /// `self` with every `target` replaced (no Foundation needed).
    func replacingOccurrences(_ target: String, with replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound]
            result += replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
