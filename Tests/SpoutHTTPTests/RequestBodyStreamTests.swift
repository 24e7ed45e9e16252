import Foundation
import Synchronization
import Testing

@testable import SpoutHTTP

@Suite("Request body stream")
struct RequestBodyStreamTests {
    @Test func piecesInOrderThenTheEnd() throws {
        let stream = RequestBodyStream(patience: .seconds(30), resume: {})
        stream.append([1, 2])
        stream.append([])
        stream.append([3])
        stream.finish()
        stream.append([4])
        #expect(try stream.next() == [1, 2])
        #expect(try stream.next() == [3])
        #expect(try stream.next() == nil)
        #expect(try stream.next() == nil)
    }

    @Test func readsPauseAtTheHighWatermarkAndResumeOnceAtTheLow() throws {
        let resumes = Atomic(0)
        let stream = RequestBodyStream(highWatermark: 10, lowWatermark: 4, patience: .seconds(30), resume: { resumes.add(1, ordering: .relaxed) })
        stream.append(Array(repeating: 0, count: 6))
        #expect(!stream.pauseIfFull())
        stream.append(Array(repeating: 0, count: 3))
        stream.append(Array(repeating: 0, count: 3))
        #expect(stream.pauseIfFull())
        #expect(try stream.next()?.count == 6)  // 6 wait: above the low watermark
        #expect(resumes.load(ordering: .relaxed) == 0)
        #expect(try stream.next()?.count == 3)  // 3 wait: resumed
        #expect(resumes.load(ordering: .relaxed) == 1)
        #expect(try stream.next()?.count == 3)
        #expect(resumes.load(ordering: .relaxed) == 1)
        #expect(!stream.pauseIfFull())
    }

    @Test func aFailureComesAfterWhatArrived() throws {
        let stream = RequestBodyStream(patience: .seconds(30), resume: {})
        stream.append([1])
        stream.fail(.clientGone)
        stream.finish()
        #expect(try stream.next() == [1])
        #expect(throws: RequestBodyStream.Failure.clientGone) { try stream.next() }
        #expect(throws: RequestBodyStream.Failure.clientGone) { try stream.next() }
        #expect(!stream.pauseIfFull())
    }

    @Test func noByteForItsPatienceIsATimeout() throws {
        let stream = RequestBodyStream(patience: .milliseconds(20), resume: {})
        #expect(throws: RequestBodyStream.Failure.timedOut(.milliseconds(20))) { try stream.next() }
        #expect(RequestBodyStream.Failure.timedOut(.seconds(30)).status == .requestTimeout)
    }

    @Test func aConsumerOnAThreadWaitsForTheNextPiece() async throws {
        let stream = RequestBodyStream(patience: .seconds(30), resume: {})
        let pieces = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[[UInt8]], any Error>) in
            Thread {
                continuation.resume(
                    with: Result { () throws -> [[UInt8]] in
                        var pieces: [[UInt8]] = []
                        while let piece = try stream.next() { pieces.append(piece) }
                        return pieces
                    })
            }.start()
            for value in UInt8(0)..<50 {
                stream.append([value])
                if value % 10 == 0 { Thread.sleep(forTimeInterval: 0.001) }
            }
            stream.finish()
        }
        #expect(pieces == (UInt8(0)..<50).map { [$0] })
    }
}
