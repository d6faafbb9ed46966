/**
 * Context guard cost: time of one `checkAndCompact` (the check every loop
 * iteration makes; the list fits the budget) at 10, 100 and 1000 history
 * messages, in the loop's pattern: the history was checked before, one new
 * message arrived since ("warm"); and for a list whose messages were never seen
 * ("cold": every estimate computed).
 *
 * @since 0.1.0
 */
import { ContextGuard, Message } from "effect-react-engine"
import * as Effect from "effect/Effect"
import { median } from "./harness.js"

/** @since 0.1.0 */
export const SIZES = [10, 100, 1000] as const

const history = (n: number, salt: string): Array<Message.ChatMessage> => {
  const out: Array<Message.ChatMessage> = [
    Message.system("You are a helpful agent."),
    Message.user(`Question ${salt}`, { pinned: true })
  ]
  for (let i = 0; out.length < n; i++) {
    const id = `call_${salt}_${i}`
    out.push(Message.assistant(null, { toolCalls: [Message.toolCall(id, "lookup", `{"index":${i}}`)] }))
    if (out.length < n) out.push(Message.tool(id, `record ${i}: ${"field value ".repeat(40)}`, "lookup"))
  }
  return out.slice(0, n)
}

/** @since 0.1.0 */
export interface GuardFigures {
  readonly messages: number
  /** µs per check, one new message since the last check. */
  readonly warmUs: number
  /** µs per check, no message seen before. */
  readonly coldUs: number
}

/** @since 0.1.0 */
export const run = (options: { readonly checks?: number } = {}): Array<GuardFigures> => {
  const guard = ContextGuard.makeUnsafe({ budget: 100_000_000 })
  const checks = options.checks ?? 200
  const out: Array<GuardFigures> = []
  for (const n of SIZES) {
    // warm: the history grows by one message per check, as in the loop
    const base = history(n, "w")
    Effect.runSync(guard.checkAndCompact(base))
    const lists: Array<Array<Message.ChatMessage>> = []
    let current = base
    for (let k = 0; k < checks; k++) {
      current = [...current, Message.user(`new message ${k}`)]
      lists.push(current)
    }
    const warm: Array<number> = []
    for (const list of lists) {
      const t = process.hrtime.bigint()
      Effect.runSync(guard.checkAndCompact(list))
      warm.push(Number(process.hrtime.bigint() - t) / 1000)
    }
    // cold: fresh message objects every time
    const coldLists = Array.from({ length: Math.max(10, Math.floor(checks / 10)) }, (_, k) => history(n, `c${k}`))
    const cold: Array<number> = []
    for (const list of coldLists) {
      const t = process.hrtime.bigint()
      Effect.runSync(guard.checkAndCompact(list))
      cold.push(Number(process.hrtime.bigint() - t) / 1000)
    }
    out.push({ messages: n, warmUs: median(warm), coldUs: median(cold) })
  }
  return out
}
