/**
 * The A2A SDK's own client against this engine's server: reads the card, sends
 * a message (a task, completed, its answer the artifact `answer`), streams
 * another, reads the first task back.
 *
 *   npm start                       # the server, on the offline demo model
 *   npx tsx examples/a2a/sdk-client.ts http://localhost:3000
 */
import type { Message, Task } from "@a2a-js/sdk"
import { TaskState } from "@a2a-js/sdk"
import { ClientFactory } from "@a2a-js/sdk/client"
import { randomUUID } from "node:crypto"

const url = process.argv[2] ?? "http://localhost:3000"
const token = process.env.API_TOKEN
const options = token === undefined ? {} : { serviceParameters: { Authorization: `Bearer ${token}` } }

const message = (text: string): Message => ({
  messageId: randomUUID(),
  contextId: "",
  taskId: "",
  role: 1,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "text/plain" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: []
})
const request = (text: string) => ({
  tenant: "",
  message: message(text),
  configuration: undefined,
  metadata: undefined
})
const answer = (task: Task) =>
  task.artifacts.flatMap((a) => a.parts.map((p) => (p.content?.$case === "text" ? p.content.value : ""))).join("")

const client = await new ClientFactory().createFromUrl(url)
const card = await client.getAgentCard()
console.log(
  `card: ${card.name} — ${
    card.supportedInterfaces.map((i) => `${i.protocolBinding} ${i.protocolVersion} ${i.url}`).join(", ")
  }`
)

const task = (await client.sendMessage(request("What is 6 times 7?"), options)) as Task
console.log(`SendMessage → task ${task.id.slice(0, 8)}… ${TaskState[task.status!.state]}: ${answer(task)}`)

for await (const event of client.sendMessageStream(request("What is 12 squared?"), options)) {
  const p = event.payload!
  if (p.$case === "task") console.log(`  stream: task ${TaskState[p.value.status!.state]}`)
  else if (p.$case === "statusUpdate") {
    const text =
      p.value.status?.message?.parts.map((x) => (x.content?.$case === "text" ? x.content.value : "")).join("") ?? ""
    console.log(`  stream: status ${TaskState[p.value.status!.state]}${text ? ` (${text})` : ""}`)
  } else if (p.$case === "artifactUpdate") {
    console.log(
      `  stream: artifact ${p.value.append ? "+" : "="} ${
        JSON.stringify(
          p.value.artifact!.parts.map((x) => (x.content?.$case === "text" ? x.content.value : "")).join("")
        )
      }`
    )
  }
}

const again = await client.getTask({ tenant: "", id: task.id }, options)
console.log(`GetTask ${again.id.slice(0, 8)}… ${TaskState[again.status!.state]}: ${answer(again)}`)
