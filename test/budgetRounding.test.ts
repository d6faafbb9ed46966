/**
 * Issue 46 item 11: a money limit extended by a person shows in USD as a person wrote it
 * (0.008 + 0.001 was `limit_usd: 0.009000000000000001`), and an extension is a sane amount
 * (`add_usd: 1e308` was accepted).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Budget from "../src/Budget.js"
import * as ApiSchema from "../src/server/ApiSchema.js"

describe("budget amounts in USD", () => {
  it("an extended limit is the sum as a person reads it", () => {
    const ledger = Budget.makeAccount({ usd: 0.008, prices: { m: { input: 1, output: 1 } } }, undefined)!.ledger!
    Budget.ledger.extend(ledger, 0.001)
    assert.strictEqual(Budget.snapshot(ledger).limit_usd, 0.009)
    assert.strictEqual(ledger.limits.usd, 0.009)
  })

  it("POST /api/react/budget: add_usd is a positive amount up to 1,000,000", () => {
    const decode = Schema.decodeUnknownEither(ApiSchema.BudgetRequest)
    assert.isTrue(Either.isRight(decode({ conversation_id: "c", decision: "extend", add_usd: 0.5 })))
    for (const add_usd of [1e308, 0, -1, 1_000_001]) {
      assert.isTrue(Either.isLeft(decode({ conversation_id: "c", decision: "extend", add_usd })), String(add_usd))
    }
  })
})
