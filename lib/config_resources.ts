/**
 * Resources backed by commands (`ShellConfiguration:Resources:<name>`): how they are read from the
 * configuration. Each names a URI or a URI template (`lib/resource_template.ts`) and the command a
 * read runs; `lib/resources.ts` serves them.
 *
 * @module
 */
import { isTree, type Reader } from "./config_reader.ts";
import { parseUriTemplate, type UriTemplate } from "./resource_template.ts";

/** One configured resource (or template, when its URI has variables). */
export interface ResourceSetting {
  /** Its key under `Resources`: the resource's `name`. */
  name: string;
  /** Its URI or URI template, parsed. */
  uri: UriTemplate;
  /** The command a read runs; it must be offered as a tool. */
  command: string;
  /** @default none */
  title?: string;
  /** @default none */
  description?: string;
  /** @default by the output: text/plain, application/octet-stream or application/json */
  mimeType?: string;
}

/** The scheme of svc's own resources (tool help, kept results); a configured URI may not use it. */
const SVC_SCHEME = "svc:";

/** Reads `ShellConfiguration:Resources`. @default [] (none) */
export function readResources(read: Reader): ResourceSetting[] {
  const [section, value] = read.raw("ShellConfiguration:Resources");
  if (value === undefined || value === null) return [];
  if (!isTree(value)) throw read.invalid(section, "expected an object of resources by name");
  const out: ResourceSetting[] = [];
  for (const name of Object.keys(value)) {
    const key = `${section}:${name}`;
    const uriText = read.optionalString(`${key}:Uri`);
    const command = read.optionalString(`${key}:Command`);
    if (uriText === null) throw read.invalid(`${key}:Uri`, "a resource needs a Uri");
    if (command === null) throw read.invalid(`${key}:Command`, "a resource needs a Command");
    const uri = parseUriTemplate(uriText);
    if (typeof uri === "string") throw read.invalid(`${key}:Uri`, uri);
    if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(uriText)) {
      throw read.invalid(`${key}:Uri`, `'${uriText}' has no scheme (like file: or myapp:)`);
    }
    if (uriText.toLowerCase().startsWith(SVC_SCHEME)) {
      throw read.invalid(`${key}:Uri`, `'${uriText}': the svc: scheme is svc's own`);
    }
    const taken = out.find((r) => r.uri.text === uriText);
    if (taken) {
      throw read.invalid(`${key}:Uri`, `'${uriText}' is the Uri of resource '${taken.name}' too`);
    }
    const title = read.optionalString(`${key}:Title`);
    const description = read.optionalString(`${key}:Description`);
    const mimeType = read.optionalString(`${key}:MimeType`);
    out.push({
      name,
      uri,
      command,
      ...(title === null ? {} : { title }),
      ...(description === null ? {} : { description }),
      ...(mimeType === null ? {} : { mimeType }),
    });
  }
  return out;
}
