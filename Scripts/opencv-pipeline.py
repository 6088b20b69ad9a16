#!/usr/bin/python3
"""The peer of `photodrain analyze` for Scripts/bench-pipeline: decode each JPEG to gray at 1/4
with OpenCV (IMREAD_REDUCED_GRAYSCALE_4, libjpeg-turbo's DCT scaling) and run the same cascade
with the same parameters, one thread per process.

    opencv-pipeline.py CASCADE MIN_SIZE FILE...   -> prints "<files> <seconds> <faces>"
"""
import sys
import time

import cv2


def main():
    cascade_path, min_size, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    cv2.setNumThreads(1)
    cascade = cv2.CascadeClassifier(cascade_path)
    if cascade.empty():
        sys.exit(f"cannot load {cascade_path}")
    start = time.perf_counter()
    faces = 0
    for path in files:
        gray = cv2.imread(path, cv2.IMREAD_REDUCED_GRAYSCALE_4)
        if gray is None:
            continue
        found = cascade.detectMultiScale(gray, scaleFactor=1.1, minNeighbors=3, minSize=(min_size, min_size))
        faces += len(found)
    print(len(files), time.perf_counter() - start, faces)


if __name__ == "__main__":
    main()
