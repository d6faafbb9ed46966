// @ts-check
/**
 * The page controller: starts runs (`POST /api/react`, read as a streamed SSE
 * body), sends follow-ups while a run is active (`/api/react/inject`), stops runs
 * (`/api/react/cancel`), resumes after a dropped connection or a reload
 * (`GET /api/react/events?after=<last id>`), lists stored conversations.
 *
 * @since 0.1.0
 */
import { setupAttachments } from "./attachments.js"
import { forkOrigin } from "./cards.js"
import { h } from "./dom.js"
import { renderHistory } from "./history.js"
import { api, errorText, postJson, setToken } from "./http.js"
import { currentUser, mountMemoryPanel, refreshMemory } from "./memory.js"
import { schemaFromComposer } from "./output.js"
import { RunView } from "./render.js"
import { drawer, loadConversationList, loadTools } from "./sidebar.js"
import { readSse } from "./sse.js"

const $ = (/** @type {string} */ id) => /** @type {HTMLElement} */ (document.getElementById(id))
const transcript = $("transcript")
const input = /** @type {HTMLTextAreaElement} */ ($("composer-input"))
const sendBtn = /** @type {HTMLButtonElement} */ ($("send"))
const stopBtn = /** @type {HTMLButtonElement} */ ($("stop"))
const connection = $("connection")
// files attached to the next message (uploaded as they are added)
const files = setupAttachments(/** @type {HTMLFormElement} */ ($("composer")), input)
const ACTIVE_KEY = "react.activeRun"

/**
 * @typedef {{ view: RunView, conversationId: string | null, query: string, controller: AbortController,
 *   stopped: boolean, ready: Promise<void>, markReady: () => void }} ActiveRun
 */
const state = {
  /** @type {string | null} */ conversationId: null,
  /** @type {ActiveRun | null} */ run: null,
  /** @type {string[]} */ afterRun: []
}

// ---- layout helpers ------------------------------------------------------------

const nearBottom = () => transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 120
let stick = true
transcript.addEventListener("scroll", () => {
  stick = nearBottom()
}, { passive: true })
const follow = () => {
  if (stick) transcript.scrollTop = transcript.scrollHeight
}

/** @param {string} text */
function setConnection(text) {
  connection.textContent = text
  connection.hidden = text === ""
}

/** @param {boolean} active */
function setActive(active) {
  stopBtn.hidden = !active
  sendBtn.textContent = active ? "Send follow-up" : "Send"
  input.placeholder = active ? "Add a follow-up — the agent takes it in mid-run…" : "Ask anything…"
  document.body.classList.toggle("running", active)
}

function clearTranscript() {
  for (const el of [...transcript.children]) if (el.id !== "empty") el.remove()
  $("empty").hidden = false
}

/** @param {HTMLElement} el */
function appendTurn(el) {
  $("empty").hidden = true
  transcript.append(el)
}

/** @param {string | null} id */
function setConversation(id) {
  state.conversationId = id
  const hash = id ? `#c=${encodeURIComponent(id)}` : ""
  if (location.hash !== hash) history.replaceState(null, "", `${location.pathname}${location.search}${hash}`)
  for (const li of document.querySelectorAll("#conversation-list a")) {
    li.toggleAttribute("aria-current", li.getAttribute("data-id") === id)
  }
}

// ---- runs ----------------------------------------------------------------------

/** @param {string} query @param {string | null} conversationId */
function newRun(query, conversationId) {
  const view = new RunView(query, {
    onChange: follow,
    onApproval: (decision) => approve(run, decision),
    onBudget: (decision) => decideBudget(run, decision),
    onFork: (fork) => void forkRun(fork)
  })
  /** @type {() => void} */
  let markReady = () => {}
  const ready = new Promise((resolve) => {
    markReady = () => resolve(undefined)
  })
  /** @type {ActiveRun} */
  const run = { view, conversationId, query, controller: new AbortController(), stopped: false, ready, markReady }
  if (conversationId) markReady()
  state.run = run
  appendTurn(view.root)
  stick = true
  follow()
  setActive(true)
  return run
}

/** @param {ActiveRun} run @param {Response} res */
async function consume(run, res) {
  setConnection("Live")
  await readSse(res, (m) => {
    let data = null
    try {
      data = JSON.parse(m.data)
    } catch {
      return
    }
    run.view.apply({ event: m.event, data, id: m.id })
    // the conversation list says which runs wait for approval
    if (m.event === "approval" && data?.status === "requested") void loadConversations()
    if (m.event === "memory" || m.event === "done") void refreshMemory()
    if (m.event === "done") run.controller.abort() // the run is over; don't wait for the socket
  }).catch((e) => {
    if (!run.view.finished) throw e
  })
}

