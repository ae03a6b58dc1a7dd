/**
 * MCP tool annotations (read-only, destructive, idempotent, open-world hints) derived from a
 * command's approved PowerShell verb.
 *
 * @module
 */
import type { ToolAnnotations } from "./tool_descriptor.ts";

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
