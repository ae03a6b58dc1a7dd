/**
 * What a tool says about its command's effects: the MCP tool annotations (read-only, destructive,
 * idempotent, open-world hints) derived from its approved PowerShell verb, and the `ConfirmImpact`
 * with which it asks for confirmation, and the media type of the byte arrays it writes.
 *
 * @module
 */
import type { ToolAnnotations, ToolDescriptor } from "./tool_descriptor.ts";
import type { CommandMeta } from "./worker_protocol.ts";
import { declaredMediaType } from "./result_media.ts";

/** A ShouldProcess command's `ConfirmImpact`, as a descriptor's field. */
export function confirmImpactOf(command: CommandMeta): Pick<ToolDescriptor, "confirmImpact"> {
  return command.supportsShouldProcess && command.confirmImpact
    ? { confirmImpact: command.confirmImpact }
    : {};
}

/** The image or audio media type a command declares with `[OutputType]`, as a descriptor's field. */
export function outputMediaTypeOf(command: CommandMeta): Pick<ToolDescriptor, "outputMediaType"> {
  const declared = declaredMediaType(command.outputTypes ?? []);
  return declared ? { outputMediaType: declared } : {};
}

const READ_ONLY_VERBS = new Set(
  [
    "Get",
    "Find",
    "Search",
    "Show",
    "Test",
    "Measure",
    "Resolve",
    "Compare",
    "Read",
    "Select",
    "Trace",
    "Ping",
    "Watch",
  ],
);
const ADDITIVE_VERBS = new Set(
  [
    "New",
    "Add",
    "Copy",
    "Join",
    "Split",
    "Import",
    "Export",
    "Out",
    "Write",
    "ConvertTo",
    "ConvertFrom",
    "Convert",
    "Expand",
    "Compress",
    "Format",
    "Group",
    "Sort",
    "Publish",
    "Register",
    "Save",
    "Send",
    "Install",
    "Mount",
    "Connect",
    "Enter",
    "Open",
    "Push",
    "Request",
    "Submit",
    "Initialize",
    "Build",
    "Checkpoint",
    "Backup",
  ],
);
const IDEMPOTENT_OVERWRITE_VERBS = new Set([
  "Set",
  "Update",
  "Enable",
  "Disable",
  "Grant",
  "Revoke",
  "Protect",
  "Unprotect",
]);

/**
 * Annotations from the command's verb: read-only verbs (Get, Test, ...) are read-only and idempotent;
 * additive verbs (New, Add, Export, ...) are neither destructive nor idempotent; Set-like verbs are
 * destructive and idempotent; every other verb (Remove, Stop, Invoke, Start, unknown ones) is
 * destructive. `openWorldHint` is always true: commands reach outside svc. The three verb sets are
 * disjoint, so each hint follows from set membership alone.
 */
export function annotationsFor(command: string, verb: string | null): ToolAnnotations {
  const v = verb ?? command.split("-")[0] ?? "";
  const readOnly = READ_ONLY_VERBS.has(v);
  return {
    title: command,
    readOnlyHint: readOnly,
    destructiveHint: !readOnly && !ADDITIVE_VERBS.has(v),
    idempotentHint: readOnly || IDEMPOTENT_OVERWRITE_VERBS.has(v),
    openWorldHint: true,
  };
}
