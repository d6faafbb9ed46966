import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as ErrorMessage from "../src/ErrorMessage.js"
import { LlmError } from "../src/Llm.js"

class StoreDown extends Data.TaggedError("StoreDown")<{ readonly message: string }> {}

describe("ErrorMessage.runFailure (what RunFailed says, one rule for ReactAgent and DagAgent)", () => {
  it("an LLM error keeps its reason, retryability and message", () => {
    assert.deepStrictEqual(
      ErrorMessage.runFailure(Cause.fail(new LlmError({ reason: "RateLimited", message: "slow down" }))),
      {
        message: "LLM error (RateLimited): slow down",
        retryable: true,
        type: "RateLimited"
      }
    )
    assert.isFalse(ErrorMessage.runFailure(Cause.fail(new LlmError({ reason: "Auth", message: "no key" }))).retryable)
  })

  it("anything else is an internal error named as ErrorMessage names it (a tagged error keeps its tag, a defect loses the prefix)", () => {
    assert.deepStrictEqual(ErrorMessage.runFailure(Cause.fail(new StoreDown({ message: "disk full" }))), {
      message: "Internal error: StoreDown: disk full",
      retryable: false,
      type: "internal"
    })
    assert.strictEqual(ErrorMessage.runFailure(Cause.die(new Error("boom"))).message, "Internal error: boom")
    assert.strictEqual(
      ErrorMessage.runFailure(Cause.die(new TypeError("x is undefined"))).message,
      "Internal error: TypeError: x is undefined"
    )
  })
})
