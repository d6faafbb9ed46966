// @ts-check
/**
 * The sidebar: the stored conversations (`GET /api/conversations`) and the
 * collapsible "Tools (N)" panel (`GET /api/tools`: every tool the agent has —
 * name, source, description — and the MCP servers that did not start, with
 * their error).
 *
 * @since 0.1.0
 */
import { h } from "./dom.js"

/**
 * @typedef {{ name: string, description: string, source: string }} ToolEntry
 * @typedef {{ tools: ToolEntry[], failed_servers: Array<{ name: string, error: string }> }} ToolCatalogue
 */

/**
 * Fills the panel (`<details>` with a `<summary>` and a list) from the catalogue.
 *
 * @param {HTMLElement} panel
 * @param {ToolCatalogue} catalogue
 */
export function renderTools(panel, catalogue) {
  const tools = Array.isArray(catalogue?.tools) ? catalogue.tools : []
  const failed = Array.isArray(catalogue?.failed_servers) ? catalogue.failed_servers : []
  const summary = /** @type {HTMLElement} */ (panel.querySelector("summary"))
  summary.replaceChildren(h("span", { text: `Tools (${tools.length})` }))
  if (failed.length > 0) {
    summary.append(
      h("span", {
        class: "tools-failed-count",
        text: ` · ${failed.length} server${failed.length === 1 ? "" : "s"} failed`
      })
    )
  }
  const list = /** @type {HTMLElement} */ (panel.querySelector("ul"))
  list.replaceChildren(
    ...failed.map((f) =>
      h(
        "li",
        { class: "tool failed", role: "note" },
        h(
          "span",
          { class: "tool-line" },
          h("span", { class: "tool-name", text: String(f.name) }),
          h("span", { class: "source", text: "MCP server did not start" })
        ),
        h("span", { class: "description", text: String(f.error) })
      )
    ),
    ...tools.map((t) =>
      h(
        "li",
        { class: "tool", "data-tool": t.name, title: t.description },
        h(
          "span",
          { class: "tool-line" },
          h("span", { class: "tool-name", text: t.name }),
          h("span", { class: "source", text: t.source })
        ),
        h("span", { class: "description", text: t.description })
      )
    )
  )
  panel.hidden = false
}

/** @typedef {(path: string, init?: RequestInit) => Promise<Response>} Api */

/**
 * Loads the tools panel (quietly does nothing when the server has no `/api/tools`).
 *
 * @param {HTMLElement} panel
 * @param {Api} api
 */
export async function loadTools(panel, api) {
  try {
    const res = await api("/api/tools")
    if (res.ok) renderTools(panel, await res.json())
  } catch {
    /* the panel is informative; the page works without it */
  }
}

/**
 * Loads the conversation list, most recent first; `currentId` is marked current.
 *
 * @param {HTMLElement} list
 * @param {Api} api
 * @param {string | null} currentId
 * @param {{ readonly conversationId: string, readonly query: string } | null} [running] the run this page started, whose conversation may not be stored yet
 */
export async function loadConversationList(list, api, currentId, running) {
  try {
    const res = await api("/api/conversations")
    if (!res.ok) return
    const body = await res.json()
    /** @type {any[]} */
    const items = Array.isArray(body) ? body : Array.isArray(body?.conversations) ? body.conversations : []
    list.replaceChildren(...items.map((c) => {
      const a = h(
        "a",
        { href: `#c=${encodeURIComponent(c.id)}`, "data-id": c.id, "aria-current": c.id === currentId },
        // a conversation whose first run still goes has no stored title yet
        h("span", {
          class: "title",
          text: c.title || (running && c.id === running.conversationId ? running.query : "") || "Untitled"
        }),
        c.waiting_approval ? h("span", { class: "badge waiting", text: "Waiting for approval" }) : null,
        h("span", {
          class: "meta",
          text: [
            c.turns ? `${c.turns} turn${c.turns === 1 ? "" : "s"}` : "",
            c.updated_at ? new Date(c.updated_at).toLocaleString() : ""
          ].filter(Boolean).join(" · ")
        })
      )
      return h("li", {}, a)
    }))
    if (items.length === 0) list.replaceChildren(h("li", { class: "muted", text: "No conversations yet" }))
  } catch {
    /* the list is a convenience; the page works without it */
  }
}

/**
 * The conversation drawer on phones: the ☰ button toggles it; returns `close`.
 *
 * @param {HTMLElement} toggle
 * @returns {() => void}
 */
export function drawer(toggle) {
  const close = () => {
    document.body.classList.remove("sidebar-open")
    toggle.setAttribute("aria-expanded", "false")
  }
  toggle.addEventListener("click", () => {
    const open = document.body.classList.toggle("sidebar-open")
    toggle.setAttribute("aria-expanded", String(open))
    if (open) /** @type {HTMLElement | null} */ (document.querySelector("#conversation-list a"))?.focus()
  })
  return close
}
