/**
 * Prompts of a tool call as `elicitation/create` requests sent to the client during the call: the
 * push-style form of protocol 2025-11-25 (and older revisions that know it). Used only where the
 * connection can carry a server request while the call runs (stdio; a Stateful HTTP session
 * answering in SSE) and the client declared form elicitation at `initialize`. A Stateless HTTP
 * request never initialized its server, so it has no declared capabilities and gets no prompts.
 *
 * @module
 */
import type { Server, ServerContext } from "@modelcontextprotocol/server";
import {
  asksForms,
  INPUT_REQUIRED_REVISION,
  toElicitation,
  toPromptAnswer,
} from "./elicitation.ts";
import type { PromptAnswer, WorkerPrompt } from "./worker_protocol.ts";
import { logger } from "./log.ts";

const log = logger("mcp");

/**
 * The SDK ends a request after 60 s by default; the wait for the user is bounded by
 * `UserInputTimeout` instead, which aborts the prompt's signal. This is setTimeout's largest delay.
 */
const NO_SDK_TIMEOUT = 2_147_483_647;

/** Asks the client's user one prompt; resolves with the worker's answer. */
type PushedPrompt = (prompt: WorkerPrompt, signal: AbortSignal) => Promise<PromptAnswer>;

/**
 * The `onPrompt` of a tools/call on a 2025-era connection: each prompt becomes an
 * `elicitation/create` related to the call (so Stateful HTTP sends it on the call's own stream), and
 * the answer is mapped back by {@linkcode toPromptAnswer}. Undefined, so prompts fail at once as
 * without a client, when the connection negotiated 2026-07-28 (or never initialized: Stateless
 * HTTP), when the client did not declare form elicitation, or when `canSend` is false.
 */
export function pushedPrompts(
  server: Server,
  ctx: ServerContext,
  canSend: boolean,
): PushedPrompt | undefined {
  // Deprecated for the 2026 era only; on a 2025-era connection these are the initialize values.
  const revision = server.getNegotiatedProtocolVersion();
  if (!canSend || revision === undefined || revision >= INPUT_REQUIRED_REVISION) return undefined;
  if (!asksForms(server.getClientCapabilities())) return undefined;
  return async (prompt, signal) => {
    const { params } = toElicitation(prompt);
    // The question is withdrawn (notifications/cancelled) when the user's time is up or the call ends.
    const ended = AbortSignal.any([signal, ctx.mcpReq.signal]);
    try {
      const result = await ctx.mcpReq.send({ method: "elicitation/create", params }, {
        signal: ended,
        timeout: NO_SDK_TIMEOUT,
      });
      return toPromptAnswer(prompt, result);
    } catch (error) {
      // After an abort the worker layer has answered already; this answer is not used.
      if (!ended.aborted) {
        log.warning("The client answered the elicitation of prompt {Seq} with an error: {Error}", {
          Seq: prompt.seq,
          Error: error instanceof Error ? error.message : String(error),
        });
      }
      // An error is no answer from the user: stopping the command is the one safe outcome.
      return { action: "cancel" };
    }
  };
}
