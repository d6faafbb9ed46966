// @ts-check
/**
 * Sub-agents on the page (SPEC §27): a child run's events (`agent` set on
 * their data) are drawn by a run view of its own, nested in the card of the
 * tool call that started it (`agent.tool_call_id`) — its thinking, its tool
 * cards, its answer — open while it works and collapsed when it is done
 * (`agent` `{status:"done"}`). A grandchild's events carry their own `agent`:
 * its view nests in its parent's card, inside the child's view.
 *
 * @since 0.1.0
 */
import { formatNumber, formatSeconds, h } from "./dom.js"

/**
 * @typedef {{ apply: (ev: { id?: string, event: string, data: any }) => boolean, root: HTMLElement,
 *   end: (kind: "done" | "stopped" | "failed" | "lost") => void, done: (d: any) => void, dispose: () => void }} NestedView
 */

export class AgentViews {
  /**
   * @param {HTMLElement} scope where the calling tool cards are (the parent run's element)
   * @param {(node: Node) => void} insert where a child goes whose card is not on the page (the parent run's flow)
   * @param {() => NestedView} makeView a fresh run view for a child
   */
  constructor(scope, insert, makeView) {
    this.scope = scope
    this.insert = insert
    this.makeView = makeView
    /** @type {Map<string, { view: NestedView, section: HTMLDetailsElement, summary: HTMLElement }>} run id → the child's view */
    this.children = new Map()
  }

  /**
   * Draws the event when it is a child's (true), else leaves it to the parent's view (false).
   *
   * @param {string} event the SSE channel
   * @param {any} d the event's data
   */
  route(event, d) {
    const agent = d?.agent
    if (agent === null || typeof agent !== "object" || typeof agent.run_id !== "string") return false
    if (event === "agent") {
      if (d.status === "start") this.child(agent, d.query)
      else this.finish(agent, d)
      return true
    }
    const { agent: _, ...own } = d
    // the parent's view has already taken the event's id: the child's view draws it as its own
    this.child(agent, undefined).view.apply({ event, data: own })
    return true
  }

  /**
   * The child's view, made (in its calling card) when it is not yet.
   *
   * @param {any} agent
   * @param {string | undefined} query
   */
  child(agent, query) {
    const known = this.children.get(agent.run_id)
    if (known) return known
    const view = this.makeView()
    const summary = h(
      "summary",
      {},
      h("span", { class: "agent-badge", text: "Sub-agent" }),
      h("span", { class: "agent-name", text: String(agent.name ?? "") }),
      h("span", { class: "agent-state muted", text: " · working…" })
    )
    const section = /** @type {HTMLDetailsElement} */ (h(
      "details",
      {
        class: "agent running",
        open: "",
        "data-run-id": agent.run_id,
        "data-depth": String(agent.depth ?? 1)
      },
      summary,
      ...(query ? [h("div", { class: "agent-query", text: query })] : []),
      view.root
    ))
    const key = typeof agent.tool_call_id === "string" ? `id:${agent.tool_call_id}` : undefined
    const card = key === undefined ? null : this.scope.querySelector(`.card[data-key="${CSS.escape(key)}"]`)
    const body = card?.querySelector(".card-body")
    if (card instanceof HTMLDetailsElement && body) {
      card.open = true
      body.append(section)
    } else {
      this.insert(section)
    }
    const entry = { view, section, summary }
    this.children.set(agent.run_id, entry)
    return entry
  }

  /**
   * The child ended (`agent` `{status:"done"}`): its view ends, its section collapses.
   *
   * @param {any} agent
   * @param {any} d
   */
  finish(agent, d) {
    const { section, summary, view } = this.child(agent, undefined)
    if (!section.classList.contains("running")) return
    const failed = typeof d.error === "string" && d.error !== ""
    if (failed) view.apply({ event: "error", data: { message: d.error } })
    view.done({ answer: d.answer, iterations: d.iterations, usage: d.usage, elapsed: d.elapsed })
    section.classList.replace("running", failed ? "failed" : "ok")
    const state = /** @type {HTMLElement} */ (summary.querySelector(".agent-state"))
    const u = d.usage ?? {}
    state.textContent = failed
      ? ` · failed: ${d.error}`
      : ` · ${formatNumber(d.iterations ?? 0)} iteration${d.iterations === 1 ? "" : "s"} · ${
        formatNumber(u.total_tokens ?? 0)
      } tokens · ${formatSeconds(Number(d.elapsed ?? 0))}`
    section.open = false
  }

  /** The parent run is over: children still running are marked so. @param {"done" | "stopped" | "failed" | "lost"} kind */
  end(kind) {
    for (const { section, view } of this.children.values()) {
      if (!section.classList.contains("running")) continue
      view.end(kind === "done" ? "stopped" : kind)
      section.classList.replace("running", "cancelled")
    }
  }

  dispose() {
    for (const { view } of this.children.values()) view.dispose()
  }
}
