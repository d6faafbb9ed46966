// @ts-check
/**
 * A small Server-Sent Events parser for `fetch` bodies (EventSource cannot POST).
 * Follows the WHATWG event-stream rules: lines end with CRLF, LF or CR; `event`,
 * `data` (multi-line, joined with "\n"), `id` and `retry` fields; `:` comments are
 * ignored; an event is dispatched on a blank line. Robust to any chunk split,
 * including a CRLF pair split across two chunks.
 *
 * @since 0.1.0
 */

/**
 * @typedef {{ event: string, data: string, id: string | undefined }} SseMessage
 */

/**
 * @param {(message: SseMessage) => void} onMessage called for each complete event
 * @returns {{ feed: (chunk: string) => void, end: () => void }}
 */
export function createSseParser(onMessage) {
  let buffer = ""
  let skipLeadingLf = false
  let eventName = ""
  /** @type {string[]} */
  let data = []
  let hasData = false
  /** @type {string | undefined} */
  let lastId = undefined

  /** @param {string} line */
  const processLine = (line) => {
    if (line === "") {
      if (hasData) onMessage({ event: eventName || "message", data: data.join("\n"), id: lastId })
      eventName = ""
      data = []
      hasData = false
      return
    }
    if (line.startsWith(":")) return
    const colon = line.indexOf(":")
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? "" : line.slice(colon + 1)
    if (value.startsWith(" ")) value = value.slice(1)
    switch (field) {
      case "event":
        eventName = value
        break
      case "data":
        data.push(value)
        hasData = true
        break
      case "id":
        if (!value.includes("\0")) lastId = value
        break
      default:
        // `retry` and unknown fields are ignored: reconnection is the caller's job
        break
    }
  }

  return {
    feed(chunk) {
      if (skipLeadingLf && chunk.startsWith("\n")) chunk = chunk.slice(1)
      skipLeadingLf = false
      buffer += chunk
      let start = 0
      for (let i = 0; i < buffer.length; i++) {
        const c = buffer[i]
        if (c !== "\n" && c !== "\r") continue
        processLine(buffer.slice(start, i))
        if (c === "\r") {
          if (i + 1 < buffer.length) {
            if (buffer[i + 1] === "\n") i++
          } else {
            skipLeadingLf = true
          }
        }
        start = i + 1
      }
      buffer = buffer.slice(start)
    },
    end() {
      // an unterminated trailing event is discarded, as the spec says
      buffer = ""
      data = []
      hasData = false
      eventName = ""
    }
  }
}

/**
 * Read a `fetch` response body as SSE, calling `onMessage` for each event.
 * Resolves when the body ends (normally or not); rejects on network errors/aborts.
 *
 * @param {Response} response
 * @param {(message: SseMessage) => void} onMessage
 * @returns {Promise<void>}
 */
export async function readSse(response, onMessage) {
  if (!response.body) throw new Error("response has no body")
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  const parser = createSseParser(onMessage)
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      parser.feed(value)
    }
  } finally {
    parser.end()
    reader.releaseLock()
  }
}
