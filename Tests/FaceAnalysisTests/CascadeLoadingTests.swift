import FaceAnalysis
import Testing

/// Every cascade Debian's opencv-data ships loads; broken or foreign files are clear errors.
@Suite struct CascadeLoadingTests {
    /// The OpenCV face cascades a user may point PhotoDrain at, with what we know about each.
    @Test(arguments: [
        ("haarcascade_frontalface_default", FeatureType.haar, 24, 24, 25),
        ("haarcascade_frontalface_alt", .haar, 20, 20, 22),
        ("haarcascade_frontalface_alt2", .haar, 20, 20, 20),
        ("haarcascade_frontalface_alt_tree", .haar, 20, 20, 47),
        ("haarcascade_profileface", .haar, 20, 20, 26),
        ("lbpcascade_frontalface", .lbp, 24, 24, 20),
        ("lbpcascade_frontalface_improved", .lbp, 45, 45, 19),
        ("lbpcascade_profileface", .lbp, 20, 34, 16),
    ])
    func faceCascadeLoads(name: String, type: FeatureType, width: Int, height: Int, stages: Int) throws {
        let cascade = try CascadeClassifier(contentsOf: Fixtures.cascadePath(name))
        #expect(cascade.featureType == type)
        #expect(cascade.windowSize.width == width && cascade.windowSize.height == height)
        #expect(cascade.stageCount == stages)
        #expect(cascade.identifier == name)
    }

    /// The rest of opencv-data: eyes, bodies, plates (tilted Haar features, the old
    /// `opencv-haar-classifier` layout, trees with several nodes).
    @Test(arguments: [
        "haarcascade_eye", "haarcascade_eye_tree_eyeglasses", "haarcascade_frontalcatface",
        "haarcascade_frontalcatface_extended", "haarcascade_fullbody", "haarcascade_lefteye_2splits",
        "haarcascade_licence_plate_rus_16stages", "haarcascade_lowerbody", "haarcascade_righteye_2splits",
        "haarcascade_russian_plate_number", "haarcascade_smile", "haarcascade_upperbody",
        "lbpcascade_frontalcatface", "lbpcascade_silverware",
    ])
    func otherCascadeLoads(name: String) throws {
        let cascade = try CascadeClassifier(contentsOf: Fixtures.cascadePath(name))
        #expect(cascade.stageCount > 0)
    }

    @Test func oldFormatCascadeLoadsWithItsWindow() throws {
        let cascade = try CascadeClassifier(contentsOf: Fixtures.cascadePath("haarcascade_licence_plate_rus_16stages"))
        #expect(cascade.windowSize.width == 64 && cascade.windowSize.height == 16)
        #expect(cascade.stageCount == 16)
    }

    @Test func missingFileIsUnreadable() {
        #expect { try CascadeClassifier(contentsOf: "/nonexistent/cascade.xml") } throws: { error in
            (error as? FaceAnalysisError)?.code == .unreadable
        }
    }

    @Test func directoryIsUnreadable() {
        #expect { try CascadeClassifier(contentsOf: "/tmp") } throws: { error in
            (error as? FaceAnalysisError)?.code == .unreadable
        }
    }

    @Test func errorNamesTheFile() throws {
        let path = Fixtures.directory + "/images/LICENSES.md"
        do {
            _ = try CascadeClassifier(contentsOf: path)
            Issue.record("a Markdown file loaded as a cascade")
        } catch {
            #expect(error.path == path)
            #expect(error.code == .malformedXML)
            #expect(error.description.hasPrefix(path + ": malformed-xml: "))
        }
    }
}