/** @param {string} query */
async function startRun(query) {
  const run = newRun(query, state.conversationId)
  const body = /** @type {Record<string, unknown>} */ ({ query })
  const attachments = await files.take()
  if (attachments.length > 0) body.attachments = attachments
  if (state.conversationId) body.conversation_id = state.conversationId
  const user = currentUser()
  if (user) body.user_id = user
  const mode = /** @type {HTMLSelectElement | null} */ (document.getElementById("mode"))?.value
  if (mode) body.mode = mode
  // the composer's "Answer schema" box (output.js): the answer is a value of it
  try {
    const schema = schemaFromComposer()
    if (schema !== undefined) body.output_schema = schema
  } catch (e) {
    run.view.apply({ event: "error", data: { message: /** @type {Error} */ (e).message, retryable: false } })
    return finish(run)
  }
  try {
    const res = await api("/api/react", { method: "POST", body: JSON.stringify(body), signal: run.controller.signal })
    if (!res.ok) {
      run.view.apply({ event: "error", data: { message: await errorText(res), retryable: res.status === 409 } })
      return finish(run)
    }
    const cid = res.headers.get("x-conversation-id")
    if (cid) {
      run.conversationId = cid
      setConversation(cid)
      sessionStorage.setItem(ACTIVE_KEY, JSON.stringify({ conversationId: cid, query }))
    }
    run.markReady()
    await consume(run, res)
  } catch {
    if (run.view.finished || run.stopped) return finish(run)
  }
  const note = !run.view.finished && !run.stopped ? await resume(run) : ""
  finish(run, { note })
}

/**
 * Re-attach to a run after the stream dropped: replay what was missed (events after
 * the last applied id) and follow it live. Retries with backoff while the network is away.
 *
 * @param {ActiveRun} run
 * @returns {Promise<string>} why it gave up, when the run was not followed to its end
 */
async function resume(run) {
  let delay = 400
  for (let attempt = 0; attempt < 40 && !run.view.finished && !run.stopped && run.conversationId; attempt++) {
    setConnection("Reconnecting…")
    run.view.note("Reconnecting to the run…")
    run.controller = new AbortController()
    const after = run.view.lastId >= 0 ? `&after=${run.view.lastId}` : ""
    try {
      const res = await api(`/api/react/events?conversation_id=${encodeURIComponent(run.conversationId)}${after}`, {
        signal: run.controller.signal,
        headers: { accept: "text/event-stream" }
      })
      if (res.status === 404 || res.status === 400) return "the run is no longer available"
      // the server has nothing more for this cursor: the run is over
      if (res.status === 204) return "the run has ended"
      if (res.ok) {
        run.view.note("")
        const before = run.view.lastId
        await consume(run, res)
        if (run.view.lastId > before) delay = 400 // progress: retry promptly if it drops again
      }
    } catch {
      if (run.view.finished || run.stopped) return ""
    }
    await new Promise((r) => setTimeout(r, delay))
    delay = Math.min(delay * 2, 5000)
  }
  return run.view.finished || run.stopped ? "" : "the connection to the run was lost"
}

/**
 * The run is over for this page (its `done`, a stop, a failure, or the stream is
 * gone): the view says how it ended and keeps no spinner.
 *
 * @param {ActiveRun} run @param {{ note?: string }} [options]
 */
function finish(run, options = {}) {
  if (state.run !== run) return
  if (!run.view.finished) {
    run.view.end(run.stopped ? "stopped" : run.view.failure !== null ? "failed" : "lost", options.note)
  }
  state.run = null
  sessionStorage.removeItem(ACTIVE_KEY)
  setActive(false)
  setConnection("")
  // the Stop button just disappeared: keep the keyboard where the next message is typed
  const focused = document.activeElement
  if (focused === stopBtn || focused === null || focused === document.body) input.focus()
  void loadConversations()
  const next = state.afterRun.shift()
  if (next) void startRun(next)
}

async function stop() {
  const run = state.run
  if (!run) return
  stopBtn.disabled = true
  try {
    await run.ready
    const res = run.conversationId ? await postJson("/api/react/cancel", { conversation_id: run.conversationId }) : null
    if (!res || res.status === 404) {
      run.stopped = true
      run.controller.abort()
    }
  } catch {
    run.stopped = true
    run.controller.abort()
  } finally {
    stopBtn.disabled = false
  }
}

/**
 * Sends the user's decision on a call waiting for approval.
 *
 * @param {ActiveRun} run @param {import("./approval.js").Decision} decision
 * @returns {Promise<{ ok: boolean, message?: string }>}
 */
