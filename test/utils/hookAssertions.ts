import { assert } from "@effect/vitest"
import { InvalidHook } from "../../src/Hooks.js"

/** Asserts that `f` throws an `InvalidHook` whose message mentions `fragment`. */
export const rejectsInvalidHook = (f: () => unknown, fragment: string): void => {
  try {
    f()
  } catch (error) {
    assert.instanceOf(error, InvalidHook)
    assert.include((error as InvalidHook).message, fragment)
    return
  }
  assert.fail(`expected InvalidHook mentioning ${fragment}`)
}
