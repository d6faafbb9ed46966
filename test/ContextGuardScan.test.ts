/**
 * The incremental scanner's resume decisions (src/internal/contextGuard/scan.ts)
 * in the cases the mutation run found unpinned: a list that kept an over-long
 * message is not resumed past it, the same array with its last message
 * replaced (pop, push) is walked again, and a copy with nothing new resumes.
 */
import { assert, describe, it } from "vitest"
import { makeScanner } from "../src/internal/contextGuard/scan.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"

const MAX = 100

describe("context guard scanner: when it resumes", () => {
  it("a list with an over-long message is cut again on every check, also once grown", () => {
    const scan = makeScanner(MAX)
    const list: Array<ChatMessage> = [Message.user("q"), Message.user("x".repeat(500))]
    assert.isDefined(scan(list).cut)
    list.push(Message.assistant("a"))
    const again = scan(list)
    assert.isDefined(again.cut, "the over-long message is still there")
    assert.isAtMost(Message.textOf(again.cut![1]!.content).length, MAX)
    assert.strictEqual(again.walked, 3)
  })

  it("the same array with its last message replaced (pop, then push) is walked again", () => {
    const scan = makeScanner(MAX)
    const list: Array<ChatMessage> = [Message.user("q"), Message.assistant("a")]
    assert.isUndefined(scan(list).cut)
    list.pop()
    list.push(Message.assistant("y".repeat(500)))
    const result = scan(list)
    assert.isDefined(result.cut, "the new over-long last message is seen")
    assert.strictEqual(result.walked, 2)
  })

  it("a new array equal to the last one checked resumes with nothing to walk", () => {
    const scan = makeScanner(MAX)
    const list: Array<ChatMessage> = [Message.user("q"), Message.assistant("a")]
    const first = scan(list)
    const copy = scan([...list])
    assert.strictEqual(copy.walked, 0)
    assert.strictEqual(copy.total, first.total)
  })
})
