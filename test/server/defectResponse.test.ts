/**
 * A defect in a route (a database refusing a statement, a bug) is a logged 500 with a JSON
 * body (issue 46 item 8: PostgreSQL's refusal of U+0000 was an empty 500 and no log line).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as ApiError from "../../src/server/ApiError.js"

describe("ApiError.handle", () => {
  it.effect("a defect is a 500 with a JSON body and an error log line", () =>
    Effect.gen(function*() {
      const lines: Array<string> = []
      const logger = Logger.make(({ cause, logLevel, message }) => {
        lines.push(`${logLevel.label} ${String(message)} ${cause._tag === "Empty" ? "" : String(cause)}`)
      })
      const response = yield* ApiError.handle(
        Effect.die(new Error("invalid byte sequence for encoding \"UTF8\": 0x00"))
      ).pipe(
        Effect.provide(Logger.replace(Logger.defaultLogger, logger))
      )
      assert.strictEqual(response.status, 500)
      assert.strictEqual(response.body._tag, "Uint8Array")
      const body = response.body._tag === "Uint8Array"
        ? JSON.parse(new TextDecoder().decode(response.body.body))
        : undefined
      assert.deepStrictEqual(body, {
        error: "internal_error",
        message: "Internal error: the server's log has the details"
      })
      assert.strictEqual(lines.length, 1)
      assert.match(lines[0] ?? "", /^ERROR request failed .*invalid byte sequence/)
    }))

  it.effect("an interruption stays an interruption (a client that went away gets no response)", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(ApiError.handle(Effect.interrupt))
      assert.isTrue(exit._tag === "Failure")
    }))
})