async function approve(run, decision) {
  await run.ready
  if (!run.conversationId) return { ok: false, message: "The run has no conversation yet" }
  const res = await postJson("/api/react/approve", { conversation_id: run.conversationId, ...decision })
  void loadConversations()
  return res.ok ? { ok: true } : { ok: false, message: await errorText(res) }
}

/**
 * Sends the user's answer to a run waiting for more budget (policy `ask`).
 *
 * @param {ActiveRun} run @param {import("./budget.js").BudgetDecision} decision
 * @returns {Promise<{ ok: boolean, message?: string }>}
 */
async function decideBudget(run, decision) {
  await run.ready
  if (!run.conversationId) return { ok: false, message: "The run has no conversation yet" }
  const res = await postJson("/api/react/budget", { conversation_id: run.conversationId, ...decision })
  return res.ok ? { ok: true } : { ok: false, message: await errorText(res) }
}

/** @param {ActiveRun} run @param {string} content */
async function inject(run, content) {
  await run.ready
  const res = run.conversationId
    ? await postJson("/api/react/inject", { conversation_id: run.conversationId, content })
    : null
  if (res && res.ok) {
    const { id } = await res.json()
    const key = String(id)
    run.view.injectQueued(key, content, async () => {
      const r = await postJson("/api/react/inject/recall", { conversation_id: run.conversationId, id: key })
      const body = r.ok ? await r.json() : { recalled: false }
      if (body.recalled) {
        run.view.injectRecalled(key)
        input.value = content
        input.focus()
      }
    })
    follow()
    return
  }
  // no active run any more (it just ended): send it as the next turn
  state.afterRun.push(content)
  if (!state.run) {
    const next = state.afterRun.shift()
    if (next) void startRun(next)
  }
}

/**
 * "Fork from here": a new conversation that goes on from a step of a finished
 * run (`POST /api/conversations/:id/fork`, at the step's event, or at its tool
 * call for a stored turn); its run starts at once and the page opens it.
 *
 * @param {{ conversationId: string, runId: string, at?: number, toolCallId?: string, query: string }} fork
 */
async function forkRun(fork) {
  const point = fork.at !== undefined ? { at: fork.at } : { tool_call_id: fork.toolCallId }
  const res = await postJson(`/api/conversations/${encodeURIComponent(fork.conversationId)}/fork`, {
    run_id: fork.runId,
    ...point
  })
  if (!res.ok) {
    appendTurn(h("div", { class: "run-error", role: "alert", text: `Cannot fork this run: ${await errorText(res)}` }))
    return
  }
  const { conversation_id: id } = await res.json()
  // the fork's run is going: open the conversation and follow it (with its query)
  sessionStorage.setItem(ACTIVE_KEY, JSON.stringify({ conversationId: id, query: fork.query }))
  await openConversation(id)
  void loadConversations()
}

// ---- conversations ---------------------------------------------------------------

const loadConversations = () => loadConversationList($("conversation-list"), api, state.conversationId, state.run)

/**
 * The run this tab started on conversation `id` and had not seen finish.
 *
 * @param {string} id
 * @returns {{ conversationId: string, query: string } | null}
 */
function rememberedRun(id) {
  try {
    const value = JSON.parse(sessionStorage.getItem(ACTIVE_KEY) ?? "null")
    return value && value.conversationId === id && typeof value.query === "string" ? value : null
  } catch {
    return null
  }
}

/** @param {string} id */
async function openConversation(id) {
  if (state.run && state.run.conversationId === id) return
  if (state.run) {
    state.run.stopped = true // detach (the run continues on the server)
    state.run.controller.abort()
    finish(state.run)
  }
  clearTranscript()
  setConversation(id)
  closeSidebar()
  const res = await api(`/api/conversations/${encodeURIComponent(id)}`)
  /** @type {any} */
  let body = null
  if (res.ok) body = await res.json()
  else if (res.status !== 404 || rememberedRun(id) === null) {
    // (a conversation whose first run is still going is not stored yet: 404 then is fine)
    appendTurn(
      h("div", { class: "run-error", role: "alert", text: `Cannot open this conversation: ${await errorText(res)}` })
    )
    return
  }
  /** @type {any[]} */
  let messages = Array.isArray(body) ? body : Array.isArray(body?.messages) ? body.messages : []
  const remembered = rememberedRun(id)
  // the server says whether a run is going; older servers don't: then trust what this tab remembers
  const resuming = typeof body?.active === "boolean" ? body.active : remembered !== null
  if (resuming && remembered) {
    // the replay renders the running turn: if the history already holds it, cut it there
    for (let i = messages.length - 1; i >= 0; i--) {
      const m = messages[i]
      const text = typeof m?.content === "string"
        ? m.content
        : Array.isArray(m?.content)
        ? m.content.map((/** @type {any} */ p) => p?.text ?? "").join("")
        : ""
      if (m?.role === "user" && text === remembered.query) {
        messages = messages.slice(0, i)
        break
      }
    }
  }
  if (!resuming && remembered) sessionStorage.removeItem(ACTIVE_KEY)
  if (body?.forked_from) appendTurn(forkOrigin(body.forked_from))
  const onFork = (/** @type {{ runId: string, toolCallId: string, query: string }} */ f) =>
    void forkRun({ ...f, conversationId: id })
  for (
    const turn of renderHistory(messages, Array.isArray(body?.turn_details) ? body.turn_details : undefined, onFork)
  ) appendTurn(turn)
  transcript.scrollTop = transcript.scrollHeight
  if (resuming) {
    const run = newRun(remembered?.query ?? "", id)
    sessionStorage.setItem(ACTIVE_KEY, JSON.stringify({ conversationId: id, query: remembered?.query ?? "" }))
    finish(run, { note: await resume(run) })
  }
}

