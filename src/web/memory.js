// @ts-check
/**
 * The memory panel (docs/memory.md): a user id field — kept in this browser,
 * sent as `user_id` with every run — and what the server's memory holds of
 * that user (`GET /api/users/:id/memory`: the working memory and the indexed
 * turns), with a Forget button that asks for confirmation first (`DELETE
 * /api/users/:id/memory`, optionally with the user's conversations).
 * Changing the user starts a new conversation (a conversation belongs to its
 * user). The panel refreshes after each run and on each `memory` event.
 *
 * @since 0.1.0
 */
import { h } from "./dom.js"
import { api, errorText } from "./http.js"

const KEY = "react-engine-user"
const USER_ID = /^[A-Za-z0-9._:@-]{1,128}$/

/** The user id runs are sent with, or undefined (no memory read or written). */
export function currentUser() {
  const value = localStorage.getItem(KEY) ?? ""
  return USER_ID.test(value) ? value : undefined
}

/** @type {HTMLElement | null} */
let panel = null

/** @param {string} text @param {boolean} [error] */
function status(text, error = false) {
  const line = panel?.querySelector(".memory-status")
  if (!line) return
  line.textContent = text
  line.classList.toggle("error", error)
}

/** Reloads what is known of the current user. */
export async function refreshMemory() {
  if (!panel) return
  const known = /** @type {HTMLElement} */ (panel.querySelector(".memory-known"))
  const user = currentUser()
  known.replaceChildren()
  const forgetButton = /** @type {HTMLButtonElement} */ (panel.querySelector(".memory-forget"))
  forgetButton.disabled = user === undefined
  if (user === undefined) {
    status("No user: runs neither read nor write any memory.")
    return
  }
  const res = await api(`/api/users/${encodeURIComponent(user)}/memory`).catch(() => null)
  if (!res || !res.ok) {
    status(res ? await errorText(res) : "The memory could not be read.", true)
    return
  }
  const body = await res.json()
  const keys = Object.keys(body.working_memory ?? {})
  status(
    `${keys.length} working-memory ${keys.length === 1 ? "key" : "keys"} · ${body.items.length} remembered ${
      body.items.length === 1 ? "turn" : "turns"
    }`
  )
  if (keys.length > 0) known.append(h("pre", { class: "memory-working" }, JSON.stringify(body.working_memory, null, 2)))
  if (body.items.length > 0) {
    known.append(
      h(
        "ul",
        { class: "memory-items" },
        ...body.items.slice(-20).reverse().map((/** @type {any} */ item) =>
          h(
            "li",
            { title: `${item.at} · ${item.conversation_id}` },
            h("span", { class: "memory-date" }, String(item.at).slice(0, 10)),
            " ",
            item.query
          )
        )
      )
    )
  }
}

async function forget() {
  const user = currentUser()
  if (!user || !panel) return
  const withConversations = /** @type {HTMLInputElement} */ (panel.querySelector(".memory-conversations")).checked
  const what = withConversations
    ? "everything remembered about this user and all their conversations"
    : "everything remembered about this user"
  if (!window.confirm(`Forget ${what} (${user})? This cannot be undone.`)) return
  const res = await api(
    `/api/users/${encodeURIComponent(user)}/memory${withConversations ? "?conversations=true" : ""}`,
    { method: "DELETE" }
  )
    .catch(() => null)
  if (!res || res.status !== 204) {
    status(res ? await errorText(res) : "The forget request failed.", true)
    return
  }
  await refreshMemory()
  status("Forgotten.")
  if (withConversations) window.dispatchEvent(new CustomEvent("memory-forgot-conversations"))
}

/**
 * Adds the panel to the sidebar. Changing the user dispatches `user-change` on `window`.
 *
 * @param {HTMLElement} sidebar
 */
export function mountMemoryPanel(sidebar) {
  const input = /** @type {HTMLInputElement} */ (h("input", {
    class: "memory-user",
    type: "text",
    placeholder: "user id (optional)",
    "aria-label": "User id",
    autocomplete: "off",
    maxlength: "128",
    value: currentUser() ?? ""
  }))
  input.addEventListener("change", () => {
    const value = input.value.trim()
    if (value !== "" && !USER_ID.test(value)) {
      status("A user id is 1-128 letters, digits or . _ : @ -", true)
      return
    }
    if (value === "") localStorage.removeItem(KEY)
    else localStorage.setItem(KEY, value)
    window.dispatchEvent(new CustomEvent("user-change"))
    void refreshMemory()
  })
  const forgetButton = h("button", { type: "button", class: "btn small memory-forget" }, "Forget…")
  forgetButton.addEventListener("click", () => void forget())
  panel = h(
    "details",
    { id: "memory-panel", class: "tools-panel memory-panel" },
    h("summary", {}, "Memory"),
    h("label", { class: "memory-user-label" }, "User ", input),
    h("p", { class: "memory-status", role: "status" }),
    h("div", { class: "memory-known" }),
    h(
      "label",
      { class: "memory-conversations-label" },
      h("input", { type: "checkbox", class: "memory-conversations" }),
      " and their conversations"
    ),
    forgetButton
  )
  const tools = sidebar.querySelector("#tools-panel")
  if (tools) tools.before(panel)
  else sidebar.append(panel)
  panel.addEventListener("toggle", () => {
    if (panel?.hasAttribute("open")) void refreshMemory()
  })
  void refreshMemory()
}
