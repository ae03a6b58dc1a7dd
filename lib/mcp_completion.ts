/**
 * MCP completions (`completion/complete`): the values PowerShell's own completion offers for an
 * argument (ValidateSet, enums, `[ArgumentCompleter]`, `Register-ArgumentCompleter`, provider paths
 * for path parameters), asked of a worker the transport lends, as any call is
 * (docs/mcp-prompts.md). A reference names what is completed: a prompt's argument is its command's
 * parameter, and a resource template's variable the parameter of its command's tool it binds (the
 * help template's `{tool}`: the tools the caller may call).
 *
 * @module
 */
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import type { CompleteRequest, CompleteResult } from "@modelcontextprotocol/server";
import type { CallOptions, WorkerCall } from "./call.ts";
import { findPrompt } from "./mcp_prompt.ts";
import { templateVariable } from "./resources.ts";
import { logger } from "./log.ts";

const log = logger("mcp");

/** Most values one answer holds: MCP's own cap; `hasMore` and `total` say what was left out. */
export const MAX_COMPLETION_VALUES = 100;

/** Time limit of one completion in ms: a client asks as its user types. */
const COMPLETION_TIMEOUT_MS = 5_000;

/**
 * Longest text of a partial value, or of another argument's value, a completion takes; a longer
 * one gets no values (no completer needs more, and the line PowerShell parses stays small).
 */
const MAX_COMPLETION_TEXT = 1_024;

/** What a completion asks: a parameter of a command, the partial value, the other arguments. */
interface CompletionQuery {
  /** The command, as the catalog named it. */
  command: string;
  /** The parameter whose value is completed. */
  parameter: string;
  /** What the user typed so far. */
  word: string;
  /** The other arguments given so far, by parameter name; completers may read them. */
  arguments: Record<string, string>;
}

const NONE: CompleteResult = { completion: { values: [], total: 0, hasMore: false } };

/**
 * The values PowerShell offers for `query`, run on a worker lent for `call`: at most
 * {@linkcode MAX_COMPLETION_VALUES} of them within {@linkcode COMPLETION_TIMEOUT_MS}. A completion
 * that fails, is stopped or finds no worker in time offers none (said in the log): a client asks
 * again at the next keystroke.
 */
async function completeParameter(
  options: CallOptions,
  query: CompletionQuery,
  call: WorkerCall,
): Promise<CompleteResult> {
  const texts = [query.word, ...Object.values(query.arguments)];
  if (texts.some((text) => text.length > MAX_COMPLETION_TEXT || !text.isWellFormed())) return NONE;
  const started = performance.now();
  try {
    const outcome = await options.runner.withWorker(call, (worker) =>
      worker.invoke(
        {
          command: query.command,
          parameters: query.arguments,
          credentials: [],
          depth: 1,
          // The count, then the values: one more than the cap says that more exist.
          maxResults: MAX_COMPLETION_VALUES + 1,
          complete: { parameter: query.parameter, word: query.word },
        },
        { signal: call.signal, timeoutMs: COMPLETION_TIMEOUT_MS },
      ));
    const [count, ...rest] = outcome.result.output;
    const values = rest.filter((v): v is string => typeof v === "string")
      .slice(0, MAX_COMPLETION_VALUES);
    const why = outcome.interrupted ??
      (outcome.result.errors.length > 0 ? outcome.result.errors[0]!.message : null);
    if (why !== null || typeof count !== "number") {
      log.info("Completion of {Command} -{Parameter} by {Principal} gave nothing: {Why}", {
        Command: query.command,
        Parameter: query.parameter,
        Principal: call.principal.name,
        Why: why ?? "the worker wrote no count",
      });
      return NONE;
    }
    log.debug(
      "Completion of {Command} -{Parameter} by {Principal}: {Count} values in {ElapsedMs} ms.",
      {
        Command: query.command,
        Parameter: query.parameter,
        Principal: call.principal.name,
        Count: count,
        ElapsedMs: Math.round(performance.now() - started),
      },
    );
    const total = Math.max(count, values.length);
    return { completion: { values, total, hasMore: total > values.length } };
  } catch (error) {
    log.info("Completion of {Command} -{Parameter} by {Principal} gave nothing: {Why}", {
      Command: query.command,
      Parameter: query.parameter,
      Principal: call.principal.name,
      Why: error instanceof Error ? error.message : String(error),
    });
    return NONE;
  }
}

/**
 * Answers `completion/complete`. A prompt's argument is completed for a caller who may get the
 * prompt (another is told the prompt is unknown, as `prompts/get` tells them); the other arguments
 * the client sends are passed on only when they are arguments of the same prompt.
 */
export async function complete(
  options: CallOptions,
  params: CompleteRequest["params"],
  call: WorkerCall,
): Promise<CompleteResult> {
  const { ref, argument } = params;
  const given = params.context?.arguments ?? {};
  if (ref.type === "ref/resource") {
    return await completeVariable(options, ref.uri, argument, given, call);
  }
  const prompt = await findPrompt(options, ref.name, call.principal);
  const target = prompt.arguments.find((a) => a.name === argument.name);
  if (!target) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Prompt '${prompt.name}' has no argument '${argument.name}' (its arguments: ${
        prompt.arguments.map((a) => a.name).join(", ") || "none"
      })`,
    );
  }
  const others: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    const known = prompt.arguments.find((a) => a.name.toLowerCase() === name.toLowerCase());
    if (known && known !== target && typeof value === "string") others[known.name] = value;
  }
  return await completeParameter(options, {
    command: prompt.command,
    parameter: target.name,
    word: argument.value,
    arguments: others,
  }, call);
}

/**
 * Completes a variable of a resource template the caller may read: the help template's `{tool}`
 * from the names of the tools it may call, a configured template's variable as its parameter, with
 * the template's other variables the client sends as the other arguments.
 */
async function completeVariable(
  options: CallOptions,
  uriTemplate: string,
  argument: { name: string; value: string },
  given: Record<string, string>,
  call: WorkerCall,
): Promise<CompleteResult> {
  const target = await templateVariable(options, uriTemplate, argument.name, call.principal);
  if (target === null) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `Resource template '${uriTemplate.slice(0, 200)}' has no variable '${
        argument.name.slice(0, 100)
      }' to complete`,
    );
  }
  if (target.kind === "tool") {
    const word = argument.value.toLowerCase();
    const all = target.tools.filter((name) => name.startsWith(word));
    const values = all.slice(0, MAX_COMPLETION_VALUES);
    return { completion: { values, total: all.length, hasMore: all.length > values.length } };
  }
  const others: Record<string, string> = {};
  for (const [name, value] of Object.entries(given)) {
    if (name !== argument.name && target.variables.includes(name) && typeof value === "string") {
      others[name] = value;
    }
  }
  return await completeParameter(options, {
    command: target.command,
    parameter: target.parameter,
    word: argument.value,
    arguments: others,
  }, call);
}
