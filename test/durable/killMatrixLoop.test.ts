/**
 * How the kill-matrix loop (`killMatrixLoop.ts`) counts re-executions from a
 * record file: the signature of the failure it hunts, an idempotent call cut
 * by a kill and run again (expected), and a completed tool run again.
 */
import { assert, describe, it } from "@effect/vitest"
import { countRecords } from "./killMatrixLoop.js"

describe("the kill-matrix loop's count", () => {
  it("counts a non-idempotent tool started again and a completed tool run again; not an idempotent call cut and run again", () => {
    // issue 46: the slow tool twice on the same instance
    const twice = countRecords([
      "start slow A",
      "start slow A",
      "end slow A",
      "end slow A",
      "start fast A",
      "start fast B",
      "end fast B"
    ])
    assert.strictEqual(twice.nonIdempotentAgain, 1)
    assert.strictEqual(twice.completedAgain, 1)
    // the matrix's idempotent point: the fast tool cut by the kill runs again once
    const expected = countRecords(["start slow", "end slow", "start fast", "start fast", "end fast"])
    assert.deepStrictEqual([expected.nonIdempotentAgain, expected.completedAgain], [0, 0])
    // a completed idempotent tool started again after its end
    const again = countRecords(["start slow", "end slow", "start fast", "end fast", "start fast", "end fast"])
    assert.deepStrictEqual([again.nonIdempotentAgain, again.completedAgain], [0, 2])
  })
})
