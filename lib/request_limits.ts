/**
 * Bounds on the work one call's arguments may ask of a worker, checked after the arguments are bound
 * and before a worker is leased: a few bytes of JSON must not hold a worker for minutes (2,000
 * wildcard names in `_RequestedProperties` took 15–26 s, a 300,000-item array 40 s).
 *
 * @module
 */
import type { RequestLimits } from "./config.ts";
import type { BoundArguments } from "./arguments.ts";

/** A name PowerShell's `Select-Object -Property` treats as a wildcard pattern. */
function isWildcard(name: string): boolean {
  return /[*?[]/.test(name);
}

/** The length of the longest array anywhere in `value` (objects and nested arrays included). */
function longestArray(value: unknown): number {
  let longest = 0;
  // An explicit stack: a deeply nested argument must not overflow the call stack.
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (Array.isArray(item)) {
      longest = Math.max(longest, item.length);
      for (const inner of item) if (inner !== null && typeof inner === "object") stack.push(inner);
    } else if (item !== null && typeof item === "object") {
      for (const inner of Object.values(item)) {
        if (inner !== null && typeof inner === "object") stack.push(inner);
      }
    }
  }
  return longest;
}

/**
 * Why the bound arguments of `tool` ask for more than `limits` allow, naming the limit and its
 * setting; null when they are within them.
 */
export function exceededLimit(
  tool: string,
  bound: BoundArguments,
  limits: RequestLimits,
): string | null {
  const requested = bound.shaping["_RequestedProperties"];
  if (Array.isArray(requested)) {
    if (requested.length > limits.maxRequestedProperties) {
      return `Too many names in '_RequestedProperties' for tool '${tool}': ${requested.length} given, at most ${limits.maxRequestedProperties} allowed (ShellConfiguration:MaxRequestedProperties)`;
    }
    const wildcards = requested.filter((name) => typeof name === "string" && isWildcard(name));
    if (wildcards.length > limits.maxRequestedPropertyWildcards) {
      return `Too many wildcard names in '_RequestedProperties' for tool '${tool}': ${wildcards.length} given, at most ${limits.maxRequestedPropertyWildcards} allowed (ShellConfiguration:MaxRequestedPropertyWildcards)`;
    }
  }
  for (const [name, value] of Object.entries(bound.parameters)) {
    const items = longestArray(value);
    if (items > limits.maxArgumentItems) {
      return `Too many items in argument '${name}' for tool '${tool}': an array of ${items} items, at most ${limits.maxArgumentItems} allowed (ShellConfiguration:MaxArgumentItems)`;
    }
  }
  return null;
}
