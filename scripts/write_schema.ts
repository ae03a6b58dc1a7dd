/**
 * Writes appsettings.schema.json from the zod schema of lib/config_schema.ts, and the configuration
 * reference docs/configuration.md from the same settings (`deno task schema`). tests/config_test.ts
 * and tests/settings_test.ts fail when a committed file and the schema drift apart.
 */
import { configJsonSchema } from "../lib/config_schema.ts";
import { configReference, formatted, REFERENCE_PATH } from "./config_reference.ts";

await Deno.writeTextFile(
  new URL("../appsettings.schema.json", import.meta.url),
  JSON.stringify(configJsonSchema(), null, 2) + "\n",
);
await Deno.writeTextFile(
  new URL(`../${REFERENCE_PATH}`, import.meta.url),
  await formatted(configReference()),
);