function newConversation() {
  if (state.run) return
  clearTranscript()
  setConversation(null)
  closeSidebar()
  input.focus()
}

// ---- sidebar, composer, keyboard -------------------------------------------------

const sidebarToggle = $("toggle-sidebar")
const closeSidebar = drawer(sidebarToggle)
$("new-chat").addEventListener("click", newConversation)
window.addEventListener("hashchange", () => {
  const id = conversationFromHash()
  if (id && id !== state.conversationId) void openConversation(id)
})

function autosize() {
  input.style.height = "auto"
  input.style.height = `${Math.min(input.scrollHeight, 200)}px`
}
input.addEventListener("input", autosize)

$("composer").addEventListener("submit", (e) => {
  e.preventDefault()
  const text = input.value.trim()
  if (!text) return
  input.value = ""
  autosize()
  if (state.run) void inject(state.run, text)
  else void startRun(text)
})
input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault()
    const form = /** @type {HTMLFormElement} */ ($("composer"))
    form.requestSubmit()
  }
})
stopBtn.addEventListener("click", () => void stop())
document.addEventListener("keydown", (e) => {
  const target = /** @type {HTMLElement} */ (e.target)
  const typing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement
  if (e.key === "Escape") {
    if (document.body.classList.contains("sidebar-open")) {
      closeSidebar()
      sidebarToggle.focus()
    } else if (state.run) void stop()
  } else if (e.key === "/" && !typing) {
    e.preventDefault()
    input.focus()
  } else if (e.altKey && (e.key === "n" || e.key === "N")) {
    e.preventDefault()
    newConversation()
  }
})

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault()
  const value = /** @type {HTMLInputElement} */ ($("token-input")).value.trim()
  setToken(value)
  $("token-form").hidden = true
  void boot()
})

// ---- start-up ----------------------------------------------------------------------

function conversationFromHash() {
  const m = /^#c=(.+)$/.exec(location.hash)
  return m ? decodeURIComponent(m[1]) : null
}

async function health() {
  try {
    const res = await fetch("/health")
    if (!res.ok) return
    const body = await res.json()
    $("model").textContent = body.model ? String(body.model) : ""
    $("demo-banner").hidden = body.demo !== true
    document.body.classList.toggle("demo", body.demo === true)
  } catch {
    setConnection("Server unreachable")
  }
}

async function boot() {
  const url = new URL(location.href)
  const token = url.searchParams.get("token")
  if (token !== null) {
    setToken(token)
    url.searchParams.delete("token")
    history.replaceState(null, "", url.pathname + url.search + url.hash)
  }
  await health()
  void loadConversations()
  void loadTools($("tools-panel"), api)
  mountMemoryPanel($("sidebar"))
  // a conversation belongs to its user: another user starts a new one
  window.addEventListener("user-change", () => newConversation())
  window.addEventListener("memory-forgot-conversations", () => {
    newConversation()
    void loadConversations()
  })
  const id = conversationFromHash()
  if (id) await openConversation(id)
}

/** Test and debugging hook: simulate a dropped connection (the run keeps going on the server). */
Object.defineProperty(window, "reactPage", {
  value: Object.freeze({
    dropConnection: () => state.run?.controller.abort(),
    get activeRun() {
      return state.run ? { conversationId: state.run.conversationId, lastId: state.run.view.lastId } : null
    }
  })
})

// no focus on load: the first Tab stop is the skip link, `/` focuses the message box
setActive(false)
void boot()
