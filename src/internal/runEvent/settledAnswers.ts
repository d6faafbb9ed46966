/**
 * `RunEvent.settledAnswers`: the answer events of a run held until the loop
 * knows they are the answer.
 *
 * @internal
 */
import type { RunEvent } from "../../RunEvent.js"

/** False for an event forwarded from a child run (`RunEvent.isOwn`, without importing the module). */
const isOwnEvent = (event: RunEvent): boolean => !("agent" in event) || event.agent === undefined

/** See `RunEvent.settledAnswers`. One instance per run: it holds that run's events. */
export const settledAnswers = (): (event: RunEvent) => ReadonlyArray<RunEvent> => {
  let signalled = false
  let held: Array<RunEvent> = []
  return (event) => {
    // a child run's events (`agent` set) are not this run's answer: they pass at once
    if (signalled || isOwnEvent(event) === false) return [event]
    switch (event._tag) {
      case "AnswerStart":
      case "AnswerDelta":
        held.push(event)
        return []
      case "AnswerReset":
        held = []
        return []
      case "AnswerSignal": {
        signalled = true
        const out = [event, ...held]
        held = []
        return out
      }
      default:
        return [event]
    }
  }
}
